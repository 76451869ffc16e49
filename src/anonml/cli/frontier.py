"""``anonml frontier``: the privacy–utility sweep on the command line (a thin shell).

Parses, checks everything that can be checked before the work (inputs, the output folder,
packages, budgets), calls :func:`anonml.frontier`, writes frontier.csv, frontier.json,
frontier.png and frontier.html into the output folder as one set (a temporary folder, then
renamed), and prints the recommendation in one plain line. A budget no point meets still
writes the files (the nearest point marked, the budget stated) and then fails in one line.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from anonml._errors import InputError
from anonml._methods import DEFAULT_FRONTIER_METHODS
from anonml._methods import METHODS as _REGISTRY

# kept here so that ``anonml --help`` imports nothing heavy (a test checks it matches the
# library's anonml._frontier._estimators.ESTIMATORS)
ESTIMATORS = ("random_forest", "logistic_regression", "neural_network")
METHODS = tuple(_REGISTRY)
FILES = ("frontier.csv", "frontier.json", "frontier.png", "frontier.html")

EXAMPLES = """\
examples:
  anonml frontier --train train.csv --test test.csv --target income --qi age sex race \\
      --estimator random_forest --methods ag mondrian --k 5 10 25 50 100 --out frontier/ \\
      --accuracy-budget 0.01
  anonml frontier --train train.csv --test test.csv --target income --qi age,sex \\
      --model model.skops --k 10 50 --risk-budget auc=0.55 --out frontier/
