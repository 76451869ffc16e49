"""Inputs that are not ordinary files, and outputs that must carry nothing of the input.

Issue 18, class 6. A researcher who hands files to the auditor can name a device, a FIFO or a
sparse file instead of a table or a model, give columns whose names only look like a
quasi-identifier, hide raw values in a Parquet file's metadata, or hand over a complex ``.npy``.
Every one of them is one line, exit 1, nothing written; commands that could hang run in a
subprocess with a timeout.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from anonml import _io
from anonml._errors import InputError
from anonml._io import open_regular, read_array, read_header, read_table, safe_copy
from anonml._output import write_table
from anonml.cli import main
from anonml.encoding import check_lookalike_columns, normalize_name
from test_cli_hostile import assert_hostile as one_line
from test_cli_hostile import csv_in, table  # noqa: F401 - the same small table, shared

ROWS = 60
SRC = str(Path(__file__).resolve().parents[2] / "src")
SECRET = "raw-value-4711"


def run(argv, capsys):
    argv = [str(a) for a in argv]
    code = main(argv if "-q" in argv else argv + ["-q"])
    out, err = capsys.readouterr()
    return code, out, err


def cli(argv, tmp_path, **env):
    """The CLI in a fresh process: a hang becomes a test failure after 60 s, not a stuck run."""
    environ = {**os.environ, "PYTHONPATH": SRC, **env}
    argv = [str(a) for a in argv]
    argv = argv if "-q" in argv else argv + ["-q"]
    proc = subprocess.run([sys.executable, "-m", "anonml", *argv], cwd=tmp_path,
                          env=environ, capture_output=True, text=True, timeout=60)
    return proc.returncode, proc.stdout, proc.stderr


def audit_argv(tmp_path, train, *, test=None, model=None):
    probs = tmp_path / "p.npy"
    if not probs.exists():
        np.save(probs, np.full((ROWS, 2), 0.5))
    argv = ["audit", "--train", train, "--test", test or train, "--target", "income",
            "-o", tmp_path / "report", "--formats", "json", "-q"]
    if model is None:
        argv += ["--train-proba", probs, "--test-proba", probs]
    else:
        argv += ["--model", model]
    return argv


# ------------------------------------------------------------------ not ordinary files --------
def test_symlink_to_dev_zero_as_train_table(tmp_path, csv_in):
    link = tmp_path / "train.csv"
    link.symlink_to("/dev/zero")
    code, _, err = cli(audit_argv(tmp_path, link, test=csv_in), tmp_path)
    one_line(code, err, "train.csv", "/dev/zero", "character device", "regular file")
    assert not (tmp_path / "report").exists()


def test_fifo_as_train_table_does_not_hang(tmp_path, csv_in):
    fifo = tmp_path / "train.csv"
    os.mkfifo(fifo)
    code, _, err = cli(audit_argv(tmp_path, fifo, test=csv_in), tmp_path)
    one_line(code, err, "train.csv", "FIFO")
    assert not (tmp_path / "report").exists()


def test_fifo_as_anonymize_input_does_not_hang(tmp_path):
    fifo = tmp_path / "in.csv"
    os.mkfifo(fifo)
    code, _, err = cli(["anonymize", fifo, "--k", 5, "--qi", "age", "--target", "income",
                        "--labels", "-o", tmp_path / "out.csv"], tmp_path)
    one_line(code, err, "in.csv", "FIFO")
    assert not (tmp_path / "out.csv").exists()


def test_every_reader_refuses_a_fifo(tmp_path):
    """The library's readers open with O_NONBLOCK and fstat: a FIFO with no writer is refused
    at once (were it opened blocking, this test would hang)."""
    from anonml.hierarchies import Hierarchy
    from anonml.safemodel import load_model, load_rules

    for name in ("t.csv", "t.parquet", "p.npy", "r.toml", "h.csv", "m.skops"):
        os.mkfifo(tmp_path / name)
    readers = [lambda: read_table(tmp_path / "t.csv"), lambda: read_header(tmp_path / "t.parquet"),
               lambda: read_array(tmp_path / "p.npy", "predictions"),
               lambda: load_rules(tmp_path / "r.toml"),
               lambda: Hierarchy.read_arx(tmp_path / "h.csv"),
               lambda: load_model(tmp_path / "m.skops")]
    for read in readers:
        with pytest.raises(InputError, match="FIFO"):
            read()


def test_folder_device_and_socket_are_named(tmp_path):
    import socket

    with pytest.raises(InputError, match="is a folder"):
        read_table(tmp_path)
    with pytest.raises(InputError, match="character device"):
        read_table("/dev/null")
    sock_path = tmp_path / "s.csv"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(str(sock_path))
        with pytest.raises(InputError, match="socket"):
            read_table(sock_path)
    finally:
        sock.close()


def test_size_limit_is_checked_before_reading(tmp_path, csv_in):
    with pytest.raises(InputError, match="larger than the limit"):
        read_table(csv_in, max_bytes=100)
    big = tmp_path / "big.csv"
    with open(big, "wb") as f:  # sparse: no disk used, but st_size counts
        f.truncate(_io.MAX_TABLE_BYTES + 1)
    with pytest.raises(InputError, match="larger than the limit"):
        read_table(big)


def test_long_csv_header_is_refused(tmp_path):
    path = tmp_path / "wide.csv"
    header = ",".join(f"c{i}" for i in range(_io.MAX_HEADER_BYTES // 4))
    path.write_text(header + "\n" + "1\n")
    with pytest.raises(InputError, match="header line .* longer than"):
        read_header(path)
    # a header just within the bound is read as written
    ok = tmp_path / "ok.csv"
    ok.write_text("a,b\n1,2\n")
    assert read_header(ok) == ["a", "b"]


def test_gzip_bomb_is_bounded(tmp_path):
    import gzip

    path = tmp_path / "bomb.csv.gz"
    with gzip.open(path, "wb") as f:
        f.write(b"a,b\n")
        f.write(b"1,2\n" * 300_000)  # 1.2 MB decompressed from a few KB
    with pytest.raises(InputError, match="decompresses to more than"):
        read_table(path, max_bytes=1_000_000)
    assert read_table(path).shape == (300_000, 2)


# ------------------------------------------------------------------ model files ---------------
def _sparse_model(tmp_path) -> Path:
    model = tmp_path / "m.skops"
    with open(model, "wb") as f:
        f.truncate(3 * 2**30)  # 3 GiB of holes: costs no disk
    return model


def _big_files(folder: Path) -> list:
    return [p for p in folder.rglob("*") if p.is_file() and p.stat().st_size > 2**20]


def test_sparse_3gib_model_is_refused_before_copying(tmp_path, monkeypatch):
    import tempfile

    from anonml.safemodel import load_model

    model = _sparse_model(tmp_path)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    with pytest.raises(InputError, match="m.skops.*larger than the limit of 2 GiB"):
        load_model(model)
    assert list(tmp.iterdir()) == []


def test_sparse_3gib_model_in_the_audit_cli(tmp_path, csv_in):
    model = _sparse_model(tmp_path)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    code, _, err = cli(audit_argv(tmp_path, csv_in, model=model), tmp_path, TMPDIR=str(tmp))
    one_line(code, err, "m.skops", "2 GiB")
    assert _big_files(tmp) == []
    assert not (tmp_path / "report").exists()


def test_model_symlink_to_a_device_is_refused(tmp_path, csv_in, capsys):
    model = tmp_path / "m.skops"
    model.symlink_to("/dev/zero")
    code, _, err = run(["anonymize", csv_in, "--k", 5, "--qi", "age", "--target", "income",
                        "--model", model, "-o", tmp_path / "out.csv", "-q"], capsys)
    one_line(code, err, "m.skops", "character device")


def test_safe_copy(tmp_path):
    src = tmp_path / "src.bin"
    data = os.urandom(3 * 2**20 + 17)
    src.write_bytes(data)
    digest = safe_copy(src, tmp_path / "dst.bin", max_bytes=2**22, what="model file")
    assert digest == hashlib.sha256(data).hexdigest()
    assert (tmp_path / "dst.bin").read_bytes() == data
    # the size is checked first: nothing is created
    with pytest.raises(InputError, match="larger than the limit"):
        safe_copy(src, tmp_path / "small.bin", max_bytes=2**20, what="model file")
    assert not (tmp_path / "small.bin").exists()
    # not a regular file
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(InputError, match="FIFO"):
        safe_copy(tmp_path / "fifo", tmp_path / "x.bin", max_bytes=2**20, what="model file")
    assert not (tmp_path / "x.bin").exists()
    # never overwrites, never follows a symlink at the destination
    (tmp_path / "victim").write_text("keep")
    (tmp_path / "link.bin").symlink_to(tmp_path / "victim")
    with pytest.raises(OSError):
        safe_copy(src, tmp_path / "link.bin", max_bytes=2**22, what="model file")
    assert (tmp_path / "victim").read_text() == "keep"


def test_open_regular_reads_what_it_checked(tmp_path):
    path = tmp_path / "a.txt"
    path.write_bytes(b"first")
    with open_regular(path, "rules file", max_bytes=100) as f:
        path.unlink()
        path.write_bytes(b"swapped")  # a new file at the same path: the open one is read
        assert f.read() == b"first"
        assert f.name == str(path)


# ------------------------------------------------------------------ look-alike names ----------
def test_normalize_name():
    for name in ("age", "AGE", "a\u200bge", "\u0430ge", "\uff41\uff47\uff45", "\u0410GE",
                 "ag\u0435", "age\u00ad", "\u2060age"):
        assert normalize_name(name) == "age", ascii(name)
    assert normalize_name("sex") != normalize_name("age")


@pytest.mark.parametrize("name", ["a\u200bge", "\u0430ge", "Age"])
def test_cli_refuses_a_column_that_looks_like_a_qi(tmp_path, table, capsys, name):
    table[name] = table["age"]
    path = tmp_path / "in.csv"
    table.to_csv(path, index=False)
    out = tmp_path / "out.csv"
    code, _, err = run(["anonymize", path, "--k", 5, "--qi", "age,sex", "--target", "income",
                        "--labels", "-o", out], capsys)
    one_line(code, err, ascii(name), "'age'", "looks like the quasi-identifier",
             "rename or drop one")
    assert not out.exists()


def test_cli_refuses_two_look_alike_columns(tmp_path, table, capsys):
    table["n\u043ete"] = "x"  # Cyrillic o
    table["note"] = "y"
    path = tmp_path / "in.csv"
    table.to_csv(path, index=False)
    code, _, err = run(["anonymize", path, "--k", 5, "--qi", "age,sex", "--target", "income",
                        "--labels", "-o", tmp_path / "out.csv"], capsys)
    one_line(code, err, "look the same", "'n\\u043ete'", "'note'", "rename or drop one")


def test_dropping_the_look_alike_is_the_fix(tmp_path, table, capsys):
    table["a\u200bge"] = table["age"]
    path = tmp_path / "in.csv"
    table.to_csv(path, index=False)
    out = tmp_path / "out.csv"
    code, _, err = run(["anonymize", path, "--k", 5, "--qi", "age,sex", "--target", "income",
                        "--labels", "--drop", "a\u200bge", "-o", out, "-q"], capsys)
    assert code == 0, err
    assert list(pd.read_csv(out).columns) == ["age", "sex", "zip", "income"]


def test_header_is_never_renamed(tmp_path):
    path = tmp_path / "in.csv"
    path.write_text("a\u200bge,\u0430ge\n1,2\n", encoding="utf-8")
    assert read_header(path) == ["a\u200bge", "\u0430ge"]
    assert list(read_table(path).columns) == ["a\u200bge", "\u0430ge"]


def test_library_refuses_look_alike_columns(table):
    from anonml import MondrianAnonymizer

    X = table.drop(columns=["income"]).assign(**{"a\u200bge": table["age"]})
    with pytest.raises(InputError, match="looks like the quasi-identifier 'age'"):
        MondrianAnonymizer(k=5, quasi_identifiers=["age", "sex"]).fit_transform(X)
    X = table.drop(columns=["income"]).assign(ZIP=table["zip"])
    with pytest.raises(InputError, match="look the same"):
        MondrianAnonymizer(k=5, quasi_identifiers=["age", "sex"]).fit_transform(X)
    with pytest.raises(InputError):
        check_lookalike_columns(["age", "\u0391GE"], [])  # Greek capital alpha
    check_lookalike_columns([0, 1, "age"], [0])  # integer names (numpy input) are not compared


def test_dask_cli_refuses_look_alike_columns(tmp_path, table, capsys):
    pytest.importorskip("pyarrow")
    pytest.importorskip("dask.dataframe")
    pytest.importorskip("distributed")
    data = tmp_path / "data"
    data.mkdir()
    table.assign(**{"\u0430ge": table["age"]}).to_parquet(data / "part.0.parquet", index=False)
    code, _, err = run(["anonymize", data, "--engine", "dask", "--k", 5, "--qi", "age,sex",
                        "--target", "income", "--labels", "-o", tmp_path / "out"], capsys)
    one_line(code, err, "'\\u0430ge'", "looks like the quasi-identifier 'age'")
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------ output metadata -----------
def _parquet_with_attrs(tmp_path, table) -> Path:
    """A Parquet input whose metadata holds a raw value three ways: pandas ``attrs`` (the key
    pandas >= 2.1 reads back), in pandas' own metadata, and a custom key."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "in.parquet"
    arrow = pa.Table.from_pandas(table, preserve_index=False)
    meta = dict(arrow.schema.metadata)
    pandas_meta = json.loads(meta[b"pandas"])
    pandas_meta["attributes"] = {"note": SECRET}
    pandas_meta["column_indexes"] = [{"name": SECRET, "field_name": SECRET,
                                      "pandas_type": "unicode", "numpy_type": "object",
                                      "metadata": {"encoding": "UTF-8"}}]
    meta.update({b"pandas": json.dumps(pandas_meta).encode(),
                 b"PANDAS_ATTRS": json.dumps({"rows": [SECRET] * 3}).encode(),
                 b"custom": SECRET.encode()})
    pq.write_table(arrow.replace_schema_metadata(meta), path)
    assert SECRET.encode() in path.read_bytes()  # the input carries it
    return path


