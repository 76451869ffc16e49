"""Hostile inputs and hostile environments: every failure is one line, exit 1, nothing written.

Each test builds its hostile file in ``tmp_path``, lists the output folder before and after, and
checks that standard error holds exactly one line, ``anonml: error: ...``, naming the file,
column or package, and no traceback. The signal tests send a real SIGTERM/SIGINT to a
subprocess in the middle of a write.
"""

from __future__ import annotations

import bz2
import errno
import gzip
import importlib.util
import lzma
import os
import signal
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.tree import DecisionTreeClassifier

from anonml._errors import InputError, OutputError
from anonml._io import read_header, read_table
from anonml._output import atomic_write, atomic_write_set, check_output_file, check_output_folder
from anonml.cli import main

ROWS = 60


@pytest.fixture
def table() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({
        "age": rng.integers(20, 70, ROWS),
        "sex": rng.choice(["F", "M"], ROWS),
        "zip": rng.integers(1000, 1010, ROWS),
        "income": rng.choice(["<=50K", ">50K"], ROWS),
    })


@pytest.fixture
def csv_in(tmp_path, table) -> Path:
    path = tmp_path / "in.csv"
    table.to_csv(path, index=False)
    return path


def listing(folder: Path) -> list:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def run(argv, capsys):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_hostile(code, err, *needles):
    """Exit 1, exactly one stderr line starting 'anonml: error:', naming every needle."""
    assert code == 1, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("anonml: error:"), err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], lines[0]


def anonymize(input_path, out, *extra):
    return ["anonymize", input_path, "--k", 5, "--qi", "age,sex,zip", "--target", "income",
            *(extra or ["--labels"]), "-o", out, "-q"]


def hostile_run(tmp_path, capsys, argv, *needles):
    before = listing(tmp_path)
    code, _, err = run(argv, capsys)
    assert_hostile(code, err, *needles)
    assert listing(tmp_path) == before  # nothing new: no output, no temporary file


# ----------------------------------------------------------------------------- headers --------
def test_duplicated_column_is_refused_not_renamed(tmp_path, table, capsys):
    path = tmp_path / "dup.csv"
    body = table.to_csv(index=False).splitlines()[1:]
    path.write_text("age,age,sex,zip,income\n" + "\n".join(
        f"{line.split(',')[0]},{line}" for line in body) + "\n")
    hostile_run(tmp_path, capsys, anonymize(path, tmp_path / "out.csv"), "dup.csv",
                "duplicated", "'age'")


def test_duplicated_column_in_a_compressed_csv(tmp_path, table, capsys):
    path = tmp_path / "dup.csv.gz"
    text = table.to_csv(index=False).replace("age,sex,zip,income", "age,sex,zip,sex", 1)
    path.write_bytes(gzip.compress(text.encode()))
    hostile_run(tmp_path, capsys, anonymize(path, tmp_path / "out.csv"), "dup.csv.gz", "'sex'")


def test_duplicated_column_in_parquet(tmp_path, table, capsys):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    path = tmp_path / "dup.parquet"
    arrays = [pa.array(table["age"]), pa.array(table["age"]), pa.array(table["sex"]),
              pa.array(table["zip"]), pa.array(table["income"])]
    pq.write_table(pa.Table.from_arrays(arrays, names=["age", "age", "sex", "zip", "income"]),
                   path)
    assert read_header(path) == ["age", "age", "sex", "zip", "income"]
    hostile_run(tmp_path, capsys, anonymize(path, tmp_path / "out.csv"), "dup.parquet", "'age'")


def test_unnamed_column_is_refused(tmp_path, table, capsys):
    path = tmp_path / "indexed.csv"
    table.to_csv(path)  # the index is written under an empty name
    hostile_run(tmp_path, capsys, anonymize(path, tmp_path / "out.csv"), "indexed.csv",
                "column 1", "no name", "index=False")


def test_header_is_read_as_written(tmp_path):
    path = tmp_path / "odd.csv.bz2"
    path.write_bytes(bz2.compress('\ufeff"a,b",c\n1,2\n'.encode()))
    assert read_header(path) == ["a,b", "c"]  # quoted comma kept, byte-order mark dropped
    assert list(read_table(path).columns) == ["a,b", "c"]


