"""Install hints fit how anonml was installed (index, source tree, or not installed)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from anonml import _install
from anonml._install import EXTRAS, install_hint


@pytest.fixture
def where(monkeypatch):
    def set_to(value):
        monkeypatch.setattr(_install, "source_tree", lambda: value)
    return set_to


def test_index_install_names_the_extra(where):
    where(None)
    assert install_hint("parquet", ("pyarrow",)) == "pip install 'anonml[parquet]'"


def test_checkout_install_names_the_folder_and_the_plain_package(where):
    where(("/src/anonml-checkout", True))
    hint = install_hint("parquet", ("pyarrow",))
    assert hint == "pip install -e '/src/anonml-checkout[parquet]' (or pip install pyarrow)"
    assert "'anonml[" not in hint
    where(("/src/anonml-checkout", False))
    assert install_hint("report").startswith("pip install '/src/anonml-checkout[report]'")
    assert install_hint("report").endswith("(or pip install fpdf2 jsonschema skops)")


def test_not_installed_names_the_plain_packages(where):
    where(False)
    assert install_hint("torch") == "pip install torch opacus"


def test_this_checkout_is_detected():
    where = _install.source_tree()
    if where in (None, False):
        pytest.skip("anonml is not installed from a source tree here")
    folder, _ = where
    assert (Path(folder) / "pyproject.toml").is_file()


def test_extras_match_pyproject():
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    if not pyproject.is_file():
        pytest.skip("no pyproject.toml beside the tests")
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib
    extras = tomllib.loads(pyproject.read_text())["project"]["optional-dependencies"]
    for extra, packages in EXTRAS.items():
        names = [re.split(r"[<>=!~ ;\[]", p)[0] for p in extras[extra]]
        assert tuple(names) == packages, extra


def test_read_table_options_are_checked(tmp_path):
    import pandas as pd

    from anonml._errors import InputError
    from anonml._io import read_table

    path = tmp_path / "t.csv"
    path.write_text("a|b\n1|?\n2|x\n")
    frame = read_table(path, sep="|", na_values=["?"])
    assert list(frame.columns) == ["a", "b"] and frame["b"].isna().sum() == 1
    with pytest.raises(InputError, match="one character"):
        read_table(path, sep="||")
    pq = tmp_path / "t.parquet"
    pytest.importorskip("pyarrow")
    pd.DataFrame({"a": [1]}).to_parquet(pq)
    with pytest.raises(InputError, match="applies to CSV"):
        read_table(pq, na_values=["?"])
    # the header checks still run with a separator: duplicated names are refused
    dup = tmp_path / "dup.csv"
    dup.write_text("a;a\n1;2\n")
    with pytest.raises(InputError, match="duplicated"):
        read_table(dup, sep=";")
