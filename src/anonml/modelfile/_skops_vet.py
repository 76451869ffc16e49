"""Vetting a ``.skops`` file before skops builds anything from it.

skops stores a model as a zip: ``schema.json`` (a tree of nodes, each naming a loader, a module
and a class) plus ``.npy``/``.bin`` members. When it loads, it imports every module the schema
names and calls ``getattr`` on it, so a type *name* decides what code runs. skops' own check
(``get_untrusted_types``) compares names with a list, but the names are attacker-written
strings: a prefix test on them (``startswith("anonml.safemodel._wrappers.")``) let
``anonml.safemodel._wrappers.warnings.sys.path.append`` through, which is an attribute chain
to ``sys.path.append``.

This module therefore reads the schema itself, before skops sees it, and accepts a file only
if:

* every node's loader is one of the data loaders in :data:`ALLOWED_LOADERS`: function, method,
  ``functools.partial``, operator, default-dict, masked-array, sparse, reduce-from-constructor
  and quantile-forest nodes are refused outright, and so is any loader skops may add later;
* every node's ``(module, class)`` pair is on an exact list of vetted types for its loader
  (:data:`VETTED_OBJECTS` and the small per-loader lists below), compared as a pair of
  whole strings, never as a prefix; a name with a dot in the class part or an unusual
  character anywhere is refused before the list is even consulted;
* every member the schema points at exists, every ``.npy`` member holds a plain numeric or
  boolean array (no object dtype, which would need pickle), and the sizes stay under limits
  that keep a zip bomb from exhausting memory;
* an XGBoost booster's raw bytes decode (UBJSON or JSON) to a structurally valid model
  (:func:`anonml.modelfile._validate.validate_xgboost_model`) before XGBoost's C++ parser
  reads them.

Only then is the file handed to :func:`skops.io.load`, with exactly the vetted names seen in it
as ``trusted``. The object that comes back is then validated as a whole
(:func:`anonml.modelfile._validate.validate_model`) before anything calls it.

References
----------
skops persistence format, https://skops.readthedocs.io/en/stable/persistence.html
"""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from anonml._errors import InputError, one_line
from anonml.modelfile._family import SAFE_BASES, SAFE_MODEL
from anonml.modelfile._pipeline_types import PREPROCESSORS as _PREPROCESSORS
from anonml.modelfile._pipeline_types import REFUSED as _REFUSED_TYPES
from anonml.modelfile._pipeline_types import SELECTOR_TYPES as _SELECTOR_TYPES
from anonml.modelfile._pipeline_types import VETTED as _PIPELINE_TYPES
from anonml.modelfile._pipeline_types import VETTED_FUNCTIONS

# limits: generous for real models (an Adult forest of 100 trees is ~20 MB), small enough that
# a crafted file cannot exhaust the auditor's memory
MAX_MEMBERS = 1_000_000
MAX_SCHEMA_BYTES = 256 * 2**20
MAX_TOTAL_BYTES = 8 * 2**30
MAX_NODES = 5_000_000
MAX_DEPTH = 200

_MODULE_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\Z")
_CLASS_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_MEMBER_RE = re.compile(r"[A-Za-z0-9_.-]{1,200}\Z")

