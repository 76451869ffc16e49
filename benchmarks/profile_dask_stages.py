"""Where the Dask engine's time goes: a stage table from Dask's own task stream (issue 21).

Runs :func:`anonml.dask.anonymize_dataset` (AG, k=100, Adult's 12 QI, the true ``income`` as
the guide, as ``bench_dask_scale.py``) on a ``LocalCluster`` of 2 worker processes x 4 GB, one
thread each, and records

* every task's compute, transfer and (de)serialization seconds on the workers
  (``distributed.get_task_stream``), summed by the task's function (its key prefix) and by
  engine stage (binning, tree levels, local subtrees, representatives, write, verify);
* the engine's own wall seconds per stage (``DaskAnonymization.seconds``) and the wall time of
  every tree level (from the progress events);
* CPU seconds of the client and the workers (``psutil``) and the load average before/after;
* each worker's CPU seconds by thread (``psutil.Process().threads()``, named by Python's
  ``threading``): the task threads against the event loop and the others, so that the CPU
  spent outside tasks (communication, (de)serialization, spilling, bookkeeping) is measured.

Usage::

    python benchmarks/make_big_adult.py /work/tmp-dask --sizes 2M 10M
    python benchmarks/profile_dask_stages.py /work/tmp-dask/adult_10M --out prof_10M.json

Prints a Markdown stage table; ``--out`` keeps the details as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_dask_scale import LABEL, QI, Sampler  # noqa: E402

# task function (key prefix) -> stage of the stage table
STAGE_OF = {
    "_summary_task": "binning", "_merge_task": "binning", "_bin_task": "binning",
    "count_distinct": "binning",
    "_start": "tree levels", "node_class_counts": "tree levels", "route": "tree levels",
    "class_histograms": "tree levels", "sum_arrays": "tree levels",
    "route_histograms": "tree levels", "finish": "tree levels", "_leaf_counts": "tree levels",
    "_map_ids": "tree levels",
    "active_rows": "local subtrees", "local_subtree": "local subtrees",
    "descend": "local subtrees", "subtree_arrays": "local subtrees",
    "leaf_frame": "local subtrees", "parts_in": "local subtrees",
    "assign_leaves": "local subtrees",
    "group_bin_counts": "representatives", "merge_sparse": "representatives",
    "group_medians": "representatives", "assemble_medians": "representatives",
    "propose_representatives": "representatives", "merge_candidates": "representatives",
    "pick_rows": "representatives", "_reps_table": "representatives",
    "group_rows_reading": "representatives", "range_candidates": "representatives",
    "concat_candidates": "representatives",
    "group_stats": "representatives", "merge_group_stats": "representatives",
    "reps_from_stats": "representatives",
    "_write_task": "write", "write_reading": "write",
    "propose_reading": "representatives", "pick_reading": "representatives",
    "pick_binned_reading": "representatives", "write_binned_reading": "write",
    "file_classes": "verify", "merge_classes": "verify",
    "node_rows": "local subtrees", "group_rows_coded": "representatives",
    "code_reading": "representatives", "state_histograms": "tree levels",
}
ORDER = ("binning", "tree levels", "local subtrees", "representatives", "write", "verify",
         "read (files)", "shuffle", "other")


def _prefix(key) -> str:
    from dask.utils import key_split

    text = key[0] if isinstance(key, tuple) else str(key)
    text = text.strip("('")
    # dask keys: "<func>-<token>" (client.submit) or "<name>-<token>" (collections), and
    # "<func>-<uuid>" (dask.delayed with pure=False: key_split drops the uuid's pieces too)
    for part in text.split("-"):
        if part in STAGE_OF or part == "_read_file":
            return part
    return key_split(text)


def _stage(prefix: str, t: float, windows: list) -> str:
    if prefix in STAGE_OF:
        return STAGE_OF[prefix]
    if prefix == "_read_file":
        return "read (files)"
    if "shuffle" in prefix or "p2p" in prefix or "barrier" in prefix or "unpack" in prefix:
        return "verify" if _window(t, windows) == "verify" else "shuffle"
    w = _window(t, windows)
    return "verify" if w == "verify" else "other"


def _window(t: float, windows: list) -> str | None:
    for name, a, b in windows:
        if a <= t <= b:
            return name
    return None


def _thread_cpu() -> dict:
    """CPU seconds (user + system) of this process's threads by kind: ``task`` (Dask's
    executor threads), ``event loop`` (the main thread), ``offload``, ``other`` and
    ``ended`` (threads gone: the process's total less its threads')."""
    import threading

    import psutil

    proc = psutil.Process()
    names = {t.native_id: t.name for t in threading.enumerate()}
    main = threading.main_thread().native_id
    out: dict = defaultdict(float)
    for th in proc.threads():
        name = names.get(th.id, "")
        kind = ("event loop" if th.id == main else "task" if "Dask-Default" in name
                else "offload" if "Offload" in name else "other")
        out[kind] += th.user_time + th.system_time
    total = proc.cpu_times()  # threads that ended count here only
    out["ended"] = max(0.0, total.user + total.system - sum(out.values()))
    return dict(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--worker-memory", default="4GB")
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--out")
    args = parser.parse_args()

    import logging

    import distributed

    from anonml.dask import anonymize_dataset, local_cluster

    load0 = open("/proc/loadavg").read().split()[:3]
    client = local_cluster(n_workers=args.workers, memory_limit=args.worker_memory)
    logging.getLogger("distributed").setLevel(logging.ERROR)
    folder = Path(args.folder)
    out_root = Path(tempfile.mkdtemp(prefix="anonml_dask_prof_", dir=folder.parent))
    pids = {"client": os.getpid()}
    for _, pid in client.run(os.getpid).items():
        pids[f"worker {len(pids)}"] = pid
    sampler = Sampler(pids)
    sampler.start()
    events: list = []
    t0 = time.time()

    def progress(stage: str, done: int, total) -> None:
        events.append((time.time(), stage, done, total))

    try:
        with distributed.get_task_stream(client=client) as ts:
            res = anonymize_dataset(str(folder), out_root / "out", k=args.k,
                                    quasi_identifiers=QI, method="ag", label=LABEL,
                                    client=client, progress=progress)
        wall = time.time() - t0
        sampler.stop()
    finally:
        import shutil

        shutil.rmtree(out_root, ignore_errors=True)
    load1 = open("/proc/loadavg").read().split()[:3]
    # stage windows from the engine's own seconds (consecutive stages)
    windows, a = [], t0
    for name in ("bins", "tree", "representatives", "recode_write", "verify"):
        b = a + res.seconds.get(name, 0.0)
        windows.append(({"bins": "binning", "recode_write": "write"}.get(name, name), a, b))
        a = b
    by_func: dict = defaultdict(lambda: defaultdict(float))
    by_stage: dict = defaultdict(lambda: defaultdict(float))
    for rec in ts.data:
        prefix = _prefix(rec["key"])
        for ss in rec["startstops"]:
            d = ss["stop"] - ss["start"]
            act = ss["action"]
            by_func[prefix][act] += d
            by_func[prefix]["n"] += act == "compute"
            by_stage[_stage(prefix, ss["start"], windows)][act] += d
    # per-level wall seconds of the tree
    levels = [(t - t0, s, d) for t, s, d, tot in events if s in ("tree", "refine") and tot is None]
    level_wall = [(s, d, round(levels[i + 1][0] - levels[i][0], 3))
                  for i, (t, s, d) in enumerate(levels[:-1])]
    cpu = sum(sampler.cpu.values())
    threads = client.run(_thread_cpu)
    record = {
        "folder": str(folder), "rows": res.n_rows, "groups": res.n_groups,
        "min_class_size": res.min_class_size, "wall_s": wall, "engine_seconds": res.seconds,
        "n_levels": res.n_levels, "cpu_s": cpu, "cpu_s_per_1M": cpu / res.n_rows * 1e6,
        "cpu_by_process": sampler.cpu, "peak_rss_bytes": sampler.peak,
        "loadavg_before": load0, "loadavg_after": load1,
        "by_stage": {k: dict(v) for k, v in by_stage.items()},
        "by_function": {k: dict(v) for k, v in sorted(
            by_func.items(), key=lambda kv: -kv[1].get("compute", 0))},
        "level_wall_s": level_wall,
        "worker_thread_cpu_s": threads,
    }
    print(f"rows {res.n_rows:,}, groups {res.n_groups:,}, smallest {res.min_class_size}; "
          f"wall {wall:.1f} s; CPU {cpu:.1f} s ({record['cpu_s_per_1M']:.2f} s per 1M rows); "
          f"load {' '.join(load0)} -> {' '.join(load1)}")
    print("engine stages (wall s): " + ", ".join(f"{k} {v:.1f}" for k, v in res.seconds.items()))
    print("\n| stage | task compute s | transfer s | (de)serialize s | engine wall s |")
    print("|---|---:|---:|---:|---:|")
    eng = {"binning": "bins", "tree levels": "tree", "representatives": "representatives",
           "write": "recode_write", "verify": "verify"}
    for st in ORDER:
        v = by_stage.get(st)
        if not v:
            continue
        ser = v.get("deserialize", 0) + v.get("serialize", 0) + v.get("disk-read", 0) + v.get(
            "disk-write", 0)
        w = res.seconds.get(eng.get(st, ""), float("nan"))
        print(f"| {st} | {v.get('compute', 0):.1f} | {v.get('transfer', 0):.1f} | {ser:.1f} | "
              f"{w:.1f} |")
    print("\n| task function | tasks | compute s | transfer s |")
    print("|---|---:|---:|---:|")
    for name, v in list(record["by_function"].items())[:25]:
        print(f"| {name} | {int(v.get('n', 0))} | {v.get('compute', 0):.2f} | "
              f"{v.get('transfer', 0):.2f} |")
    print(f"\ntree levels: {len(level_wall)}; wall per level: "
          + ", ".join(f"{w:.1f}" for _, _, w in level_wall))
    print("\nworker CPU s by thread: " + "; ".join(
        f"{w.rsplit(':', 1)[-1]}: " + ", ".join(f"{k} {v:.1f}" for k, v in sorted(d.items()))
        for w, d in threads.items()))
    if args.out:
        Path(args.out).write_text(json.dumps(record, indent=1, default=str) + "\n")
    client.close()


if __name__ == "__main__":
    main()