def _assert_plain_parquet(path: Path) -> None:
    import pyarrow.parquet as pq

    meta = pq.read_schema(path).metadata or {}
    assert set(meta) <= {b"pandas"}, set(meta)
    if b"pandas" in meta:
        pandas_meta = json.loads(meta[b"pandas"])
        assert not pandas_meta.get("attributes")
        assert set(pandas_meta) <= {"index_columns", "column_indexes", "columns", "creator",
                                    "pandas_version"}, set(pandas_meta)
    kv = pq.ParquetFile(path).metadata.metadata or {}
    assert set(kv) <= {b"pandas", b"ARROW:schema"}, set(kv)
    assert SECRET.encode() not in path.read_bytes()
    assert pd.read_parquet(path).attrs == {}


def test_attrs_of_a_parquet_input_are_not_written(tmp_path, table, capsys):
    pytest.importorskip("pyarrow")
    path = _parquet_with_attrs(tmp_path, table)
    assert pd.read_parquet(path).attrs  # what pandas alone would carry to the output
    assert read_table(path).attrs == {}
    out = tmp_path / "out.parquet"
    code, _, err = run(["anonymize", path, "--k", 5, "--qi", "age,sex", "--target", "income",
                        "--labels", "-o", out, "-q"], capsys)
    assert code == 0, err
    _assert_plain_parquet(out)


