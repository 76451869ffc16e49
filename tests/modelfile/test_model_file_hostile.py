"""Hostile model files: a corpus the tests build themselves.

For every crafted file: no code from it runs (a marker module the file names is never imported,
a marker file is never written), the process does not crash, and the reader gives one line
(an anonml error, or exit 1 and one ``anonml: error:`` line from the CLI).
"""

from __future__ import annotations

import io
import json
import os
import pickle
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer, OneHotEncoder, StandardScaler
from sklearn.tree import DecisionTreeClassifier

from anonml._errors import AnonmlError, InputError, UntrustedModelError
from anonml.modelfile._validate_xgboost import decode_xgboost_raw, validate_xgboost_model
from anonml.safemodel import SafeDecisionTreeClassifier, load_model, save_model

pytest.importorskip("skops")

MARKER_MODULE = "anonml_hostile_marker_mod"


@pytest.fixture()
def marker(tmp_path, monkeypatch):
    """A module that, if anything imports it, writes a file: proof that code from a file ran."""
    hit = tmp_path / "CODE_RAN"
    pkg = tmp_path / "mods"
    pkg.mkdir()
    (pkg / f"{MARKER_MODULE}.py").write_text(
        "import pathlib\n"
        f"pathlib.Path({str(hit)!r}).write_text('ran')\n"
        "def boom(*a, **k):\n"
        f"    pathlib.Path({str(hit)!r}).write_text('ran')\n"
        "class Thing:\n"
        "    def __init__(self, *a, **k):\n"
        f"        pathlib.Path({str(hit)!r}).write_text('ran')\n"
    )
    monkeypatch.syspath_prepend(str(pkg))
    monkeypatch.setenv("PYTHONPATH", str(pkg) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    sys.modules.pop(MARKER_MODULE, None)
    yield hit
    assert not hit.exists(), "code from the model file ran"
    assert MARKER_MODULE not in sys.modules, "the model file's module was imported"


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=300), "b": rng.integers(0, 5, 300).astype(float),
                      "c": rng.choice(["x", "y", "z"], 300)})
    y = np.where(X["a"] + rng.normal(size=300) > 0, "yes", "no")
    return X, y


@pytest.fixture(scope="module")
def real_files(tmp_path_factory, data):
    """Genuine model files, to mutate into hostile ones."""
    X, y = data
    out = tmp_path_factory.mktemp("real")
    num = X[["a", "b"]]
    models = {
        "tree": SafeDecisionTreeClassifier(min_samples_leaf=5, random_state=0).fit(num, y),
        "forest": RandomForestClassifier(n_estimators=3, min_samples_leaf=5,
                                         random_state=0).fit(num, y),
        "pipe": Pipeline([("pre", ColumnTransformer([("c", OneHotEncoder(), ["c"]),
                                                     ("n", StandardScaler(), ["a", "b"])])),
                          ("m", DecisionTreeClassifier(max_depth=4, random_state=0))]).fit(X, y),
        "hgb": HistGradientBoostingClassifier(max_iter=3, random_state=0).fit(num, y),
    }
    paths = {}
    for name, model in models.items():
        paths[name] = out / f"{name}.skops"
        save_model(model, paths[name])
    return paths


# ----------------------------------------------------------------------------- helpers


def _read_zip(path: Path) -> tuple[dict, dict[str, bytes]]:
    with zipfile.ZipFile(path) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    return json.loads(members.pop("schema.json")), members


def _write_zip(path: Path, schema: dict, members: dict[str, bytes]) -> Path:
    """Write a crafted file; members the edited schema no longer names are left out (a file
    with unreferenced members is refused for that alone: tests/modelfile/test_model_content.py)."""
    text = json.dumps(schema)
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("schema.json", text)
        for name, data in members.items():
            if f'"{name}"' in text:
                zf.writestr(name, data)
    return path


def _find(state, pred, path=()):
    """Every (path, node) in a schema whose node satisfies pred."""
    if isinstance(state, dict):
        if pred(state):
            yield path, state
        for k, v in state.items():
            yield from _find(v, pred, path + (k,))
    elif isinstance(state, list):
        for i, v in enumerate(state):
            yield from _find(v, pred, path + (i,))


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text, text
    assert isinstance(exc, AnonmlError)
    return text


def _refused(path: Path, match: str, **kw) -> str:
    """The refusal, read in this process (the isolated child gives the same line: tested below,
    and by the CLI tests, which run the default path)."""
    kw.setdefault("isolate", False)
    with pytest.raises((InputError, UntrustedModelError)) as info:
        load_model(path, **kw)
    text = _one_line(info.value)
    assert match in text, text
    return text


def _node(loader, module, cls, **extra):
    return {"__loader__": loader, "__module__": module, "__class__": cls, **extra}


def _wrap_in_estimator(node: dict) -> dict:
    """A SafeDecisionTreeClassifier whose state holds ``node`` as an attribute."""
    return _node("ObjectNode", "anonml.safemodel._wrappers", "SafeDecisionTreeClassifier",
                 content=_node("DictNode", "builtins", "dict",
                               content={"payload": node},
                               key_types=_node("ListNode", "builtins", "list",
                                               content=[_node("TypeNode", "builtins", "str")])),
                 protocol=2)


# ----------------------------------------------------------------------------- type names


