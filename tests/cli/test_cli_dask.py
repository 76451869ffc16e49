"""``anonml anonymize DATA --engine dask``: a Parquet dataset in, a verified Parquet folder out.

Errors are one line, exit code 1, and nothing is written. The end-to-end tests run a real
``LocalCluster`` of two worker processes (so every task is serialized) on small data.
"""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from anonml.cli import main

pytest.importorskip("pyarrow")


def _table(n: int = 3000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 80, n)
    sex = rng.choice(["F", "M"], n)
    zipc = rng.integers(10000, 10100, n)
    income = np.where((age > 40) ^ (rng.random(n) < 0.2), ">50K", "<=50K")
    return pd.DataFrame({"age": age, "sex": sex, "zip": zipc, "hours": rng.integers(1, 99, n),
                         "income": income})


def _write(folder: Path, frame: pd.DataFrame, parts: int = 3) -> Path:
    folder.mkdir(parents=True)
    for i, part in enumerate(np.array_split(np.arange(len(frame)), parts)):
        frame.iloc[part].reset_index(drop=True).to_parquet(folder / f"part-{i}.parquet")
    return folder


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["anonymize", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def _one_line_error(code: int, err: str, *words: str) -> None:
    assert code == 1
    lines = [line for line in err.splitlines() if line.startswith("anonml: error")]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    for w in words:
        assert w in lines[0], lines[0]


BASE = ["--engine", "dask", "--k", "20", "--qi", "age,sex,zip", "--target", "income", "--labels"]


# -- errors found before any work (no cluster is started) ------------------------------------
def test_missing_folder(tmp_path, capsys) -> None:
    code, _, err = _run(capsys, str(tmp_path / "nope"), *BASE, "-o", str(tmp_path / "out"))
    _one_line_error(code, err, "does not exist", "nope")
    assert not (tmp_path / "out").exists()


def test_glob_without_files(tmp_path, capsys) -> None:
    code, _, err = _run(capsys, str(tmp_path / "*.parquet"), *BASE, "-o", str(tmp_path / "out"))
    _one_line_error(code, err, "no file matches")


def test_folder_without_parquet(tmp_path, capsys) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "notes.txt").write_text("hello")
    code, _, err = _run(capsys, str(tmp_path / "data"), *BASE, "-o", str(tmp_path / "out"))
    _one_line_error(code, err, "no .parquet file")


def test_column_missing_from_one_partition(tmp_path, capsys) -> None:
    data = _write(tmp_path / "data", _table())
    _table(100, 1).drop(columns=["zip"]).to_parquet(data / "part-9.parquet")
    code, _, err = _run(capsys, str(data), *BASE, "-o", str(tmp_path / "out"))
    _one_line_error(code, err, "'zip'", "part-9.parquet", "missing")
    assert not (tmp_path / "out").exists()


def test_mixed_dtypes_across_partitions(tmp_path, capsys) -> None:
    data = _write(tmp_path / "data", _table())
    odd = _table(100, 1)
    odd["age"] = odd["age"].astype(str)
    odd.to_parquet(data / "part-9.parquet")
    code, _, err = _run(capsys, str(data), *BASE, "-o", str(tmp_path / "out"))
    _one_line_error(code, err, "'age'", "int64", "string", "part-9.parquet")


def test_not_a_parquet_file(tmp_path, capsys) -> None:
    data = _write(tmp_path / "data", _table())
    (data / "part-9.parquet").write_bytes(b"not parquet at all")
    code, _, err = _run(capsys, str(data), *BASE, "-o", str(tmp_path / "out"))
    _one_line_error(code, err, "part-9.parquet", "not a readable Parquet file")


def test_output_exists(tmp_path, capsys) -> None:
    data = _write(tmp_path / "data", _table())
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("mine")
    code, _, err = _run(capsys, str(data), *BASE, "-o", str(tmp_path / "out"))
    _one_line_error(code, err, "exists")
    assert (tmp_path / "out" / "keep.txt").read_text() == "mine"


def test_unknown_qi_column(tmp_path, capsys) -> None:
    data = _write(tmp_path / "data", _table())
    argv = [a if a != "age,sex,zip" else "age,postcode" for a in BASE]
    code, _, err = _run(capsys, str(data), *argv, "-o", str(tmp_path / "out"))
    _one_line_error(code, err, "'postcode'")


