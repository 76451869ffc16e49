"""The ``anonml`` command: a thin shell over the library.

It parses arguments, calls the library, prints results, and turns every library error into one
line on standard error with exit code 1. No computation lives here.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from anonml import __version__
from anonml._cli_examples import (ANONYMIZE_EXAMPLES, DEMO_EXAMPLES, EXAMPLES, RULES_EXAMPLES,
                                  TRANSFORM_EXAMPLES)
from anonml._errors import AnonmlError, InputError, names_list, one_line
from anonml._methods import METHOD_OPTIONS
from anonml._methods import METHODS as _REGISTRY


class Progress:
    """Progress on standard error, silent with --quiet.

    ``progress(message)`` announces a step: one line with the elapsed time. Counted steps
    (``progress.count(label, done, total)``, the library's callback for repetitions, models,
    features) show a progress bar (tqdm) when standard error is a terminal, and a stage line per
    step otherwise (logs, pipes, CI).
    """

    def __init__(self, quiet: bool = False, *, suffix: str = " ..."):
        self.quiet = quiet
        self.suffix = suffix
        self.t0 = time.perf_counter()
        self._bars: dict = {}
        self._tty = sys.stderr.isatty()

    def _write(self, line: str) -> None:
        line = one_line(line, 100_000)  # names from a file cannot steer the terminal
        if self._bars:
            from tqdm import tqdm

            tqdm.write(line, file=sys.stderr)
        else:
            print(line, file=sys.stderr, flush=True)

    def __call__(self, message: str) -> None:
        if not self.quiet:
            self._write(f"[{time.perf_counter() - self.t0:6.1f}s] {message}{self.suffix}")

    def count(self, label: str, done: int, total: int) -> None:
        """``done`` of ``total`` parts of the step ``label`` are finished."""
        if self.quiet:
            return
        if not self._tty:
            self._write(f"[{time.perf_counter() - self.t0:6.1f}s] {label}: {done}/{total}")
            return
        from tqdm import tqdm

        bar = self._bars.get(label)
        if bar is None:
            bar = self._bars[label] = tqdm(total=total, desc=label, file=sys.stderr,
                                           leave=False, dynamic_ncols=True)
        bar.update(done - bar.n)
        if done >= total:
            bar.close()
            del self._bars[label]


def _split_names(text: str | Sequence[str], what: str) -> list[str]:
    """Names given as one comma-separated text, or as the values of a
    :func:`add_names_option` option (space-separated, each may hold commas)."""
    parts = [text] if isinstance(text, str) else list(text)
    names = [t.strip() for part in parts for t in part.split(",") if t.strip()]
    if not names:
        raise InputError(f"--{what} is empty; give column names, e.g. --{what} age sex or "
                         f"--{what} age,sex")
    return names


def add_names_option(parser: Any, flag: str, help: str, **kwargs: Any) -> None:
    """The one definition of an option that takes column names, for every command: space- or
    comma-separated (``--qi age sex`` or ``--qi age,sex``); read with :func:`_split_names`."""
    parser.add_argument(flag, nargs="+", metavar=kwargs.pop("metavar", "COL"),
                        help=f"{help} (space- or comma-separated)", **kwargs)


def _columns_named(names: list[str], columns: Any, what: str) -> None:
    missing = [n for n in names if n not in set(columns)]
    if missing:
        raise InputError(f"{what} {missing[0]!r} is not a column; columns are: "
                         f"{names_list(columns)}")


def _load_predictions(path: str) -> Any:
    from anonml._io import read_array, read_table

    if path.lower().endswith(".npy"):
        return read_array(path, "predictions", kinds="biufU")  # labels may be text
    table = read_table(path)
    if table.shape[1] != 1:
        raise InputError(
            f"predictions file {path!r} has {table.shape[1]} columns; give one column with one "
            "prediction per input row (header line first)"
        )
    return table.iloc[:, 0].to_numpy()


def _predict(model: Any, features: Any, path: str) -> Any:
    from anonml.safemodel._sandbox import ModelCallError

    try:
        return model.predict(features)
    except ModelCallError as exc:  # the model's own error, raised in the sandbox
        why = one_line(exc.detail, 400)
    except InputError:
        raise
    except Exception as exc:  # the model's own check; its message can span several lines
        why = f"{type(exc).__name__}: {one_line(exc, 200)}"
    raise InputError(
        f"the model {path!r} could not predict on the input ({why}); fix: give the columns it "
        "was trained on, with --target naming the label column")


def _sep(text: str | None) -> str | None:
    if text is None:
        return None
    return {"\\t": "\t", "tab": "\t", "TAB": "\t"}.get(text, text)


def _na_values(text: str | None) -> list[str] | None:
    if text is None:
        return None
    values = [t.strip() for t in text.split(",")]
    if not any(values):
        raise InputError("--na-values is empty; give the texts that mean missing, e.g. '?'")
    return [v for v in values if v]


def _reader(args: argparse.Namespace) -> Any:
    from anonml._io import read_table

    na, sep = _na_values(args.na_values), _sep(args.sep)
    return lambda path: read_table(path, na_values=na, sep=sep)


def _check_inputs(**paths: str | None) -> None:
    """Every input file exists and is a regular file (not a device, FIFO, socket or folder),
    before any work (one line naming the option); a model or mapping file is also within the
    size limit of model files."""
    from anonml import _io

    for option, path in paths.items():
        if path is not None:
            limit = _io.MAX_MODEL_BYTES if option in ("model", "mapping") else None
            _io.check_regular_file(path, f"--{option.replace('_', '-')}" if option != "input"
                                   else "input", max_bytes=limit)


def _check_mapping_path(path: str | None, inputs: list, option: str = "--save-mapping"
                        ) -> None:
    if path is None:
        return
    from anonml._io import check_output_file, check_packages

    if not path.lower().endswith(".skops"):
        raise InputError(f"{option} {path!r} must end in .skops (a file read as data, "
                         f"without running code); fix: e.g. {option} "
                         f"{option[len('--save-'):]}.skops")
    check_output_file(path, inputs=inputs)
    check_packages("skops", purpose=f"writing the mapping {path!r}")


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


def _cmd_anonymize(args: argparse.Namespace) -> int:
    import anonml
    from anonml._io import check_output_file, table_format, table_packages, write_table

    say = Progress(args.quiet)
    if args.engine == "dask":  # a Parquet dataset on a Dask cluster: anonml/_cli_dask.py
        from anonml._cli_dask import run_dask

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
    if args.l_kind is not None and args.l is None:
        raise InputError("--l-kind needs --l, the diversity asked for")
    if args.c is not None and args.l_kind != "recursive":
        raise InputError("--c needs --l-kind recursive (recursive (c, l)-diversity)")
    if args.t_distance is not None and args.t is None:
        raise InputError("--t-distance needs --t, the closeness asked for")
    if (args.l is not None or args.t is not None) and args.sensitive is None:
        raise InputError("--l and --t need --sensitive COLUMN, the attribute to protect")
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
    features = frame.drop(columns=[args.target]) if args.target else frame
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
    if args.labels:
        if args.target is None:
            raise InputError("--labels needs --target COLUMN, the column of true labels")
        y = frame[args.target]
    elif args.predictions:
        y = _load_predictions(args.predictions)
    elif method == "ag":
        say("predicting with the model")
        y = _predict(model, features, args.model)
    else:  # target-free methods: the labels, when given, choose the representatives
        y = frame[args.target] if args.target else None
    categorical = _split_names(args.categorical, "categorical") if args.categorical else None
    anonymizer = getattr(anonml, METHODS[method])(
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
        **params,
    )
    say(f"anonymizing {len(frame):,} rows ({METHODS[method]}, k={args.k}, {len(qi)} "
        "quasi-identifiers)")
    t = time.perf_counter()
    # the target never reaches the partitioner; as --sensitive its values go aside
    label = frame[args.target] if args.target and args.sensitive == args.target else None
    out = anonymizer.fit_transform(features, y, sensitive_values=label)
    seconds = time.perf_counter() - t
    say("measuring the information loss")
    summary = anonml.anonymize.summarize(anonymizer, features)
    if method == "ag":
        summary["tree"] = anonymizer.tree_method_
    if drop:
        summary["dropped"] = ",".join(map(str, drop))
    summary["seconds"] = round(seconds, 3)
    if args.retrain:
        from anonml.anonymize._model import retrain

        X_test, y_test = test.drop(columns=[args.target]), test[args.target].to_numpy()
        retrained, scores = retrain(model, out, frame[args.target].to_numpy(),
                                    anonymizer=anonymizer, X_test=X_test, y_test=y_test,
                                    progress=say)
        summary.update(scores)
    if args.target:  # put it back, unchanged, where it was
        out.insert(frame.columns.get_loc(args.target), args.target, frame[args.target])
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
        print(json.dumps(summary))
        return
    lines = []
    for key, value in summary.items():
        if isinstance(value, float) and key.startswith("accuracy"):
            value = f"{100 * value:.2f}%"
        elif isinstance(value, float) and not key.startswith("seconds"):
            value = f"{value:.4f}"
        lines.append(f"{key:>26}: {'-' if value is None else value}")
    print("\n".join(lines))


def _cmd_transform(args: argparse.Namespace) -> int:
    from anonml._io import check_output_file, table_format, table_packages, write_table
    from anonml.safemodel import open_model

    say = Progress(args.quiet)
    drop = _split_names(args.drop, "drop") if args.drop else []
    keep = _split_names(args.keep, "keep") if args.keep else []
    if not args.mapping.lower().endswith(".skops"):
        raise InputError(f"--mapping {args.mapping!r} is not a .skops file; fix: give the file "
                         "written by anonml anonymize --save-mapping")
    _check_inputs(input=args.input, mapping=args.mapping)
    table_format(args.output)
    check_output_file(args.output, inputs=[args.input, args.mapping])
    table_packages(args.input)
    table_packages(args.output, reading=False)

    say(f"reading {args.input}")
    frame = _reader(args)(args.input)
    _columns_named(drop, frame.columns, "--drop")
    _columns_named(keep, frame.columns, "--keep")
    frame = frame.drop(columns=drop)
    say(f"reading the mapping {args.mapping} in the sandbox (vetted, validated, never run "
        "in this process)")
    anonymizer = open_model(args.mapping)
    if not anonymizer.info["is_anonymizer"] or "transform" not in anonymizer.info["methods"]:
        raise InputError(f"--mapping {args.mapping!r} holds a {anonymizer.info['class']}, not "
                         "a fitted anonymizer; fix: give the file written by anonml anonymize "
                         "--save-mapping")
    fitted = list(anonymizer.info["columns"])
    _columns_named(fitted, frame.columns, "column of the mapping")
    from anonml.encoding import check_lookalike_columns

    check_lookalike_columns(frame.columns, list(anonymizer.info["quasi_identifiers"]),
                            where=repr(args.input))
    extra = [c for c in frame.columns if c not in set(fitted) and c not in set(keep)]
    if extra:
        raise InputError(f"column {extra[0]!r} is not one the mapping was fitted on "
                         f"({len(extra)} such); fix: --drop it, or --keep it to pass it "
                         "through unchanged")
    if args.handle_unknown is not None:
        anonymizer.set_handle_unknown(args.handle_unknown)
    say(f"mapping {len(frame):,} rows")
    mapped = anonymizer.transform(frame[fitted])
    out = frame.copy()
    for c in fitted:  # column by column: each takes the mapped dtype
        out[c] = mapped[c]
    say(f"writing {args.output}")
    write_table(out, args.output)
    if not args.quiet:
        print(f"wrote {args.output} ({len(out):,} rows, "
              f"{len(anonymizer.info['quasi_identifiers'])} "
              f"quasi-identifiers mapped by {anonymizer.info['class']})")
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from anonml._io import check_output_folder
    from anonml._demo import run_demo

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
        f"  time: fit NN {s['seconds_fit_original']:.1f}s, predict {s['seconds_predict']:.2f}s, "
        f"anonymize {s['seconds_anonymize']:.2f}s, total {s['seconds_total']:.1f}s\n"
        f"  wrote {Path(args.output) / 'adult_anonymized.csv'} and {Path(args.output) / 'summary.json'}"
    )
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


def _anonymize_parser(sub: Any) -> None:
    a = sub.add_parser(
        "anonymize", allow_abbrev=False,
        help="k-anonymize a table (accuracy-guided, Mondrian, Hilbert, R+-tree or SaNGreeA)",
        description="Make a table k-anonymous on its quasi-identifiers (and l-diverse or "
        "t-close in a sensitive column), verify it, report the information lost, and "
        "optionally retrain a model on it and save the mapping for new rows.",
        epilog=ANONYMIZE_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    a.add_argument("input", help="input table (.csv, .csv.gz or .parquet); with --engine dask "
                   "a folder of Parquet files or a glob")
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
    g.add_argument("--model", metavar="FILE", help="fitted model: .skops or XGBoost .json/.ubj "
                   "(no code runs), or .pkl/.joblib with --trust-model; also the model "
                   "--retrain refits")
    g.add_argument("--predictions", metavar="FILE", help="the model's predictions (.csv with "
                   "one column, or .npy)")
    g.add_argument("--labels", action="store_true", help="guide by the --target labels "
                   "(workload-aware)")
    a.add_argument("--trust-model", action="store_true", help="allow unpickling --model (runs "
                   "code from the file), and any type in a .skops file")
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
    io.add_argument("--na-values", metavar="TEXTS", help="comma-separated texts that mean "
                    "missing in a CSV, e.g. '?' (besides empty, NA, NaN)")
    io.add_argument("--sep", help="CSV field separator, one character (default ','; '\\t' "
                    "for tab)")
    rt2 = a.add_argument_group("retraining and the mapping")
    rt2.add_argument("--retrain", action="store_true", help="refit a clone of --model on the "
                     "anonymized table and print accuracy before/after on --test")
    rt2.add_argument("--test", metavar="FILE", help="held-out table (raw rows, same columns) "
                     "for --retrain")
    rt2.add_argument("--save-mapping", metavar="FILE.skops", help="save the fitted anonymizer, "
                     "to map new rows with anonml transform")
    rt2.add_argument("--save-pipeline", metavar="FILE.skops", help="with --retrain: save the "
                     "model to release, Pipeline(mapping, retrained model), for anonml audit")
    from anonml._cli_dask import add_dask_options

    add_dask_options(a)
    a.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    a.add_argument("--json", action="store_true", help="print the summary as JSON")
    a.add_argument("-q", "--quiet", action="store_true", help="no progress messages")
    a.set_defaults(func=_cmd_anonymize)


def _transform_parser(sub: Any) -> None:
    t = sub.add_parser(
        "transform", allow_abbrev=False,
        help="map new rows the way a saved anonymizer (--save-mapping) mapped its training rows",
        description="Map the quasi-identifiers of new rows to their group's values, with the "
        "anonymizer saved by anonml anonymize --save-mapping (read as data: no code runs).",
        epilog=TRANSFORM_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    t.add_argument("input", help="table of new rows (.csv, .csv.gz or .parquet)")
    t.add_argument("--mapping", required=True, metavar="FILE.skops",
                   help="the file written by anonml anonymize --save-mapping")
    t.add_argument("-o", "--output", required=True, help="output table")
    add_names_option(t, "--drop", "columns to leave out of the output")
    add_names_option(t, "--keep", "columns the mapping was not fitted on, passed through "
                     "unchanged on purpose")
    t.add_argument("--handle-unknown", choices=["error", "ignore"],
                   help="a category not seen in fit: refuse (default) or route it")
    t.add_argument("--na-values", metavar="TEXTS", help="comma-separated texts that mean "
                   "missing in a CSV")
    t.add_argument("--sep", help="CSV field separator, one character")
    t.add_argument("-q", "--quiet", action="store_true", help="no progress messages")
    t.set_defaults(func=_cmd_transform)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="anonml", allow_abbrev=False,
        description="Make a model's training data k-anonymous in the way that hurts the model "
        "least.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"anonml {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    _anonymize_parser(sub)
    _transform_parser(sub)
    from anonml._cli_frontier import add_parser as _frontier_parser
    _frontier_parser(sub)

    d = sub.add_parser("demo", allow_abbrev=False,
                       help="the main job on the bundled Adult data (about 20 s)",
                       description="Train a neural network on the bundled Adult data, make its "
                       "training rows k-anonymous (accuracy-guided), retrain, and print the "
                       "accuracy before and after.",
                       epilog=DEMO_EXAMPLES,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    d.add_argument("-o", "--output", default="anonml-demo", help="output folder (default anonml-demo)")
    d.add_argument("--k", type=int, default=100, help="k (default 100)")
    d.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    d.add_argument("--json", action="store_true", help="print the summary as JSON")
    d.add_argument("-q", "--quiet", action="store_true", help="no progress messages")
    d.set_defaults(func=_cmd_demo)

    from anonml._cli_audit import add_audit_parser

    add_audit_parser(sub)

    r = sub.add_parser("rules", allow_abbrev=False,
                       help="write or check a risk-appetite rules file",
                       description="Write the default risk-appetite rules to a file to edit "
                       "(init), or check a rules file (check); anonml audit --rules reads it.",
                       epilog=RULES_EXAMPLES,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
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
    import warnings

    from anonml._errors import AnonmlWarning
    from anonml._io import cleanup_on_signals

    shown = warnings.showwarning

    def one_line_warning(message: Any, category: type, *rest: Any, **kw: Any) -> None:
        if not issubclass(category, AnonmlWarning):
            return shown(message, category, *rest, **kw)
        from anonml._cli_words import cli_words

        print(f"anonml: warning: {cli_words(one_line(message, 2000), args)}", file=sys.stderr,
              flush=True)

    # anonml's warnings: shown (whatever the filters say), one line, in the CLI's words
    catch = warnings.catch_warnings()
    catch.__enter__()
    warnings.simplefilter("always", AnonmlWarning)
    warnings.showwarning = one_line_warning
    try:
        with cleanup_on_signals():  # SIGTERM/SIGINT remove the temporary files first
            return int(args.func(args))
    except AnonmlError as exc:  # the library's words: its parameters named as flags
        from anonml._cli_words import cli_words

        print(f"anonml: error: {cli_words(one_line(exc, 2000), args)}", file=sys.stderr)
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
    except Exception as exc:  # noqa: BLE001 - an error anonml did not foresee: still one line
        if os.environ.get("ANONML_DEBUG"):
            raise
        print(f"anonml: error: unexpected {type(exc).__name__}: {one_line(exc, 300)}; nothing "
              "was written; this is a malformed input or a bug in anonml: rerun with "
              "ANONML_DEBUG=1 for the details and report it", file=sys.stderr)
        return 1
    finally:
        catch.__exit__(None, None, None)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