HOSTILE_NODES = {
    "attribute chain in the class": _node(
        "ObjectNode", "anonml.safemodel._wrappers", "warnings.sys.path.append"),
    "attribute chain in the module": _node(
        "ObjectNode", "anonml.safemodel._wrappers.warnings.sys.path", "append"),
    "private helper behind a trusted prefix": _node(
        "ObjectNode", "anonml.safemodel._wrappers.warnings", "_getcategory"),
    "__import__": _node("FunctionNode", "builtins", "__import__"),
    "getattr": _node("FunctionNode", "builtins", "getattr"),
    "os.system": _node("FunctionNode", "os", "system"),
    "sys.path.append as a method": _node(
        "MethodNode", "sys", "path", content={"func": "append",
                                              "obj": _node("JsonNode", "builtins", "str",
                                                           content='"x"')}),
    "operator.attrgetter": _node("OperatorFuncNode", "operator", "attrgetter",
                                 attrs=_node("JsonNode", "builtins", "str", content='"x"')),
    "functools.partial": _node("PartialNode", "functools", "partial", content={}),
    "marker module as an object": _node("ObjectNode", MARKER_MODULE, "Thing"),
    "marker module as a function": _node("FunctionNode", MARKER_MODULE, "boom"),
    "marker module as a type": _node("TypeNode", MARKER_MODULE, "Thing"),
    "marker module through a reduce": _node(
        "TreeNode", MARKER_MODULE, "Thing", __reduce__={"args": _node(
            "TupleNode", "builtins", "tuple", content=[])},
        content=_node("DictNode", "builtins", "dict", content={},
                      key_types=_node("ListNode", "builtins", "list", content=[]))),
    "os.system through a reduce": _node(
        "TreeNode", "os", "system", __reduce__={"args": _node(
            "TupleNode", "builtins", "tuple", content=[])},
        content=_node("DictNode", "builtins", "dict", content={},
                      key_types=_node("ListNode", "builtins", "list", content=[]))),
    "sklearn estimator not on the list": _node("ObjectNode", "sklearn.svm._classes", "SVC"),
    "subprocess.Popen as an object": _node("ObjectNode", "subprocess", "Popen"),
    "newline in a name": _node("ObjectNode", "sklearn.pipeline\nimport os", "Pipeline"),
    "unknown loader": _node("EvalNode", "builtins", "eval"),
    "cached node to nowhere": _node("CachedNode", "builtins", "dict", __id__=123456789),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_NODES))
def test_hostile_type_names_are_refused_before_anything_is_imported(case, tmp_path, marker):
    path = _write_zip(tmp_path / "m.skops", _wrap_in_estimator(HOSTILE_NODES[case]), {})
    text = _refused(path, "is refused")
    assert "model file" in text and "m.skops" in text
    # the same file at the top level, not inside an estimator
    top = dict(HOSTILE_NODES[case], protocol=2)
    _refused(_write_zip(tmp_path / "top.skops", top, {}), "is refused")


def test_function_nodes_are_refused_outright_even_for_vetted_functions(tmp_path, marker):
    """scikit-learn's own check_array is harmless, but functions are not data: refused."""
    node = _node("FunctionNode", "sklearn.utils.validation", "check_array")
    path = _write_zip(tmp_path / "f.skops", _wrap_in_estimator(node), {})
    assert "function" in _refused(path, "would run code")


def test_a_function_transformer_with_a_payload_is_refused(tmp_path, marker):
    """The realistic attack: a pipeline step whose function runs when the audit predicts."""
    import skops.io as sio

    marker_mod = pytest.importorskip(MARKER_MODULE)  # imported here, by the test, to save it
    sys.modules.pop(MARKER_MODULE, None)
    marker.unlink(missing_ok=True)
    X = np.random.default_rng(0).normal(size=(50, 2))
    y = (X[:, 0] > 0).astype(int)
    pipe = Pipeline([("f", FunctionTransformer(np.log1p)),
                     ("m", DecisionTreeClassifier(random_state=0))]).fit(X, y)
    path = tmp_path / "pipe.skops"
    sio.dump(pipe, path)
    schema, members = _read_zip(path)
    for _, node in _find(schema, lambda s: s.get("__loader__") == "FunctionNode"):
        node["__module__"], node["__class__"] = MARKER_MODULE, "boom"
    _write_zip(path, schema, members)
    del marker_mod
    sys.modules.pop(MARKER_MODULE, None)
    marker.unlink(missing_ok=True)
    _refused(path, "would run code")


def test_pickles_need_trust_and_never_run_without_it(tmp_path, marker):
    class Payload:
        def __reduce__(self):
            return (Path(marker).write_text, ("ran",))

    for suffix in (".pkl", ".pickle", ".joblib"):
        path = tmp_path / f"m{suffix}"
        path.write_bytes(pickle.dumps(Payload()))
        with pytest.raises(UntrustedModelError, match="--trust-model"):
            load_model(path)


# ----------------------------------------------------------------------------- members


def test_object_array_member_is_refused(tmp_path, real_files, marker):
    schema, members = _read_zip(real_files["tree"])
    name = next(n for n in members if n.endswith(".npy"))
    buf = io.BytesIO()
    np.save(buf, np.array([{"x": 1}, None], dtype=object), allow_pickle=True)
    members[name] = buf.getvalue()
    text = _refused(_write_zip(tmp_path / "obj.skops", schema, members), "objects need pickle")
    assert name in text


@pytest.mark.parametrize("garbage", [b"", b"not an npy file at all", b"\x93NUMPY\x01\x00\xff\xff"])
def test_garbage_array_member_is_refused(tmp_path, real_files, garbage):
    schema, members = _read_zip(real_files["tree"])
    name = next(n for n in members if n.endswith(".npy"))
    members[name] = garbage
    _refused(_write_zip(tmp_path / "g.skops", schema, members), "is refused")


def test_array_member_shorter_than_its_header_is_refused(tmp_path, real_files):
    schema, members = _read_zip(real_files["tree"])
    name = next(n for n in members if n.endswith(".npy"))
    members[name] = members[name][:-8]
    _refused(_write_zip(tmp_path / "short.skops", schema, members), "declares")