@pytest.mark.parametrize("extra, words", [
    (["--method", "hilbert"], ["ag or mondrian"]),
    (["--suppression", "0.1"], ["--suppression", "--engine memory"]),
    (["--tree", "exact"], ["--tree"]),
    # recursive (c, l) runs on Dask (tests/dask/test_dask_rules.py); without --c it cannot
    (["--sensitive", "hours", "--l", "2", "--l-kind", "recursive"], ["recursive", "--c"]),
    (["--hierarchies", "h"], ["--hierarchies", "--t"]),
    (["--predictions", "p.csv"], ["--predictions"]),
])
def test_options_the_engine_does_not_read(tmp_path, capsys, extra, words) -> None:
    data = _write(tmp_path / "data", _table())
    code, _, err = _run(capsys, str(data), *BASE, *extra, "-o", str(tmp_path / "out"))
    _one_line_error(code, err, *words)


def test_scheduler_needs_the_dask_engine(tmp_path, capsys) -> None:
    code, _, err = _run(capsys, "x.csv", "--k", "5", "--qi", "a", "--labels", "--target", "y",
                        "--scheduler", "tcp://127.0.0.1:1", "-o", str(tmp_path / "o.csv"))
    _one_line_error(code, err, "--scheduler", "--engine dask")


def test_missing_dask_names_the_extra(tmp_path, capsys, monkeypatch) -> None:
    data = _write(tmp_path / "data", _table())
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    code, _, err = _run(capsys, str(data), *BASE, "-o", str(tmp_path / "out"))
    _one_line_error(code, err, "anonml", "[dask]", "pip install")
    assert not (tmp_path / "out").exists()


def test_unreachable_scheduler(tmp_path, capsys, monkeypatch) -> None:
    pytest.importorskip("distributed")
    import anonml.cli._dask as cli_dask

    monkeypatch.setattr(cli_dask, "_CONNECT_TIMEOUT", 2)
    with socket.socket() as s:  # a port on this machine with nobody listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = _write(tmp_path / "data", _table())
    code, _, err = _run(capsys, str(data), *BASE, "--scheduler", f"tcp://127.0.0.1:{port}",
                        "-o", str(tmp_path / "out"))
    _one_line_error(code, err, "cannot reach the Dask scheduler", str(port))
    assert not (tmp_path / "out").exists()


def test_bad_worker_memory(tmp_path, capsys) -> None:
    pytest.importorskip("distributed")
    data = _write(tmp_path / "data", _table())
    code, _, err = _run(capsys, str(data), *BASE, "--worker-memory", "lots",
                        "-o", str(tmp_path / "out"))
    _one_line_error(code, err, "--worker-memory", "'lots'")


# -- end to end on a LocalCluster of 2 worker processes --------------------------------------
@pytest.fixture(scope="module")
def client():
    pytest.importorskip("distributed")
    adask = pytest.importorskip("anonml.dask", reason="anonml.dask (the engine) not merged")
    c = adask.local_cluster(n_workers=2, memory_limit="1GB", threads_per_worker=1)
    yield c
    cluster = c.cluster
    c.close()
    cluster.close()


@pytest.mark.parametrize("method, extra", [
    ("ag", []), ("mondrian", []), ("ag", ["--refine", "none", "--max-depth", "4"]),
])
def test_end_to_end_on_two_workers(tmp_path, capsys, client, method, extra) -> None:
    frame = _table()
    data = _write(tmp_path / "data", frame)
    out = tmp_path / "out"
    argv = [a for a in BASE if method == "ag" or a != "--labels"]
    code, stdout, err = _run(capsys, str(data), *argv, "--method", method, *extra,
                             "--scheduler", client.scheduler.address, "-o", str(out), "--json")
    assert code == 0, err
    import json

    summary = json.loads(stdout.strip().splitlines()[-1])
    assert summary["rows"] == len(frame) and summary["min_class_size"] >= 20
    written = pd.read_parquet(out)
    assert len(written) == len(frame)
    assert written.groupby(["age", "sex", "zip"]).size().min() >= 20  # checked here too
    # non-QI columns unchanged as a multiset; every QI combination is a real input record
    assert sorted(written["hours"]) == sorted(frame["hours"])
    real = set(map(tuple, frame[["age", "sex", "zip"]].to_numpy().tolist()))
    assert set(map(tuple, written[["age", "sex", "zip"]].to_numpy().tolist())) <= real
    assert not [p for p in tmp_path.iterdir() if p.name not in ("data", "out")]  # no leftovers
    if extra:  # a depth limit of 4 levels: at most 2**4 tree leaves, none cut further
        assert summary["groups"] <= 16


