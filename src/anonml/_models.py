"""The models of the papers' experiments, as scikit-learn pipelines over raw tables."""

from __future__ import annotations

from typing import Any, Sequence

from sklearn.compose import make_column_transformer
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

__all__ = ["paper_nn", "preprocessor"]


def preprocessor(categorical: Sequence[Any], numeric: Sequence[Any], dense: bool = False):
    """One-hot categorical columns (unknown values ignored) and standardized numeric ones;
    ``dense=True`` for estimators that reject sparse input (e.g. histogram gradient boosting)."""
    return make_column_transformer(
        (OneHotEncoder(handle_unknown="ignore", sparse_output=not dense), list(categorical)),
        (StandardScaler(), list(numeric)),
    )


def paper_nn(categorical: Sequence[Any], numeric: Sequence[Any], random_state: Any = None) -> Pipeline:
    """The neural network of Goldsteen et al. (2022), Sec. 4.

    One hidden layer of 100 ReLU units, Adam, constant learning rate 0.001, batch size 200,
    on one-hot categorical and standardized numeric inputs. Early stopping on a 10% validation
    split, as in the reference runs of IBM's ai-privacy-toolkit the issue compares against.

    Train it on integer labels (e.g. ``(y == ">50K").astype(int)``): scikit-learn before 1.9
    fails in early stopping's validation score when the labels are strings.
    """
    return make_pipeline(
        preprocessor(categorical, numeric),
        MLPClassifier(
            hidden_layer_sizes=(100,),
            activation="relu",
            solver="adam",
            learning_rate="constant",
            learning_rate_init=0.001,
            batch_size=200,
            early_stopping=True,
            max_iter=200,
            random_state=random_state,
        ),
    )