def test_missing_member_and_bad_containers(tmp_path, real_files):
    schema, members = _read_zip(real_files["tree"])
    name = next(n for n in members if n.endswith(".npy"))
    _refused(_write_zip(tmp_path / "miss.skops", schema,
                        {k: v for k, v in members.items() if k != name}), "does not hold")
    (tmp_path / "nozip.skops").write_bytes(b"PK\x03\x04 truncated")
    _refused(tmp_path / "nozip.skops", "not a readable .skops file")
    with zipfile.ZipFile(tmp_path / "noschema.skops", "w") as zf:
        zf.writestr("other.txt", "x")
    _refused(tmp_path / "noschema.skops", "no schema.json")
    with zipfile.ZipFile(tmp_path / "badjson.skops", "w") as zf:
        zf.writestr("schema.json", "{not json")
    _refused(tmp_path / "badjson.skops", "unreadable schema.json")
    deep = {"__loader__": "ListNode", "__module__": "builtins", "__class__": "list"}
    for _ in range(300):
        deep = {"__loader__": "ListNode", "__module__": "builtins", "__class__": "list",
                "content": [deep]}
    _refused(_write_zip(tmp_path / "deep.skops", deep, {}), "deeper than")
    with zipfile.ZipFile(tmp_path / "deeper.skops", "w") as zf:
        zf.writestr("schema.json", "[" * 200_000 + "]" * 200_000)
    _refused(tmp_path / "deeper.skops", "nested too deeply")


# ----------------------------------------------------------------------------- crafted trees


def _mutate_tree(src: Path, dst: Path, edit, which: int = 0) -> Path:
    """Rewrite the ``which``-th scikit-learn tree's node array (or its state) in a file."""
    schema, members = _read_zip(src)
    trees = [n for _, n in _find(schema, lambda s: s.get("__loader__") == "TreeNode")]
    tree = trees[which]
    fields = tree["content"]["content"]
    nodes_file = fields["nodes"]["file"]
    values_file = fields["values"]["file"]
    nodes = np.load(io.BytesIO(members[nodes_file]))
    values = np.load(io.BytesIO(members[values_file]))
    nodes, values = edit(nodes.copy(), values.copy(), fields)
    for name, arr in ((nodes_file, nodes), (values_file, values)):
        buf = io.BytesIO()
        np.save(buf, arr)
        members[name] = buf.getvalue()
    return _write_zip(dst, schema, members)


def _set(field, index, value):
    def edit(nodes, values, fields):
        nodes[field][index] = value
        return nodes, values
    return edit


def _internal(nodes):
    return int(np.flatnonzero(nodes["left_child"] != -1)[0])


TREE_EDITS = {
    "child far out of range": (_set("left_child", 0, 10**9), "out of range"),
    "negative child": (_set("right_child", 0, -7), "out of range"),
    "child points back at the root": (_set("right_child", 0, 0), "out of range or not after"),
    "feature out of range": (_set("feature", 0, 10**7), "feature"),
    "negative feature": (_set("feature", 0, -3), "feature"),
    "threshold NaN": (_set("threshold", 0, np.nan), "threshold"),
    "threshold inf": (_set("threshold", 0, np.inf), "threshold"),
    "one child only": (_set("left_child", 0, -1), "one child"),
    "missing_go_to_left 7": (_set("missing_go_to_left", 0, 7), "missing_go_to_left"),
}


@pytest.mark.parametrize("case", sorted(TREE_EDITS))
@pytest.mark.parametrize("model", ["tree", "forest", "pipe"])
def test_crafted_tree_nodes_are_refused_before_predict(case, model, tmp_path, real_files):
    edit, match = TREE_EDITS[case]
    which = 2 if model == "forest" else 0
    path = _mutate_tree(real_files[model], tmp_path / "t.skops", edit, which)
    text = _refused(path, match)
    assert "tree_" in text and "fix:" in text


def test_shared_child_and_shallow_max_depth_and_value_shape(tmp_path, real_files):
    def shared(nodes, values, fields):
        # the last internal node's right child becomes its left child too: one node with two
        # parents, and the old left child with none
        b = np.flatnonzero(nodes["left_child"] != -1)[-1]
        nodes["left_child"][b] = nodes["right_child"][b]
        return nodes, values
    _refused(_mutate_tree(real_files["tree"], tmp_path / "s.skops", shared), "parents")

    def shallow(nodes, values, fields):
        fields["max_depth"]["content"] = "1"
        return nodes, values
    _refused(_mutate_tree(real_files["tree"], tmp_path / "d.skops", shallow), "max_depth")

    def values_shape(nodes, values, fields):
        return nodes, values[:, :, :1].copy()
    _refused(_mutate_tree(real_files["tree"], tmp_path / "v.skops", values_shape), "value")

    def values_nan(nodes, values, fields):
        values[-1, 0, 0] = np.nan
        return nodes, values
    _refused(_mutate_tree(real_files["tree"], tmp_path / "n.skops", values_nan), "not finite")