def test_own_local_cluster_with_progress(tmp_path, capsys) -> None:
    """Without --scheduler the command starts (and closes) its own LocalCluster."""
    pytest.importorskip("anonml.dask", reason="anonml.dask (the engine) not merged")
    frame = _table(2000, 3)
    data = _write(tmp_path / "data", frame, parts=2)
    code, stdout, err = _run(capsys, str(data), *BASE, "--workers", "2", "--worker-memory",
                             "1GB", "-o", str(tmp_path / "out"))
    assert code == 0, err
    assert "wrote" in stdout and "verified" in stdout and "2,000 rows" in stdout
    assert "starting a local cluster" in err and "tree" in err  # progress lines (no terminal)
    assert "Traceback" not in err and "warn" not in err.lower()
    assert len(pd.read_parquet(tmp_path / "out")) == len(frame)


# -- one reading of the dataset (anonml/engine/_dataset.py, shared by the CLI and the engine) ----
def _hidden_copies(data: Path, frame: pd.DataFrame) -> None:
    """Files Arrow and Dask skip: an underscore file and a hidden folder's copy."""
    frame.iloc[:500].to_parquet(data / "_extra.parquet")
    (data / ".old").mkdir()
    frame.to_parquet(data / ".old" / "part-0.parquet")
    (data / "_tmp").mkdir()
    frame.iloc[:10].to_parquet(data / "_tmp" / "part-1.parquet")


def test_list_files_skips_hidden_and_underscore(tmp_path) -> None:
    from anonml.engine._dataset import list_files

    data = _write(tmp_path / "data", _table(300), parts=3)
    _hidden_copies(data, _table(300))
    (data / "sub").mkdir()
    _table(30).to_parquet(data / "sub" / "part-9.parquet")
    want = sorted(str(p) for p in [*data.glob("part-*.parquet"), data / "sub" / "part-9.parquet"])
    assert list_files(data) == want
    assert list_files(data.as_uri()) == want  # a file:// URL is the same folder
    assert list_files(str(data / "*.parquet")) == want[:3]
    assert list_files(str(data / "**" / "*.parquet")) == want


@pytest.mark.parametrize("as_url", [False, True])
def test_hidden_files_are_not_read_and_the_summary_counts_the_engines_files(
        tmp_path, capsys, client, as_url) -> None:
    """The dataset holds _extra.parquet, .old/part-0.parquet and _tmp/part-1.parquet: the
    output has exactly the visible files' rows and files_in counts the visible files (the
    engine's own count). The same through a file:// URL."""
    frame = _table()
    data = _write(tmp_path / "data", frame)
    _hidden_copies(data, frame)
    out = tmp_path / "out"
    source = data.as_uri() if as_url else str(data)
    code, stdout, err = _run(capsys, source, *BASE, "--scheduler", client.scheduler.address,
                             "-o", str(out), "--json")
    assert code == 0, err
    import json

    summary = json.loads(stdout.strip().splitlines()[-1])
    assert summary["files_in"] == 3
    assert summary["rows"] == len(frame)
    written = pd.read_parquet(out)
    assert len(written) == len(frame)
    assert written["hours"].tolist() == frame["hours"].tolist()


def test_api_counts_the_files_it_read(tmp_path, client) -> None:
    from anonml.dask import anonymize_dataset

    frame = _table()
    data = _write(tmp_path / "data", frame)
    _hidden_copies(data, frame)
    res = anonymize_dataset(data.as_uri(), tmp_path / "out", k=20, quasi_identifiers=["age", "sex", "zip"],
                            method="mondrian", client=client)
    assert (res.n_files, res.n_rows) == (3, len(frame))
    assert len(pd.read_parquet(tmp_path / "out")) == len(frame)


