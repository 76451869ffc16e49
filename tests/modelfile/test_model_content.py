"""A model file holds the model and nothing else; the validator checks every array the
predict path indexes; the content check finds training records wherever they are stored.

Crafted files are made from real small models saved with skops, then edited as
``tests/modelfile/test_model_file_hostile.py`` does; each is refused in one line.
"""

from __future__ import annotations

import io
import json
import struct
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.dummy import DummyClassifier
from sklearn.ensemble import (ExtraTreesClassifier, GradientBoostingClassifier,
                              HistGradientBoostingClassifier, RandomForestClassifier)
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import (MaxAbsScaler, MinMaxScaler, OneHotEncoder, OrdinalEncoder,
                                   RobustScaler, StandardScaler)
from sklearn.tree import DecisionTreeClassifier

from anonml._errors import AnonmlError, InputError
from anonml.safemodel import (SafeDecisionTreeClassifier, SafeGradientBoostingClassifier,
                              SafeHistGradientBoostingClassifier, SafeLogisticRegression,
                              SafeMLPClassifier, SafeModel, SafeRandomForestClassifier,
                              load_model, save_model)
from anonml.modelfile._content import training_records_in_model
from anonml.modelfile._validate_xgboost import decode_xgboost_raw, validate_xgboost_model
from anonml.safemodel._wrappers import posthoc_facts

pytest.importorskip("skops")


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(1)
    n = 300
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.integers(0, 5, n).astype(float),
                      "c": rng.choice(["x", "y", "z"], n)})
    y = np.where(X["a"] + rng.normal(size=n) > 0, "yes", "no")
    return X, y