def test_crafted_tree_in_a_subprocess_does_not_crash_the_cli(tmp_path, real_files, data):
    """The segfault case of the issue (children 1e9): exit 1, one line, nothing written."""
    X, y = data
    path = _mutate_tree(real_files["tree"], tmp_path / "crash.skops",
                        _set("left_child", 0, 10**9))
    table = X[["a", "b"]].assign(t=y)
    table.to_csv(tmp_path / "train.csv", index=False)
    table.to_csv(tmp_path / "test.csv", index=False)
    out = tmp_path / "report"
    proc = subprocess.run(
        [sys.executable, "-m", "anonml", "audit", "--model", str(path), "--train",
         str(tmp_path / "train.csv"), "--test", str(tmp_path / "test.csv"), "--target", "t",
         "--attacks", "none", "-q", "-o", str(out)],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("anonml: error:"), proc.stderr
    assert "Traceback" not in proc.stderr and "left child" in lines[0]
    assert not out.exists()


def test_crafted_hgb_predictor_is_refused(tmp_path, real_files):
    schema, members = _read_zip(real_files["hgb"])
    preds = [n for _, n in _find(schema, lambda s: s.get("__class__") == "TreePredictor")]
    nodes_file = preds[0]["content"]["content"]["nodes"]["file"]
    nodes = np.load(io.BytesIO(members[nodes_file])).copy()
    inner = np.flatnonzero(nodes["is_leaf"] == 0)[0]
    nodes["left"][inner] = 4_000_000_000
    buf = io.BytesIO()
    np.save(buf, nodes)
    members[nodes_file] = buf.getvalue()
    _refused(_write_zip(tmp_path / "h.skops", schema, members), "_predictors")


def test_genuine_files_still_load_and_predict(real_files, data):
    X, _ = data
    for name, path in real_files.items():
        model = load_model(path)
        cols = X if name == "pipe" else X[["a", "b"]]
        assert model.predict_proba(cols).shape == (len(X), 2)


# ----------------------------------------------------------------------------- isolation


def test_isolated_reader_time_and_memory_limits_give_one_line(real_files):
    text = _refused(real_files["tree"], "did not finish", timeout=0.01, isolate=True)
    assert "isolated reader" in text
    if sys.platform.startswith("linux"):
        _refused(real_files["tree"], "isolated reader", memory=64 * 2**20, isolate=True)


def test_isolated_reader_gives_the_same_refusal(tmp_path, real_files, marker):
    path = _mutate_tree(real_files["forest"], tmp_path / "t.skops", _set("feature", 0, 10**7), 1)
    inline = _refused(path, "feature")
    assert _refused(path, "feature", isolate=True) == inline
    hostile = _write_zip(tmp_path / "h.skops", _wrap_in_estimator(
        HOSTILE_NODES["marker module as an object"]), {})
    assert "vetted" in _refused(hostile, "is refused", isolate=True)


# ----------------------------------------------------------------------------- XGBoost


def _ubj(value) -> bytes:
    """A small UBJSON encoder (the subset XGBoost writes), to craft .ubj files."""
    if isinstance(value, dict):
        out = b"{"
        for k, v in value.items():
            kb = k.encode()
            out += b"L" + struct.pack(">q", len(kb)) + kb + _ubj(v)
        return out + b"}"
    if isinstance(value, list):
        if value and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            return b"[$L#L" + struct.pack(">q", len(value)) + struct.pack(f">{len(value)}q", *value)
        if value and all(isinstance(v, float) for v in value):
            return b"[$d#L" + struct.pack(">q", len(value)) + struct.pack(f">{len(value)}f", *value)
        return b"[" + b"".join(_ubj(v) for v in value) + b"]"
    if isinstance(value, bool):
        return b"T" if value else b"F"
    if isinstance(value, int):
        return b"L" + struct.pack(">q", value)
    if isinstance(value, float):
        return b"d" + struct.pack(">f", value)
    if value is None:
        return b"Z"
    s = str(value).encode()
    return b"SL" + struct.pack(">q", len(s)) + s


@pytest.fixture(scope="module")
def xgb_doc(tmp_path_factory):
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    model = xgb.XGBClassifier(n_estimators=3, max_depth=3, random_state=0).fit(X, y)
    path = tmp_path_factory.mktemp("xgb") / "m.json"
    model.save_model(path)
    ubj = path.with_suffix(".ubj")
    model.save_model(ubj)
    return json.loads(path.read_text()), ubj, X


def _tree0(doc):
    return doc["learner"]["gradient_booster"]["model"]["trees"][0]


def _xgb_edit(key, index, value):
    def edit(doc):
        _tree0(doc)[key][index] = value
    return edit


def _xgb_cycle(doc):
    t = _tree0(doc)
    inner = [i for i, c in enumerate(t["left_children"]) if c != -1]
    t["left_children"][inner[-1]] = inner[0]


XGB_EDITS = {
    "child out of range": (_xgb_edit("left_children", 0, 10**6), "outside"),
    "child is the root": (_xgb_edit("right_children", 0, 0), "outside"),
    "cycle": (_xgb_cycle, ""),
    "split index out of range": (_xgb_edit("split_indices", 0, 10**7), "feature"),
    "negative split index": (_xgb_edit("split_indices", 0, -5), "feature"),
    "one child": (_xgb_edit("right_children", 0, -1), "one child"),
    "parent mismatch": (_xgb_edit("parents", 1, 2), "parent"),
    "short array": (lambda d: _tree0(d)["split_conditions"].pop(), "entries"),
    "num_nodes lie": (lambda d: _tree0(d)["tree_param"].update(num_nodes="9999"), "entries"),
    "tree_info out of range": (
        lambda d: d["learner"]["gradient_booster"]["model"]["tree_info"].__setitem__(0, 99),
        "tree_info"),
    "missing tree": (
        lambda d: d["learner"]["gradient_booster"]["model"]["trees"].pop(), "disagree"),
    "no learner": (lambda d: d.pop("learner"), "learner"),
}


@pytest.mark.parametrize("case", sorted(XGB_EDITS))
def test_crafted_xgboost_json_and_ubj_are_refused_before_xgboost_parses_them(
        case, tmp_path, xgb_doc):
    doc, _, _ = xgb_doc
    edit, match = XGB_EDITS[case]
    crafted = json.loads(json.dumps(doc))
    edit(crafted)
    jpath = tmp_path / "m.json"
    jpath.write_text(json.dumps(crafted))
    assert match in _refused(jpath, "is refused", isolate=False)
    upath = tmp_path / "m.ubj"
    upath.write_bytes(_ubj(crafted))
    assert match in _refused(upath, "is refused", isolate=False)


def test_xgboost_files_decode_like_xgboost_and_still_load(xgb_doc):
    doc, ubj, X = xgb_doc
    decoded = decode_xgboost_raw(ubj.read_bytes())
    a, b = _tree0(doc), _tree0(decoded)
    assert list(b["left_children"]) == a["left_children"]
    np.testing.assert_allclose(b["split_conditions"], a["split_conditions"], rtol=1e-6)
    validate_xgboost_model(decoded)
    model = load_model(ubj)
    assert model.predict_proba(X).shape == (len(X), 2)


def test_crafted_booster_inside_skops_is_refused(tmp_path, xgb_doc):
    pytest.importorskip("xgboost")
    from anonml.safemodel import SafeXGBClassifier

    doc, _, X = xgb_doc
    y = (X[:, 0] > 0).astype(int)
    path = tmp_path / "x.skops"
    save_model(SafeXGBClassifier(n_estimators=2, max_depth=2, min_child_weight=5).fit(X, y), path)
    assert load_model(path).predict(X).shape == (len(X),)
    schema, members = _read_zip(path)
    handle = next(n for _, n in _find(schema, lambda s: s.get("__loader__") == "BytearrayNode"))
    crafted = json.loads(json.dumps(doc))
    _xgb_edit("left_children", 0, 10**6)(crafted)
    members[handle["file"]] = json.dumps({"Config": {}, "Model": crafted}).encode()
    text = _refused(_write_zip(tmp_path / "bad.skops", schema, members), "booster is malformed")
    assert "outside" in text


def test_cli_audit_on_hostile_skops_writes_nothing(tmp_path, data, marker):
    X, y = data
    table = X[["a", "b"]].assign(t=y)
    table.to_csv(tmp_path / "train.csv", index=False)
    table.to_csv(tmp_path / "test.csv", index=False)
    path = _write_zip(tmp_path / "m.skops",
                      _wrap_in_estimator(HOSTILE_NODES["attribute chain in the class"]), {})
    out = tmp_path / "report"
    env = dict(os.environ, PYTHONPATH=os.environ["PYTHONPATH"])
    proc = subprocess.run(
        [sys.executable, "-m", "anonml", "audit", "--model", str(path), "--train",
         str(tmp_path / "train.csv"), "--test", str(tmp_path / "test.csv"), "--target", "t",
         "-q", "-o", str(out)], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("anonml: error:") and "refused" in lines[0]
    assert not out.exists()


# ----------------------------------------------------------------------------- saved mappings


@pytest.fixture(scope="module")
def mappings(tmp_path_factory, data):
    from anonml import (AccuracyGuidedAnonymizer, HilbertAnonymizer, MondrianAnonymizer,
                        RTreeAnonymizer, SaNGreeAAnonymizer)

    X, y = data
    out = tmp_path_factory.mktemp("maps")
    qi = ["a", "b", "c"]
    made = {
        "ag": AccuracyGuidedAnonymizer(k=10, quasi_identifiers=qi, tree="hist"),
        "ag_exact": AccuracyGuidedAnonymizer(k=10, quasi_identifiers=qi, tree="exact"),
        "mondrian": MondrianAnonymizer(k=10, quasi_identifiers=qi, recoding="generalize"),
        "hilbert": HilbertAnonymizer(k=10, quasi_identifiers=qi),
        "rtree": RTreeAnonymizer(k=10, quasi_identifiers=qi),
        "sangreea": SaNGreeAAnonymizer(k=10, quasi_identifiers=qi),
    }
    paths = {}
    for name, est in made.items():
        est.fit(X, y)
        paths[name] = (out / f"{name}.skops", est)
        save_model(est, paths[name][0])
    return paths


def test_saved_anonymizers_load_without_trust_and_map_rows_alike(mappings, data):
    X, _ = data
    for name, (path, est) in mappings.items():
        back = load_model(path, isolate=False)
        pd.testing.assert_frame_equal(back.transform(X), est.transform(X), obj=name)


def _edit_member_array(path: Path, dst: Path, owner_class: str, field: str, edit) -> Path:
    schema, members = _read_zip(path)
    owner = next(n for _, n in _find(schema, lambda s: s.get("__class__") == owner_class))
    node = owner["content"]["content"][field]
    arr = np.load(io.BytesIO(members[node["file"]])).copy()
    edit(arr)
    buf = io.BytesIO()
    np.save(buf, arr)
    members[node["file"]] = buf.getvalue()
    return _write_zip(dst, schema, members)


def test_crafted_histogram_tree_cycle_is_refused(tmp_path, mappings):
    path = _edit_member_array(mappings["ag"][0], tmp_path / "h.skops", "RoutingTree",
                              "left_", lambda a: a.__setitem__(0, 0))
    _refused(path, "not after it")


def test_crafted_mondrian_cut_tree_is_refused(tmp_path, mappings):
    def back_to_root(a):
        a[:] = 0
    path = _edit_member_array(mappings["mondrian"][0], tmp_path / "m.skops", "RoutingTree",
                              "right_", back_to_root)
    _refused(path, "not after its node")


# ----------------------------------------------------------------------------- a reviewer's attacks
# Each of these loaded cleanly before the fix and then crashed, corrupted the heap, hung or ran
# code when the model was called (found by attacking the first version of the defence).


def _json(value):
    return _node("JsonNode", "builtins", type(value).__name__ if value is not None else
                 "NoneType", content=json.dumps(value))


@pytest.fixture(scope="module")
def more_files(tmp_path_factory, data):
    from sklearn.ensemble import GradientBoostingClassifier

    X, y = data
    out = tmp_path_factory.mktemp("more")
    num = X[["a", "b"]]
    paths = {"gb": out / "gb.skops", "hgb": out / "hgb.skops"}
    save_model(GradientBoostingClassifier(n_estimators=3, random_state=0).fit(num, y),
               paths["gb"])
    save_model(HistGradientBoostingClassifier(max_iter=3, random_state=0).fit(num, y),
               paths["hgb"])
    return paths


def _widen_tree(tree: dict, members: dict) -> None:
    """Make a tree node read 10**9 features and split its root on the last of them."""
    tree["__reduce__"]["args"]["content"][0] = _json(10**9)
    nodes_file = tree["content"]["content"]["nodes"]["file"]
    nodes = np.load(io.BytesIO(members[nodes_file])).copy()
    nodes["feature"][0] = 10**9 - 1
    buf = io.BytesIO()
    np.save(buf, nodes)
    members[nodes_file] = buf.getvalue()


@pytest.mark.parametrize("variant", ["float", "absent"])
def test_tree_whose_width_is_not_a_whole_number_is_refused(tmp_path, real_files, variant):
    """n_features_in_ = 3.0 (or none) hid a tree that reads feature 10**9 - 1: a segfault."""
    schema, members = _read_zip(real_files["tree"])
    est = schema["content"]["content"]
    _widen_tree(est["tree_"], members)
    if variant == "float":
        est["n_features_in_"] = _json(2.0)
    else:
        del est["n_features_in_"]
    _refused(_write_zip(tmp_path / "w.skops", schema, members), "n_features_in_")


def test_forest_member_reading_other_features_is_refused(tmp_path, real_files):
    """A forest calls its members with check_input=False: a member without n_features_in_
    whose tree reads feature 10**9 - 1 segfaulted."""
    schema, members = _read_zip(real_files["forest"])
    member = schema["content"]["content"]["estimators_"]["content"][0]["content"]["content"]
    del member["n_features_in_"]
    _widen_tree(member["tree_"], members)
    _refused(_write_zip(tmp_path / "f.skops", schema, members), "features but the ensemble")


def test_boosting_grid_wider_than_its_outputs_is_refused(tmp_path, more_files):
    """estimators_ of shape (1, K) with one output column: predict_stages wrote out of bounds
    (heap corruption, 'free(): corrupted unsorted chunks')."""
    schema, members = _read_zip(more_files["gb"])
    grid = schema["content"]["content"]["estimators_"]
    first = grid["content"][0]["content"][0]
    cached = {k: first[k] for k in ("__class__", "__module__", "__id__")}
    cached["__loader__"] = "CachedNode"
    grid["content"] = [_node("ListNode", "builtins", "list", content=[first] + [cached] * 49)]
    grid["shape"] = _node("TupleNode", "builtins", "tuple", content=[_json(1), _json(50)])
    _refused(_write_zip(tmp_path / "g.skops", schema, members), "output column")


def test_categorical_hist_gradient_boosting_flags_are_refused_without_trust(tmp_path,
                                                                            more_files):
    """A bin mapper whose categorical flags disagree with the model's: out-of-bounds bitset
    reads (segfault)."""
    schema, members = _read_zip(more_files["hgb"])
    state = schema["content"]["content"]
    mapper = state["_bin_mapper"]["content"]["content"]
    buf = io.BytesIO()
    np.save(buf, np.array([False, True]))
    members["flags.npy"] = buf.getvalue()
    mapper["is_categorical_"] = _node("NdArrayNode", "numpy", "ndarray", type="numpy",
                                      file="flags.npy")
    _refused(_write_zip(tmp_path / "c.skops", schema, members), "categorical")


def test_pipeline_nested_past_the_limit_is_refused_not_skipped(tmp_path, real_files):
    """Validation used to stop silently past depth 50: a tree 17 pipelines deep with a child
    at 10**7 was never checked and hung predict."""
    schema, members = _read_zip(real_files["pipe"])
    for _ in range(17):  # under the schema's depth limit, over the model's
        schema = _node("ObjectNode", "sklearn.pipeline", "Pipeline", content=_node(
            "DictNode", "builtins", "dict", content={
                "steps": _node("ListNode", "builtins", "list", content=[_node(
                    "TupleNode", "builtins", "tuple", content=[_json("p"), schema])]),
                "memory": _json(None), "verbose": _json(False), "transform_input": _json(None)},
            key_types=_node("ListNode", "builtins", "list", content=[
                _node("TypeNode", "builtins", "str")] * 4)), protocol=2)
    _refused(_write_zip(tmp_path / "deep.skops", schema, members), "nested more than")


def test_attribute_hiding_a_method_is_refused(tmp_path, real_files):
    """predict_proba restored as an attribute made the audit read its own input back."""
    schema, members = _read_zip(real_files["tree"])
    schema["content"]["content"]["predict_proba"] = _node("TypeNode", "numpy", "float64")
    schema["content"]["key_types"]["content"].append(_node("TypeNode", "builtins", "str"))
    _refused(_write_zip(tmp_path / "s.skops", schema, members), "'predict_proba'")


def test_raw_bytes_outside_a_booster_are_refused(tmp_path, real_files):
    """A decoy bytes node sharing the booster handle's id is what skops would build: raw bytes
    are allowed only as a booster's handle, and every bytes member is validated."""
    schema, members = _read_zip(real_files["tree"])
    members["decoy.bin"] = b"{}"
    schema["content"]["content"]["decoy_"] = _node("BytearrayNode", "builtins", "bytearray",
                                                   file="decoy.bin", __id__=42)
    schema["content"]["key_types"]["content"].append(_node("TypeNode", "builtins", "str"))
    _refused(_write_zip(tmp_path / "b.skops", schema, members), "raw bytes outside")


XGB_EDITS_MORE = {
    "category order not a permutation": (
        lambda d: d["learner"]["gradient_booster"]["model"].update(cats={
            "enc": [{"offsets": [], "values": []}, {"offsets": [], "values": []},
                    {"type": 15, "values": [0, 1, 2, 3]}],
            "feature_segments": [0, 0, 0, 4], "sorted_idx": [10**9, 1, 2**31 - 1, 5]}),
        "permutation"),
    "num_class larger than the trees feed": (
        lambda d: d["learner"]["learner_model_param"].update(num_class="1000000"),
        "num_class"),
    "multi-target": (lambda d: d["learner"]["learner_model_param"].update(num_target="100000"),
                     "multi-target"),
    "overflowing number": (lambda d: _tree0(d)["tree_param"].update(num_nodes=1e308 * 10),
                           "impossible value"),
}


@pytest.mark.parametrize("case", sorted(XGB_EDITS_MORE))
def test_more_crafted_xgboost_documents(case, tmp_path, xgb_doc):
    doc, _, _ = xgb_doc
    edit, match = XGB_EDITS_MORE[case]
    crafted = json.loads(json.dumps(doc))
    edit(crafted)
    path = tmp_path / "m.json"
    path.write_text(json.dumps(crafted))
    assert match in _refused(path, "is refused", isolate=False)


def test_genuine_categorical_xgboost_still_loads(tmp_path):
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=200),
                      "c": pd.Categorical(rng.choice(["x", "y", "zz"], 200))})
    model = xgb.XGBClassifier(n_estimators=2, max_depth=3, enable_categorical=True,
                              tree_method="hist").fit(X, (X["a"] > 0).astype(int))
    for suffix in (".json", ".ubj"):
        model.save_model(tmp_path / f"m{suffix}")
        back = load_model(tmp_path / f"m{suffix}", isolate=False)
        np.testing.assert_allclose(back.predict_proba(X), model.predict_proba(X))