# ----------------------------------------------------------------------------- damaged files --
def _truncated(tmp_path, table, name, compress):
    path = tmp_path / name
    data = compress(table.to_csv(index=False).encode())
    path.write_bytes(data[: len(data) // 2])
    return path


@pytest.mark.parametrize("name, compress", [
    ("cut.csv.gz", gzip.compress), ("cut.csv.xz", lzma.compress), ("cut.csv.bz2", bz2.compress),
])
def test_truncated_compressed_csv(tmp_path, table, capsys, name, compress):
    path = _truncated(tmp_path, table, name, compress)
    hostile_run(tmp_path, capsys, anonymize(path, tmp_path / "out.csv"), name, "damaged")


def test_bad_zip(tmp_path, capsys):
    path = tmp_path / "bad.csv.zip"
    path.write_bytes(b"PK\x03\x04 this is not really a zip archive")
    hostile_run(tmp_path, capsys, anonymize(path, tmp_path / "out.csv"), "bad.csv.zip")


def test_zip_with_two_files(tmp_path, table, capsys):
    path = tmp_path / "two.csv.zip"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("a.csv", table.to_csv(index=False))
        z.writestr("b.csv", table.to_csv(index=False))
    hostile_run(tmp_path, capsys, anonymize(path, tmp_path / "out.csv"), "two.csv.zip",
                "2 files")


def test_plain_csv_named_gz(tmp_path, table, capsys):
    path = tmp_path / "plain.csv.gz"
    path.write_text(table.to_csv(index=False))
    hostile_run(tmp_path, capsys, anonymize(path, tmp_path / "out.csv"), "plain.csv.gz", "gzip")


def test_csv_named_parquet(tmp_path, table, capsys):
    pytest.importorskip("pyarrow")
    path = tmp_path / "fake.parquet"
    path.write_text(table.to_csv(index=False))
    hostile_run(tmp_path, capsys, anonymize(path, tmp_path / "out.csv"), "fake.parquet",
                "not a Parquet file", ".csv")


def test_input_is_a_folder(tmp_path, capsys):
    (tmp_path / "folder.csv").mkdir()
    hostile_run(tmp_path, capsys, anonymize(tmp_path / "folder.csv", tmp_path / "out.csv"),
                "folder.csv", "is a folder")


def test_not_utf8(tmp_path, capsys):
    path = tmp_path / "latin.csv"
    path.write_bytes("age,sex,zip,income\n30,F,1001,\xe9t\xe9\n".encode("latin-1"))
    hostile_run(tmp_path, capsys, anonymize(path, tmp_path / "out.csv"), "latin.csv", "UTF-8")


# ----------------------------------------------------------------------------- predictions ----
def test_object_npy_predictions(tmp_path, csv_in, capsys):
    preds = tmp_path / "preds.npy"
    np.save(preds, np.array([{"a": 1}] * ROWS, dtype=object), allow_pickle=True)
    hostile_run(tmp_path, capsys, anonymize(csv_in, tmp_path / "out.csv", "--predictions",
                                            preds), "preds.npy", "never unpickles")


def test_garbage_npy_predictions(tmp_path, csv_in, capsys):
    preds = tmp_path / "preds.npy"
    preds.write_bytes(b"\x00\x01 not numpy at all")
    hostile_run(tmp_path, capsys, anonymize(csv_in, tmp_path / "out.csv", "--predictions",
                                            preds), "preds.npy", "numpy.save")


def test_truncated_npy_predictions(tmp_path, csv_in, capsys):
    preds = tmp_path / "preds.npy"
    np.save(preds, np.arange(ROWS, dtype=float))
    preds.write_bytes(preds.read_bytes()[:-100])
    hostile_run(tmp_path, capsys, anonymize(csv_in, tmp_path / "out.csv", "--predictions",
                                            preds), "preds.npy")


# ----------------------------------------------------------------------------- the model ------
def _skops_model(tmp_path, table, columns):
    pytest.importorskip("skops")
    from anonml.safemodel import save_model

    model = DecisionTreeClassifier(max_depth=3, random_state=0).fit(table[columns],
                                                                    table["income"])
    return save_model(model, tmp_path / "model.skops")


def test_anonymize_with_a_skops_model(tmp_path, table, capsys):
    path = _skops_model(tmp_path, table, ["age", "zip"])
    small = tmp_path / "small.csv"
    table[["age", "zip", "income"]].to_csv(small, index=False)
    out = tmp_path / "out.csv"
    code, _, err = run(["anonymize", small, "--k", 5, "--qi", "age,zip", "--target", "income",
                        "--model", path, "-o", out, "-q"], capsys)
    assert code == 0, err
    assert len(pd.read_csv(out)) == ROWS


def test_model_that_cannot_predict_is_one_line(tmp_path, table, csv_in, capsys):
    import joblib

    model = DecisionTreeClassifier(max_depth=3).fit(table[["age", "zip"]], table["income"])
    path = tmp_path / "model.joblib"
    joblib.dump(model, path)  # never saw 'sex': sklearn's message spans three lines
    hostile_run(tmp_path, capsys, anonymize(csv_in, tmp_path / "out.csv", "--model", path,
                                            "--trust-model"),
                "model.joblib", "could not predict", "sex")


def test_model_file_that_is_not_a_model(tmp_path, csv_in, capsys):
    pytest.importorskip("skops")
    path = tmp_path / "model.skops"
    path.write_bytes(b"not a zip file")
    hostile_run(tmp_path, capsys, anonymize(csv_in, tmp_path / "out.csv", "--model", path),
                "model.skops")


# ----------------------------------------------------------------------------- outputs --------
def test_output_is_an_existing_folder(tmp_path, csv_in, capsys):
    (tmp_path / "out.csv").mkdir()
    hostile_run(tmp_path, capsys, anonymize(csv_in, tmp_path / "out.csv"), "out.csv",
                "is a folder")


def test_output_inside_a_file(tmp_path, csv_in, capsys):
    hostile_run(tmp_path, capsys, anonymize(csv_in, csv_in / "out.csv"), "in.csv", "is a file")


def test_output_is_the_input(tmp_path, csv_in, capsys):
    hostile_run(tmp_path, capsys, anonymize(csv_in, tmp_path / "." / "in.csv"), "input")


def test_read_only_output_folder(tmp_path, csv_in, capsys, monkeypatch):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        if os.geteuid() == 0:  # root writes anywhere: pretend the permission bits count
            real = os.access
            monkeypatch.setattr(os, "access", lambda p, mode, **kw:
                                False if Path(p) == folder else real(p, mode, **kw))
        hostile_run(tmp_path, capsys, anonymize(csv_in, folder / "out.csv"), "ro",
                    "permission denied")
    finally:
        folder.chmod(0o755)


def test_disk_full_while_writing(tmp_path, csv_in, capsys, monkeypatch):
    def full(self, path, *args, **kwargs):
        Path(path).write_text("half a table")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_csv", full)
    out = tmp_path / "out.csv"
    hostile_run(tmp_path, capsys, anonymize(csv_in, out), "out.csv", "no space left")


def test_disk_full_keeps_the_older_output(tmp_path, csv_in, capsys, monkeypatch):
    out = tmp_path / "out.csv"
    out.write_text("older\n")
    monkeypatch.setattr(pd.DataFrame, "to_csv", lambda *a, **k: (_ for _ in ()).throw(
        OSError(errno.ENOSPC, "No space left on device")))
    hostile_run(tmp_path, capsys, anonymize(csv_in, out), "out.csv", "no space left")
    assert out.read_text() == "older\n"


def _without(monkeypatch, module):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == module else real(name, *a))


def test_missing_pyarrow_is_found_before_the_work(tmp_path, csv_in, capsys, monkeypatch):
    _without(monkeypatch, "pyarrow")
    import anonml._io

    from anonml._install import install_hint

    monkeypatch.setattr(anonml._io, "read_table", lambda *a, **k: pytest.fail("read the input"))
    # the command that fits this installation (a checkout: the folder, not the index)
    hostile_run(tmp_path, capsys, anonymize(csv_in, tmp_path / "out.parquet"), "pyarrow",
                install_hint("parquet", ("pyarrow",)))


def test_output_checks_in_the_library(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match="is a file"):
        check_output_folder(tmp_path / "file")
    with pytest.raises(InputError, match="is a file"):
        check_output_folder(tmp_path / "file" / "sub" / "report")
    assert check_output_folder(tmp_path / "new" / "deeper") == tmp_path / "new" / "deeper"
    assert not (tmp_path / "new").exists()  # checked, not created
    with pytest.raises(InputError, match="does not exist"):
        check_output_file(tmp_path / "missing" / "a.csv")


# ----------------------------------------------------------------------------- audit ----------
@pytest.fixture
def audit_files(tmp_path, table):
    import joblib

    data = table[["age", "zip"]].assign(y=(table["income"] == ">50K").astype(int))
    files = tmp_path / "inputs"
    files.mkdir()
    data[:40].to_csv(files / "train.csv", index=False)
    data[40:].to_csv(files / "test.csv", index=False)
    model = DecisionTreeClassifier(min_samples_leaf=5, random_state=0)
    joblib.dump(model.fit(data[["age", "zip"]][:40], data["y"][:40]), files / "tree.joblib")
    return files


def audit(files, out, *extra):
    return ["audit", "--model", files / "tree.joblib", "--trust-model",
            "--train", files / "train.csv",
            "--test", files / "test.csv", "--target", "y", "--attacks", "none", "-o", out, "-q",
            *extra]


def test_audit_output_is_a_file(tmp_path, audit_files, capsys):
    (tmp_path / "report").write_text("x")
    hostile_run(tmp_path, capsys, audit(audit_files, tmp_path / "report"), "report", "is a file")


def test_audit_output_under_a_file(tmp_path, audit_files, capsys):
    (tmp_path / "blocker").write_text("x")
    hostile_run(tmp_path, capsys, audit(audit_files, tmp_path / "blocker" / "report"),
                "blocker", "is a file")


def test_audit_missing_fpdf_is_found_before_the_work(tmp_path, audit_files, capsys,
                                                     monkeypatch):
    _without(monkeypatch, "fpdf")
    import anonml.safemodel

    monkeypatch.setattr(anonml.safemodel, "request_release", lambda *a, **k: pytest.fail("ran"))
    from anonml._install import install_hint

    hostile_run(tmp_path, capsys, audit(audit_files, tmp_path / "report"), "fpdf2",
                install_hint("report", ("fpdf2",)))


def test_audit_missing_jsonschema(tmp_path, audit_files, capsys, monkeypatch):
    _without(monkeypatch, "jsonschema")
    hostile_run(tmp_path, capsys, audit(audit_files, tmp_path / "report", "--formats", "html"),
                "jsonschema")


def test_audit_disk_full_at_the_pdf_writes_no_report(tmp_path, audit_files, capsys,
                                                      monkeypatch):
    import anonml._output

    real = Path.write_bytes

    def full(self, data):
        if self.name == "report.pdf":
            real(self, data[:10])
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, data)

    monkeypatch.setattr(Path, "write_bytes", full)
    assert anonml._output.Path is Path
    hostile_run(tmp_path, capsys, audit(audit_files, tmp_path / "report"), "report",
                "no space left")
    assert not (tmp_path / "report").exists()  # not report.json without its HTML and PDF


