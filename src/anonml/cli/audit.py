"""``anonml audit``: the release decision for a model file (a thin shell over
:func:`anonml.safemodel.request_release`).

Split from :mod:`anonml.cli` to keep that module readable; the shared helpers (``Progress``,
``_split_names``) stay there.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from anonml._errors import InputError, names_list, one_line
from anonml.cli._common import Progress, _split_names, add_command, add_names_option
from anonml.report._common import privacy_words

__all__ = ["add_parser", "run"]


def _read_labelled(path: str, target: str, what: str) -> tuple[Any, Any]:
    from anonml._io import read_table

    table = read_table(path)
    if target not in table.columns:
        raise InputError(f"--target {target!r} is not a column of the {what} table {path!r}; "
                         f"fix: name one of {names_list(table.columns, 8)}")
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


def run(args: argparse.Namespace) -> int:
    from anonml._io import table_packages
    from anonml._output import check_output_folder
    from anonml.attacks import Target
    from anonml.report import check_formats
    from anonml.safemodel import load_rules, request_release

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
    from anonml.cli._common import _check_inputs

    _check_inputs(train=args.train, test=args.test, model=args.model,
                  train_proba=args.train_proba, test_proba=args.test_proba,
                  anonymized_train=args.anonymized_train)
    for path in (args.train, args.test, args.anonymized_train, args.train_proba,
                 args.test_proba):
        if path is not None and not path.lower().endswith(".npy"):
            table_packages(path)
    attacks = tuple(_split_names(args.attacks, "attacks")) if args.attacks != "none" else ()
    say = Progress(args.quiet, suffix="")

    rules = load_rules(args.rules)  # a bad rules file fails before any work
    say(f"rules: {rules.name} ({len(rules)} rules, from {rules.origin})")
    X_train, y_train = _read_labelled(args.train, args.target, "training")
    X_test, y_test = _read_labelled(args.test, args.target, "test")
    categorical = _split_names(args.categorical, "categorical") if args.categorical else None
    if categorical is not None:  # before the model is read and the attacks run
        from anonml.cli._common import _columns_named

        _columns_named(categorical, X_train.columns, "--categorical")
    # the declared anonymization, read before the model and the attacks
    anonymization = anonymized_train = None
    if args.anonymized_qi:
        anonymization = {"quasi_identifiers": _split_names(args.anonymized_qi, "anonymized-qi"),
                         "k": args.k, "method": "declared on the command line"}
        from anonml.cli._common import _columns_named

        _columns_named(anonymization["quasi_identifiers"], X_train.columns, "--anonymized-qi")
        if args.anonymized_train:
            anonymized_train = _read_labelled(args.anonymized_train, args.target,
                                              "anonymized training")[0]
    elif args.anonymized_train:
        raise InputError("--anonymized-train needs --anonymized-qi and --k")
    mapping = None
    if args.model is not None:
        from anonml.safemodel import open_model

        say(f"reading the model {args.model} in the sandbox (vetted, validated, never run "
            "in this process)")
        model = open_model(args.model, trust=args.trust_model)
        model.clip_refit = args.refit_bounds == "clip"
        say(f"model: {model.info['description']} from {args.model} (sha256 "
            f"{model.sha256[:16]}...; kernel filter in the sandbox: "
            f"{'on' if model.seccomp else 'not available here'})")
        if model.info["is_released_pipeline"]:  # re-verify the mapping, in the sandbox
            # X_train: the training rows are mapped through it and counted again, so the
            # rules read the measured k, not the file's claim
            # the labels too: a mapping may protect the label (l-diversity of a diagnosis)
            import pandas as pd

            mapping = model.verify_mapping(X_test, where=f"the mapping in {args.model!r}",
                                           X_train=X_train,
                                           labels=pd.Series(y_train, name=args.target))
            got = mapping["measured"]
            say(f"mapping: {mapping['method']}, the file claims k={mapping['k']} and "
                f"{mapping['n_groups']:,} groups (smallest {mapping['smallest_group']:,}); "
                f"the training rows give k={got['k_measured']} in "
                f"{got['n_groups_measured']:,} groups"
                + ("" if got["claims_match"] else f" (MISMATCH: {got['mismatches'][0]})"))
            words = privacy_words(got.get("privacy"), mapping.get("privacy_claim"))
            if words:
                say(f"mapping l and t: {words}")
            inv = model.inventory(X_train)
            mapping["inventory"] = inv
            say(f"inventory: the file holds {inv['members']:,} members; "
                f"{inv['hidden_values_mapping']:,} values in the mapping (and "
                f"{inv['hidden_values_model']:,} in the model) are training values the "
                "anonymized table does not show")
        target = Target(model, X_train, y_train, X_test, y_test)
    else:
        target = Target(None, None, y_train, None, y_test,
                        proba_train=_read_proba(args.train_proba, "--train-proba"),
                        proba_test=_read_proba(args.test_proba, "--test-proba"))
    decision = request_release(
        target, rules, attacks=attacks, anonymization=anonymization,
        anonymized_train=anonymized_train, mapping=mapping,
        categorical_features=categorical, model_file=args.model, target_name=args.target,
        dataset_name=args.dataset or Path(args.train).name, n_jobs=args.n_jobs,
        random_state=args.seed, progress=say, started=say.t0)
    say("writing the report")
    out.parent.mkdir(parents=True, exist_ok=True)
    paths = decision.write(out, formats=formats, create=True)
    v = decision.verdict
    if args.json:
        from anonml._utils import json_safe

        print(json.dumps(json_safe({"decision": v.decision, "summary": v.summary,
                                    "conditions": v.conditions, "files": paths})))
    else:
        lines = [f"VERDICT: {v.label.upper()}", v.summary]
        lines += [f"  condition: {c}" for c in v.conditions]
        lines += [f"  reason: {r['text']} (" + (f"measured {r['measured']}; " if
                  r["measured"] != "not measured" else "") + f"needs {r['threshold']})"
                  for r in v.reasons]
        lines += [f"wrote {p}" for p in paths.values()]
        print("\n".join(lines))
    if args.fail_unless_release and v.decision != "release":
        return 3
    return 0


def add_parser(sub: Any) -> None:
    """Register ``anonml audit`` on the CLI's subparsers."""
    from anonml.cli._examples import AUDIT_EXAMPLES

    au = add_command(
        sub, "audit",
        help="check a trained model for release: rules, attacks, verdict, report",
        description="Run the risk-appetite checks and the privacy attacks on a trained model and "
        "write report.json, report.html and report.pdf with the verdict.",
        epilog=AUDIT_EXAMPLES)
    au.add_argument("--model", metavar="FILE", help="fitted model: .skops or XGBoost .json/.ubj "
                    "(no code runs), or .pkl/.joblib with --trust-model")
    au.add_argument("--trust-model", action="store_true",
                    help="allow unpickling --model, and any type in a .skops file")
    au.add_argument("--refit-bounds", choices=("refuse", "clip"), default="refuse",
                    help="a model whose hyperparameters lie outside the refit bounds "
                    "(docs/security.md) is refused before the reference models are trained "
                    "(refuse, the default), or refitted with the bounded values, which the "
                    "report lists (clip)")
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
    add_names_option(au, "--categorical", "categorical columns for the attribute attack "
                     "(default: from dtype)")
    add_names_option(au, "--anonymized-qi", "the training data was anonymized on these "
                     "quasi-identifiers: verify k on it")
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
    au.set_defaults(func=run)
