"""The ``anonml`` command: a thin shell over the library.

It parses arguments, calls the library, prints results, and turns every library error into one
line on standard error with exit code 1. No computation lives here.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from anonml import __version__
from anonml._errors import AnonmlError, InputError, UntrustedModelError

EXAMPLES = """\
examples:
  anonml demo
  anonml demo -o results/ --k 50
  anonml anonymize adult.csv --k 100 --qi age,sex,race --target income --labels -o adult_k100.csv
  anonml anonymize train.parquet --k 50 --qi age,zip --target y --predictions preds.csv -o anon.parquet
  anonml anonymize train.csv --k 50 --qi age,zip --target y --model model.joblib --trust-model -o anon.csv
"""


class Progress:
    """Step messages with elapsed time on standard error (silent with --quiet)."""

    def __init__(self, quiet: bool = False):
        self.quiet = quiet
        self.t0 = time.perf_counter()

    def __call__(self, message: str) -> None:
        if not self.quiet:
            print(f"[{time.perf_counter() - self.t0:6.1f}s] {message} ...", file=sys.stderr, flush=True)


def _split_names(text: str, what: str) -> list[str]:
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        raise InputError(f"--{what} is empty; give comma-separated column names, e.g. age,sex")
    return names


def _load_model(path: str, trust: bool) -> Any:
    p = Path(path)
    if not p.is_file():
        raise InputError(f"model file {path!r} does not exist; check the path")
    if not trust:
        raise UntrustedModelError(
            f"loading {path!r} unpickles it, which runs code from the file; pass --trust-model "
            "if you trust its source, or pass --predictions FILE instead"
        )
    import joblib

    try:
        return joblib.load(p)
    except Exception as exc:  # unpickling can fail in many ways; report the first line
        raise InputError(f"cannot load model {path!r}: {type(exc).__name__}: {exc}") from None


def _load_predictions(path: str) -> Any:
    import numpy as np

    from anonml._io import read_table

    if path.lower().endswith(".npy"):
        if not Path(path).is_file():
            raise InputError(f"predictions file {path!r} does not exist; check the path")
        return np.load(path, allow_pickle=False)
    table = read_table(path)
    if table.shape[1] != 1:
        raise InputError(
            f"predictions file {path!r} has {table.shape[1]} columns; give one column with one "
            "prediction per input row (header line first)"
        )
    return table.iloc[:, 0].to_numpy()


def _cmd_anonymize(args: argparse.Namespace) -> int:
    from anonml import AccuracyGuidedAnonymizer
    from anonml._io import read_table, table_format, write_table

    say = Progress(args.quiet)
    table_format(args.output)  # fail on a bad output name before any work
    if Path(args.output).resolve() == Path(args.input).resolve():
        raise InputError("the output path is the input path; write to another file")
    say(f"reading {args.input}")
    frame = read_table(args.input)
    qi = _split_names(args.qi, "qi")
    if args.target is not None and args.target not in frame.columns:
        raise InputError(
            f"target {args.target!r} is not a column; columns are: {', '.join(map(str, frame.columns[:12]))}"
        )
    if args.target in qi:
        raise InputError(f"target {args.target!r} is also listed in --qi; remove it from --qi")
    features = frame.drop(columns=[args.target]) if args.target else frame
    if args.labels:
        if args.target is None:
            raise InputError("--labels needs --target COLUMN, the column of true labels")
        y = frame[args.target]
    elif args.predictions:
        y = _load_predictions(args.predictions)
    else:
        model = _load_model(args.model, args.trust_model)
        say("predicting with the model")
        try:
            y = model.predict(features)
        except Exception as exc:
            raise InputError(
                f"the model could not predict on the input ({type(exc).__name__}: {exc}); "
                "check that the columns match its training data"
            ) from None
    categorical = _split_names(args.categorical, "categorical") if args.categorical else None
    anonymizer = AccuracyGuidedAnonymizer(
        k=args.k,
        quasi_identifiers=qi,
        categorical_features=categorical,
        representative=args.representative,
        tree=args.tree,
        refine=args.refine,
        features=args.features,
        random_state=args.seed,
    )
    say(f"anonymizing {len(frame):,} rows (k={args.k}, {len(qi)} quasi-identifiers)")
    t = time.perf_counter()
    out = anonymizer.fit_transform(features, y)  # the target never reaches the tree
    if args.target:  # put it back, unchanged, where it was
        out.insert(frame.columns.get_loc(args.target), args.target, frame[args.target])
    seconds = time.perf_counter() - t
    say(f"writing {args.output}")
    write_table(out, args.output)
    summary = {
        "k": args.k,
        "rows": len(out),
        "quasi_identifiers": len(qi),
        "groups": int(anonymizer.n_groups_),
        "smallest_class_verified": int(anonymizer.min_class_size_),
        "tree": anonymizer.tree_method_,
        "seconds": round(seconds, 3),
        "output": str(args.output),
    }
    print(json.dumps(summary) if args.json else "\n".join(f"{k:>24}: {v}" for k, v in summary.items()))
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from anonml.experiments._demo import run_demo

    say = Progress(args.quiet)
    s = run_demo(args.output, k=args.k, random_state=args.seed, progress=say)
    if args.json:
        print(json.dumps(s))
        return 0
    pct = lambda v: f"{100 * v:.2f}%"  # noqa: E731
    print(
        f"anonml demo: Adult (32,561 train / 16,281 test rows), {s['n_quasi_identifiers']} "
        f"quasi-identifiers, k={s['k']}\n"
        f"  baseline test accuracy (original NN):          {pct(s['accuracy_before'])}\n"
        f"  anonymized test accuracy (retrained NN):       {pct(s['accuracy_after'])}\n"
        f"  ... with test rows mapped like the training:   {pct(s['accuracy_after_mapped'])}\n"
        f"  groups: {s['n_groups']}, smallest class (verified): {s['min_class_size']} >= k={s['k']}\n"
        f"  time: anonymize {s['seconds_anonymize']:.2f}s, total {s['seconds_total']:.1f}s\n"
        f"  wrote {Path(args.output) / 'adult_anonymized.csv'} and {Path(args.output) / 'summary.json'}"
    )
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="anonml",
        description="Make a model's training data k-anonymous in the way that hurts the model least.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"anonml {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    a = sub.add_parser(
        "anonymize",
        help="k-anonymize a table along a model's predictions (or the labels)",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    a.add_argument("input", help="input table (.csv, .csv.gz or .parquet)")
    a.add_argument("--k", type=int, required=True, help="smallest equivalence-class size (>= 2)")
    a.add_argument("--qi", required=True, help="comma-separated quasi-identifier columns")
    a.add_argument("--target", help="label column: kept unchanged, not given to the model")
    src = a.add_mutually_exclusive_group(required=True)
    src.add_argument("--model", metavar="FILE", help="fitted scikit-learn model (joblib/pickle)")
    src.add_argument("--predictions", metavar="FILE", help="the model's predictions (.csv with one column, or .npy)")
    src.add_argument("--labels", action="store_true", help="guide by the --target labels (workload-aware)")
    a.add_argument("--trust-model", action="store_true", help="allow unpickling --model (runs code from the file)")
    a.add_argument("-o", "--output", required=True, help="output table (.csv, .csv.gz or .parquet)")
    a.add_argument("--categorical", help="comma-separated categorical columns (default: from dtype)")
    a.add_argument("--representative", default="majority_medoid", choices=["majority_medoid", "medoid"])
    a.add_argument("--tree", default="auto", choices=["auto", "exact", "hist"],
                   help="exact: scikit-learn's tree; hist: anonml's histogram tree (auto: hist from 100k rows)")
    a.add_argument("--refine", default="mondrian", choices=["mondrian", "none"],
                   help="cut large pure leaves further (default) or keep the paper's leaves")
    a.add_argument("--features", default="qi", choices=["qi", "all"],
                   help="columns the tree reads: the QIs (default) or every column but --target")
    a.add_argument("--seed", type=int, default=0, help="random seed of the tree (default 0)")
    a.add_argument("--json", action="store_true", help="print the summary as JSON")
    a.add_argument("-q", "--quiet", action="store_true", help="no progress messages")
    a.set_defaults(func=_cmd_anonymize)

    d = sub.add_parser("demo", help="the main job on the bundled Adult data (about 20 s)")
    d.add_argument("-o", "--output", default="anonml-demo", help="output folder (default anonml-demo)")
    d.add_argument("--k", type=int, default=100, help="k (default 100)")
    d.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    d.add_argument("--json", action="store_true", help="print the summary as JSON")
    d.add_argument("-q", "--quiet", action="store_true", help="no progress messages")
    d.set_defaults(func=_cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.func(args))
    except AnonmlError as exc:
        print(f"anonml: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("anonml: interrupted; nothing was written", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
