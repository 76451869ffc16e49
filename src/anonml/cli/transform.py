"""``anonml transform``: map new rows through a saved mapping."""

from __future__ import annotations

import argparse
from typing import Any

from anonml._errors import InputError
from anonml.cli._common import Progress, _check_inputs, _columns_named, _reader, _split_names
from anonml.cli._common import add_command, add_csv_options, add_input_argument
from anonml.cli._common import add_names_option, take_back_input
from anonml.cli._examples import TRANSFORM_EXAMPLES


def run(args: argparse.Namespace) -> int:
    from anonml._io import table_format, table_packages
    from anonml._output import check_output_file, write_table
    from anonml.safemodel import open_model

    take_back_input(args, "transform")
    say = Progress(args.quiet)
    drop = _split_names(args.drop, "drop") if args.drop else []
    keep = _split_names(args.keep, "keep") if args.keep else []
    if not args.mapping.lower().endswith(".skops"):
        raise InputError(f"--mapping {args.mapping!r} is not a .skops file; fix: give the file "
                         "written by anonml anonymize --save-mapping")
    dask = args.engine == "dask"
    if dask:  # a Parquet dataset, checked by anonml/cli/_dask_transform.py
        _check_inputs(mapping=args.mapping)
        for flag in ("na_values", "sep"):
            if getattr(args, flag) is not None:
                raise InputError(f"--{flag.replace('_', '-')} is read for a CSV table; "
                                 "--engine dask reads Parquet; fix: leave it out")
    else:
        for flag in ("scheduler", "workers", "worker_memory", "no_workers_timeout"):
            if getattr(args, flag) is not None:
                raise InputError(f"--{flag.replace('_', '-')} is read by --engine dask only; "
                                 "fix: add --engine dask, or leave it out")
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
    if not dask:
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
    if args.handle_unknown != "ignore" and anonymizer.info.get("routes_unnamed_categories"):
        # by design (a release copy names no category the table hides): said, not refused
        import warnings

        from anonml._errors import AnonmlWarning
        from anonml.anonymize._base import UNNAMED_CATEGORIES

        warnings.warn(UNNAMED_CATEGORIES, AnonmlWarning, stacklevel=1)
    if dask:  # each file mapped by this mapping on the cluster
        from anonml.cli._dask_transform import run_dask_transform

        return run_dask_transform(args, say, anonymizer, fitted, drop, keep)
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


def add_parser(sub: Any) -> None:
    t = add_command(
        sub, "transform",
        help="map new rows the way a saved anonymizer (--save-mapping) mapped its training rows",
        description="Map the quasi-identifiers of new rows to their group's values, with the "
        "anonymizer saved by anonml anonymize --save-mapping (read as data: no code runs).",
        epilog=TRANSFORM_EXAMPLES)
    add_input_argument(t, "table of new rows (.csv, .csv.gz or .parquet); with --engine dask "
                       "a Parquet folder, glob or file")
    t.add_argument("--mapping", required=True, metavar="FILE.skops",
                   help="the file written by anonml anonymize --save-mapping")
    t.add_argument("-o", "--output", required=True, help="output table")
    add_names_option(t, "--drop", "columns to leave out of the output")
    add_names_option(t, "--keep", "columns the mapping was not fitted on, passed through "
                     "unchanged on purpose")
    t.add_argument("--handle-unknown", choices=["error", "ignore"],
                   help="a category not seen in fit: refuse (default) or route it (a "
                   "mapping saved by --save-mapping names no category the table hides, so it "
                   "routes them by each split's default branch, and says so unless 'ignore')")
    add_csv_options(t)
    t.add_argument("-q", "--quiet", action="store_true", help="no progress messages")
    from anonml.cli._dask import add_dask_options

    add_dask_options(t, "transform")
    t.set_defaults(func=run)
