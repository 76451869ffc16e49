"""CPU seconds and resident memory of each call inside an in-memory AccuracyGuidedAnonymizer fit.

Finer than ``profile_memory_stages.py``: the encoder's fit and bins, each tree
(``HistTree.fit_apply``: the guided tree, then the Mondrian refinement), the representatives,
the recode, the verification and the routing tree's parts are wrapped; at each entry and exit
the script records the wall clock, the process's CPU seconds (``time.process_time``) and RSS,
while a thread samples RSS every 3 ms. For each interval between two events it prints the CPU
seconds so far, the largest (RSS - RSS before the fit) / input frame seen in the interval, the
RSS at its end, and the Arrow memory pool's growth (pandas' ``str`` columns). ``TM=1`` adds
numpy's live memory (tracemalloc; slower); ``TRIM=1`` calls ``malloc_trim`` at every entry.

The table is that of ``bench_memory_scale.py`` (Adult resampled with jitter, 12 QI, k=100).

Usage::

    PYTHONPATH=src python benchmarks/profile_fit_calls.py 5M
"""

from __future__ import annotations

import ctypes
import gc
import os
import sys
import threading
import time
import tracemalloc
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_memory_scale import _status, build_table, parse_size


def main() -> None:
    import pyarrow as pa

    import anonml.anonymize._base as base
    import anonml.anonymize._hist_tree as hist_tree
    import anonml.anonymize._routing_build as routing_build
    from anonml import AccuracyGuidedAnonymizer
    from anonml.encoding import TableEncoder

    n = parse_size(sys.argv[1] if len(sys.argv) > 1 else "2M")
    X, y, qi = build_table(n)
    frame = int(X.memory_usage(deep=True, index=True).sum())
    gc.collect()
    tm, trim = os.environ.get("TM") == "1", os.environ.get("TRIM") == "1"
    libc = ctypes.CDLL("libc.so.6") if trim else None
    events: list[tuple] = []
    samples: list[tuple[float, int]] = []
    done = threading.Event()

    def ev(label: str) -> None:
        if trim and label.startswith(">"):
            libc.malloc_trim(0)
        live = tracemalloc.get_traced_memory()[0] if tm else 0
        events.append((time.perf_counter(), label, _status("VmRSS"), live,
                       pa.total_allocated_bytes(), time.process_time()))

    def wrap(owner, name: str, label: str) -> None:
        f = getattr(owner, name)

        def w(*a, **k):
            ev("> " + label)
            r = f(*a, **k)
            ev("< " + label)
            return r
        setattr(owner, name, w)

    for nm in ["select_representatives", "representative_values", "recode_plan",
               "verify_recoding", "anonymizer_routing"]:
        wrap(base, nm, nm)
    for nm in ["_ag_spec", "_build", "_check_routes", "LeafSummary", "split_bounds",
               "_threshold_avoiding"]:
        wrap(routing_build, nm, nm)
    wrap(hist_tree.HistTree, "fit_apply", "HistTree.fit_apply")
    wrap(TableEncoder, "fit", "encoder.fit")
    wrap(TableEncoder, "bins", "encoder.bins")

    def sample() -> None:
        while not done.is_set():
            samples.append((time.perf_counter(), _status("VmRSS")))
            time.sleep(0.003)

    thread = threading.Thread(target=sample)
    thread.start()
    rss0 = _status("VmRSS")
    if tm:
        tracemalloc.start()
    ev("start")
    pa0 = pa.total_allocated_bytes()
    ag = AccuracyGuidedAnonymizer(k=100, quasi_identifiers=qi, tree="hist", random_state=0)
    out = ag.fit_transform(X, y)  # noqa: F841  (kept alive until the end is recorded)
    ev("end")
    time.sleep(0.02)
    done.set()
    thread.join()
    print(f"rows {n:,}, frame {frame / 1e9:.3f} GB, RSS before the fit {rss0 / 1e9:.3f} GB, "
          f"load {Path('/proc/loadavg').read_text().strip()}")
    print("| wall s | CPU s | peak in interval / frame | RSS / frame | numpy live / frame "
          "| Arrow / frame | event |\n|---:|---:|---:|---:|---:|---:|---|")
    t0, c0 = events[0][0], events[0][5]
    prev = t0
    for t, label, rss, live, pab, cpu in events:
        seg = [r for ts, r in samples if prev <= ts <= t]
        peak = max(seg) if seg else rss
        print(f"| {t - t0:.2f} | {cpu - c0:.2f} | {(peak - rss0) / frame:.2f} | "
              f"{(rss - rss0) / frame:.2f} | {live / frame:.2f} | {(pab - pa0) / frame:.2f} | "
              f"{label} |")
        prev = t
    print(f"whole fit: working memory / frame {(max(r for _, r in samples) - rss0) / frame:.2f}, "
          f"VmHWM / frame {_status('VmHWM') / frame:.2f}")


if __name__ == "__main__":
    main()