@pytest.fixture(scope="module")
def files(tmp_path_factory, data):
    X, y = data
    num = X[["a", "b"]]
    y3 = np.array(["p", "q", "r"])[np.arange(len(y)) % 3]
    out = tmp_path_factory.mktemp("content")
    models = {
        "tree": SafeDecisionTreeClassifier(min_samples_leaf=5, random_state=0).fit(num, y),
        "forest": RandomForestClassifier(n_estimators=3, min_samples_leaf=5,
                                         random_state=0).fit(num, y),
        "gb": GradientBoostingClassifier(n_estimators=3, random_state=0).fit(num, y),
        "gb3": GradientBoostingClassifier(n_estimators=2, random_state=0).fit(num, y3),
        "hgb": HistGradientBoostingClassifier(max_iter=3, random_state=0).fit(num, y),
        "mlp": MLPClassifier(hidden_layer_sizes=(4,), max_iter=20, random_state=0).fit(num, y),
        "onehot": Pipeline([("pre", ColumnTransformer([("c", OneHotEncoder(), ["c", "b"]),
                                                       ("n", StandardScaler(), ["a"])])),
                            ("m", DecisionTreeClassifier(max_depth=3, random_state=0))]
                           ).fit(X, y),
        "ordinal": Pipeline([("pre", ColumnTransformer([("c", OrdinalEncoder(), ["c", "b"])],
                                                       remainder="passthrough")),
                             ("m", DecisionTreeClassifier(max_depth=3, random_state=0))]
                            ).fit(X, y),
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


def _write_zip(path: Path, schema: dict, members: dict[str, bytes], prune: bool = True,
               **kw) -> Path:
    """Write a crafted file; with ``prune``, members the edited schema no longer names are
    left out (so that each test meets the refusal it is about)."""
    text = json.dumps(schema)
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("schema.json", text)
        for name, data in members.items():
            if not prune or f'"{name}"' in text:
                zf.writestr(name, data)
        if "comment" in kw:
            zf.comment = kw["comment"]
    return path


def _find(state, pred):
    if isinstance(state, dict):
        if pred(state):
            yield state
        for v in state.values():
            yield from _find(v, pred)
    elif isinstance(state, list):
        for v in state:
            yield from _find(v, pred)


def _node(loader, module, cls, **extra):
    return {"__loader__": loader, "__module__": module, "__class__": cls, **extra}


def _json(value):
    return _node("JsonNode", "builtins", type(value).__name__, content=json.dumps(value),
                 is_json=True)


def _npy(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr)
    return buf.getvalue()


def _array_node(name: str) -> dict:
    return _node("NdArrayNode", "numpy", "ndarray", type="numpy", file=name,
                 __id__=abs(hash(name)) % 10**12)


def _refused(path: Path, match: str) -> str:
    with pytest.raises(InputError) as info:
        load_model(path, isolate=False)
    text = str(info.value)
    assert "\n" not in text and isinstance(info.value, AnonmlError), text
    assert match in text, text
    return text


def _add_attribute(state: dict, name: str, value_node: dict) -> None:
    state["content"]["content"][name] = value_node
    if "key_types" in state["content"]:
        state["content"]["key_types"]["content"].append(_node("TypeNode", "builtins", "str"))


# ----------------------------------------------------------------------------- A.1 attributes


def test_a_tree_carrying_the_training_rows_in_an_extra_attribute_is_refused(tmp_path, files,
                                                                            data):
    """The incident: a well-behaved tree with all rows as extra data was released."""
    X, _ = data
    schema, members = _read_zip(files["tree"])
    members["rows.npy"] = _npy(X[["a", "b"]].to_numpy())
    _add_attribute(schema, "notes_", _array_node("rows.npy"))
    text = _refused(_write_zip(tmp_path / "t.skops", schema, members),
                    "carries the attribute 'notes_'")
    assert "SafeDecisionTreeClassifier" in text and "fix:" in text


def test_extra_keys_in_nested_state_are_refused(tmp_path, files):
    # the Tree's own state
    schema, members = _read_zip(files["tree"])
    tree = next(_find(schema, lambda s: s.get("__loader__") == "TreeNode"))
    tree["content"]["content"]["extra"] = _json(1)
    _refused(_write_zip(tmp_path / "t.skops", schema, members), "Tree carries the attribute "
             "'extra'")
    # a loss object inside gradient boosting
    schema, members = _read_zip(files["gb"])
    loss = next(_find(schema, lambda s: s.get("__class__") == "HalfBinomialLoss"))
    loss["content"]["content"]["payload"] = _json("x" * 100)
    _refused(_write_zip(tmp_path / "g.skops", schema, members),
             "HalfBinomialLoss carries the attribute 'payload'")
    # a member tree of a forest
    schema, members = _read_zip(files["forest"])
    member = next(_find(schema, lambda s: s.get("__class__") == "DecisionTreeClassifier"
                        and "tree_" in s["content"]["content"]))
    member["content"]["content"]["training_rows"] = _json("1.0,2.0;" * 10)
    _refused(_write_zip(tmp_path / "f.skops", schema, members),
             "DecisionTreeClassifier carries the attribute 'training_rows'")


def test_extra_attribute_on_a_saved_anonymizer_is_refused(tmp_path, data):
    from anonml import MondrianAnonymizer

    X, y = data
    path = tmp_path / "m.skops"
    save_model(MondrianAnonymizer(k=10, quasi_identifiers=["a", "b", "c"]).fit(X, y), path)
    load_model(path, isolate=False)  # the genuine mapping loads
    schema, members = _read_zip(path)
    _add_attribute(schema, "notes_", _json("hidden"))
    _refused(_write_zip(tmp_path / "x.skops", schema, members),
             "MondrianAnonymizer carries the attribute 'notes_'")


# ----------------------------------------------------------------------------- A.2 the zip


def test_a_member_the_schema_never_names_is_refused(tmp_path, files, data):
    X, _ = data
    schema, members = _read_zip(files["tree"])
    members["extra.npy"] = _npy(X[["a", "b"]].to_numpy())
    _refused(_write_zip(tmp_path / "u.skops", schema, members, prune=False),
             "is not part of the model")


def test_a_member_named_by_two_different_nodes_is_refused(tmp_path, files):
    schema, members = _read_zip(files["tree"])
    arrays = list(_find(schema, lambda s: s.get("__loader__") == "NdArrayNode" and "file" in s))
    first, second = arrays[0], next(a for a in arrays[1:] if a["file"] != arrays[0]["file"])
    dropped = second["file"]
    second["file"] = first["file"]
    del members[dropped]
    _refused(_write_zip(tmp_path / "d.skops", schema, members), "referenced by two different")


def test_zip_comments_extra_fields_and_stray_bytes_are_refused(tmp_path, files):
    schema, members = _read_zip(files["tree"])
    _refused(_write_zip(tmp_path / "c.skops", schema, members, comment=b"x" * 5000),
             "archive comment")
    # a member comment
    path = tmp_path / "mc.skops"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("schema.json", json.dumps(schema))
        for name, blob in members.items():
            info = zipfile.ZipInfo(name)
            info.comment = b"rows" * 100
            zf.writestr(info, blob)
    _refused(path, "carries a comment")
    # an unknown extra field
    path = tmp_path / "ex.skops"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("schema.json", json.dumps(schema))
        for name, blob in members.items():
            info = zipfile.ZipInfo(name)
            info.extra = struct.pack("<HH", 0xCAFE, 8) + b"hidden!!"
            zf.writestr(info, blob)
    _refused(path, "extra field (0xcafe")
    # bytes before the first member (zipfile reads such files: it finds the directory from
    # the end)
    raw = files["tree"].read_bytes()
    (tmp_path / "pre.skops").write_bytes(b"\0" * 4096 + raw)
    _refused(tmp_path / "pre.skops", "belong to no member")


def test_genuine_files_have_a_clean_layout(files):
    for path in files.values():
        load_model(path, isolate=False)


# ----------------------------------------------------------------------------- A.3 XGBoost


@pytest.fixture(scope="module")
def xgb_models(data):
    xgb = pytest.importorskip("xgboost")
    X, y = data
    num = X[["a", "b"]]
    y3 = np.arange(len(y)) % 3
    yb = (y == "yes").astype(int)
    cat = num.assign(c=X["c"].astype("category"))
    return {
        "binary": xgb.XGBClassifier(n_estimators=3, max_depth=2).fit(num, yb),
        "multi": xgb.XGBClassifier(n_estimators=2, max_depth=2).fit(num, y3),
        "dart": xgb.XGBClassifier(n_estimators=2, booster="dart").fit(num, yb),
        "linear": xgb.XGBClassifier(n_estimators=2, booster="gblinear").fit(num, y3),
        "categorical": xgb.XGBClassifier(n_estimators=2, enable_categorical=True,
                                         tree_method="hist").fit(cat, yb),
        "early": xgb.XGBClassifier(n_estimators=5, early_stopping_rounds=1).fit(
            num, yb, eval_set=[(num, yb)], verbose=False),
    }


def test_genuine_xgboost_documents_pass_the_key_check(tmp_path, xgb_models):
    for name, model in xgb_models.items():
        booster = model.get_booster()
        for fmt in ("json", "ubj"):
            validate_xgboost_model(decode_xgboost_raw(bytes(booster.save_raw(fmt))))
        validate_xgboost_model(decode_xgboost_raw(bytes(booster.__getstate__()["handle"])))
        for suffix in (".json", ".ubj"):
            path = tmp_path / f"{name}{suffix}"
            model.save_model(path)  # the scikit-learn wrapper adds its own attribute
            load_model(path, isolate=False)
        if name != "early":  # its evals_result_ is an OrderedDict, not a vetted type
            path = tmp_path / f"{name}.skops"
            save_model(model, path)
            load_model(path, isolate=False)


def _xgb_json(model) -> dict:
    return json.loads(bytes(model.get_booster().save_raw("json")))


@pytest.mark.parametrize("case, match", [
    ("top", "unknown key 'notes'"),
    ("learner", "unknown key 'rows' in learner"),
    ("tree", "unknown key 'rows' in learner/gradient_booster/model/trees[0]"),
    ("tree_param", "unknown key 'extra' in learner/gradient_booster/model/trees[0]/tree_param"),
    ("attribute", "unknown key 'notes' in learner/attributes"),
    ("objective", "unknown key 'extra' in learner/objective"),
    ("feature_names", "feature_names is not one short name per feature"),
    ("sum_hessian", "sum_hessian has"),
    ("categories", "category arrays in a tree without categorical splits"),
])
def test_unknown_or_oversized_xgboost_content_is_refused(tmp_path, xgb_models, case, match):
    doc = _xgb_json(xgb_models["binary"])
    learner = doc["learner"]
    tree = learner["gradient_booster"]["model"]["trees"][0]
    if case == "top":
        doc["notes"] = [[1.0, 2.0]] * 100
    elif case == "learner":
        learner["rows"] = [1, 2, 3]
    elif case == "tree":
        tree["rows"] = [1, 2, 3]
    elif case == "tree_param":
        tree["tree_param"]["extra"] = "1"
    elif case == "attribute":
        learner["attributes"]["notes"] = "x" * 1000
    elif case == "objective":
        learner["objective"]["extra"] = {"a": "1"}
    elif case == "feature_names":
        learner["feature_names"] = ["a", "x" * 100_000]
    elif case == "sum_hessian":
        tree["sum_hessian"] = list(tree["sum_hessian"]) + [1.0] * 500
    elif case == "categories":
        tree["categories"] = list(range(500))
    path = tmp_path / "x.json"
    path.write_text(json.dumps(doc))
    _refused(path, match)


def test_unknown_key_in_a_skops_booster_snapshot_is_refused(tmp_path, xgb_models):
    path = tmp_path / "b.skops"
    save_model(xgb_models["binary"], path)
    schema, members = _read_zip(path)
    handle = next(_find(schema, lambda s: s.get("__loader__") in ("BytesNode",
                                                                  "BytearrayNode")))
    doc = decode_xgboost_raw(members[handle["file"]])
    doc["Model"]["learner"]["gradient_booster"]["model"]["trees"][0]["rows"] = [1.0] * 50
    members[handle["file"]] = json.dumps(
        doc, default=lambda a: a.tolist()).encode()  # JSON text: the vetter reads both
    _refused(_write_zip(tmp_path / "x.skops", schema, members), "unknown key 'rows'")


def test_unknown_config_key_in_a_booster_snapshot_is_refused(xgb_models):
    raw = bytes(xgb_models["binary"].get_booster().__getstate__()["handle"])
    doc = decode_xgboost_raw(raw)
    doc["Config"]["learner"]["generic_param"]["notes"] = "1"
    with pytest.raises(InputError, match="unknown key 'notes' in Config/learner/generic_param"):
        validate_xgboost_model(doc)
    doc = decode_xgboost_raw(raw)
    doc["Config"]["learner"]["gradient_booster"]["tree_train_param"]["eta"] = "0" * 10_000
    with pytest.raises(InputError, match="is not a short setting"):
        validate_xgboost_model(doc)
    doc = decode_xgboost_raw(raw)
    doc["Extra"] = {}
    with pytest.raises(InputError, match="unknown key 'Extra'"):
        validate_xgboost_model(doc)


# ----------------------------------------------------------------------------- A.4 content


def test_content_check_finds_per_row_arrays_and_copied_rows(data):
    X, y = data
    num = X[["a", "b"]]
    tree = DecisionTreeClassifier(min_samples_leaf=5, random_state=0).fit(num, y)
    clean = training_records_in_model(tree, X)
    assert clean["stores_training_records"] is False and clean["evidence"] is None
    # rows copied into an attribute (in memory: a file would be refused before this)
    tree.notes_ = num.to_numpy()[::7].copy()
    found = training_records_in_model(tree, X)
    assert found["stores_training_records"] and "model.notes_ holds" in found["evidence"]
    # flattened, in float32
    tree.notes_ = num.to_numpy()[:20].ravel().astype(np.float32)
    assert training_records_in_model(tree, X)["stores_training_records"]
    # an array with as many rows as the training table
    tree.notes_ = np.zeros(len(X))
    found = training_records_in_model(tree, X)
    assert "as many rows as the training table" in found["evidence"]
    # train and test together
    tree.notes_ = np.zeros((len(X) + 50, 2))
    found = training_records_in_model(tree, X, X.iloc[:50])
    assert "together" in found["evidence"]


def test_an_honest_array_that_holds_per_row_data_sets_the_measure(data):
    """A forest with out-of-bag scores keeps one row per training record: a genuine attribute
    (so the file loads), and the content check reports it."""
    X, y = data
    num = X[["a", "b"]]
    forest = SafeRandomForestClassifier(n_estimators=5, min_samples_leaf=5, oob_score=True,
                                        random_state=0).fit(num, y)
    facts = posthoc_facts(forest, num, y)
    assert facts["measures"]["model.stores_training_records"] is True
    assert "oob_decision_function_" in facts["stores_training_records_evidence"]
    # and the default rules block release on it
    from anonml.safemodel._rules import evaluate_rules, resolve_rules

    outcomes = evaluate_rules(resolve_rules(None), facts)
    hit = [o for o in outcomes if "model.stores_training_records" in str(o.rule.check)
           or "stores_training_records" in o.rule.id or "records" in o.rule.id]
    assert any(o.outcome == "fail" and o.rule.effect == "block" for o in hit), hit


@pytest.mark.filterwarnings("ignore::anonml._errors.AnonmlWarning")
def test_genuine_models_do_not_store_training_records(data):
    X, y = data
    num = X[["a", "b"]]
    for model in (SafeDecisionTreeClassifier(min_samples_leaf=5, random_state=0),
                  SafeGradientBoostingClassifier(n_estimators=5, random_state=0),
                  SafeHistGradientBoostingClassifier(max_iter=5, random_state=0),
                  SafeMLPClassifier(hidden_layer_sizes=(4,), max_iter=30, random_state=0),
                  SafeLogisticRegression()):
        model.fit(num, y)
        facts = posthoc_facts(model, num, y, num.iloc[:50], y[:50])
        assert facts["measures"]["model.stores_training_records"] is False, type(model)


# ----------------------------------------------------------------------------- B validator


def _tree_arrays(schema: dict, which: int = 0):
    tree = list(_find(schema, lambda s: s.get("__loader__") == "TreeNode"))[which]
    args = tree["__reduce__"]["args"]["content"]
    return tree, args


def _set_tree(members, tree, args, n_classes: list, width: int) -> None:
    """Give a tree ``n_classes`` and leaf values ``width`` wide (zeros)."""
    values_file = tree["content"]["content"]["values"]["file"]
    values = np.load(io.BytesIO(members[values_file]))
    members[values_file] = _npy(np.zeros((values.shape[0], len(n_classes), width)))
    members[args[1]["file"]] = _npy(np.asarray(n_classes, dtype=np.intp))


def test_boosting_stage_with_zero_width_values_is_refused(tmp_path, files):
    schema, members = _read_zip(files["gb"])
    tree, args = _tree_arrays(schema)
    _set_tree(members, tree, args, [0], 0)
    _refused(_write_zip(tmp_path / "z.skops", schema, members),
             "is a boosting stage whose leaf values have shape (15, 1, 0)")
    # a single tree with no class at all
    schema, members = _read_zip(files["tree"])
    tree, args = _tree_arrays(schema)
    _set_tree(members, tree, args, [0], 0)
    _refused(_write_zip(tmp_path / "t.skops", schema, members),
             "every output needs at least one value")


def test_boosting_stage_with_class_wide_values_is_refused(tmp_path, files):
    schema, members = _read_zip(files["gb"])
    tree, args = _tree_arrays(schema)
    _set_tree(members, tree, args, [2], 2)
    _refused(_write_zip(tmp_path / "w.skops", schema, members),
             "one raw score per leaf")


def test_boosting_stage_that_is_not_a_tree_is_refused(tmp_path, files):
    schema, members = _read_zip(files["gb"])
    grid = schema["content"]["content"]["estimators_"]
    grid["content"][0]["content"][0] = _node("JsonNode", "builtins", "NoneType",
                                             content="null", is_json=True)
    _refused(_write_zip(tmp_path / "n.skops", schema, members), "not a fitted estimator")
    schema, members = _read_zip(files["gb"])
    stage = next(_find(schema, lambda s: s.get("__class__") == "DecisionTreeRegressor"))
    del stage["content"]["content"]["tree_"]
    _refused(_write_zip(tmp_path / "t.skops", schema, members), "has no fitted tree")


def test_forest_member_with_other_classes_is_refused(tmp_path, files):
    schema, members = _read_zip(files["forest"])
    tree, args = _tree_arrays(schema, 1)
    _set_tree(members, tree, args, [3], 3)
    _refused(_write_zip(tmp_path / "f.skops", schema, members), "for the forest's 2 classes")


def test_tree_classifier_whose_tree_has_other_classes_is_refused(tmp_path, files):
    schema, members = _read_zip(files["tree"])
    tree, args = _tree_arrays(schema)
    _set_tree(members, tree, args, [5], 5)
    _refused(_write_zip(tmp_path / "t.skops", schema, members),
             "has class counts [5] but the classifier has 2 classes")


def _fitted(schema, owner: str, attr: str) -> dict:
    """The first ``owner`` node that holds ``attr`` (a column transformer also keeps its
    unfitted templates)."""
    return next(_find(schema, lambda s: s.get("__class__") == owner and isinstance(
        s.get("content"), dict) and attr in (s["content"].get("content") or {})))


def _replace_array(schema, members, owner: str, attr: str, new: np.ndarray, index=None):
    owner_node = _fitted(schema, owner, attr)
    node = owner_node["content"]["content"][attr]
    if index is not None:
        node = node["content"][index]
    members[node["file"]] = _npy(new)


def test_one_hot_categories_must_be_sorted_and_unique(tmp_path, files):
    # numeric categories out of order (searchsorted would give wrong columns)
    schema, members = _read_zip(files["onehot"])
    _replace_array(schema, members, "OneHotEncoder", "categories_",
                   np.array([4.0, 3.0, 2.0, 1.0, 0.0]), index=1)
    _refused(_write_zip(tmp_path / "o.skops", schema, members), "strictly increasing")
    # a repeated numeric category
    schema, members = _read_zip(files["onehot"])
    _replace_array(schema, members, "OneHotEncoder", "categories_",
                   np.array([0.0, 1.0, 1.0, 3.0, 4.0]), index=1)
    _refused(_write_zip(tmp_path / "o2.skops", schema, members), "strictly increasing")
    # a NaN before the end
    schema, members = _read_zip(files["onehot"])
    _replace_array(schema, members, "OneHotEncoder", "categories_",
                   np.array([0.0, np.nan, 2.0, 3.0, 4.0]), index=1)
    _refused(_write_zip(tmp_path / "o3.skops", schema, members), "strictly increasing")
    # string categories unsorted, then repeated
    for cats, match in ((["z", "y", "x"], "not sorted"), (["x", "x", "z"], "repeats")):
        schema, members = _read_zip(files["onehot"])
        enc = _fitted(schema, "OneHotEncoder", "categories_")
        node = enc["content"]["content"]["categories_"]["content"][0]
        node["content"] = [_json(c) for c in cats]
        _refused(_write_zip(tmp_path / "s.skops", schema, members), match)


def test_ordinal_categories_must_be_sorted_and_unique(tmp_path, files):
    schema, members = _read_zip(files["ordinal"])
    _replace_array(schema, members, "OrdinalEncoder", "categories_",
                   np.array([0.0, 2.0, 1.0, 3.0, 4.0]), index=1)
    _refused(_write_zip(tmp_path / "o.skops", schema, members), "strictly increasing")
    schema, members = _read_zip(files["ordinal"])
    enc = _fitted(schema, "OrdinalEncoder", "categories_")
    enc["content"]["content"]["categories_"]["content"][0]["content"] = [
        _json(c) for c in ("y", "x", "z")]
    _refused(_write_zip(tmp_path / "s.skops", schema, members), "not sorted")


def test_mlp_whose_last_layer_does_not_fit_its_classes_is_refused(tmp_path, files):
    schema, members = _read_zip(files["mlp"])
    mlp = next(_find(schema, lambda s: s.get("__class__") == "MLPClassifier"))
    coefs = mlp["content"]["content"]["coefs_"]["content"]
    inter = mlp["content"]["content"]["intercepts_"]["content"]
    members[coefs[-1]["file"]] = _npy(np.zeros((4, 3)))
    members[inter[-1]["file"]] = _npy(np.zeros(3))
    _refused(_write_zip(tmp_path / "m.skops", schema, members), "but 2 classes need 1")


def test_scaler_arrays_must_have_one_entry_per_feature(tmp_path, files):
    schema, members = _read_zip(files["onehot"])
    _replace_array(schema, members, "StandardScaler", "scale_", np.ones(7))
    _refused(_write_zip(tmp_path / "s.skops", schema, members), "scale_: has shape (7,)")


def test_hist_boosting_baseline_must_match_its_outputs(tmp_path, files):
    schema, members = _read_zip(files["hgb"])
    _replace_array(schema, members, "HistGradientBoostingClassifier", "_baseline_prediction",
                   np.zeros((1, 4)))
    _refused(_write_zip(tmp_path / "h.skops", schema, members), "_baseline_prediction")


# ----------------------------------------------------------------------------- genuine files


@pytest.mark.filterwarnings("ignore::anonml._errors.AnonmlWarning")
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_genuine_models_of_every_vetted_class_still_load(tmp_path, data):
    X, y = data
    num = X[["a", "b"]]
    y3 = np.array(["p", "q", "r"])[np.arange(len(y)) % 3]
    pre = ColumnTransformer([("c", OneHotEncoder(drop="first"), ["c"]),
                             ("o", OrdinalEncoder(), ["b"]),
                             ("s", MinMaxScaler(), ["a"])], remainder="drop")
    models = [
        SafeDecisionTreeClassifier(min_samples_leaf=5).fit(X[["a", "b"]], y),
        SafeRandomForestClassifier(n_estimators=3, oob_score=True).fit(num, y),
        ExtraTreesClassifier(n_estimators=3).fit(num, y3),
        SafeGradientBoostingClassifier(n_estimators=3, subsample=0.7).fit(num, y3),
        GradientBoostingClassifier(n_estimators=3, loss="exponential", init="zero").fit(num, y),
        SafeHistGradientBoostingClassifier(max_iter=3, early_stopping=True,
                                           validation_fraction=0.2).fit(num, y3),
        SafeMLPClassifier(hidden_layer_sizes=(3,), max_iter=5, early_stopping=True).fit(num, y3),
        MLPClassifier(hidden_layer_sizes=(3,), max_iter=5, solver="sgd").fit(num, y),
        SafeLogisticRegression().fit(num, y3),
        SafeModel(LogisticRegression()).fit(num, y),
        DummyClassifier().fit(num, y),
        Pipeline([("pre", pre), ("m", DecisionTreeClassifier(max_depth=3))]).fit(X, y),
        Pipeline([("i", SimpleImputer()), ("r", RobustScaler()), ("a", MaxAbsScaler()),
                  ("m", LogisticRegression())]).fit(num, y),
        Pipeline([("pre", ColumnTransformer([("c", OneHotEncoder(handle_unknown="ignore"),
                                              ["c"])],
                                            remainder="passthrough")),
                  ("m", DecisionTreeClassifier(max_depth=3))]).fit(X, y),
    ]
    for i, model in enumerate(models):
        path = tmp_path / f"g{i}.skops"
        save_model(model, path)
        back = load_model(path, isolate=False)
        frame = X if isinstance(model, Pipeline) and "pre" in model.named_steps else num
        np.testing.assert_array_equal(back.predict(frame), model.predict(frame))


def test_every_vetted_class_has_a_derived_attribute_list():
    """Every class in the vetted list that anonml can build a sample of has a derived list."""
    from anonml.modelfile._attributes import allowed_attributes
    from anonml.modelfile._skops_vet import VETTED_OBJECTS

    missing = []
    for module, cls in sorted(VETTED_OBJECTS):
        if module.startswith(("diffprivlib", "anonml.dp", "xgboost", "anonml.safemodel._optional")):
            continue
        keys = allowed_attributes("ObjectNode", module, cls)
        if not keys and cls not in ("LogitLink", "HalfLogitLink", "MultinomialLogit",
                                    "IdentityLink", "SGDOptimizer"):
            missing.append(f"{module}.{cls}")
    assert not missing, missing


@pytest.mark.filterwarnings("ignore::anonml._errors.AnonmlWarning")
def test_a_genuine_file_whose_array_holds_per_row_data_is_blocked_and_named(tmp_path, data):
    """The out-of-bag scores load (a genuine attribute) and the audit blocks release on them,
    naming the array in the report (a path and a count, no values)."""
    from anonml.attacks import Target
    from anonml.safemodel import request_release

    X, y = data
    num = X[["a", "b"]]
    path = tmp_path / "oob.skops"
    save_model(SafeRandomForestClassifier(n_estimators=5, min_samples_leaf=5, oob_score=True,
                                          random_state=0).fit(num[:200], y[:200]), path)
    model = load_model(path, isolate=False)
    decision = request_release(Target(model, num[:200], y[:200], num[200:], y[200:]),
                               attacks=("worst_case",), random_state=0)
    assert decision.measures["model.stores_training_records"] is True
    assert decision.decision == "do_not_release"
    item = next(e for e in decision.report["evidence"] if e["rule_id"] == "no-stored-records")
    assert item["outcome"] == "fail" and "oob_decision_function_" in item["note"]


def test_parameters_must_be_values_scikit_learn_accepts(tmp_path, files):
    """A parameter the predict path never reads could otherwise carry anything."""
    schema, members = _read_zip(files["tree"])
    schema["content"]["content"]["criterion"] = _json("gini" + "1.5,2.25;" * 10_000)
    _refused(_write_zip(tmp_path / "c.skops", schema, members),
             "a parameter is not one scikit-learn accepts")
    schema, members = _read_zip(files["forest"])
    schema["content"]["content"]["max_depth"] = _json(-3)
    _refused(_write_zip(tmp_path / "r.skops", schema, members),
             "a parameter is not one scikit-learn accepts")


def test_rows_spread_over_many_small_lists_are_found(data):
    X, y = data
    num = X[["a", "b"]]
    tree = DecisionTreeClassifier(min_samples_leaf=5, random_state=0).fit(num, y)
    tree.notes_ = [list(r) for r in num.to_numpy()[:8]] + [[1.0]]  # ragged: one list each
    found = training_records_in_model(tree, X)
    assert found["stores_training_records"] and "arrays (model.notes_[0]" in found["evidence"]


def test_attributes_assigned_by_a_tuple_assignment_are_the_library_s():
    """anonml's own classes may hold what their code assigns, however it is assigned: a
    tuple assignment (``self.a_, self.b_ = ...``) names both attributes (a fitted anonymizer
    sets ``min_class_size_`` that way), and nothing that is only read is allowed."""
    from anonml import AccuracyGuidedAnonymizer, RTreeAnonymizer
    from anonml.modelfile._attributes import _assigned_in_source, _assigned_targets

    src = ("class A:\n    def f(self, other):\n        self.a_, (self.b_, *self.c_) = g()\n"
           "        out.d_: int = 1\n        self.e_ += 1\n        other.f_ = 2\n"
           "        x = self.g_\n")
    assert _assigned_targets(src) == {"a_", "b_", "c_", "d_", "e_"}
    for cls in (AccuracyGuidedAnonymizer, RTreeAnonymizer):
        assert {"min_class_size_", "privacy_"} <= _assigned_in_source(cls)
