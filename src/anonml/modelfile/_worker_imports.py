"""What a sandbox worker imports before its guards, and how to import it quickly.

A safe load (:func:`anonml.safemodel.open_model`) starts a fresh interpreter: the worker. Before
its audit hook goes in, it imports what reading a model needs (pandas, scikit-learn, skops),
because their set-up touches files and native libraries that the guards then refuse. Measured on
an Adult random forest (``benchmarks/bench_safe_load.py``), most of the load was these imports,
and most of those were **skops' own import**:

* ``skops.io`` builds, at import, its default list of trusted scikit-learn estimators with
  ``sklearn.utils.all_estimators()``, which imports *every* scikit-learn module, and walks the
  vendored ``array_api_compat`` packages, which import PyTorch and Dask when they are installed
  (about 1.2 s of PyTorch alone);
* it then names every NumPy and SciPy ufunc with a scan of ``sys.modules`` per ufunc, which costs
  in proportion to how many modules were imported before SciPy's.

anonml does not use skops' default list: a file is vetted by anonml first
(:mod:`anonml.modelfile._skops_vet`), and ``skops.io.load`` is given exactly the vetted names of
that file as ``trusted``. So the worker imports skops with ``all_estimators`` answering an empty
list for the length of that one import (:func:`import_skops`). skops' default list is then
empty, which only makes skops' own check stricter: nothing is trusted that anonml did not name.
The function is restored right after; no other module sees the change. :func:`preload` also
imports SciPy's special functions first, so skops' scan finds them among the first modules.

The auditor's process does not import skops to open a model at all (:func:`skops_installed`):
only the worker reads the file.
"""

from __future__ import annotations

import importlib.util
import sys

__all__ = ["import_skops", "preload", "skops_installed"]


def skops_installed() -> bool:
    """True when skops can be imported (found, not imported: importing it takes seconds)."""
    try:
        return importlib.util.find_spec("skops") is not None
    except (ImportError, ValueError):
        return False


def import_skops() -> None:
    """Import ``skops.io`` without its default list of scikit-learn estimators (see the module
    docstring). A no-op when skops is already imported or not installed."""
    if "skops.io" in sys.modules or not skops_installed():
        return
    import sklearn.utils as sk_utils

    saved = sk_utils.__dict__.get("all_estimators")
    sk_utils.all_estimators = _no_estimators  # type: ignore[attr-defined]
    try:
        import skops.io  # noqa: F401
    except ImportError:
        pass
    finally:
        if saved is None:
            sk_utils.__dict__.pop("all_estimators", None)
        else:
            sk_utils.all_estimators = saved  # type: ignore[attr-defined]


def _no_estimators(type_filter: object = None) -> list:
    return []


def preload() -> None:  # pragma: no cover - runs in the worker
    """Everything the worker imports before its guards, in an order that keeps skops' import
    short: SciPy's special functions, pandas, scikit-learn's base, anonml's model reader, skops
    (:func:`import_skops`)."""
    try:
        import scipy.special  # noqa: F401 - first, so skops' per-ufunc scan ends early
    except ImportError:
        pass
    import pandas  # noqa: F401 - their set-up may touch files, which the guards refuse
    import sklearn.base  # noqa: F401

    import anonml.modelfile._read  # noqa: F401
    import anonml.modelfile._seccomp  # noqa: F401

    import_skops()  # skops' import lists scikit-learn's estimators, whose test helpers look up
    # the native thread pools (ctypes), which the guards refuse
