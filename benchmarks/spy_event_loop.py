"""Where a Dask worker's event loop spends its samples, from ``py-spy record --format raw
--threads`` files of worker processes (BENCHMARKS.md, "Session 18").

Stacks are sorted by thread kind from their frames (the event loop runs under
``asyncio_run``; Dask's task and offload threads under its ``threadpoolexecutor.py``), and
for the event loop the frames with the most samples of their own and in all are printed::

    py-spy record --pid <worker pid> --rate 25 --duration 420 --format raw --threads \\
        --nonblocking -o spy_w1.txt
    python benchmarks/spy_event_loop.py spy_w1.txt spy_w2.txt   # or their .gz
"""

from __future__ import annotations

import gzip
import sys
from collections import Counter


def main(files: list[str]) -> None:
    kinds: Counter = Counter()
    own: Counter = Counter()
    incl: Counter = Counter()
    for name in files:
        with (gzip.open(name, "rt") if name.endswith(".gz") else open(name)) as fh:
            for line in fh:
                stack, _, count = line.rstrip().rpartition(" ")
                if not stack:
                    continue
                n = int(count)
                if "spawn_main" in stack and "asyncio_run" in stack:
                    kind = "event loop"
                elif "threadpoolexecutor.py" in stack or "concurrent/futures/thread.py" in stack:
                    kind = "task or offload"
                else:
                    kind = "other"
                kinds[kind] += n
                if kind != "event loop":
                    continue
                frames = [f for f in stack.split(";")
                          if "(" in f and not f.startswith(("thread", "process"))]
                if frames:
                    own[frames[-1]] += n
                    for f in set(frames):
                        incl[f] += n
    total = kinds["event loop"] or 1
    print("samples by thread kind:", dict(kinds))
    print("\nevent loop, samples of their own:")
    for f, n in sorted(own.items(), key=lambda kv: (-kv[1], kv[0]))[:20]:
        print(f"{n:7d} {100 * n / total:5.1f} %  {f}")
    print("\nevent loop, samples in all:")
    for f, n in sorted(incl.items(), key=lambda kv: (-kv[1], kv[0]))[:40]:
        print(f"{n:7d} {100 * n / total:5.1f} %  {f}")


if __name__ == "__main__":
    main(sys.argv[1:])
