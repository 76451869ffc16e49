"""One audited Adult model per verdict kind, for the docs (docs/release/).

    python benchmarks/audit_examples.py [--only NAME ...]

- ``do_not_release``: a decision tree grown to single records (SafeDecisionTreeClassifier, defaults);
- ``release_with_conditions``: a regularised forest (min_samples_leaf=50) trained with the
  plain scikit-learn class, so it carries no fingerprint;
- ``release``: a SafeRandomForestClassifier (min_samples_leaf=5) trained on Adult made
  50-anonymous by anonml's accuracy-guided anonymizer (12 quasi-identifiers, guided by the
  predictions of the same forest trained on the original data), attacked on the original
  training rows, with the anonymized table re-verified.

Each model is saved as .skops and audited through the CLI code path (``anonml audit``'s
library calls), the three report files go to docs/release/<name>/, the HTML page rendered to
PNG at docs/release/<name>.png, and the timings to benchmarks/results/audit_examples.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

from sklearn.ensemble import RandomForestClassifier

from anonml import AccuracyGuidedAnonymizer
from anonml.attacks import Target
from anonml.datasets import load_adult
from anonml.safemodel import (
    SafeDecisionTreeClassifier,
    SafeRandomForestClassifier,
    load_model,
    request_release,
    save_model,
)

sys.path.insert(0, str(Path(__file__).parent))
from bench_audit import adult_pipeline  # noqa: E402
from render_report_png import render_png  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=None)
    args = ap.parse_args(argv)
    ds = load_adult()
    X = ds.frame[list(ds.feature_names)]
    y = ds.frame[ds.target]
    tr, te = ds.split == "train", ds.split == "test"
    cat = list(ds.categorical_features)
    work = Path("/tmp/anonml_audit_examples")
    work.mkdir(exist_ok=True)

    def build(name):
        X_train = X[tr]
        anonymization = None
        if name == "do_not_release":
            model = adult_pipeline(SafeDecisionTreeClassifier(random_state=0), cat)
        elif name == "release_with_conditions":
            model = adult_pipeline(RandomForestClassifier(min_samples_leaf=50, random_state=0),
                                   cat)
        else:
            # the model to protect, its predictions guide the anonymization (the paper's method)
            original = adult_pipeline(RandomForestClassifier(min_samples_leaf=5, random_state=0),
                                      cat).fit(X[tr], y[tr])
            anonymization = AccuracyGuidedAnonymizer(
                k=50, quasi_identifiers=list(ds.qi_sets["12"]), categorical_features=cat,
                random_state=0)
            X_train = anonymization.fit_transform(X[tr], original.predict(X[tr]))
            model = adult_pipeline(SafeRandomForestClassifier(min_samples_leaf=5,
                                                              random_state=0), cat)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the overfit tree warns at fit, on purpose
            model.fit(X_train, y[tr])
        return model, X_train, anonymization

    figures = {}
    for name in ("do_not_release", "release_with_conditions", "release"):
        if args.only and name not in args.only:
            continue
        t0 = time.perf_counter()
        model, X_train, anonymization = build(name)
        path = save_model(model, work / f"{name}.skops")
        fit_s = time.perf_counter() - t0
        t1 = time.perf_counter()
        # the attacks test the real people (the original rows); the anonymized table is
        # verified separately
        decision = request_release(
            Target(load_model(path), X[tr], y[tr], X[te], y[te]), target_name="income",
            dataset_name="Adult", categorical_features=cat, anonymization=anonymization,
            anonymized_train=X_train if anonymization is not None else None,
            model_file=path, n_jobs=2,
            progress=lambda m: print(f"  {name}: {m}", file=sys.stderr, flush=True),
            progress_count=lambda label, done, total: print(
                f"  {name}: {label} {done}/{total}", file=sys.stderr, flush=True))
        audit_s = time.perf_counter() - t1
        out = ROOT / "docs" / "release" / name
        out.mkdir(parents=True, exist_ok=True)
        decision.write(out)
        png = ROOT / "docs" / "release" / f"{name}.png"
        size = render_png(decision.report, png)
        from PIL import Image  # 128 colours: a tenth of the size, the same page to the eye

        Image.open(png).convert("RGB").quantize(colors=128).save(png, optimize=True)
        print(f"{name}: verdict {decision.decision}; fit+save {fit_s:.1f} s, audit "
              f"{audit_s:.1f} s; png {size}")
        figures[name] = {"decision": decision.decision, "fit_seconds": round(fit_s, 2),
                         "audit_seconds": round(audit_s, 2),
                         "stages": decision.report["timings"]["stages"],
                         "measures": decision.measures}
    res = ROOT / "benchmarks" / "results" / "audit_examples.json"
    old = json.loads(res.read_text()) if res.exists() else {}
    old.update(figures)
    res.write_text(json.dumps(old, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