def test_audit_replaces_an_older_report_as_a_set(tmp_path, audit_files, capsys, monkeypatch):
    out = tmp_path / "report"
    out.mkdir()
    for name in ("report.json", "report.html", "report.pdf", "notes.txt"):
        (out / name).write_text("older")
    real = Path.write_bytes

    def full(self, data):
        if self.name == "report.pdf":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, data)

    with monkeypatch.context() as m:
        m.setattr(Path, "write_bytes", full)
        hostile_run(tmp_path, capsys, audit(audit_files, out), "report", "no space left")
    assert {p.name: p.read_text() for p in out.iterdir()} == {
        "report.json": "older", "report.html": "older", "report.pdf": "older",
        "notes.txt": "older"}
    # a run that succeeds replaces the set; the older PDF goes, the notes stay
    code, _, err = run(audit(audit_files, out, "--formats", "json,html"), capsys)
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt", "report.html", "report.json"]
    assert (out / "report.json").read_text() != "older"


def test_audit_refuses_a_duplicated_column_in_train(tmp_path, audit_files, capsys):
    train = audit_files / "train.csv"
    lines = train.read_text().splitlines()
    train.write_text("\n".join(["age,age,y"] + lines[1:]) + "\n")
    hostile_run(tmp_path, capsys, audit(audit_files, tmp_path / "report"), "train.csv",
                "duplicated", "'age'")