def test_write_table_clears_attrs(tmp_path, table):
    pytest.importorskip("pyarrow")
    frame = table.copy()
    frame.attrs = {"note": SECRET}
    write_table(frame, tmp_path / "out.parquet")
    _assert_plain_parquet(tmp_path / "out.parquet")
    assert frame.attrs == {"note": SECRET}  # the caller's frame is left as it was
    write_table(frame, tmp_path / "out.csv")
    assert SECRET not in (tmp_path / "out.csv").read_text()


def test_dask_writer_clears_attrs(tmp_path, table):
    pytest.importorskip("pyarrow")
    partio = pytest.importorskip("anonml.dask._partio")
    part = table.copy()
    part.attrs = {"note": SECRET}
    part.columns.name = SECRET
    groups = np.zeros(len(part), dtype=np.int64)
    reps = pd.DataFrame({"age": [40], "sex": ["F"]})
    rest = part.drop(columns=["age", "sex"])  # the other columns, read apart from the QIs
    n = partio._write_task(part[["age", "sex"]], rest, groups, reps, ["age", "sex"],
                           str(tmp_path), 0, list(part.columns))
    assert n == len(part)
    _assert_plain_parquet(tmp_path / "part.00000.parquet")


# ------------------------------------------------------------------ .npy inputs ---------------
@pytest.mark.parametrize("arr, words", [
    (np.full((ROWS, 2), 0.5 + 0.1j), ["complex128", "complex"]),
    (np.zeros(ROWS, dtype=[("a", "f8"), ("b", "f8")]), ["structured"]),
    (np.zeros((ROWS, 2, 1)), ["3-D"]),
    (np.array(["a"] * ROWS), ["<U1", "text"]),
    (np.zeros(ROWS, dtype="datetime64[s]"), ["dates"]),
])
def test_npy_probabilities_of_the_wrong_kind(tmp_path, csv_in, capsys, arr, words):
    proba = tmp_path / "p.npy"
    np.save(proba, arr)
    argv = ["audit", "--train-proba", proba, "--test-proba", proba, "--train", csv_in,
            "--test", csv_in, "--target", "income", "-o", tmp_path / "report", "-q"]
    code, _, err = run(argv, capsys)
    one_line(code, err, "p.npy", *words)
    assert not (tmp_path / "report").exists()


def test_object_npy_is_never_unpickled(tmp_path):
    path = tmp_path / "o.npy"
    np.save(path, np.array([{"a": 1}] * 3, dtype=object), allow_pickle=True)
    with pytest.raises(InputError, match="never unpickles"):
        read_array(path, "predictions", kinds="biufU")


def test_npy_whose_header_lies_about_its_length(tmp_path):
    path = tmp_path / "p.npy"
    with open(path, "wb") as f:  # 10**10 floats announced, 80 bytes given
        np.lib.format.write_array_header_1_0(
            f, {"descr": "<f8", "fortran_order": False, "shape": (10**10,)})
        f.write(np.arange(10.0).tobytes())
    with pytest.raises(InputError, match="announces"):
        read_array(path, "predictions")


def test_text_labels_npy_for_predictions(tmp_path, csv_in, capsys):
    preds = tmp_path / "preds.npy"
    np.save(preds, np.array(["<=50K", ">50K"] * (ROWS // 2)))
    out = tmp_path / "out.csv"
    code, _, err = run(["anonymize", csv_in, "--k", 5, "--qi", "age,sex", "--target", "income",
                        "--predictions", preds, "-o", out, "-q"], capsys)
    assert code == 0, err
    assert out.exists()
