"""Model files nobody vouches for: reading, vetting, validating and measuring them.

A model file handed to an auditor may be hostile. This package reads it without running code
it names, and measures what it holds; :mod:`anonml.safemodel` judges those measurements
against the release rules and never reads a file itself.

* :func:`load_model`, :func:`save_model`: a ``.skops`` file is vetted as data before skops
  builds anything (vetted classes only, their exact attributes), XGBoost ``.json``/``.ubj``
  documents are decoded and checked before XGBoost parses them, and the built model's
  structure is validated (every array the predict path indexes); pickles only with
  ``trust=True``.
* :func:`open_model`: the same reading in a separate, limited process (no network, no new
  processes, no file writes, a seccomp filter, memory and CPU limits), answering calls as a
  :class:`SandboxedModel`; :class:`SandboxedEstimator` refits it from a bounded schema.
  :func:`prestart` starts that process for a named file before the caller's own imports (the
  CLI does, for ``--model`` / ``--mapping``): one process for that one file, never reused.
* :func:`verify_mapping`, :func:`release_pipeline`: a released anonymizer (the mapping) and
  the ``Pipeline(mapping, model)`` it ships in, re-verified from the file (k, l, t, routes).
* Measurements of a fitted model: :func:`model_family`, :func:`fingerprint` and
  :func:`diff_fingerprints` (tamper evidence), :func:`structural_measures` (leaf sizes,
  degrees of freedom, generalisation gap), :func:`inventory` (every member of a file and the
  training values it holds).

Its bounds (classes, tree depth, features) are in one leaf module, ``_limits``. Nothing here
imports :mod:`anonml.safemodel`: the safe wrapper classes are named as data (module, class)
wherever a file may hold one, and built by skops, like any vetted class.

References
----------
skops persistence format, https://skops.readthedocs.io/en/stable/persistence.html;
PEP 578 (runtime audit hooks); seccomp(2).
"""

from anonml._lazy import lazy_attributes

_LAZY = {
    "load_model": "anonml.modelfile._model_file",
    "save_model": "anonml.modelfile._model_file",
    "open_model": "anonml.modelfile._sandbox",
    "prestart": "anonml.modelfile._sandbox_start",
    "SandboxedModel": "anonml.modelfile._sandbox",
    "SandboxedEstimator": "anonml.modelfile._sandbox",
    "verify_mapping": "anonml.modelfile._mapping",
    "release_pipeline": "anonml.modelfile._mapping",
    "model_family": "anonml.modelfile._family",
    "fingerprint": "anonml.modelfile._fingerprint",
    "diff_fingerprints": "anonml.modelfile._fingerprint",
    "structural_measures": "anonml.modelfile._structure",
    "inventory": "anonml.modelfile._inventory",
}

__all__ = [
    "SandboxedEstimator",
    "SandboxedModel",
    "diff_fingerprints",
    "fingerprint",
    "inventory",
    "load_model",
    "model_family",
    "open_model",
    "prestart",
    "release_pipeline",
    "save_model",
    "structural_measures",
    "verify_mapping",
]

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, __all__)