@pytest.mark.parametrize("name", ["table.csv", "part-1.parquet"])
def test_a_csv_given_to_the_dask_engine(tmp_path, capsys, name) -> None:
    """A CSV (alone, or named .parquet inside a dataset) is one line saying the engine reads
    Parquet and naming the file, not pyarrow's 'Parquet magic bytes not found'."""
    data = _write(tmp_path / "data", _table())
    _table(50).to_csv(data / name, index=False)
    source = str(data / name) if name.endswith(".csv") else str(data)
    code, _, err = _run(capsys, source, *BASE, "-o", str(tmp_path / "out"))
    _one_line_error(code, err, "the Dask engine reads Parquet", name, "fix:")
    assert "magic bytes" not in err
    assert not (tmp_path / "out").exists()


# -- the in-memory CLI's rules on the Dask path ---------------------------------------------
def test_identifier_column_refused_then_dropped_or_kept(tmp_path, capsys, client) -> None:
    """A column unique on every row (row_id) is refused as in memory, in one line naming the
    --drop/--keep flags; --drop removes it from the output, --keep writes it. A column unique
    inside each file but repeated across files (the row number in its file) is no identifier:
    the exact count across partitions clears it."""
    frame = _table().assign(row_id=lambda f: np.arange(len(f)) * 7 + 1000)
    data = _write(tmp_path / "data", frame)
    for i, f in enumerate(sorted(data.glob("*.parquet"))):  # row number within each file
        part = pd.read_parquet(f)
        part.assign(line=np.arange(len(part))).to_parquet(f)
    addr = ["--scheduler", client.scheduler.address]
    code, _, err = _run(capsys, str(data), *BASE, *addr, "-o", str(tmp_path / "out"))
    _one_line_error(code, err, "'row_id'", "different value on every row", "--drop row_id",
                    "--keep")
    assert "'line'" not in err
    assert not (tmp_path / "out").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]
    code, _, err = _run(capsys, str(data), *BASE, *addr, "--drop", "row_id", "-o",
                        str(tmp_path / "dropped"))
    assert code == 0, err
    dropped = pd.read_parquet(tmp_path / "dropped")
    assert "row_id" not in dropped.columns and len(dropped) == len(frame)
    assert dropped["line"].tolist() == pd.concat(
        [pd.read_parquet(f) for f in sorted(data.glob("*.parquet"))])["line"].tolist()
    code, _, err = _run(capsys, str(data), *BASE, *addr, "--keep", "row_id", "-o",
                        str(tmp_path / "kept"))
    assert code == 0, err
    assert pd.read_parquet(tmp_path / "kept")["row_id"].tolist() == frame["row_id"].tolist()


def test_drop_of_a_qi_or_unknown_column(tmp_path, capsys) -> None:
    data = _write(tmp_path / "data", _table())
    code, _, err = _run(capsys, str(data), *BASE, "--drop", "age", "-o", str(tmp_path / "o"))
    _one_line_error(code, err, "--drop 'age'", "quasi-identifier")
    code, _, err = _run(capsys, str(data), *BASE, "--keep", "nope", "-o", str(tmp_path / "o"))
    _one_line_error(code, err, "--keep 'nope'", "not a column")


def test_a_missing_label_is_named_as_the_user_knows_it(tmp_path, capsys, client) -> None:
    frame = _table()
    frame["income"] = frame["income"].astype(object)
    frame.loc[5, "income"] = None
    data = _write(tmp_path / "data", frame)
    code, _, err = _run(capsys, str(data), *BASE, "--scheduler", client.scheduler.address,
                        "-o", str(tmp_path / "out"))
    _one_line_error(code, err, "'income'", "missing values")
    assert "guide" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]


def test_a_damaged_data_page_names_the_file(tmp_path, capsys, client) -> None:
    """The footer (schema) is intact, so the checks before the run pass; the column chunks
    are garbage. The worker's error is one line naming the file, nothing is written."""
    data = _write(tmp_path / "data", _table())
    bad = data / "part-1.parquet"
    raw = bytearray(bad.read_bytes())
    footer = int.from_bytes(raw[-8:-4], "little") + 8
    for i in range(8, len(raw) - footer - 8):  # every byte of the data pages
        raw[i] = (raw[i] * 31 + 17) % 256
    bad.write_bytes(bytes(raw))
    code, _, err = _run(capsys, str(data), *BASE, "--scheduler", client.scheduler.address,
                        "-o", str(tmp_path / "out"))
    _one_line_error(code, err, "part-1.parquet", "could not be read", "fix:")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]