"""


def _names(values: list[str], what: str) -> list[str]:
    out = [n.strip() for v in values for n in v.split(",") if n.strip()]
    if not out:
        raise InputError(f"--{what} is empty; give column names, e.g. --{what} age sex")
    return out


def run(args: argparse.Namespace) -> int:
    import anonml
    from anonml._frontier._result import parse_risk_budget
    from anonml._io import check_packages, table_packages
    from anonml._output import atomic_write_set, check_output_folder
    from anonml.cli._common import Progress, _check_inputs, _columns_named, _reader

    # --- before any work: options, inputs, the output folder, packages --------------------
    if (args.model is None) == (args.estimator is None):
        raise InputError("give --model FILE (the model to retrain) or --estimator NAME "
                         "(random_forest, logistic_regression, neural_network), not both")
    qi = _names(args.qi, "qi")
    methods = _names(args.methods, "methods")
    drop = _names(args.drop, "drop") if args.drop else []
    risk = parse_risk_budget(args.risk_budget) if args.risk_budget is not None else None
    if args.accuracy_budget is not None and not 0 <= args.accuracy_budget <= 1:
        raise InputError(f"--accuracy-budget {args.accuracy_budget} must be a share in [0, 1] "
                         "(0.01 = one accuracy point)")
    _check_inputs(train=args.train, test=args.test, model=args.model)
    out = check_output_folder(args.out)
    clash = [f for f in FILES if (out / f).is_dir()]
    if clash:
        raise InputError(f"{str(out / clash[0])!r} is a folder; fix: choose another --out")
    for path in (args.train, args.test):
        table_packages(path)
    check_packages("matplotlib", purpose="drawing frontier.png")
    say = Progress(args.quiet, suffix="")
    read = _reader(args)

    say(f"reading {args.train}")
    train = read(args.train)
    say(f"reading {args.test}")
    test = read(args.test)
    _columns_named([args.target], train.columns, "--target")
    if args.target not in test.columns:
        raise InputError(f"the --test table {args.test!r} has no column {args.target!r} (the "
                         "target); fix: give a test table with the labels")
    _columns_named(drop, train.columns, "--drop")
    train, test = train.drop(columns=drop), test.drop(columns=drop, errors="ignore")
    if args.target in qi:
        raise InputError(f"target {args.target!r} is also listed in --qi; remove it from --qi")
    _columns_named(qi, train.columns, "quasi-identifier")
    if list(test.columns) != list(train.columns):
        raise InputError(f"--test {args.test!r} has other columns than {args.train!r} (after "
                         "--drop); fix: give the same columns")
    if risk and "tpr" in risk:
        n_neg = min(len(train), len(test))  # the attack's 50/50 evaluation set
        if n_neg < 1000:
            raise InputError(f"--risk-budget tpr={risk['tpr']:g} cannot be measured: TPR at "
                             f"0.1% FPR needs at least 1,000 non-members, and the attack "
                             f"evaluates {n_neg:,} ({len(test):,} --test rows, {len(train):,} "
                             "--train rows); fix: a --test table of at least 1,000 rows (and "
                             "as many --train rows), or --risk-budget auc=...")
    if args.bootstrap != 0 and args.bootstrap < 20:
        raise InputError(f"--bootstrap {args.bootstrap} must be 0 (no intervals) or at least "
                         "20 replicates; fix: --bootstrap 200")
    X_train, y_train = train.drop(columns=[args.target]), train[args.target]
    X_test, y_test = test.drop(columns=[args.target]), test[args.target]
    model = args.model
    if model is not None:
        say(f"reading the model {model} (vetted, then checked in an isolated reader)")

    result = anonml.frontier(
        X_train, y_train, X_test, y_test, quasi_identifiers=qi, model=model,
        estimator=args.estimator, methods=methods, ks=args.k, sensitive=args.sensitive,
        l=args.l, t=args.t, attack=args.attack, n_reference=args.n_reference,
        reference=args.reference, dp=not args.no_dp, dp_epsilon=args.dp_epsilon,
        trust_model=args.trust_model, n_jobs=args.n_jobs, random_state=args.seed,
        bootstrap=args.bootstrap, progress=say)

    # the recommendation is recorded in the files; a budget no point meets still writes them
    # (the nearest point marked), then fails in one line
    line, unmet = None, None
    if args.accuracy_budget is not None or risk is not None:
        try:
            line = result.recommend(accuracy_budget=args.accuracy_budget, risk_budget=risk)
        except InputError as exc:
            if not (result.recommendation or {}).get("nearest"):
                raise
            unmet = str(exc)
    say(f"writing {out}")
    out.parent.mkdir(parents=True, exist_ok=True)
    from anonml._frontier._render import png_bytes

    png = png_bytes(result)
    paths = atomic_write_set(out, {
        "frontier.csv": result.to_csv().encode("utf-8"),
        "frontier.json": result.to_json().encode("utf-8"),
        "frontier.png": png,
        "frontier.html": result.to_html().encode("utf-8"),
    }, replaces=FILES)
    if unmet is not None:
        raise InputError(unmet.replace("; fix: ", f"; the table, plot and page are in {out} "
                                       "(the closest point marked); fix: ", 1))
    if args.json:
        from anonml._utils import json_safe

        print(json.dumps(json_safe({"recommendation": line, "files": paths,
                                    "settings": result.to_dict()["settings"]})))
        return 0
    n_ok = int((result.table["status"] == "ok").sum())
    failed = [str(r["method"]) if r["k"] is None else f"{r['method']} k={r['k']}"
              for r in result.to_dict()["points"] if r["status"] != "ok"]
    print(f"wrote {', '.join(str(Path(out) / f) for f in FILES)} ({n_ok} of "
          f"{len(result.table)} points measured"
          + (f"; not measured: {', '.join(failed)}" if failed else "") + ")")
    print(line if line else "no budget given: add --accuracy-budget 0.01 or --risk-budget "
          "auc=0.55 for a recommendation")
    return 0


def add_parser(sub: Any) -> None:
    """Register ``anonml frontier`` on the CLI's subparsers."""
    from anonml.cli._common import add_command, add_csv_options, add_names_option

    p = add_command(
        sub, "frontier",
        help="sweep methods x k: accuracy vs attack risk per point, and automatic k",
        description="Anonymize the training rows with each method at each k, retrain the "
        "model, and measure accuracy (raw and mapped test rows), information loss and the "
        "attacks' success on the real people; write frontier.csv/.json/.png/.html and print "
        "the recommended method and k.",
        epilog=EXAMPLES)
    p.add_argument("--train", required=True, help="training table (.csv, .csv.gz, .parquet)")
    p.add_argument("--test", required=True, help="held-out table, same columns")
    p.add_argument("--target", required=True, help="label column")
    add_names_option(p, "--qi", "quasi-identifier columns", required=True)
    g = p.add_mutually_exclusive_group()
    g.add_argument("--model", metavar="FILE", help="the model to retrain: .skops or XGBoost "
                   ".json/.ubj (no code runs), or .pkl/.joblib with --trust-model")
    g.add_argument("--estimator", choices=list(ESTIMATORS), help="fit this estimator instead")
    p.add_argument("--trust-model", action="store_true", help="allow unpickling --model, and "
                   "any type in a .skops file")
    p.add_argument("--methods", nargs="+", default=list(DEFAULT_FRONTIER_METHODS),
                   metavar="M", help=f"methods among {', '.join(METHODS)} (default ag "
                   "mondrian hilbert rtree)")
    p.add_argument("--k", nargs="+", type=int, default=[5, 10, 25, 50, 100], metavar="K",
                   help="values of k (default 5 10 25 50 100)")
    p.add_argument("-o", "--output", "--out", dest="out", required=True, metavar="DIR",
                   help="output folder (--out is the same option)")
    p.add_argument("--accuracy-budget", type=float, metavar="LOSS", help="largest accuracy "
                   "loss, e.g. 0.01 (one point): recommend the largest k within it")
    p.add_argument("--risk-budget", metavar="auc=X|tpr=X", help="largest attack AUC or TPR at "
                   "0.1%% FPR, e.g. auc=0.55: recommend the smallest k within it")
    p.add_argument("--sensitive", metavar="COLUMN", help="sensitive column for --l / --t: a "
                   "column of the tables, or the --target label itself")
    p.add_argument("--l", type=float, help="l-diversity of --sensitive on every point")
    p.add_argument("--t", type=float, help="t-closeness of --sensitive on every point")
    p.add_argument("--attack", choices=["rmia", "lira"], default="rmia")
    p.add_argument("--n-reference", type=int, default=4, help="reference models (default 4)")
    p.add_argument("--reference", choices=["shared", "matched"], default="shared",
                   help="shared: RMIA's reference models trained once for every point "
                   "(default); matched: each point trains its own, imitating its anonymization")
    p.add_argument("--no-dp", action="store_true", help="leave out the DP baseline")
    p.add_argument("--dp-epsilon", type=float, default=1.0, help="ε of the DP baseline "
                   "(default 1)")
    add_names_option(p, "--drop", "columns to leave out (e.g. an id)")
    add_csv_options(p)
    p.add_argument("--n-jobs", type=int, default=1, help="reference models trained at once")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--bootstrap", type=int, default=200, metavar="B", help="bootstrap "
                   "replicates of the 95%% intervals over the evaluation rows (default 200; "
                   "0: none)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress messages")
    p.set_defaults(func=run)