def test_isolated_reader_imports_nothing_from_the_current_folder(tmp_path, real_files,
                                                                 monkeypatch):
    """The child once ran as `python -m ...` in the caller's folder: a zipfile.py beside the
    model ran in it."""
    hit = tmp_path / "RAN"
    evil = tmp_path / "submission"
    evil.mkdir()
    for mod in ("zipfile", "json", "numpy", "skops", "sklearn"):
        (evil / f"{mod}.py").write_text(f"open({str(hit)!r}, 'w').write('ran')\n")
    (evil / "m.skops").write_bytes(real_files["tree"].read_bytes())
    monkeypatch.chdir(evil)
    load_model("m.skops")
    assert not hit.exists()


def test_isolated_reader_predicts_on_the_given_rows(real_files, data):
    X, _ = data
    # a genuine model: the child predicts on the rows and the file loads
    assert load_model(real_files["tree"], probe_rows=X[["a", "b"]].head(50)) is not None
    # rows the model cannot take are the caller's error to meet, not a refusal
    assert load_model(real_files["tree"], probe_rows=X.head(5)) is not None


# ----------------------------------------------------------------------------- a second review
# Files a second attack built by editing fitted objects before saving them: each loaded and then
# hung, crashed or corrupted memory when used.


def _saved(tmp_path, model, name="m.skops"):
    path = tmp_path / name
    save_model(model, path)
    return path


