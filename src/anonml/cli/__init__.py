"""The ``anonml`` command: a thin shell over the library.

It parses arguments, calls the library, prints results, and turns every library error into one
line on standard error with exit code 1. No computation lives here.

One module per command (:mod:`~anonml.cli.anonymize`, :mod:`~anonml.cli.transform`,
:mod:`~anonml.cli.frontier`, :mod:`~anonml.cli.audit`, :mod:`~anonml.cli.demo`,
:mod:`~anonml.cli.rules`), each with ``add_parser(subparsers)`` and ``run(args) -> exit code``;
what they share (progress lines, column-list options, input checks) is in ``_common``, the
Dask engine's options of ``anonymize`` in ``_dask``, the help's examples in ``_examples``, and
the library's parameter names as flags in ``_words``. No command module imports this one.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any

from anonml import __version__
from anonml._errors import AnonmlError, one_line
from anonml.cli import anonymize, audit, demo, frontier, rules, transform
from anonml.cli._examples import EXAMPLES

__all__ = ["build_parser", "main"]


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
    anonymize.add_parser(sub)
    transform.add_parser(sub)
    frontier.add_parser(sub)

    demo.add_parser(sub)

    audit.add_parser(sub)

    rules.add_parser(sub)
    return parser


def _start_sandbox(args: argparse.Namespace) -> None:
    """Start the sandbox worker for ``--model`` / ``--mapping`` now, before this process
    imports pandas and scikit-learn, so that the two sets of imports run side by side; the
    command's :func:`~anonml.safemodel.open_model` of that file then takes it (one worker for
    that one file, as before: :mod:`anonml.modelfile._sandbox_start`)."""
    path = getattr(args, "mapping", None) or getattr(args, "model", None)
    if not isinstance(path, str):
        return
    suffix = os.path.splitext(path)[1].lower()
    if suffix in (".skops", ".json", ".ubj") or (
            suffix in (".pkl", ".pickle", ".joblib") and getattr(args, "trust_model", False)):
        from anonml.modelfile._sandbox_start import prestart

        prestart(path)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    _start_sandbox(args)
    import warnings

    from anonml._errors import AnonmlWarning
    from anonml._output import cleanup_on_signals

    shown = warnings.showwarning

    def one_line_warning(message: Any, category: type, *rest: Any, **kw: Any) -> None:
        if not issubclass(category, AnonmlWarning):
            return shown(message, category, *rest, **kw)
        from anonml.cli._words import cli_words

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
        from anonml.cli._words import cli_words

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
