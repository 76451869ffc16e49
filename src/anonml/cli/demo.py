"""``anonml demo``: the main job on the bundled Adult data."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from anonml.cli._common import Progress, add_command
from anonml.cli._examples import DEMO_EXAMPLES


def run(args: argparse.Namespace) -> int:
    from anonml._demo import run_demo
    from anonml._output import check_output_folder

    check_output_folder(args.output)
    say = Progress(args.quiet)
    s = run_demo(args.output, k=args.k, random_state=args.seed, progress=say)
    if args.json:
        from anonml._utils import json_safe

        print(json.dumps(json_safe(s)))
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


def add_parser(sub: Any) -> None:
    d = add_command(sub, "demo",
                    help="the main job on the bundled Adult data (about 20 s)",
                       description="Train a neural network on the bundled Adult data, make its "
                       "training rows k-anonymous (accuracy-guided), retrain, and print the "
                       "accuracy before and after.",
                    epilog=DEMO_EXAMPLES)
    d.add_argument("-o", "--output", default="anonml-demo", help="output folder (default anonml-demo)")
    d.add_argument("--k", type=int, default=100, help="k (default 100)")
    d.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    d.add_argument("--json", action="store_true", help="print the summary as JSON")
    d.add_argument("-q", "--quiet", action="store_true", help="no progress messages")
    d.set_defaults(func=run)