#: classes an ``ObjectNode`` may build: read and vetted one by one. Each is a scikit-learn,
#: anonml, diffprivlib or XGBoost estimator (or an internal part of one) whose ``__setstate__``
#: or ``__dict__.update`` only stores data; none runs code named in the file. (anonml's own
#: classes restore with ``__dict__.update``: plain attributes, no ``__setstate__`` logic.)
VETTED_OBJECTS: frozenset[tuple[str, str]] = frozenset({
    # anonml's safe wrappers, by full name
    *SAFE_BASES, SAFE_MODEL,
    # anonml's fitted anonymizers (a saved mapping) and the plain-data parts they hold; their
    # internal trees are validated like scikit-learn's (children after parents) before use
    ("anonml.anonymize._accuracy_guided", "AccuracyGuidedAnonymizer"),
    ("anonml.anonymize._mondrian", "MondrianAnonymizer"),
    ("anonml.anonymize._hilbert", "HilbertAnonymizer"),
    ("anonml.anonymize._rtree", "RTreeAnonymizer"),
    ("anonml.anonymize._sangreea", "SaNGreeAAnonymizer"),
    ("anonml.anonymize._hist_tree", "HistTree"),
    ("anonml.anonymize._mondrian", "_CutTree"),
    ("anonml.anonymize._routing", "RoutingTree"),
    ("anonml.anonymize._mondrian", "_Dim"),
    ("anonml.anonymize._grid", "QIGrid"),
    ("anonml.anonymize._grid", "Axis"),
    ("anonml.anonymize._sangreea_space", "_Space"),
    ("anonml.encoding", "TableEncoder"),
    ("anonml.encoding", "_CatSpec"),
    ("anonml.privacy._constraints", "PrivacyModel"),
    ("anonml.hierarchies._hierarchy", "Hierarchy"),
    ("anonml.dp._diffprivlib", "DPRandomForestClassifier"),
    ("anonml.dp._diffprivlib", "DPLogisticRegression"),
    ("anonml.dp._svc", "DPSVC"),  # arrays and numbers only: frequencies, weights, bounds
    # scikit-learn estimators anonml audits
    ("sklearn.tree._classes", "DecisionTreeClassifier"),
    ("sklearn.tree._classes", "DecisionTreeRegressor"),
    ("sklearn.tree._classes", "ExtraTreeClassifier"),
    ("sklearn.tree._classes", "ExtraTreeRegressor"),
    ("sklearn.ensemble._forest", "RandomForestClassifier"),
    ("sklearn.ensemble._forest", "ExtraTreesClassifier"),
    ("sklearn.ensemble._gb", "GradientBoostingClassifier"),
    ("sklearn.ensemble._hist_gradient_boosting.gradient_boosting",
     "HistGradientBoostingClassifier"),
    ("sklearn.linear_model._logistic", "LogisticRegression"),
    ("sklearn.neural_network._multilayer_perceptron", "MLPClassifier"),
    ("sklearn.dummy", "DummyClassifier"),
    # their internal parts
    ("sklearn.ensemble._hist_gradient_boosting.binning", "_BinMapper"),
    ("sklearn.ensemble._hist_gradient_boosting.predictor", "TreePredictor"),
    ("sklearn._loss.loss", "HalfBinomialLoss"),
    ("sklearn._loss.loss", "HalfMultinomialLoss"),
    ("sklearn._loss.loss", "ExponentialLoss"),
    ("sklearn._loss.link", "Interval"),
    ("sklearn._loss.link", "LogitLink"),
    ("sklearn._loss.link", "HalfLogitLink"),
    ("sklearn._loss.link", "MultinomialLogit"),
    ("sklearn._loss.link", "IdentityLink"),
    ("sklearn.neural_network._stochastic_optimizers", "AdamOptimizer"),
    ("sklearn.neural_network._stochastic_optimizers", "SGDOptimizer"),
    ("sklearn.preprocessing._label", "LabelBinarizer"),
    ("sklearn.preprocessing._label", "LabelEncoder"),
    # pipelines and the preprocessing steps they hold
    ("sklearn.pipeline", "Pipeline"),
    ("sklearn.compose._column_transformer", "ColumnTransformer"),
    *_PREPROCESSORS,
    # only with func=None (a function would be a FunctionNode, refused): ColumnTransformer's
    # fitted "passthrough"
    ("sklearn.preprocessing._function_transformer", "FunctionTransformer"),
    # diffprivlib (the DP baselines' engine)
    ("diffprivlib.accountant", "BudgetAccountant"),
    ("diffprivlib.models.forest", "RandomForestClassifier"),
    ("diffprivlib.models.forest", "DecisionTreeClassifier"),
    ("diffprivlib.models.logistic_regression", "LogisticRegression"),
    # XGBoost: the scikit-learn wrapper and its booster (raw bytes decoded and validated first)
    ("xgboost.sklearn", "XGBClassifier"),
    ("xgboost.core", "Booster"),
}) | _PIPELINE_TYPES  # column selectors, discretizers, unions, feature selectors (issue 23)

