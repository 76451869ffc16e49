"""Mutation fuzzing of model files (issue 18, item 7): genuine files edited with their containers
kept valid, each run through the sandbox in a batch subprocess, and no mutant may crash, hang,
print a traceback or run code in the auditor. The default run is a short budget; the long one
is ``python -m pytest -m slow tests/modelfile/test_fuzz_model_files.py`` (``docs/security.md``)."""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pytest

from anonml.modelfile import _fuzz
from anonml.modelfile._validate_xgboost import decode_xgboost_raw
from anonml.safemodel import _fuzz_run

pytest.importorskip("skops")

#: the short budget: mutants per genuine file (14 in all), fixed seed
SHORT = {"tree": 1, "forest": 1, "hgb": 1, "pipeline": 2, "map_accuracy_guided": 2,
         "map_mondrian": 1, "map_hilbert": 1, "map_rtree": 1, "xgboost_json": 2,
         "xgboost_ubj": 2}
SEED = 18


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return _fuzz_run.genuine_files(tmp_path_factory.mktemp("genuine"))


def _container_ok(data: bytes, suffix: str) -> None:
    if suffix == ".skops":
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            assert zf.testzip() is None
            json.loads(zf.read("schema.json"))
    else:
        assert isinstance(decode_xgboost_raw(data), dict)


def test_mutants_keep_the_container_valid_and_are_reproducible(corpus):
    for name, (path, _) in corpus.items():
        data = path.read_bytes()
        first = list(_fuzz.mutants(data, path.suffix, 7, 12, source=name))
        again = list(_fuzz.mutants(data, path.suffix, 7, 3, source=name, start=4))
        assert [m.data for m in first[4:7]] == [m.data for m in again]
        assert [m.edit for m in first[4:7]] == [m.edit for m in again]
        changed = 0
        for m in first:
            _container_ok(m.data, m.suffix)
            assert m.edit
            changed += m.data != data
        assert changed >= 8, name


def test_ubjson_encoder_round_trips_a_genuine_model(corpus):
    xgb = pytest.importorskip("xgboost")
    path, (X, _) = corpus["xgboost_ubj"]
    doc = decode_xgboost_raw(path.read_bytes())
    again = _fuzz.encode_ubj(doc)
    back = decode_xgboost_raw(again)
    assert _fuzz._dumps(doc) == _fuzz._dumps(back)
    ours, theirs = xgb.XGBClassifier(), xgb.XGBClassifier()
    ours.load_model(bytearray(again))
    theirs.load_model(path)
    np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), rtol=1e-6)
    json_path = corpus["xgboost_json"][0]
    text = _fuzz._dumps(decode_xgboost_raw(json_path.read_bytes())).encode()
    assert json.loads(text) == json.loads(json_path.read_bytes())


def test_npy_edits_keep_plain_arrays_readable():
    rng = np.random.default_rng(0)
    data = _fuzz._npy(np.arange(12, dtype=np.int64).reshape(3, 4))
    for _ in range(40):
        out, edit = _fuzz._edit_npy(data, rng)
        assert edit and out[:6] == b"\x93NUMPY"


def _marker_file(path, dst):
    """``path`` with its root object's type renamed to the marker module's class."""
    with zipfile.ZipFile(path) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    schema = json.loads(members.pop("schema.json"))
    schema["__module__"], schema["__class__"] = _fuzz.MARKER_MODULE, "Thing"
    with zipfile.ZipFile(dst, "w") as zf:
        zf.writestr("schema.json", json.dumps(schema))
        for n, d in members.items():
            zf.writestr(n, d)
    return dst


def test_short_fuzz_budget_finds_nothing(corpus, tmp_path):
    # first a genuine file (ok) and one naming the marker module (refused, no code ran)
    genuine, table = corpus["tree"]
    paths = [genuine, _marker_file(genuine, tmp_path / "marker.skops")]
    rows, made = [table, table], []
    for name, n in SHORT.items():
        if name not in corpus:  # XGBoost not installed
            continue
        src, table = corpus[name]
        for m in _fuzz.mutants(src.read_bytes(), src.suffix, SEED, n, source=name):
            dst = tmp_path / f"{name}-{m.index}{m.suffix}"
            dst.write_bytes(m.data)
            paths.append(dst)
            rows.append(table)
            made.append(m)
    if "xgboost_ubj" in corpus:  # a genuine XGBoost file opens in the sandbox (its worker
        paths.insert(2, corpus["xgboost_ubj"][0])  # looks up XGBoost's own C functions)
        rows.insert(2, corpus["xgboost_ubj"][1])
    outcomes = _fuzz_run.run_mutants(paths, rows, timeout=120.0, workdir=tmp_path)
    ok, marker = outcomes[0], outcomes[1]
    assert ok.outcome == "ok", ok
    assert marker.outcome == "refused" and "vetted" in marker.detail, marker
    if "xgboost_ubj" in corpus:
        assert outcomes[2].outcome == "ok", outcomes[2]
    outcomes = outcomes[len(paths) - len(made):]
    assert len(outcomes) == len(made) >= 10
    findings = [f"{m.source} seed {m.seed} index {m.index} [{m.edit}]: {o.outcome}: {o.detail}"
                for m, o in zip(made, outcomes) if o.outcome in _fuzz_run.FINDINGS]
    assert not findings, "\n".join(findings)
    assert {o.outcome for o in outcomes} <= {"ok", "refused"}
    for o in outcomes:
        if o.outcome == "refused":
            assert "\n" not in o.detail and o.detail.strip()


@pytest.mark.slow
def test_long_fuzz_budget_records_counts(tmp_path):
    """The long budget (a fixed seed): counts go to ``benchmarks/results``."""
    from pathlib import Path

    result = _fuzz_run.campaign(tmp_path, 600, seed=SEED, timeout=120.0, jobs=2)
    out = Path(__file__).parents[2] / "benchmarks" / "results" / "fuzz_model_files.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    assert result["n_mutants"] == 600
    assert not result["findings"], json.dumps(result["findings"], indent=1)[:4000]
