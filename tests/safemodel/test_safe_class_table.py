"""The file readers (anonml.modelfile) name the safe wrappers as data, never importing
anonml.safemodel: the names they vet and rebuild must be the wrappers' real paths, and the
class each is said to subclass must be the one it does."""

from __future__ import annotations

import importlib

import pytest

import anonml.safemodel as safemodel
from anonml._errors import InputError
from anonml.modelfile._family import SAFE_BASES, SAFE_MODEL
from anonml.modelfile._skops_vet import VETTED_OBJECTS

#: wrappers no file may hold: a torch network is not read from a model file
NOT_IN_FILES = {"SafeDPSGDClassifier"}


def _wrapper_names():
    return sorted(n for n in safemodel.__all__
                  if n.startswith("Safe") and n != "SafeModelMixin" and n not in NOT_IN_FILES)


@pytest.mark.parametrize("name", _wrapper_names())
def test_every_safe_wrapper_is_named_by_its_real_path(name):
    try:
        klass = getattr(safemodel, name)
    except InputError:  # its optional library (xgboost) is not installed
        pytest.skip(f"{name} needs an optional library")
    key = (klass.__module__, klass.__name__)
    assert key in SAFE_BASES or key == SAFE_MODEL, f"{key} is not in the file readers' table"
    assert key in VETTED_OBJECTS


@pytest.mark.parametrize("key", sorted(SAFE_BASES))
def test_each_named_base_is_the_class_the_wrapper_subclasses(key):
    module, cls = key
    try:
        klass = getattr(importlib.import_module(module), cls)
    except InputError:
        pytest.skip(f"{cls} needs an optional library")
    mro = {(c.__module__, c.__name__) for c in klass.__mro__}
    assert SAFE_BASES[key] in mro, f"{cls} does not subclass {SAFE_BASES[key]}"
