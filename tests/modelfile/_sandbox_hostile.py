"""Estimators that misbehave when called: what a hostile model could do once it runs.

Used by tests/modelfile/test_sandbox.py through trusted pickles (the sandbox unpickles them in its
worker), so each misbehaviour happens in the worker, never in the test's process.
"""

import os
import signal
import time

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin


class Hostile(ClassifierMixin, BaseEstimator):
    def __init__(self, action="none", arg=None):
        self.action = action
        self.arg = arg

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        self.n_features_in_ = np.asarray(X).shape[1]
        return self

    def predict_proba(self, X):
        n = len(X)
        a = self.action
        if a == "segfault":  # a real crash in native code (no os.kill, which is refused)
            import faulthandler

            faulthandler.disable()
            faulthandler._sigsegv()
        elif a == "kill":
            os.kill(os.getpid(), signal.SIGSEGV)
        elif a == "hang":
            while True:
                time.sleep(0.1)
        elif a == "spin":
            while True:
                pass
        elif a == "memory":
            blocks = []
            while True:
                blocks.append(np.ones(2**27))  # 1 GiB each, touched
        elif a == "write":
            with open(self.arg, "w") as fh:
                fh.write("planted")
        elif a == "spawn":
            import subprocess

            subprocess.run(["true"], check=True)
        elif a == "threads":
            import threading

            for _ in range(1000):
                threading.Thread(target=time.sleep, args=(5,), daemon=True).start()
        elif a == "wrong_rows":
            return np.full((n + 1, 2), 0.5)
        elif a == "raise":
            raise ValueError("the model's own error\nover two lines")
        elif a == "stdout":
            print("x" * 100_000)
        p = np.full((n, len(self.classes_)), 1.0 / len(self.classes_))
        return p

    def predict(self, X):
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]
