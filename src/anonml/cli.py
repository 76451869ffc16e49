"""The ``anonml`` command: a thin shell over the library.

It parses arguments, calls the library, prints results, and turns every library error into one
line on standard error with exit code 1. No computation lives here.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from anonml import __version__
from anonml._errors import AnonmlError, InputError, one_line

EXAMPLES = """\
examples:
  anonml demo
  anonml demo -o results/ --k 50
  anonml anonymize adult.csv --k 100 --qi age,sex,race --target income --labels -o adult_k100.csv
  anonml anonymize train.parquet --k 50 --qi age,zip --target y --predictions preds.csv -o anon.parquet
  anonml anonymize train.csv --k 50 --qi age,zip --target y --model model.joblib --trust-model -o anon.csv
  anonml audit --model model.skops --train train.csv --test test.csv --target income -o report/
  anonml audit --train-proba p_train.csv --test-proba p_test.csv --train train.csv --test test.csv --target y -o report/
  anonml rules init risk_appetite.toml
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


def _load_predictions(path: str) -> Any:
    from anonml._io import read_array, read_table

    if path.lower().endswith(".npy"):
        return read_array(path, "predictions")
    table = read_table(path)
    if table.shape[1] != 1:
        raise InputError(
            f"predictions file {path!r} has {table.shape[1]} columns; give one column with one "
            "prediction per input row (header line first)"
        )
    return table.iloc[:, 0].to_numpy()


def _predict(model: Any, features: Any, path: str) -> Any:
    try:
        return model.predict(features)
    except Exception as exc:  # the model's own check; its message can span several lines
        raise InputError(
            f"the model {path!r} could not predict on the input ({type(exc).__name__}: "
            f"{one_line(exc, 200)}); fix: give the columns it was trained on, with --target "
            "naming the label column"
        ) from None


def _cmd_anonymize(args: argparse.Namespace) -> int:
    from anonml import AccuracyGuidedAnonymizer
    from anonml._io import (
        check_output_file,
        read_table,
        table_format,
        table_packages,
        write_table,
    )

    say = Progress(args.quiet)
    # everything that can be known before the work: names, folders, packages
    table_format(args.output)
    check_output_file(args.output, inputs=[args.input, args.predictions, args.model])
    table_packages(args.input)
    table_packages(args.output, reading=False)
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
        from anonml.safemodel import load_model

        model = load_model(args.model, trust=args.trust_model)
        say("predicting with the model")
        y = _predict(model, features, args.model)
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
    from anonml._io import check_output_folder
    from anonml.experiments._demo import run_demo

    check_output_folder(args.output)
    say = Progress(args.quiet)
    s = run_demo(args.output, k=args.k, random_state=args.seed, progress=say)
    if args.json:
        print(json.dumps(s))
        return 0
    pct = lambda v: f"{100 * v:.2f}%"
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


def _read_labelled(path: str, target: str, what: str) -> tuple[Any, Any]:
    from anonml._io import read_table

    table = read_table(path)
    if target not in table.columns:
        raise InputError(f"--target {target!r} is not a column of the {what} table {path!r}; "
                         f"fix: name one of {', '.join(map(str, table.columns[:8]))}")
    return table.drop(columns=[target]), table[target].to_numpy()


def _read_proba(path: str, what: str) -> Any:
    from anonml._io import read_array, read_table

    if path.lower().endswith(".npy"):
        return read_array(path, what)
    table = read_table(path)
    try:
        return table.to_numpy(dtype=float)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{what} file {path!r} holds values that are not numbers "
                         f"({one_line(exc, 120)}); fix: one column of probabilities per class"
                         ) from None


