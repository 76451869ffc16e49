"""What every command shares: the progress lines, column-list options and the input checks."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any

from anonml._errors import InputError, names_list, one_line


class Progress:
    """The command line's one adapter of the library's progress protocol
    (:mod:`anonml._progress`): progress on standard error, silent with --quiet.

    ``progress(stage)`` (or ``progress(stage, done, None)``) announces a step: one line with
    the elapsed time, once while the same stage goes on (e.g. tree levels; a count of 0 parts
    is the same). Counted stages
    (``progress(stage, done, total)``: repetitions, models, features, partitions, points) show
    a progress bar (tqdm) when standard error is a terminal, and a stage line per step
    otherwise (logs, pipes, CI). An instance is passed as ``progress=`` to the library as is.
    """

    def __init__(self, quiet: bool = False, *, suffix: str = " ..."):
        self.quiet = quiet
        self.suffix = suffix
        self.t0 = time.perf_counter()
        self._bars: dict = {}
        self._tty = sys.stderr.isatty()
        self._last: str | None = None

    def _write(self, line: str) -> None:
        line = one_line(line, 100_000)  # names from a file cannot steer the terminal
        if self._bars:
            from tqdm import tqdm

            tqdm.write(line, file=sys.stderr)
        else:
            print(line, file=sys.stderr, flush=True)

    def __call__(self, stage: str, done: int = 0, total: int | None = None) -> None:
        if self.quiet:
            return
        if not total:  # not counted (None), or nothing to count (0): one line for the stage
            if stage != self._last:
                self._write(f"[{time.perf_counter() - self.t0:6.1f}s] {stage}{self.suffix}")
            self._last = stage
            return
        self._last = stage
        self._count(stage, min(int(done), int(total)), int(total))

    def _count(self, label: str, done: int, total: int) -> None:
        """``done`` of ``total`` parts of the step ``label`` are finished."""
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


def add_command(sub: Any, name: str, *, help: str, description: str,
                epilog: str) -> argparse.ArgumentParser:
    """The parser of one command, as every command has it: no abbreviated options, and the
    description and the examples (``epilog``) shown as written."""
    return sub.add_parser(name, allow_abbrev=False, help=help, description=description,
                          epilog=epilog, formatter_class=argparse.RawDescriptionHelpFormatter)


def add_csv_options(parser: Any) -> None:
    """The options of how a CSV is read (``--na-values``, ``--sep``), read by :func:`_reader`."""
    parser.add_argument("--na-values", metavar="TEXTS", help="comma-separated texts that mean "
                        "missing in a CSV, e.g. '?' (besides empty, NA, NaN)")
    parser.add_argument("--sep", help="CSV field separator, one character (default ','; '\\t' "
                        "for tab)")


def add_names_option(parser: Any, flag: str, help: str, **kwargs: Any) -> None:
    """The one definition of an option that takes column names, for every command: space- or
    comma-separated (``--qi age sex`` or ``--qi age,sex``); read with :func:`_split_names`."""
    action = parser.add_argument(flag, nargs="+", metavar=kwargs.pop("metavar", "COL"),
                                 help=f"{help} (space- or comma-separated)", **kwargs)
    if action.dest not in _NAMES_DESTS:
        _NAMES_DESTS.append(action.dest)


def add_model_options(parser: Any, *, group: Any = None, what: str = "fitted model",
                      also: str = "") -> None:
    """``--model FILE`` (in ``group`` if given) and ``--trust-model``, worded once for every
    command that reads a model: which files are read without running code, and what trusting
    the file allows. ``what`` names the model's role, ``also`` is added to ``--model``'s help."""
    (parser if group is None else group).add_argument(
        "--model", metavar="FILE", help=f"{what}: .skops or XGBoost .json/.ubj (no code runs), "
        f"or .pkl/.joblib with --trust-model{also}")
    parser.add_argument("--trust-model", action="store_true", help="allow unpickling --model "
                        "(runs code from the file), and any type in a .skops file")


def add_input_argument(parser: Any, help: str) -> None:
    """The positional input of a command that also has column-list options: optional for
    argparse, so that a missing input reaches :func:`take_back_input` instead of a usage
    error."""
    parser.add_argument("input", nargs="?", help=f"{help} (required)")


_TABLE_SUFFIXES = (".csv", ".csv.gz", ".tsv", ".txt", ".parquet", ".pq")


def _looks_like_input(value: str) -> bool:
    import glob
    import os

    return (os.path.exists(value) or value.lower().endswith(_TABLE_SUFFIXES)
            or "://" in value or (any(c in value for c in "*?[") and bool(glob.glob(value))))


def take_back_input(args: argparse.Namespace, command: str) -> None:
    """Give ``args.input`` the table that a column-list option took.

    argparse gives every value after ``--qi`` (``nargs="+"``) to ``--qi``, so
    ``anonml anonymize --qi age sex adult.csv`` would leave the input missing. When the input
    is missing and exactly one column-list option ends with a value that names a table (an
    existing file, folder or glob, or a table file name), that value is the input; otherwise
    one line names the fix (the input first, or after ``--``).
    """
    if getattr(args, "input", None) is not None:
        return
    holders = [dest for dest in _NAMES_DESTS
               if getattr(args, dest, None) and _looks_like_input(getattr(args, dest)[-1])]
    if len(holders) == 1 and len(getattr(args, holders[0])) > 1:
        values = getattr(args, holders[0])
        args.input = values.pop()
        return
    if holders:
        flags = " and ".join(f"--{d.replace('_', '-')}" for d in holders)
        raise InputError(f"the input table is missing ({flags} took "
                         f"{getattr(args, holders[0])[-1]!r} as a column name); fix: give the "
                         f"input first (anonml {command} INPUT ...) or end the column list "
                         f"with -- (e.g. --qi age sex -- INPUT)")
    raise InputError(f"the input table is missing; fix: give it first, e.g. anonml {command} "
                     "INPUT ...")


_NAMES_DESTS: list[str] = []  # the column-list options' names, filled by add_names_option


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
    from anonml.modelfile._sandbox_process import ModelCallError

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
    from anonml._io import check_packages
    from anonml._output import check_output_file

    if not path.lower().endswith(".skops"):
        raise InputError(f"{option} {path!r} must end in .skops (a file read as data, "
                         f"without running code); fix: e.g. {option} "
                         f"{option[len('--save-'):]}.skops")
    check_output_file(path, inputs=inputs)
    check_packages("skops", purpose=f"writing the mapping {path!r}")



def check_privacy_flags(args: argparse.Namespace) -> None:
    """The rules between --l, --l-kind, --c, --t, --t-distance and --sensitive that every
    engine shares, each broken one refused in one line naming the flag it needs."""
    if args.l_kind is not None and args.l is None:
        raise InputError("--l-kind needs --l, the diversity asked for")
    if args.c is not None and args.l_kind != "recursive":
        raise InputError("--c needs --l-kind recursive (recursive (c, l)-diversity)")
    if args.t_distance is not None and args.t is None:
        raise InputError("--t-distance needs --t, the closeness asked for")
    if (args.l is not None or args.t is not None) and args.sensitive is None:
        raise InputError("--l and --t need --sensitive COLUMN, the attribute to protect")