def test_no_workers_timeout_flag(tmp_path, capsys) -> None:
    code, _, err = _run(capsys, "x.csv", "--k", "5", "--qi", "a", "--labels", "--target", "y",
                        "--no-workers-timeout", "5", "-o", str(tmp_path / "o.csv"))
    _one_line_error(code, err, "--no-workers-timeout", "--engine dask")
    data = _write(tmp_path / "data", _table())
    code, _, err = _run(capsys, str(data), *BASE, "--no-workers-timeout", "0",
                        "-o", str(tmp_path / "out"))
    _one_line_error(code, err, "--no-workers-timeout", "more than 0")


def test_a_stored_pandas_index_is_not_a_column(tmp_path, capsys, client) -> None:
    """Files written from frames with their own index hold '__index_level_0__', which pandas
    reads back as the index: it is not a column to check or to read (it was a KeyError in
    the identifier check), and the output does not carry it."""
    frame = _table()
    data = tmp_path / "data"
    data.mkdir()
    for i, idx in enumerate(np.array_split(np.arange(len(frame)), 3)):
        part = frame.iloc[idx]
        part.index = part.index * 3 + 11  # unique on every row
        part.to_parquet(data / f"part-{i}.parquet")
    code, _, err = _run(capsys, str(data), *BASE, "--scheduler", client.scheduler.address,
                        "-o", str(tmp_path / "out"))
    assert code == 0, err
    out = pd.read_parquet(tmp_path / "out")
    assert list(out.columns) == list(frame.columns) and len(out) == len(frame)
    assert out.index.tolist() == list(range(len(frame)))


# -- one line, and nothing else, on standard error (issue 21, items 2 and 7) -----------------
def _cli(tmp_path: Path, *argv: str, env: dict | None = None) -> "subprocess.CompletedProcess":
    """The command in a process of its own, so that its stderr holds whatever the worker
    processes of its local cluster print too."""
    import os
    import subprocess

    import anonml

    src = str(Path(anonml.__file__).resolve().parents[1])
    path = os.environ.get("PYTHONPATH")
    env = {**os.environ, "PYTHONPATH": src + (os.pathsep + path if path else ""), **(env or {})}
    env.pop("ANONML_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "anonml", *argv], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=300)


def _damage(path: Path) -> None:
    """Garbage in every byte of the data pages; the footer (schema) intact."""
    raw = bytearray(path.read_bytes())
    footer = int.from_bytes(raw[-8:-4], "little") + 8
    for i in range(8, len(raw) - footer - 8):
        raw[i] = (raw[i] * 31 + 17) % 256
    path.write_bytes(bytes(raw))


def test_a_failed_run_on_a_local_cluster_prints_one_line_only(tmp_path) -> None:
    """A worker process of the command's own local cluster fails reading a damaged page:
    distributed logs the task's error and traceback in that process ("distributed.worker -
    ERROR - Compute Failed ..."), which wrote to the command's stderr before its one line.
    The workers are started silenced; stderr is the one line (relative paths, as typed)."""
    pytest.importorskip("distributed")
    _write(tmp_path / "data", _table())
    _damage(tmp_path / "data" / "part-1.parquet")
    run = _cli(tmp_path, "anonymize", "data", *BASE, "--workers", "2", "--worker-memory",
               "1GB", "-q", "-o", "out")
    assert run.returncode == 1
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr[-3000:]
    assert lines[0].startswith("anonml: error: Parquet file 'data/part-1.parquet' could not "
                               "be read"), lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]


@pytest.mark.parametrize("address, words", [
    ("tcp://127.0.0.1:abc", "invalid literal"),
    ("http://127.0.0.1:8787", "unknown address scheme 'http'"),
    ("tcp://127.0.0.1:99999", "port 99999"),
    ("tcp://:8786", "no host"),
])
def test_a_malformed_scheduler_address(tmp_path, address, words) -> None:
    """Refused before any connection: distributed's Client fails on these inside its
    constructor, then hangs 20 s at exit and prints 'Exception ignored in: Client.__del__'
    with a traceback."""
    pytest.importorskip("distributed")
    _write(tmp_path / "data", _table(200))
    run = _cli(tmp_path, "anonymize", "data", *BASE, "--scheduler", address, "-o", "out")
    assert run.returncode == 1
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr[-3000:]
    assert f"--scheduler {address!r} is not a Dask scheduler address" in lines[0]
    assert words in lines[0] and "fix: give the address" in lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]