def _cmd_audit(args: argparse.Namespace) -> int:
    from anonml._io import check_output_folder, table_packages
    from anonml.attacks import Target
    from anonml.report import check_formats
    from anonml.safemodel import load_model, load_rules, request_release

    if args.model is None and (args.train_proba is None or args.test_proba is None):
        raise InputError("give --model FILE, or both --train-proba and --test-proba for a "
                         "black-box model")
    if args.model is not None and (args.train_proba or args.test_proba):
        raise InputError("give either --model or --train-proba/--test-proba, not both")
    if (args.k is None) != (args.anonymized_qi is None):
        raise InputError("--anonymized-qi and --k go together: the quasi-identifier columns and "
                         "the k claimed for them")
    out = Path(args.output)
    if out.exists() and not out.is_dir():
        raise InputError(f"-o {args.output!r} is a file; fix: give a folder")
    formats = tuple(_split_names(args.formats, "formats"))
    bad = [f for f in formats if f not in ("json", "html", "pdf")]
    if bad:
        raise InputError(f"--formats {bad[0]!r} is not known; fix: choose from json,html,pdf")
    # everything that can be known before the work: the folder, the packages, the inputs' names
    check_output_folder(out)
    check_formats(formats)
    for path in (args.train, args.test, args.anonymized_train, args.train_proba,
                 args.test_proba):
        if path is not None and not path.lower().endswith(".npy"):
            table_packages(path)
    attacks = tuple(_split_names(args.attacks, "attacks")) if args.attacks != "none" else ()
    t0 = time.perf_counter()

    def say(message: str) -> None:
        if not args.quiet:
            print(f"[{time.perf_counter() - t0:6.1f}s] {message}", file=sys.stderr, flush=True)

    rules = load_rules(args.rules)  # a bad rules file fails before any work
    say(f"rules: {rules.name} ({len(rules)} rules, from {rules.origin})")
    X_train, y_train = _read_labelled(args.train, args.target, "training")
    X_test, y_test = _read_labelled(args.test, args.target, "test")
    if args.model is not None:
        model = load_model(args.model, trust=args.trust_model)
        say(f"model: {type(model).__name__} from {args.model}")
        target = Target(model, X_train, y_train, X_test, y_test)
    else:
        target = Target(None, None, y_train, None, y_test,
                        proba_train=_read_proba(args.train_proba, "--train-proba"),
                        proba_test=_read_proba(args.test_proba, "--test-proba"))
    anonymization = anonymized_train = None
    if args.anonymized_qi:
        anonymization = {"quasi_identifiers": _split_names(args.anonymized_qi, "anonymized-qi"),
                         "k": args.k, "method": "declared on the command line"}
        if args.anonymized_train:
            anonymized_train = _read_labelled(args.anonymized_train, args.target,
                                              "anonymized training")[0]
    elif args.anonymized_train:
        raise InputError("--anonymized-train needs --anonymized-qi and --k")
    categorical = _split_names(args.categorical, "categorical") if args.categorical else None
    decision = request_release(
        target, rules, attacks=attacks, anonymization=anonymization,
        anonymized_train=anonymized_train,
        categorical_features=categorical, model_file=args.model, target_name=args.target,
        dataset_name=args.dataset or Path(args.train).name, n_jobs=args.n_jobs,
        random_state=args.seed, progress=say)
    say("writing the report")
    out.parent.mkdir(parents=True, exist_ok=True)
    paths = decision.write(out, formats=formats, create=True)
    v = decision.verdict
    if args.json:
        print(json.dumps({"decision": v.decision, "summary": v.summary,
                          "conditions": v.conditions,
                          "files": {k: str(p) for k, p in paths.items()}}))
    else:
        lines = [f"VERDICT: {v.label.upper()}", v.summary]
        lines += [f"  condition: {c}" for c in v.conditions]
        lines += [f"  reason: {r['text']} (measured {r['measured']}; needs {r['threshold']})"
                  for r in v.reasons]
        lines += [f"wrote {p}" for p in paths.values()]
        print("\n".join(lines))
    if args.fail_unless_release and v.decision != "release":
        return 3
    return 0


