"""Mutation fuzzing of model files through the sandbox (issue 18, item 7).

Genuine model and mapping files (``.skops``, XGBoost ``.json``/``.ubj``) are edited with their
containers kept valid (:mod:`anonml.modelfile._fuzz`), and each mutant is opened, called and
questioned through :func:`anonml.safemodel.open_model` in a batch subprocess. Prints and
records the outcome counts per format and every finding (seed, index and edit reproduce it).

    python benchmarks/fuzz_model_files.py --mutants 600 --seed 18 --jobs 2
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from anonml.safemodel._fuzz_run import FINDINGS, campaign

OUT = Path(__file__).parent / "results" / "fuzz_model_files.json"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mutants", type=int, default=600)
    ap.add_argument("--seed", type=int, default=18)
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per mutant")
    ap.add_argument("--jobs", type=int, default=1, help="batch processes at a time")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    done = [0]
    t0 = time.time()

    def progress(n: int) -> None:
        done[0] += n
        print(f"  {done[0]}/{args.mutants} mutants, {time.time() - t0:.0f} s", flush=True)

    with tempfile.TemporaryDirectory(prefix="anonml-fuzz-run-") as tmp:
        result = campaign(tmp, args.mutants, args.seed, timeout=args.timeout, jobs=args.jobs,
                          progress=progress)
    result["seconds"] = round(time.time() - t0, 1)
    result["timeout_per_mutant"] = args.timeout
    for fmt, counts in sorted(result["per_format"].items()):
        print(f"{fmt:15s} " + "  ".join(f"{k} {v}" for k, v in counts.items()))
    for f in result["findings"]:
        print(f"FINDING {f['outcome']}: {f['source']} seed {f['seed']} index {f['index']}: "
              f"{f['edit']} -> {f['detail'][:300]}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 1 if any(f["outcome"] in FINDINGS for f in result["findings"]) else 0


if __name__ == "__main__":
    sys.exit(main())