def test_rtree_mapping_with_a_routing_cycle_is_refused(tmp_path, mappings):
    from anonml.modelfile._read import _read_and_validate

    est = _read_and_validate(mappings["rtree"][0])
    est.route_.left_[0] = 0
    est.route_.right_[0] = 0
    _refused(_saved(tmp_path, est), "not after it")
    # a file of the earlier form (the R+-tree's own split tree) is checked all the same
    import skops.io as sio

    from anonml.anonymize._model import release_copy

    old = release_copy(mappings["rtree"][1], _legacy=True)
    old._tree = {k: np.array(v, copy=True) for k, v in old._tree.items()}
    old._tree["left"][0] = 0
    old._tree["right"][0] = 0
    path = tmp_path / "old.skops"
    sio.dump(old, path)
    _refused(path, "not after it")


def test_hilbert_mapping_with_an_absurd_curve_order_is_refused(tmp_path, mappings):
    from anonml.modelfile._read import _read_and_validate

    import skops.io as sio

    from anonml.anonymize._model import release_copy

    est = release_copy(mappings["hilbert"][1], _legacy=True)  # the earlier form holds a curve
    est.bits_ = 10**12
    path = tmp_path / "h.skops"
    sio.dump(est, path)
    _refused(path, "curve order")


def test_one_hot_encoder_output_offsets_must_match_its_categories(tmp_path):
    from sklearn.pipeline import make_pipeline

    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, size=(200, 2)).astype(float)
    pipe = make_pipeline(OneHotEncoder(), DecisionTreeClassifier(random_state=0)).fit(
        X, (X[:, 0] + X[:, 1]) % 2)
    pipe[0]._n_features_outs = [10**9, 6 - 10**9]  # same total, a block at offset 1e9
    _refused(_saved(tmp_path, pipe), "output widths")


