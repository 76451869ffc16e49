"""``anonml anonymize``: make a table k-anonymous (in memory, or on Dask with ``--engine dask``)."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from anonml._errors import InputError
from anonml._methods import METHOD_OPTIONS, anonymizer_class
from anonml._methods import METHODS as _REGISTRY
from anonml.cli._common import (
    Progress,
    _check_inputs,
    _check_mapping_path,
    _columns_named,
    _load_predictions,
    _predict,
    _reader,
    _split_names,
    add_command,
    add_csv_options,
    add_input_argument,
    add_model_options,
    add_names_option,
    check_privacy_flags,
    take_back_input,
)
from anonml.cli._examples import ANONYMIZE_EXAMPLES

# the methods and the options that belong to one method only: the one registry
METHODS = {name: spec.class_name for name, spec in _REGISTRY.items()}


def _weights(text: str) -> dict:
    out = {}
    for part in _split_names(text, "weights"):
        name, eq, value = part.partition("=")
        try:
            out[name.strip()] = float(value)
        except ValueError:
            raise InputError(f"--weights {part!r} is not column=number; fix: e.g. "
                             "--weights age=2,sex=1") from None
        if not eq:
            raise InputError(f"--weights {part!r} is not column=number; fix: e.g. "
                             "--weights age=2,sex=1")
    return out


def _method_params(args: argparse.Namespace) -> dict:
    params = {}
    for dest, (method, param) in METHOD_OPTIONS.items():
        value = getattr(args, dest)
        if value is None:
            continue
        if method != args.method:
            flag = "--" + dest.replace("_", "-")
            raise InputError(f"{flag} applies to --method {method}, not {args.method}; fix: "
                             f"leave it out or choose --method {method}")
        if dest == "split_sample" and value == "none":
            value = None
        elif dest == "split_sample":
            try:
                value = int(value)
            except ValueError:
                raise InputError(f"--split-sample {value!r} is not a whole number or 'none'"
                                 ) from None
        elif dest == "weights":
            value = _weights(value)
        params[param] = value
    return params


def run(args: argparse.Namespace) -> int:
    import anonml
    from anonml._io import table_format, table_packages
    from anonml._output import check_output_file, write_table

    take_back_input(args, "anonymize")
    say = Progress(args.quiet)
    if args.engine == "dask":  # a Parquet dataset on a Dask cluster: anonml/cli/_dask.py
        from anonml.cli._dask import run_dask

        return run_dask(args, say, _method_params(args), _split_names)
    if Path(args.input).is_dir() or (any(c in args.input for c in "*?[")
                                     and not Path(args.input).exists()):
        what = "a folder" if Path(args.input).is_dir() else "a glob"
        raise InputError(f"input {args.input!r} is {what}: the in-memory engine reads one "
                         "table file; fix: add --engine dask to read a folder of Parquet files "
                         "or a glob, or name one file")
    for flag in ("scheduler", "workers", "worker_memory", "no_workers_timeout"):
        if getattr(args, flag) is not None:
            raise InputError(f"--{flag.replace('_', '-')} is read by --engine dask only; fix: "
                             "add --engine dask, or leave it out")
    method = args.method
    guide = "--model" if args.model else "--predictions" if args.predictions else (
        "--labels" if args.labels else None)
    if method == "ag" and guide is None:
        raise InputError("--method ag needs what guides the tree: --model FILE, --predictions "
                         "FILE or --labels (with --target)")
    if method != "ag" and guide in ("--predictions", "--labels"):
        raise InputError(f"{guide} guides --method ag only; --method {method} groups by the "
                         "quasi-identifiers (it uses the --target labels, when given, to "
                         "choose representatives)")
    if method != "ag" and guide == "--model" and not args.retrain:
        raise InputError(f"--model is read by --method ag (its predictions guide the tree) and "
                         f"by --retrain; --method {method} uses neither; fix: add --retrain or "
                         "leave --model out")
    if args.retrain and (args.model is None or args.target is None or args.test is None):
        raise InputError("--retrain needs --model FILE (the model to refit), --target COLUMN "
                         "(the labels) and --test FILE (raw rows to score on)")
    if args.test is not None and not args.retrain:
        raise InputError("--test is read by --retrain only; fix: add --retrain, or leave "
                         "--test out")
    check_privacy_flags(args)
    params = _method_params(args)
    qi = _split_names(args.qi, "qi")
    drop = _split_names(args.drop, "drop") if args.drop else []
    keep = _split_names(args.keep, "keep") if args.keep else []
    # everything that can be known before the work: names, folders, packages
    inputs = [args.input, args.predictions, args.model, args.test]
    _check_inputs(input=args.input, predictions=args.predictions, model=args.model,
                  test=args.test)
    if args.hierarchies is not None and not Path(args.hierarchies).is_dir():
        raise InputError(f"--hierarchies {args.hierarchies!r} is not a folder; fix: give the "
                         "folder holding one ARX .csv file per column")
    table_format(args.output)
    check_output_file(args.output, inputs=inputs)
    _check_mapping_path(args.save_mapping, inputs + [args.output])
    if args.save_pipeline is not None and not args.retrain:
        raise InputError("--save-pipeline needs --retrain (the pipeline is the mapping, then "
                         "the retrained model); fix: add --retrain --model FILE --test FILE")
    if args.save_pipeline is not None and method == "sangreea":
        raise InputError("--save-pipeline: a SaNGreeA mapping holds every distinct training QI "
                         "vector, so it cannot be released; fix: use --method ag, mondrian, "
                         "hilbert or rtree")
    _check_mapping_path(args.save_pipeline, inputs + [args.output, args.save_mapping],
                        "--save-pipeline")
    for path in (args.input, args.test):
        if path is not None:
            table_packages(path)
    table_packages(args.output, reading=False)
    read = _reader(args)

    say(f"reading {args.input}")
    frame = read(args.input)
    _columns_named(drop, frame.columns, "--drop")
    _columns_named(keep, frame.columns, "--keep")
    _columns_named(qi, frame.columns, "quasi-identifier")
    if args.target is not None:
        _columns_named([args.target], frame.columns, "--target")
    for name in drop:
        if name in qi or name == args.target:
            raise InputError(f"--drop {name!r} is also the --target or a quasi-identifier; "
                             "fix: drop it from one of them")
    frame = frame.drop(columns=drop)
    if args.target in qi:
        raise InputError(f"target {args.target!r} is also listed in --qi; remove it from --qi")
    if args.sensitive is not None:  # a column of the table, or the label (--target)
        if args.sensitive in drop:
            raise InputError(f"--sensitive {args.sensitive!r} is also in --drop; fix: drop it "
                             "from one of them")
        _columns_named([args.sensitive], frame.columns, "--sensitive")
    from anonml.encoding import check_lookalike_columns

    check_lookalike_columns(frame.columns, qi, where=repr(args.input))
    unique = anonml.privacy.unique_columns(frame, exclude=qi + keep)
    if unique:
        shown = ", ".join(repr(c) for c in unique[:5])
        raise InputError(f"column {shown} has a different value on every row and is not a "
                         "quasi-identifier: it would name every person in the output; fix: "
                         f"--drop {','.join(map(str, unique))} (or --keep it if it must stay, "
                         "or add it to --qi); nothing was written")
    test = None
    if args.test is not None:
        say(f"reading {args.test}")
        test = read(args.test).drop(columns=drop, errors="ignore")
        _columns_named([args.target], test.columns, "--target of the --test table")
        if list(test.columns) != list(frame.columns):
            raise InputError(f"--test {args.test!r} has other columns than {args.input!r} "
                             f"(after --drop); fix: give the same columns")
    hierarchies = None
    if args.hierarchies:
        from anonml.hierarchies import read_arx_folder

        numeric = [c for c in frame.columns if frame[c].dtype.kind in "iuf"]
        hierarchies = read_arx_folder(args.hierarchies, frame.columns, numeric=numeric)
        if not hierarchies:
            raise InputError(f"--hierarchies {args.hierarchies!r} holds no .csv file named "
                             "after a column (<column>.csv or <dataset>_<column>.csv)")
        say(f"hierarchies: {', '.join(hierarchies)}")
    model = None
    if args.model is not None:
        from anonml.safemodel import open_model

        say(f"reading the model {args.model} in the sandbox")
        model = open_model(args.model, trust=args.trust_model)
    if args.labels and args.target is None:
        raise InputError("--labels needs --target COLUMN, the column of true labels")
    # the features are the table read, the target taken out of it (not a copy: the anonymizer
    # recodes them in place, copy=False, so no other reference may hold their columns)
    target_at = frame.columns.get_loc(args.target) if args.target else None
    target = frame.pop(args.target) if args.target else None
    features = frame
    del frame
    if args.labels:
        y = target
    elif args.predictions:
        y = _load_predictions(args.predictions)
    elif method == "ag":
        say("predicting with the model")
        y = _predict(model, features, args.model)
    else:  # target-free methods: the labels, when given, choose the representatives
        y = target
    categorical = _split_names(args.categorical, "categorical") if args.categorical else None
    anonymizer = anonymizer_class(method)(
        k=args.k,
        quasi_identifiers=qi,
        categorical_features=categorical,
        **({"representative": args.representative} if args.representative else {}),
        sensitive=args.sensitive,
        l=args.l,
        l_kind=args.l_kind or "distinct",
        c=args.c,
        t=args.t,
        t_distance=args.t_distance or "auto",
        hierarchies=hierarchies,
        recoding=args.recoding,
        suppression=args.suppression,
        random_state=args.seed,
        copy=False,  # the table read is this command's own: recoded in place
        **params,
    )
    say(f"anonymizing {len(features):,} rows ({METHODS[method]}, k={args.k}, {len(qi)} "
        "quasi-identifiers)")
    t = time.perf_counter()
    # the target never reaches the partitioner; as --sensitive its values go aside
    label = target if args.target and args.sensitive == args.target else None
    summary: dict = {}
    measured = []

    def measure() -> None:  # on the original values, before they are recoded in place
        say("measuring the information loss")
        t_measure = time.perf_counter()
        summary.update(anonml.anonymize.summarize(anonymizer, features))
        measured.append(time.perf_counter() - t_measure)

    out = anonymizer._fit_transform(features, y, label, before_write=measure)
    seconds = time.perf_counter() - t - measured[0]
    anonymizer.set_params(copy=True)  # a saved mapping returns new tables, the default
    if method == "ag":
        summary["tree"] = anonymizer.tree_method_
    if drop:
        summary["dropped"] = ",".join(map(str, drop))
    summary["seconds"] = round(seconds, 3)
    if args.retrain:
        from anonml.anonymize._model import retrain

        X_test, y_test = test.drop(columns=[args.target]), test[args.target].to_numpy()
        retrained, scores = retrain(model, out, target.to_numpy(),
                                    anonymizer=anonymizer, X_test=X_test, y_test=y_test,
                                    progress=say)
        summary.update(scores)
    if args.target:  # put it back, unchanged, where it was
        out.insert(target_at, args.target, target)
    say(f"writing {args.output}")
    write_table(out, args.output)
    summary["output"] = str(args.output)
    if args.save_mapping:
        from anonml.safemodel import save_model

        say(f"writing the mapping {args.save_mapping}")
        save_model(anonymizer, args.save_mapping)
        summary["mapping"] = str(args.save_mapping)
    if args.save_pipeline:
        from anonml.anonymize._model import release_pipeline
        from anonml.safemodel import save_model

        say(f"writing the released pipeline (mapping, then model) {args.save_pipeline}")
        save_model(release_pipeline(anonymizer, retrained), args.save_pipeline)
        summary["pipeline"] = str(args.save_pipeline)
    _print_summary(summary, args.json)
    return 0


def _print_summary(summary: dict, as_json: bool) -> None:
    if as_json:
        from anonml._utils import json_safe

        print(json.dumps(json_safe(summary)))
        return
    lines = []
    for key, value in summary.items():
        if isinstance(value, float) and key.startswith("accuracy"):
            value = f"{100 * value:.2f}%"
        elif isinstance(value, float) and not key.startswith("seconds"):
            value = f"{value:.4f}"
        lines.append(f"{key:>26}: {'-' if value is None else value}")
    print("\n".join(lines))


def add_parser(sub: Any) -> None:
    a = add_command(
        sub, "anonymize",
        help="k-anonymize a table (accuracy-guided, Mondrian, Hilbert, R+-tree or SaNGreeA)",
        description="Make a table k-anonymous on its quasi-identifiers (and l-diverse or "
        "t-close in a sensitive column), verify it, report the information lost, and "
        "optionally retrain a model on it and save the mapping for new rows.",
        epilog=ANONYMIZE_EXAMPLES,
    )
    add_input_argument(a, "input table (.csv, .csv.gz or .parquet); with --engine dask a "
                       "folder of Parquet files or a glob")
    a.add_argument("--k", type=int, required=True, help="smallest equivalence-class size (>= 2)")
    add_names_option(a, "--qi", "quasi-identifier columns", required=True)
    a.add_argument("--target", help="label column: kept unchanged, not given to the "
                   "partitioner")
    a.add_argument("-o", "--output", required=True, help="output table (.csv, .csv.gz or "
                   ".parquet)")
    a.add_argument("--method", default="ag", choices=list(METHODS),
                   help="ag: accuracy-guided (default); mondrian; hilbert; rtree (R+-tree); "
                   "sangreea")
    g = a.add_argument_group("what guides --method ag (one of)")
    add_model_options(a, group=g, also="; also the model --retrain refits")
    g.add_argument("--predictions", metavar="FILE", help="the model's predictions (.csv with "
                   "one column, or .npy)")
    g.add_argument("--labels", action="store_true", help="guide by the --target labels "
                   "(workload-aware)")
    add_names_option(a, "--categorical", "categorical columns (default: from dtype)")
    a.add_argument("--representative", default=None,
                   choices=["majority_medoid", "medoid", "per_feature", "majority_per_feature",
                            "per_feature_joint"],
                   help="representative of a group: one real record (majority_medoid, medoid); "
                   "one real value of the group per QI, each from its own row, so the tuple may "
                   "be no real record (per_feature, majority_per_feature); or per_feature_joint: "
                   "per-QI values for the numeric QIs, the categorical QIs together from one "
                   "real record of the group (its most frequent categorical combination); the "
                   "majority rules need labels (without them they are the plain medoid / "
                   "per-feature rule); default: majority_medoid, one whole real record, for "
                   "every method")
    ag = a.add_argument_group("--method ag")
    ag.add_argument("--tree", choices=["auto", "exact", "hist"],
                    help="exact: scikit-learn's tree; hist: anonml's histogram tree (auto: "
                    "hist from 100k rows)")
    ag.add_argument("--refine", choices=["mondrian", "none"],
                    help="cut large pure leaves further (default) or keep the paper's leaves")
    ag.add_argument("--features", choices=["qi", "all"],
                    help="columns the tree reads: the QIs (default) or every column but "
                    "--target")
    ag.add_argument("--tree-criterion", choices=["gini", "entropy", "log_loss",
                                                 "squared_error"],
                    help="split criterion of the tree (default gini, squared_error for "
                    "numbers)")
    ag.add_argument("--max-depth", type=int, help="depth limit of the tree (default none)")
    mo = a.add_argument_group("--method mondrian")
    mo.add_argument("--mondrian-mode", choices=["strict", "relaxed"],
                    help="strict (default) or relaxed multidimensional partitioning")
    mo.add_argument("--mondrian-criterion", choices=["median", "infogain"],
                    help="median cuts (default) or InfoGain Mondrian (needs --target)")
    hi = a.add_argument_group("--method hilbert")
    hi.add_argument("--hilbert-method", choices=["dp", "greedy"],
                    help="dp: optimal segmentation of the Hilbert order (default); greedy: "
                    "the fast baseline")
    rt = a.add_argument_group("--method rtree")
    rt.add_argument("--split-sample", metavar="N|none",
                    help="rows each split is judged on (default 64; none: exact search)")
    rt.add_argument("--min-fill", type=float, help="least share of a node's rows on each "
                    "side of a cut (default 0.2)")
    sg = a.add_argument_group("--method sangreea")
    sg.add_argument("--weights", metavar="COL=W,...", help="weight of each QI in the "
                    "information loss (default equal)")
    pm = a.add_argument_group("privacy beyond k, and output")
    pm.add_argument("--sensitive", metavar="COLUMN", help="sensitive column for --l / --t: a "
                    "column of the table, or the --target label itself")
    pm.add_argument("--l", type=float, help="l-diversity of --sensitive in every class")
    pm.add_argument("--l-kind", choices=["distinct", "entropy", "recursive"],
                    help="kind of l-diversity (default distinct)")
    pm.add_argument("--c", type=float, help="c of recursive (c, l)-diversity")
    pm.add_argument("--t", type=float, help="t-closeness of --sensitive in every class")
    pm.add_argument("--t-distance", choices=["auto", "equal", "ordered", "hierarchical"],
                    help="ground distance of t-closeness (default auto)")
    pm.add_argument("--suppression", type=float, default=0.0,
                    help="share of rows that may be suppressed, e.g. 0.02 (default 0)")
    pm.add_argument("--recoding", default="representative",
                    choices=["representative", "generalize"],
                    help="representative: one real record's values per class (default); "
                    "generalize: ranges, hierarchy nodes or sets")
    pm.add_argument("--hierarchies", metavar="DIR", help="folder of ARX hierarchy CSV files, "
                    "one per column (<column>.csv or <dataset>_<column>.csv)")
    io = a.add_argument_group("columns and files")
    add_names_option(io, "--drop", "columns to leave out of the output (e.g. an id)")
    add_names_option(io, "--keep", "columns unique per row to pass through unchanged on "
                     "purpose (otherwise refused)")
    add_csv_options(io)
    rt2 = a.add_argument_group("retraining and the mapping")
    rt2.add_argument("--retrain", action="store_true", help="refit a clone of --model on the "
                     "anonymized table and print accuracy before/after on --test")
    rt2.add_argument("--test", metavar="FILE", help="held-out table (raw rows, same columns) "
                     "for --retrain")
    rt2.add_argument("--save-mapping", metavar="FILE.skops", help="save the fitted anonymizer, "
                     "to map new rows with anonml transform")
    rt2.add_argument("--save-pipeline", metavar="FILE.skops", help="with --retrain: save the "
                     "model to release, Pipeline(mapping, retrained model), for anonml audit")
    from anonml.cli._dask import add_dask_options

    add_dask_options(a)
    a.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    a.add_argument("--json", action="store_true", help="print the summary as JSON")
    a.add_argument("-q", "--quiet", action="store_true", help="no progress messages")
    a.set_defaults(func=run)