def test_audit_refuses_object_probabilities(tmp_path, audit_files, capsys):
    proba = audit_files / "p.npy"
    np.save(proba, np.array([[0.5, "x"]] * 40, dtype=object), allow_pickle=True)
    argv = ["audit", "--train-proba", proba, "--test-proba", proba, "--train",
            audit_files / "train.csv", "--test", audit_files / "test.csv", "--target", "y",
            "-o", tmp_path / "report", "-q"]
    hostile_run(tmp_path, capsys, argv, "p.npy", "never unpickles")


def test_demo_output_checked_first(tmp_path, capsys, monkeypatch):
    import anonml._demo as demo

    monkeypatch.setattr(demo, "load_adult", lambda: pytest.fail("started the work"))
    (tmp_path / "results").write_text("x")
    hostile_run(tmp_path, capsys, ["demo", "-o", tmp_path / "results", "-q"], "results",
                "is a file")


# ----------------------------------------------------------------------------- library --------
def test_atomic_write_converts_os_errors(tmp_path):
    def fail(path):
        path.write_text("partial")
        raise OSError(errno.EACCES, "Permission denied")

    with pytest.raises(OutputError, match="permission denied") as exc:
        atomic_write(tmp_path / "x.txt", fail)
    assert isinstance(exc.value, OSError)  # callers catching OSError still do
    assert listing(tmp_path) == []


