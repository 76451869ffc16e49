"""AccuracyGuidedAnonymizer on the Adult train split of bench_speed_vs_ibm.py (12 QIs, k=10,
the library defaults): CPU and wall seconds of ``fit_transform``, two versions of anonml in
alternating subprocesses (our side only, no apt: small and short enough to run beside other
work; CPU seconds are what another process's load adds least to).

Each subprocess loads the data, makes one untimed call, then ``--calls`` timed calls; the
versions take turns ``--turns`` times. Printed: per version the median (min) of wall and CPU
seconds over all timed calls, and the median of the steps in ``timings_``.

Usage::

    python benchmarks/bench_ag_cpu_before_after.py --before-src /tmp/main/src \\
        --after-src src --turns 3 --calls 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_speed_vs_ibm import _LOAD

_CODE = _LOAD + """
from anonml import AccuracyGuidedAnonymizer
def once():
    ag = AccuracyGuidedAnonymizer(k=k, quasi_identifiers=FEATURES, random_state=0)
    out, t = timed(lambda: ag.fit_transform(X, y))
    return t, ag
once()
calls = []
for _ in range(inner):
    t, ag = once()
    calls.append({**t, "steps": ag.timings_})
print(json.dumps(calls))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before-src", required=True)
    parser.add_argument("--after-src", default=str(HERE.parent / "src"))
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args()
    got: dict = {"before": [], "after": []}
    load = [Path("/proc/loadavg").read_text().split()[0]]
    for _ in range(args.turns):
        for name, src in (("before", args.before_src), ("after", args.after_src)):
            env = {**os.environ, "PYTHONPATH": str(Path(src).resolve())}
            proc = subprocess.run([sys.executable, "-c", _CODE, str(args.k), str(args.calls)],
                                  env=env, capture_output=True, text=True, check=True)
            got[name] += json.loads(proc.stdout.strip().splitlines()[-1])
    load.append(Path("/proc/loadavg").read_text().split()[0])
    print(f"1-min load before {load[0]}, after {load[1]}")
    for name, calls in got.items():
        wall = [c["wall"] for c in calls]
        cpu = [c["cpu"] for c in calls]
        steps = {s: statistics.median(c["steps"][s] for c in calls) for s in calls[0]["steps"]}
        print(f"{name}: {len(calls)} calls, wall {statistics.median(wall):.3f} "
              f"({min(wall):.3f}) s, CPU {statistics.median(cpu):.3f} ({min(cpu):.3f}) s; "
              "steps " + ", ".join(f"{s} {v:.3f}" for s, v in steps.items()))


if __name__ == "__main__":
    main()