def test_an_s3_url_with_no_server(tmp_path, capsys, monkeypatch) -> None:
    """No S3 server at the endpoint: one line naming the URL and what to check."""
    pytest.importorskip("s3fs")
    with socket.socket() as s:  # a port on this machine with nobody listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for key, value in {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_MAX_ATTEMPTS": "1",
                       "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y",
                       "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(key, value)
    import s3fs

    # fsspec keeps one S3FileSystem per set of arguments, with the endpoint it was made with:
    # start without one, and leave none pointing at this dead port for later tests
    s3fs.S3FileSystem.clear_instance_cache()
    try:
        code, _, err = _run(capsys, "s3://anonml-none/data/", *BASE, "-o", str(tmp_path / "out"))
    finally:
        s3fs.S3FileSystem.clear_instance_cache()
    _one_line_error(code, err, "cannot list 's3://anonml-none/data/'", "reachable",
                    "AWS_ENDPOINT_URL")
    assert list(tmp_path.iterdir()) == []


def test_the_engine_help_of_each_command() -> None:
    """--engine is shared by anonymize and transform; each says what it does there."""
    from anonml.cli import build_parser

    def engine_help(command: str) -> str:
        sub = next(a for a in build_parser()._actions if a.dest == "command")
        return next(a.help for a in sub.choices[command]._actions if a.dest == "engine")

    assert "--method ag or mondrian" in engine_help("anonymize")
    transform = engine_help("transform")
    assert "--method" not in transform and "map every file" in transform


@pytest.fixture(scope="module")
def mapping(tmp_path_factory) -> Path:
    """A mapping saved by the in-memory command (the same kind of file as a Dask run's)."""
    pytest.importorskip("skops")
    root = tmp_path_factory.mktemp("mapping")
    _table().to_csv(root / "train.csv", index=False)
    code = main(["anonymize", str(root / "train.csv"), "--k", "20", "--qi", "age,sex,zip",
                 "--target", "income", "--labels", "--save-mapping", str(root / "m.skops"),
                 "-o", str(root / "out.csv"), "-q"])
    assert code == 0
    return root / "m.skops"


def _rows(folder: Path, parts: int = 3) -> Path:
    return _write(folder, _table(600, 7).drop(columns=["income"]), parts)


def _retype(folder: Path) -> None:
    odd = pd.read_parquet(folder / "part-2.parquet")
    odd["age"] = odd["age"].astype(str)
    odd.to_parquet(folder / "part-2.parquet")


#: each failure of `anonml transform --engine dask`: how the dataset is spoiled, the extra
#: arguments, and the words of the one line
TRANSFORM_FAILURES = {
    "missing folder": (lambda d: None, [], ["'{root}/nope'", "does not exist"]),
    "schema differs": (_retype, [], ["'age'", "part-2.parquet", "string"]),
    "corrupt page": (lambda d: _damage(d / "part-1.parquet"), ["cluster"],
                     ["part-1.parquet", "could not be read", "fix:"]),
    "output exists": (lambda d: (d.parent / "out").mkdir(), [], ["output", "exists"]),
    "unfitted column": (lambda d: [pd.read_parquet(f).assign(income="x").to_parquet(f)
                                   for f in d.glob("*.parquet")], [], ["'income'", "--drop"]),
    "scheduler address": (lambda d: None, ["--scheduler", "tcp://127.0.0.1:abc"],
                          ["--scheduler", "not a Dask scheduler address"]),
}


@pytest.mark.parametrize("case", list(TRANSFORM_FAILURES))
def test_transform_on_dask_fails_in_one_line(tmp_path, capsys, mapping, client, case) -> None:
    spoil, extra, words = TRANSFORM_FAILURES[case]
    data = _rows(tmp_path / "rows")
    spoil(data)
    before = sorted(p.name for p in tmp_path.iterdir())
    source = str(tmp_path / "nope") if case == "missing folder" else str(data)
    extra = ["--scheduler", client.scheduler.address] if extra == ["cluster"] else extra
    code = main(["transform", source, "--engine", "dask", "--mapping", str(mapping),
                 "--handle-unknown", "ignore", "-o", str(tmp_path / "out"), "-q", *extra])
    _, err = capsys.readouterr()
    _one_line_error(code, err, *[w.format(root=tmp_path) for w in words])
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written