def test_atomic_write_set_new_folder_appears_complete(tmp_path):
    paths = atomic_write_set(tmp_path / "out",
                             {"a.txt": b"a", "b.txt": lambda p: p.write_text("b")})
    assert sorted(paths) == ["a.txt", "b.txt"]
    assert listing(tmp_path) == ["out", "out/a.txt", "out/b.txt"]
    def fail(path):
        raise RuntimeError("renderer failed")

    with pytest.raises(RuntimeError):
        atomic_write_set(tmp_path / "other", {"a.txt": b"a", "b.txt": fail})
    with pytest.raises(RuntimeError):
        atomic_write_set(tmp_path / "out", {"a.txt": b"new", "b.txt": fail})
    assert listing(tmp_path) == ["out", "out/a.txt", "out/b.txt"]
    assert (tmp_path / "out" / "a.txt").read_bytes() == b"a"


# ----------------------------------------------------------------------------- signals --------
_CHILD = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    import pandas as pd
    from anonml.cli import main

    def slow(self, path, *args, **kwargs):  # a writer that is half way when the signal comes
        Path(path).write_text("half a table")
        print("writing", flush=True)
        time.sleep(60)

    def slow_set(self, data):
        open(self, "wb").write(data[:10])
        print("writing", flush=True)
        time.sleep(60)

    if sys.argv[1] == "anonymize":
        pd.DataFrame.to_csv = slow
    else:
        Path.write_bytes = slow_set
    sys.exit(main(sys.argv[1:]))
""")


def _interrupt(tmp_path, argv, sig):
    child = tmp_path / "child.py"
    child.write_text(_CHILD)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, str(child), *map(str, argv)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stdout.readline()
        assert line.strip() == "writing", proc.stderr.read()
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    return proc.returncode, err


@pytest.mark.parametrize("sig, code, word", [(signal.SIGTERM, 143, "terminated"),
                                             (signal.SIGINT, 130, "interrupted")])
def test_signal_mid_write_leaves_no_temporary_file(tmp_path, csv_in, sig, code, word):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    rc, err = _interrupt(tmp_path, anonymize(csv_in, out_dir / "anon.csv"), sig)
    assert rc == code, err
    assert "Traceback" not in err and word in err
    assert listing(out_dir) == []


def test_sigterm_mid_report_leaves_no_folder(tmp_path, audit_files):
    out = tmp_path / "report"
    rc, err = _interrupt(tmp_path, audit(audit_files, out, "--formats", "json"), signal.SIGTERM)
    assert rc == 143, err
    assert "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["child.py", "inputs"]