def test_boosting_init_estimator_must_match_the_classes(tmp_path):
    from sklearn.ensemble import GradientBoostingClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    gb = GradientBoostingClassifier(n_estimators=1, max_depth=1, random_state=0).fit(
        X, np.arange(60) % 3)
    gb.init_.class_prior_ = np.array([1.0])
    gb.init_.n_classes_ = 1
    _refused(_saved(tmp_path, gb), "init_")


def test_dummy_classifier_whose_class_count_lies_is_refused(tmp_path):
    from sklearn.dummy import DummyClassifier

    dummy = DummyClassifier(strategy="uniform").fit(np.zeros((10, 2)), np.arange(10) % 2)
    dummy.n_classes_ = 10**8
    _refused(_saved(tmp_path, dummy), "class count")


def test_hyperparameters_the_audit_would_refit_with_are_bounded(tmp_path, data):
    X, y = data
    forest = RandomForestClassifier(n_estimators=2, random_state=0).fit(X[["a", "b"]], y)
    forest.n_estimators = 10**9
    _refused(_saved(tmp_path, forest), "n_estimators")


def test_a_model_that_exhausts_the_child_s_memory_is_refused(tmp_path, data):
    """The child used to swallow MemoryError in its trial prediction as an ordinary error."""
    from sklearn.dummy import DummyClassifier

    dummy = DummyClassifier(strategy="prior").fit(np.zeros((9000, 1)), np.arange(9000))
    path = _saved(tmp_path, dummy)
    # 9,000 classes x 60,000 rows of float64: 4.3 GB, over the child's 3 GiB
    _refused(path, "ran out of memory", isolate=True, memory=3 * 2**30,
             probe_rows=np.zeros((60_000, 1)))


