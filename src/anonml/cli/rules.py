"""``anonml rules``: write or check a risk-appetite rules file."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from anonml._errors import InputError
from anonml.cli._common import add_command
from anonml.cli._examples import RULES_EXAMPLES


def run(args: argparse.Namespace) -> int:
    from anonml._output import atomic_write
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


def add_parser(sub: Any) -> None:
    r = add_command(sub, "rules",
                    help="write or check a risk-appetite rules file",
                       description="Write the default risk-appetite rules to a file to edit "
                       "(init), or check a rules file (check); anonml audit --rules reads it.",
                    epilog=RULES_EXAMPLES)
    r.add_argument("action", choices=["init", "check"],
                   help="init: write the default rules to FILE; check: validate FILE")
    r.add_argument("file", nargs="?", default="risk_appetite.toml",
                   help="rules file (default risk_appetite.toml)")
    r.add_argument("--force", action="store_true", help="init: overwrite an existing file")
    r.set_defaults(func=run)