def _cmd_rules(args: argparse.Namespace) -> int:
    from anonml._io import atomic_write
    from anonml.safemodel import default_rules_text, load_rules

    if args.action == "init":
        path = Path(args.file)
        if path.exists() and not args.force:
            raise InputError(f"{args.file!r} exists; fix: choose another name or pass --force")
        text = default_rules_text()
        atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
        print(f"wrote {path} ({len(load_rules(path))} rules); edit the values, then "
              f"`anonml audit --rules {path} ...` or set ANONML_RULES={path}")
        return 0
    rules = load_rules(args.file)
    print(f"{rules.origin}: {len(rules)} valid rules ({rules.name}, version {rules.version}, "
          f"sha256 {rules.sha256[:16]}...)")
    for rule in rules.rules:
        print(f"  {rule.id:<28} {rule.effect:<9} {rule.title}")
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
    src.add_argument("--model", metavar="FILE", help="fitted model: .skops or XGBoost .json/.ubj "
                     "(no code runs), or .pkl/.joblib with --trust-model")
    src.add_argument("--predictions", metavar="FILE", help="the model's predictions (.csv with one column, or .npy)")
    src.add_argument("--labels", action="store_true", help="guide by the --target labels (workload-aware)")
    a.add_argument("--trust-model", action="store_true", help="allow unpickling --model (runs "
                   "code from the file), and any type in a .skops file")
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

    au = sub.add_parser(
        "audit", help="check a trained model for release: rules, attacks, verdict, report",
        description="Run the risk-appetite checks and the privacy attacks on a trained model and "
        "write report.json, report.html and report.pdf with the verdict.")
    au.add_argument("--model", metavar="FILE", help="fitted model: .skops or XGBoost .json/.ubj "
                    "(no code runs), or .pkl/.joblib with --trust-model")
    au.add_argument("--trust-model", action="store_true",
                    help="allow unpickling --model, and any type in a .skops file")
    au.add_argument("--train-proba", metavar="FILE", help="black-box model: its class "
                    "probabilities on the training rows (.csv/.npy, one column per class, "
                    "sorted class order)")
    au.add_argument("--test-proba", metavar="FILE", help="the same on the test rows")
    au.add_argument("--train", required=True, help="training table (.csv, .csv.gz, .parquet)")
    au.add_argument("--test", required=True, help="held-out table, same columns")
    au.add_argument("--target", required=True, help="label column")
    au.add_argument("--rules", metavar="FILE", help="risk-appetite rules (.toml/.json); "
                    "default $ANONML_RULES, else anonml's defaults")
    au.add_argument("-o", "--output", required=True, help="report folder (created if missing)")
    au.add_argument("--attacks", default="worst_case,rmia,attribute",
                    help="comma-separated: worst_case, rmia or lira, attribute; or none "
                    "(default worst_case,rmia,attribute)")
    au.add_argument("--categorical", help="comma-separated categorical columns for the "
                    "attribute attack (default: from dtype)")
    au.add_argument("--anonymized-qi", metavar="COLS", help="the training data was anonymized "
                    "on these quasi-identifiers: verify k on it")
    au.add_argument("--k", type=int, help="the k claimed for --anonymized-qi")
    au.add_argument("--anonymized-train", metavar="FILE", help="the anonymized training table "
                    "the model was fitted on, row for row with --train (which then holds the "
                    "original rows the attacks test); default: --train itself")
    au.add_argument("--formats", default="json,html,pdf", help="report files (default all)")
    au.add_argument("--dataset", help="data set name shown in the report")
    au.add_argument("--n-jobs", type=int, default=None, help="parallel jobs of the attacks")
    au.add_argument("--seed", type=int, default=0, help="random seed of the attacks (default 0)")
    au.add_argument("--fail-unless-release", action="store_true",
                    help="exit with status 3 unless the verdict is release")
    au.add_argument("--json", action="store_true", help="print the verdict as JSON")
    au.add_argument("-q", "--quiet", action="store_true", help="no progress messages")
    au.set_defaults(func=_cmd_audit)

    r = sub.add_parser("rules", help="write or check a risk-appetite rules file")
    r.add_argument("action", choices=["init", "check"],
                   help="init: write the default rules to FILE; check: validate FILE")
    r.add_argument("file", nargs="?", default="risk_appetite.toml",
                   help="rules file (default risk_appetite.toml)")
    r.add_argument("--force", action="store_true", help="init: overwrite an existing file")
    r.set_defaults(func=_cmd_rules)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    from anonml._io import cleanup_on_signals

    try:
        with cleanup_on_signals():  # SIGTERM/SIGINT remove the temporary files first
            return int(args.func(args))
    except AnonmlError as exc:
        print(f"anonml: error: {one_line(exc, 2000)}", file=sys.stderr)
        return 1
    except OSError as exc:  # the system said no (disk, permissions): not a bug in anonml
        where = f" {exc.filename!r}:" if exc.filename else ""
        print(f"anonml: error:{where} {one_line(exc.strerror or exc, 300)}; nothing was "
              "written; fix: check the path, the permissions and the free space", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("anonml: interrupted; nothing was written", file=sys.stderr)
        return 130
    except SystemExit as exc:
        if exc.code == 128 + signal.SIGTERM:
            print("anonml: terminated; nothing was written", file=sys.stderr)
        raise


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
