"""Working memory of each step of an in-memory AccuracyGuidedAnonymizer fit, in input frames.

The table of ``bench_memory_scale.py`` (Adult resampled with jitter, 12 QI, k=100, hist tree)
is built (its construction's leftovers given back, ``settle``), then ``fit_transform`` runs
while a thread samples the process's RSS every 5 ms. The fit's own step timings
(``timings_``: check and encode, partition, representatives, recode, verify, routing tree,
write) cut the samples into windows, taken back to back from the start of ``fit_transform``
(the input checks before the first step are counted in the first window); for each step it
prints the largest (RSS - RSS before the fit) / input frame seen in it, then the RSS before
the fit and the sampled peak, in input frames.

The last step, ``write``, builds the output: with ``--copy false`` the column-by-column write
into the input frame (``copy=False``); from session 9 on, with ``copy=True`` the new table,
built once the check and the routing tree are done (before, ``recode`` built it).

``--allocator`` (a diagnosis of session 9): ``block`` (default, the code as it is),
``no-block`` (the fit's ``reuse_freed_memory`` block disabled: glibc's own thresholds
throughout) or ``trim-steps`` (the heap also trimmed before and after the partition). The CPU
seconds of the fit (user + system) are printed too.

Usage::

    PYTHONPATH=src python benchmarks/profile_memory_stages.py --rows 2M
    PYTHONPATH=src python benchmarks/profile_memory_stages.py --rows 2M --copy false
    PYTHONPATH=src python benchmarks/profile_memory_stages.py --rows 5M --allocator no-block
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_memory_scale import _cpu, _status, build_table, parse_size, settle

STEPS = ["check_and_encode", "partition", "representatives", "recode", "verify", "routing",
         "write"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="2M")
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--copy", default="true", choices=["true", "false"])
    parser.add_argument("--allocator", default="block",
                        choices=["block", "no-block", "trim-steps"])
    args = parser.parse_args()
    from anonml import AccuracyGuidedAnonymizer

    _allocator_mode(args.allocator)

    X, y, qi = build_table(parse_size(args.rows))
    frame = int(X.memory_usage(deep=True, index=True).sum())
    settle()  # the construction's leftovers given back (as bench_memory_scale.py does)
    samples: list[tuple[float, int]] = []
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            samples.append((time.perf_counter(), _status("VmRSS")))
            time.sleep(0.005)

    thread = threading.Thread(target=sample)
    thread.start()
    rss0 = _status("VmRSS")
    cpu0 = _cpu()
    t = time.perf_counter()
    ag = AccuracyGuidedAnonymizer(k=args.k, quasi_identifiers=qi, tree="hist", random_state=0,
                                  **({} if args.copy == "true" else {"copy": False}))
    out = ag.fit_transform(X, y)
    cpu = _cpu() - cpu0
    done.set()
    thread.join()
    load = Path("/proc/loadavg").read_text().strip()
    print(f"rows {X.shape[0]:,}, frame {frame / 1e9:.3f} GB, copy={args.copy}, the output "
          f"{'is' if out is X else 'is not'} the input frame, load {load}")
    print("| step | wall s | working memory / frame |\n|---|---:|---:|")
    for step in [s for s in STEPS if s in ag.timings_]:
        a, b = t, t + ag.timings_[step]
        peak = max((r for ts, r in samples if a <= ts <= b), default=rss0)
        print(f"| {step} | {b - a:.2f} | {(peak - rss0) / frame:.2f} |")
        t = b
    peak = max(r for _, r in samples)
    print(f"| whole fit_transform | | {(peak - rss0) / frame:.2f} |")
    print(f"RSS before the fit {rss0 / frame:.2f} frames, peak (sampled) {peak / frame:.2f} "
          f"frames, CPU {cpu:.1f} s, allocator {args.allocator}")


def _allocator_mode(mode: str) -> None:
    """Set up the ``--allocator`` diagnosis (module attributes of the fit replaced)."""
    import contextlib

    import anonml.anonymize._base as base

    if mode == "no-block":
        base.reuse_freed_memory = contextlib.nullcontext
    elif mode == "trim-steps":
        from anonml._utils import release_free_memory
        from anonml.anonymize._accuracy_guided import AccuracyGuidedAnonymizer

        partition = AccuracyGuidedAnonymizer._partition

        def trimmed(self, *args, **kwargs):
            release_free_memory()
            try:
                return partition(self, *args, **kwargs)
            finally:
                release_free_memory()

        AccuracyGuidedAnonymizer._partition = trimmed


if __name__ == "__main__":
    main()
