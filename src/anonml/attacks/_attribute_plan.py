"""What the worst-case attribute attack will do with each feature, decided before any model call.

:func:`attribute_plan` resolves the features and which are categorical, and for each
continuous feature says how its missing values are treated, or why it cannot be attacked. It
runs first in :meth:`~anonml.attacks.WorstCaseAttribute.run` and, through
:meth:`~anonml.attacks.WorstCaseAttribute.check`, in :func:`anonml.safemodel.request_release`
before the long work, so that a bad feature list fails in seconds, not after the membership
attacks.

Missing values are handled as the model handles them (an imputing pipeline answers for a
record with a missing value, else the target's own probabilities could not have been
computed):

* a *categorical* feature: a missing value is one value of its own (one more completion);
* a *continuous* feature: the grid spans the finite values, and "missing" is one more
  completion. A record whose value is missing is at risk when the model's answer singles out
  "missing" (the missing completion alone reaches the peak); a record with a value is at risk
  by the grid rule, and not when "missing" reaches the peak too (the answer then does not
  narrow the value down).
* a continuous feature with infinite values, or no finite value, is not attacked; the reason
  is recorded (``WorstCaseAttributeResult.skipped``) and shown in the report.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from anonml.encoding import detect_categorical, resolve_columns

__all__ = ["attribute_plan"]


def attribute_plan(X_train: pd.DataFrame, X_test: pd.DataFrame, features: Any,
                   categorical_features: Any) -> tuple[list, set, dict, set]:
    """Features to attack, which are categorical, which are skipped and why, and which
    continuous ones have missing values.

    Parameters
    ----------
    X_train, X_test : DataFrame
        Members and non-members, same columns.
    features, categorical_features : list of column names or None
        As :class:`~anonml.attacks.WorstCaseAttribute` takes them.

    Returns
    -------
    features : list
        The features attacked, in order (skipped ones left out).
    categorical : set
    skipped : dict
        Feature -> the reason it is not attacked (one line).
    with_missing : set
        Continuous features with missing values ("missing" is one more completion).

    Raises
    ------
    InputError
        A feature or categorical feature that is not a column (one line).
    """
    names = resolve_columns(X_train, features, what="feature")
    categorical = set(detect_categorical(X_train, names, categorical_features))
    skipped: dict = {}
    with_missing: set = set()
    attacked = []
    for column in names:
        if column in categorical:
            attacked.append(column)
            continue
        full = pd.concat([X_train[column], X_test[column]], ignore_index=True)
        values = pd.to_numeric(full, errors="coerce").to_numpy(dtype=np.float64)
        n_inf = int(np.isinf(values).sum())
        finite = np.isfinite(values)
        if n_inf:
            skipped[column] = (f"the feature was not attacked: it is continuous and has "
                               f"{n_inf:,} infinite value{'' if n_inf == 1 else 's'}, which "
                               "no grid can hold; list it as categorical to attack each value")
        elif not finite.any():
            skipped[column] = ("the feature was not attacked: it is continuous and every value "
                               "is missing")
        else:
            attacked.append(column)
            if not finite.all():
                with_missing.add(column)
    return attacked, categorical, skipped, with_missing