_NUMPY_SCALARS = ("float64", "float32", "float16", "int64", "int32", "int16", "int8",
                  "uint64", "uint32", "uint16", "uint8", "bool_", "bool", "str_")
_PRIMITIVES = ("str", "int", "float", "bool", "NoneType", "complex")

#: (module, class) pairs allowed per loader, beside VETTED_OBJECTS for ObjectNode
_LOADER_TYPES: dict[str, frozenset[tuple[str, str]]] = {
    "DictNode": frozenset({("builtins", "dict")}),
    "ListNode": frozenset({("builtins", "list")}),
    "TupleNode": frozenset({("builtins", "tuple")}),
    "SetNode": frozenset({("builtins", "set"), ("builtins", "frozenset")}),
    "SliceNode": frozenset({("builtins", "slice")}),
    "JsonNode": frozenset(("builtins", t) for t in _PRIMITIVES),
    "BytesNode": frozenset({("builtins", "bytes")}),
    "BytearrayNode": frozenset({("builtins", "bytearray")}),
    "DTypeNode": frozenset({("numpy", "dtype")}),
    "NdArrayNode": frozenset({("numpy", "ndarray"), *(("numpy", t) for t in _NUMPY_SCALARS)}),
    "TypeNode": frozenset({*(("builtins", t) for t in ("str", "int", "float", "bool")),
                           *(("numpy", t) for t in _NUMPY_SCALARS), *_SELECTOR_TYPES}),
    "RandomStateNode": frozenset({("numpy.random.mtrand", "RandomState")}),
    "RandomGeneratorNode": frozenset({("numpy.random._generator", "Generator")}),
    "TreeNode": frozenset({("sklearn.tree._tree", "Tree")}),
    "LossNode": frozenset(("sklearn._loss._loss", c) for c in (
        "CyHalfBinomialLoss", "CyHalfMultinomialLoss", "CyExponentialLoss",
        "CyHalfSquaredError")),
    "CachedNode": frozenset(),  # any: it only points back at a node already vetted
    "ObjectNode": VETTED_OBJECTS,
}
ALLOWED_LOADERS = frozenset(_LOADER_TYPES)
_REFUSED_LOADERS = {
    "FunctionNode": "a function", "MethodNode": "a bound method", "PartialNode":
    "functools.partial", "OperatorFuncNode": "an operator function", "DefaultDictNode":
    "a defaultdict (its factory is code)", "ConstructorFromReduceNode": "an object built by "
    "a constructor", "MaskedArrayNode": "a masked array", "SparseMatrixNode": "a sparse matrix",
    "QuantileForestNode": "a quantile forest",
}
_BIT_GENERATORS = ("MT19937", "PCG64", "PCG64DXSM", "Philox", "SFC64")


def _fail(path: Path, text: str) -> InputError:
    return InputError(f"model file {str(path)!r} {text}")