def test_cli_turns_an_unforeseen_error_into_one_line(tmp_path, monkeypatch, capsys):
    from anonml import cli

    def boom(args):
        raise ZeroDivisionError("deep inside\nsecond line")
    parser = cli.build_parser()
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    sub = next(a for a in parser._subparsers._actions if a.choices)  # noqa: SLF001
    sub.choices["demo"].set_defaults(func=boom)
    monkeypatch.delenv("ANONML_DEBUG", raising=False)
    assert cli.main(["demo", "-o", str(tmp_path / "d")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("anonml: error: unexpected ZeroDivisionError")


# ----------------------------------------------------------------------------- a third review


def test_boosting_loss_must_fit_the_classes(tmp_path):
    """A binomial loss on a 3-class model keeps one raw column; the trees then write three
    into it (heap corruption: 'corrupted size vs. prev_size')."""
    from sklearn._loss.loss import ExponentialLoss
    from sklearn.ensemble import GradientBoostingClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(90, 3))
    gb = GradientBoostingClassifier(n_estimators=2, max_depth=1, random_state=0).fit(
        X, np.arange(90) % 3)
    gb._loss = ExponentialLoss()
    _refused(_saved(tmp_path, gb), "does not fit 3 classes")


def test_linear_model_intercept_and_coef_shapes(tmp_path):
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    lr = LogisticRegression().fit(X, (X[:, 0] > 0).astype(int))
    lr.intercept_ = np.zeros((20_000, 1, 1))  # broadcasting would allocate rows x 20,000
    _refused(_saved(tmp_path, lr, "a.skops"), "intercept_")
    lr = LogisticRegression().fit(X, (X[:, 0] > 0).astype(int))
    lr.coef_ = np.zeros((7, 4))
    _refused(_saved(tmp_path, lr, "b.skops"), "coef_")


def _chain(doc, depth):
    """Tree 0 of an XGBoost document as a chain ``depth`` deep (each right child a leaf)."""
    n = 2 * depth + 1  # the chain is nodes 0, 1, 3, 5, ...; 2, 4, 6, ... are leaves
    left = [-1] * n
    right = [-1] * n
    parents = [2147483647] * n
    node = 0
    for d in range(depth):
        left[node], right[node] = 2 * d + 1, 2 * d + 2
        parents[2 * d + 1] = parents[2 * d + 2] = node
        node = 2 * d + 1
    tree = _tree0(doc)
    tree.update(left_children=left, right_children=right, parents=parents,
                split_indices=[0] * n, split_conditions=[0.5] * n, split_type=[0] * n,
                default_left=[0] * n, base_weights=[0.0] * n, loss_changes=[0.0] * n,
                sum_hessian=[1.0] * n)
    tree["tree_param"]["num_nodes"] = str(n)


def test_xgboost_tree_deeper_than_the_bound_is_refused(tmp_path, xgb_doc):
    """XGBoost walks trees recursively: a chain 400,000 deep overflowed its stack."""
    doc, _, _ = xgb_doc
    crafted = json.loads(json.dumps(doc))
    _chain(crafted, 10_001)
    path = tmp_path / "deep.json"
    path.write_text(json.dumps(crafted))
    _refused(path, "deeper than", isolate=False)
    ok = json.loads(json.dumps(doc))
    _chain(ok, 50)
    path.write_text(json.dumps(ok))
    load_model(path, isolate=False)  # a deep but bounded chain is a valid tree


def test_xgboost_class_count_is_bounded(tmp_path, xgb_doc):
    doc, _, _ = xgb_doc
    crafted = json.loads(json.dumps(doc))
    crafted["learner"]["learner_model_param"]["num_class"] = "60000"
    path = tmp_path / "many.json"
    path.write_text(json.dumps(crafted))
    _refused(path, "num_class=60,000", isolate=False)


def test_isolated_reader_predicts_on_synthetic_rows_when_given_none(real_files):
    """With no sample, the child still calls the model on rows of its width; a genuine model
    passes."""
    from anonml.modelfile._probe import probe_model_file

    probe_model_file(real_files["forest"])  # no rows: synthetic ones, and no error