class _Vetter:
    def __init__(self, path: Path, zf: zipfile.ZipFile):
        self.path = path
        self.zf = zf
        self.members = {i.filename: i for i in zf.infolist()}
        self.names: set[str] = set()
        self.n_nodes = 0
        self.ids: set[Any] = set()
        self.bytes_nodes: list[dict] = []
        self.boosters: list[dict] = []
        self.referenced: dict[str, str] = {}
        self.objects: list[tuple] = []

    def fail(self, where: str, text: str) -> InputError:
        return _fail(self.path, f"is refused: {_short(where)}: {text}")

    def walk(self, state: Any, where: str, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise self.fail(where, f"nested deeper than {MAX_DEPTH} levels; fix: save a plain "
                            "model with anonml.safemodel.save_model")
        if isinstance(state, list):
            for i, item in enumerate(state):
                self.walk(item, f"{where}[{i}]", depth + 1)
            return
        if not isinstance(state, dict):
            return
        if "__loader__" in state:
            self.node(state, where)
        for key, value in state.items():
            if isinstance(value, (dict, list)):
                self.walk(value, f"{where}/{key}", depth + 1)

    def node(self, state: dict, where: str) -> None:
        self.n_nodes += 1
        if self.n_nodes > MAX_NODES:
            raise self.fail(where, f"more than {MAX_NODES:,} nodes")
        loader, module, cls = (state.get("__loader__"), state.get("__module__"),
                               state.get("__class__"))
        if not all(isinstance(v, str) for v in (loader, module, cls)):
            raise self.fail(where, "a node without a string __loader__, __module__ and "
                            "__class__; the file is malformed")
        name = f"{module}.{cls}"
        if loader == "FunctionNode" and (module, cls) in VETTED_FUNCTIONS and \
                where.endswith("/score_func"):
            self.names.add(name)  # a feature selector's score function, by its exact name
            if isinstance(state.get("__id__"), (int, str)):
                self.ids.add(state["__id__"])
            return
        if loader in _REFUSED_LOADERS:
            raise self.fail(where, f"it holds {_REFUSED_LOADERS[loader]} ({name}), which "
                            "would run code named in the file; fix: save the model without "
                            "functions (e.g. no FunctionTransformer(func=...), no categorical "
                            "HistGradientBoosting preprocessor), or pass --trust-model "
                            "(trust=True) if you trust the file's source")
        if loader not in ALLOWED_LOADERS:
            raise self.fail(where, f"unknown skops loader {loader[:60]!r}")
        if not _MODULE_RE.match(module) or not _CLASS_RE.match(cls):
            raise self.fail(where, f"type name {name[:120]!r} is not a plain module.Class "
                            "name (an attribute chain or other text)")
        allowed = _LOADER_TYPES[loader]
        if loader == "CachedNode":
            if state.get("__id__") not in self.ids:
                raise self.fail(where, "a cached node refers to an object not seen before")
        elif (module, cls) not in allowed:
            why = _REFUSED_TYPES.get((module, cls))
            why = f" ({why})" if why else ""
            raise self.fail(where, f"type {name!r} is not on anonml's list of vetted types"
                            f"{why}; fix: pass --trust-model (trust=True) if you trust the "
                            "file's source")
        if "__id__" in state:
            nid = state["__id__"]
            if not isinstance(nid, (int, str)):
                raise self.fail(where, "a node id that is not a number")
            self.ids.add(nid)
        if loader not in ("CachedNode", "JsonNode"):
            self.names.add(name)
        if loader == "JsonNode" and not isinstance(state.get("content"), str):
            raise self.fail(where, "a JSON value node without text content")
        if loader in ("ObjectNode", "TreeNode", "LossNode"):
            self.objects.append((state, where, loader, module, cls))
        if "file" in state:
            self.member(state["file"], where, loader, state)
        if loader == "RandomGeneratorNode":
            self.bit_generator(state, where)
        if loader in ("BytesNode", "BytearrayNode"):
            self.bytes_nodes.append(state)
        if loader == "ObjectNode" and name == "xgboost.core.Booster":
            self.boosters.append({"state": state, "where": where})

    def attributes(self, state: dict, where: str, loader: str, module: str, cls: str) -> None:
        """The object's state holds exactly attributes its library sets: its constructor
        parameters and fitted attributes (:func:`~anonml.modelfile._attributes.allowed_attributes`),
        nothing else (a file holds the model and nothing else)."""
        from anonml.modelfile._attributes import _state_keys, allowed_attributes

        keys = _state_keys(state) or set()
        if any(k.startswith("\0") for k in keys):
            raise self.fail(where, f"the state of {cls} is not a plain set of named attributes; "
                            "fix: save the fitted estimator with anonml.safemodel.save_model")
        try:
            allowed = allowed_attributes(loader, module, cls)
        except Exception as exc:  # noqa: BLE001 - a class anonml cannot inspect is not read
            raise self.fail(where, f"anonml cannot list the attributes {module}.{cls} may hold "
                            f"({type(exc).__name__}: {one_line(exc, 120)}); fix: install the "
                            "package that class comes from, or pass --trust-model (trust=True) "
                            "if you trust the file's source") from None
        extra = sorted(keys - allowed)
        from anonml.anonymize._model import PER_ROW_ATTRIBUTES

        per_row = [k for k in extra if k in PER_ROW_ATTRIBUTES]
        if per_row and module.startswith("anonml."):
            raise self.fail(where, f"{cls} holds the per-row attribute {per_row[0]} (training "
                            "rows or their order must not be released); fix: save the mapping "
                            "with anonml.safemodel.save_model, which leaves it out")
        if extra:
            more = f" (and {len(extra) - 1} more)" if len(extra) > 1 else ""
            raise self.fail(where, f"{cls} carries the attribute {extra[0][:60]!r}{more}, which "
                            f"is neither a parameter of {cls} nor an attribute its library sets "
                            "when fitting; a model file holds the model and nothing else; fix: "
                            f"delete the attribute (del model.{extra[0][:40]}) and save the "
                            "fitted estimator again with anonml.safemodel.save_model")

    def member(self, fname: Any, where: str, loader: str, state: dict) -> None:
        if not isinstance(fname, str) or not _MEMBER_RE.match(fname) or fname not in self.members:
            raise self.fail(where, f"it points at a member {str(fname)[:80]!r} the zip does "
                            "not hold")
        node = json.dumps(state, sort_keys=True)
        if self.referenced.setdefault(fname, node) != node:
            raise self.fail(where, f"member {fname!r} is referenced by two different nodes "
                            "(skops writes each array once, and repeats only the same node)")
        if loader == "NdArrayNode":
            self.npy_header(fname, where)

    def npy_header(self, fname: str, where: str) -> None:
        info = self.members[fname]
        with self.zf.open(info) as fh:
            try:
                version = np.lib.format.read_magic(fh)
                read = {(1, 0): np.lib.format.read_array_header_1_0,
                        (2, 0): np.lib.format.read_array_header_2_0}.get(version)
                if read is None:
                    raise ValueError(f"unknown .npy version {version}")
                shape, _, dtype = read(fh, max_header_size=10_000)
                header = fh.tell()
            except Exception as exc:  # noqa: BLE001 - any malformed header gives one line
                raise self.fail(where, f"array member {fname!r} is not a valid .npy array "
                                f"({one_line(exc, 200)})") from None
        parts = [dtype[n] for n in dtype.names] if dtype.names else [dtype]
        if dtype.hasobject or any(d.kind not in "biufcSUMm" for d in parts):
            raise self.fail(where, f"array member {fname!r} holds {dtype} values (objects "
                            "need pickle); fix: save numeric arrays only")
        size = int(np.prod(shape, dtype=np.float64)) * dtype.itemsize
        if size != info.file_size - header:
            raise self.fail(where, f"array member {fname!r} declares {size:,} bytes of data but "
                            f"holds {info.file_size - header:,}")

    def bit_generator(self, state: dict, where: str) -> None:
        text = json.dumps(state.get("content"))
        names = set(re.findall(r"[A-Za-z0-9_]+", text)) & {"BitGenerator", *_BIT_GENERATORS}
        if not names <= set(_BIT_GENERATORS):
            raise self.fail(where, "a random generator with an unknown bit generator")


#: zip extra fields a plain writer emits: ZIP64 sizes (0x0001), extended timestamp (0x5455),
#: Info-ZIP Unix ids (0x7875); each is a few fixed-width numbers, no room for data
_EXTRA_IDS = {0x0001: 28, 0x5455: 13, 0x7875: 11}


def _check_zip_layout(path: Path, zf: zipfile.ZipFile) -> None:
    """The zip holds its members and nothing else: no archive or member comment, no extra
    field beyond the few a plain writer emits, no bytes before, between or after the members
    and the central directory (each member's local header and data, end to end, then the
    directory and its end record)."""
    import struct

    if zf.comment:
        raise _fail(path, f"is refused: the zip carries a {len(zf.comment):,}-byte archive "
                    "comment; a model file holds the model and nothing else; fix: save it again "
                    "with anonml.safemodel.save_model")
    infos = sorted(zf.infolist(), key=lambda i: i.header_offset)
    for info in infos:
        if info.comment:
            raise _fail(path, f"is refused: member {info.filename[:80]!r} carries a comment; "
                        "fix: save the model again with anonml.safemodel.save_model")
        _check_extra(path, info.filename, info.extra)
    fp = zf.fp
    if fp is None or not hasattr(fp, "seek"):
        return
    pos = 0
    for info in infos:
        if info.header_offset != pos:
            raise _fail(path, f"is refused: {abs(info.header_offset - pos):,} bytes that belong "
                        f"to no member lie before {info.filename[:80]!r}; fix: save the model "
                        "again with anonml.safemodel.save_model")
        fp.seek(info.header_offset)
        head = fp.read(30)
        if len(head) != 30 or head[:4] != b"PK\x03\x04":
            raise _fail(path, f"is refused: member {info.filename[:80]!r} has no local header")
        flags, n_name, n_extra = struct.unpack("<H", head[6:8])[0], *struct.unpack(
            "<HH", head[26:30])
        fp.seek(info.header_offset + 30 + n_name)
        _check_extra(path, info.filename, fp.read(n_extra))
        pos = info.header_offset + 30 + n_name + n_extra + info.compress_size
        if flags & 0x08:  # a data descriptor follows the data (12, 16 or 24 bytes)
            fp.seek(pos)
            desc = fp.read(24)
            pos += 4 * (desc[:4] == b"PK\x07\x08") + (20 if info.compress_size >= 2**32 or
                                                        info.file_size >= 2**32 else 12)
    start_dir = getattr(zf, "start_dir", pos)
    if start_dir != pos:
        raise _fail(path, f"is refused: {abs(start_dir - pos):,} bytes that belong to no member "
                    "lie before the zip's directory; fix: save the model again with "
                    "anonml.safemodel.save_model")
    fp.seek(0, 2)
    size = fp.tell()
    fp.seek(size - 22)
    end = fp.read(22)
    if len(end) != 22 or end[:4] != b"PK\x05\x06":
        raise _fail(path, "is refused: bytes follow the zip's end record; fix: save the model "
                    "again with anonml.safemodel.save_model")
    cd_size, cd_offset = struct.unpack("<II", end[12:20])
    dir_end = size - 22
    fp.seek(size - 42)
    if fp.read(4) == b"PK\x06\x07":  # ZIP64 locator and end record (56 + 20 bytes)
        dir_end -= 76
    if cd_offset != 0xFFFFFFFF and cd_size != 0xFFFFFFFF and (
            cd_offset != start_dir or cd_offset + cd_size != dir_end):
        raise _fail(path, "is refused: the zip's directory does not end where its end record "
                    "begins (bytes hidden between them); fix: save the model again with "
                    "anonml.safemodel.save_model")


def _check_extra(path: Path, name: str, extra: bytes) -> None:
    import struct

    i = 0
    while i < len(extra):
        if i + 4 > len(extra):
            raise _fail(path, f"is refused: member {name[:80]!r} has a malformed extra field")
        tag, n = struct.unpack("<HH", extra[i:i + 4])
        if tag not in _EXTRA_IDS or n > _EXTRA_IDS[tag] or i + 4 + n > len(extra):
            raise _fail(path, f"is refused: member {name[:80]!r} carries an extra field "
                        f"(0x{tag:04x}, {n} bytes) a plain zip writer does not write; a model "
                        "file holds the model and nothing else; fix: save the model again with "
                        "anonml.safemodel.save_model")
        i += 4 + n


def _short(where: str, width: int = 120) -> str:
    """A node's path, cut from the left to ``width`` characters (the end names the node)."""
    return where if len(where) <= width else "..." + where[-width:]


def _skops() -> Any:
    try:
        import skops.io as sio
    except ImportError:
        from anonml._install import install_hint

        raise InputError("reading or writing .skops model files needs skops; fix: "
                         f"{install_hint('report', ('skops',))}") from None
    return sio


def vet_skops(path: Path) -> list[str]:
    """Check a ``.skops`` file as data, before skops builds anything from it.

    Parameters
    ----------
    path : Path
        The file.

    Returns
    -------
    list of str
        The vetted ``module.Class`` names the file holds, to pass to ``skops.io.load`` as
        ``trusted`` (skops then adds its own defaults, which the check above already
        narrowed: a name not vetted here never reaches it).

    Raises
    ------
    InputError
        The file is not a readable zip, is too large, or holds anything not vetted; the
        message names the node and the fix.
    """
    from anonml.modelfile._validate_xgboost import decode_xgboost_raw, validate_xgboost_model

    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise _fail(path, f"is not a readable .skops file ({one_line(exc, 200)}); fix: save it "
                    "with anonml.safemodel.save_model or skops.io.dump") from None
    with zf:
        infos = zf.infolist()
        if len(infos) > MAX_MEMBERS:
            raise _fail(path, f"holds {len(infos):,} members (limit {MAX_MEMBERS:,})")
        total = sum(i.file_size for i in infos)
        if total > MAX_TOTAL_BYTES:
            raise _fail(path, f"unpacks to {total:,} bytes (limit {MAX_TOTAL_BYTES:,}); it may "
                        "be a zip bomb")
        try:
            info = zf.getinfo("schema.json")
        except KeyError:
            raise _fail(path, "has no schema.json; it is not a .skops file") from None
        if info.file_size > MAX_SCHEMA_BYTES:
            raise _fail(path, f"has a schema of {info.file_size:,} bytes (limit "
                        f"{MAX_SCHEMA_BYTES:,})")
        try:
            schema = json.loads(zf.read(info))
        except RecursionError:
            raise _fail(path, "has a schema nested too deeply to read") from None
        except (ValueError, zipfile.BadZipFile, OSError, EOFError) as exc:
            raise _fail(path, f"has an unreadable schema.json ({one_line(exc, 200)})") from None
        if not isinstance(schema, dict) or "__loader__" not in schema:
            raise _fail(path, "has a schema.json that is not a skops schema")
        _check_zip_layout(path, zf)
        vetter = _Vetter(path, zf)
        vetter.walk(schema, "root", 0)
        # raw bytes are only ever an XGBoost booster's model (its ``handle``), and every bytes
        # member is validated as one, not only those in handle position: skops reuses the
        # first node it meets with a given ``__id__``, so a decoy placed earlier under the
        # handle's id would otherwise be what it builds
        handles = {id(_booster_handle(vetter, b["state"], b["where"])) for b in vetter.boosters}
        for node in vetter.bytes_nodes:
            if id(node) not in handles:
                raise vetter.fail("root", "it holds raw bytes outside an XGBoost booster")
            with vetter.zf.open(vetter.members[node["file"]]) as fh:
                raw = fh.read()
            try:
                validate_xgboost_model(decode_xgboost_raw(raw))
            except InputError as exc:
                raise vetter.fail("root", f"its XGBoost booster is malformed: {exc}") from None
        for obj in vetter.objects:  # after types and raw bytes: those refusals come first
            vetter.attributes(*obj)
        unused = sorted(set(vetter.members) - set(vetter.referenced) - {"schema.json"})
        if unused:
            more = f" (and {len(unused) - 1} more)" if len(unused) > 1 else ""
            raise _fail(path, f"is refused: member {unused[0][:80]!r}{more} is not part of the "
                        "model (the schema never refers to it); a model file holds the model "
                        "and nothing else; fix: save the fitted estimator again with "
                        "anonml.safemodel.save_model")
    return sorted(vetter.names)


def _booster_handle(vetter: _Vetter, state: dict, where: str) -> dict:
    """The bytes node holding an ``xgboost.core.Booster``'s raw model (its ``handle``)."""
    content = state.get("content") or {}
    handle = (content.get("content") or {}).get("handle") if isinstance(content, dict) else None
    if not isinstance(handle, dict) or handle.get("__loader__") not in ("BytearrayNode",
                                                                       "BytesNode"):
        raise vetter.fail(where, "an XGBoost booster without its raw model bytes")
    return handle


def load_vetted_skops(path: Path) -> Any:
    """:func:`vet_skops`, then ``skops.io.load`` with exactly the vetted names trusted."""
    names = vet_skops(path)
    sio = _skops()
    try:
        return sio.load(path, trusted=names)
    except Exception as exc:  # noqa: BLE001 - a vetted file that still fails: one line
        raise _fail(path, f"could not be built ({type(exc).__name__}: {one_line(exc, 200)}); "
                    "fix: save it again with anonml.safemodel.save_model") from None


__all__ = ["ALLOWED_LOADERS", "VETTED_OBJECTS", "load_vetted_skops", "vet_skops"]
