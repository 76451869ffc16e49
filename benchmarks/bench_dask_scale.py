"""Scale of the Dask engine (issue 12): 10M, 30M and 100M rows of Adult on a LocalCluster.

Accuracy-guided anonymization (k=100, the 12 quasi-identifiers of Adult, the true ``income``
labels as the guide) with :func:`anonml.dask.anonymize_dataset`, on the partitioned Parquet
datasets written by ``benchmarks/make_big_adult.py``, on a ``LocalCluster`` of 2 worker
processes x 4 GB, one thread each (this machine has 2 cores). For every size it records

* wall seconds of each stage (the engine's ``seconds``: bins, tree, representatives,
  recode_write, verify) and in all;
* CPU seconds of the client and the workers together (``psutil``, user + system) and per
  million rows;
* peak RSS of each worker and of the client (sampled by a thread every 0.2 s with ``psutil``),
  and the peak bytes each worker held spilled to disk (Dask's spill buffer, every 2 s), with
  the timeline of each worker's managed memory, spilled bytes, resident memory, glibc heap
  (in use, free, mmapped: ``mallinfo2``) and Arrow pool bytes, and the start of each stage;
* the verified result: rows, groups, smallest class (the engine re-counts the written table).

At 10M rows the in-memory path (``AccuracyGuidedAnonymizer(tree="hist")``, in a subprocess:
read the same Parquet folder, ``fit_transform``, write Parquet) runs in the same invocation,
for the ratio of wall times.

Usage::

    python benchmarks/make_big_adult.py /work/bigdata           # once: the data
    python benchmarks/bench_dask_scale.py                        # 10M, 30M, 100M + in-memory 10M
    python benchmarks/bench_dask_scale.py --sizes 10M --memory-at 10M

Writes benchmarks/results/dask_scale.json and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
QI = ["age", "workclass", "education-num", "marital-status", "occupation", "relationship",
      "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country"]
LABEL = "income"
STAGES = ("bins", "tree", "representatives", "recode_write", "verify")


class Sampler(threading.Thread):
    """Peak RSS and CPU seconds of a set of processes, sampled every ``every`` seconds; also
    each process's system CPU seconds and the bytes it read and wrote through system calls
    (``io_counters``: a worker's spill to disk and back, besides its reading of the files)."""

    def __init__(self, pids: dict[str, int], every: float = 0.2):
        super().__init__(daemon=True)
        import psutil

        self.procs = {name: psutil.Process(pid) for name, pid in pids.items()}
        self.peak = {name: 0 for name in pids}
        self.cpu0 = {name: self._cpu(p) for name, p in self.procs.items()}  # (total, system)
        self.cpu = dict.fromkeys(pids, 0.0)
        self.sys = dict.fromkeys(pids, 0.0)
        self.io0 = {name: self._io(p) for name, p in self.procs.items()}
        self.io = {name: (0, 0) for name in pids}
        self.every = every
        self._halt = threading.Event()

    @staticmethod
    def _cpu(p) -> tuple[float, float]:
        """(CPU seconds with its children's, its own system CPU seconds), from one
        ``cpu_times``."""
        try:
            t = p.cpu_times()
            return t.user + t.system + t.children_user + t.children_system, t.system
        except Exception:  # noqa: BLE001 - a process that ended
            return float("nan"), float("nan")

    @staticmethod
    def _io(p) -> tuple[int, int]:
        """(bytes read, bytes written) through system calls so far; zeros where unknown."""
        try:
            c = p.io_counters()
            return int(c.read_chars), int(c.write_chars)
        except Exception:  # noqa: BLE001 - no /proc/<pid>/io (not Linux), or ended
            return 0, 0

    def _sample(self) -> None:
        for name, p in self.procs.items():
            try:
                self.peak[name] = max(self.peak[name], p.memory_info().rss)
                total, system = self._cpu(p)
                self.cpu[name] = total - self.cpu0[name][0]
                self.sys[name] = system - self.cpu0[name][1]
                r, w = self._io(p)
                if r or w:
                    self.io[name] = (r - self.io0[name][0], w - self.io0[name][1])
            except Exception:  # noqa: BLE001 - a worker restarted: keep what was seen
                pass

    def run(self) -> None:
        while not self._halt.is_set():
            self._sample()
            self._halt.wait(self.every)

    def stop(self) -> None:
        self._sample()
        self._halt.set()
        self.join()


def _spilled(dask_worker) -> int:
    """Bytes this worker has spilled to disk now (Dask's SpillBuffer; 0 if it has none)."""
    try:
        return int(dask_worker.data.spilled_total.disk)
    except AttributeError:
        return 0


def _heap() -> tuple[int, int, int]:
    """glibc's heap now (``mallinfo2``): (bytes in use from its arenas, free bytes it keeps
    in them, bytes of its mmapped blocks); zeros without glibc (or one older than 2.33)."""
    import ctypes

    from anonml._utils import _glibc

    f = _glibc("mallinfo2")
    if not f:
        return 0, 0, 0

    class _Mallinfo2(ctypes.Structure):
        _fields_ = [(n, ctypes.c_size_t) for n in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
            "uordblks", "fordblks", "keepcost")]

    f.restype = _Mallinfo2
    m = f()
    return int(m.uordblks), int(m.fordblks), int(m.hblkhd)


def _held(dask_worker) -> tuple:
    """(bytes of managed data in memory, bytes spilled to disk, resident bytes of the
    process, glibc heap in use, glibc heap free, glibc mmapped, Arrow's pool in use) on this
    worker now: resident minus managed is what Dask calls unmanaged."""
    import psutil

    try:
        fast = int(dask_worker.data.fast.total_weight)
    except AttributeError:
        fast = 0
    try:
        import pyarrow as pa

        arrow = int(pa.total_allocated_bytes())
    except ImportError:
        arrow = 0
    return (fast, _spilled(dask_worker), int(psutil.Process().memory_info().rss), *_heap(),
            arrow)


class SpillSampler(threading.Thread):
    """Each worker's memory (:func:`_held`: managed, spilled, resident, glibc's heap, Arrow's
    pool), asked every ``every`` seconds: the samples (``timeline``) and each worker's peak
    spilled bytes (``peak``)."""

    def __init__(self, client, every: float = 2.0):
        super().__init__(daemon=True)
        self.client, self.every = client, every
        self.peak: dict[str, int] = {}
        #: (seconds since start, {worker: _held's tuple}) per sample
        self.timeline: list[tuple[float, dict]] = []
        self._halt = threading.Event()
        self._t0 = time.perf_counter()

    def run(self) -> None:
        while not self._halt.is_set():
            try:
                held = self.client.run(_held)
                self.timeline.append((time.perf_counter() - self._t0, held))
                for addr, h in held.items():
                    self.peak[addr] = max(self.peak.get(addr, 0), h[1])
            except Exception:  # noqa: BLE001 - a worker restarting: the next sample counts
                pass
            self._halt.wait(self.every)

    def stop(self) -> None:
        self._halt.set()
        self.join()


def _stage_starts(stages: list) -> list[tuple[float, str]]:
    """When each progress stage began (seconds since the run's start)."""
    out: list[tuple[float, str]] = []
    for t, stage, _, _ in stages:
        if not out or out[-1][1] != stage:
            out.append((round(t, 1), stage))
    return out


def run_dask(folder: Path, n_rows: int, workers: int, memory: str, k: int,
             verbose: bool = False) -> dict:
    import logging

    from anonml.dask import anonymize_dataset, local_cluster

    client = local_cluster(n_workers=workers, memory_limit=memory, threads_per_worker=1)
    logging.getLogger("distributed").setLevel(logging.ERROR)  # after distributed's own setup
    out_root = Path(tempfile.mkdtemp(prefix="anonml_dask_bench_", dir=folder.parent))
    target = out_root / "out"
    try:
        pids = {"client": os.getpid()}
        for addr, pid in client.run(os.getpid).items():
            pids[f"worker {len(pids)}"] = pid
        sampler = Sampler(pids)
        sampler.start()
        spill = SpillSampler(client)
        spill.start()
        stages: list[tuple[float, str, int, int | None]] = []
        t0 = time.perf_counter()

        def progress(stage: str, done: int, total: int | None) -> None:
            stages.append((time.perf_counter() - t0, stage, done, total))
            if verbose:  # a live trace: how far a long run got, and its memory so far
                peaks = ", ".join(f"{k} {v / 1e9:.2f}" for k, v in sampler.peak.items())
                now = spill.timeline[-1][1] if spill.timeline else {}  # the last sample
                held = ", ".join(f"{m / 1e9:.2f}/{d / 1e9:.2f}" for m, d in now.values())
                print(f"  [{stages[-1][0]:7.1f} s] {stage} {done}/{total}; peak RSS GB: {peaks}; "
                      f"managed in memory/spilled GB per worker: {held}",
                      file=sys.stderr, flush=True)

        res = anonymize_dataset(str(folder), target, k=k, quasi_identifiers=QI,
                                method="ag", label=LABEL, client=client,
                                progress=progress)
        wall = time.perf_counter() - t0
        sampler.stop()
        spill.stop()
        try:  # how often anonml's heap-trimming plugin trimmed on each worker (local_cluster)
            trims = client.run(lambda dask_worker: getattr(
                dask_worker.plugins.get("anonml-heap-trim"), "trims", None))
            freed = client.run(lambda dask_worker: getattr(
                dask_worker.plugins.get("anonml-heap-trim"), "freed", None))
        except Exception:  # noqa: BLE001 - an older anonml without the plugin
            trims, freed = {}, {}
        cpu = sum(v for v in sampler.cpu.values())
        files = sorted(target.rglob("*.parquet"))
        return {
            "engine": "dask", "rows": int(res.n_rows), "rows_expected": n_rows,
            "groups": int(res.n_groups), "min_class_size": int(res.min_class_size),
            "verified": bool(res.min_class_size >= k and res.n_rows == n_rows),
            "wall_s": wall, "stage_s": {s: float(v) for s, v in dict(res.seconds).items()},
            "cpu_s": cpu, "cpu_s_per_1M": cpu / n_rows * 1e6,
            "cpu_s_by_process": sampler.cpu, "system_cpu_s_by_process": sampler.sys,
            "io_bytes_read_written_by_process": sampler.io, "peak_rss_bytes": sampler.peak,
            "peak_spilled_bytes": spill.peak,
            "held_timeline": [(round(t, 1), list(h.values())) for t, h in spill.timeline],
            "stage_starts": _stage_starts(stages),
            "output_files": len(files), "output_bytes": sum(f.stat().st_size for f in files),
            "progress_events": len(stages), "heap_trims": list(trims.values()),
            "heap_trim_freed_bytes": list(freed.values()),
        }
    finally:
        cluster = client.cluster
        client.close()
        cluster.close()
        shutil.rmtree(out_root, ignore_errors=True)


def run_memory_child(folder: str, k: int) -> dict:
    """In-memory path on the same data: read, fit_transform, write (in this process)."""
    import pandas as pd

    from anonml import AccuracyGuidedAnonymizer

    def cpu() -> float:
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime

    c0, t0 = cpu(), time.perf_counter()
    frame = pd.read_parquet(folder)
    t_read = time.perf_counter()
    y = frame.pop(LABEL)
    ag = AccuracyGuidedAnonymizer(k=k, quasi_identifiers=QI, tree="hist", random_state=0)
    out = ag.fit_transform(frame, y)
    t_fit = time.perf_counter()
    out[LABEL] = y
    with tempfile.TemporaryDirectory(dir=Path(folder).parent) as tmp:
        out.to_parquet(Path(tmp) / "out.parquet")
    t_write = time.perf_counter()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {"engine": "memory", "rows": len(frame), "groups": int(ag.n_groups_),
            "min_class_size": int(ag.min_class_size_), "wall_s": t_write - t0,
            "read_s": t_read - t0, "fit_s": t_fit - t_read, "write_s": t_write - t_fit,
            "cpu_s": cpu() - c0, "cpu_s_per_1M": (cpu() - c0) / len(frame) * 1e6,
            "peak_rss_bytes": peak, "steps": {s: float(v) for s, v in ag.timings_.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="/work/bigdata", help="folder of make_big_adult.py")
    parser.add_argument("--sizes", nargs="+", default=["10M", "30M", "100M"])
    parser.add_argument("--memory-at", nargs="*", default=["10M"],
                        help="sizes at which the in-memory path runs too")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--worker-memory", default="4GB")
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--out", default=str(HERE / "results" / "dask_scale.json"))
    parser.add_argument("--verbose", action="store_true",
                        help="print every progress event with the peaks so far (stderr)")
    parser.add_argument("--memory-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_child:
        print(json.dumps(run_memory_child(args.memory_child, args.k)))
        return

    import dask
    import numpy as np
    import pandas as pd

    record = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                          "numpy": np.__version__, "pandas": pd.__version__,
                          "dask": dask.__version__},
              "workers": args.workers, "worker_memory": args.worker_memory, "k": args.k,
              "runs": []}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    print("| engine | rows | wall s | " + " | ".join(STAGES) + " | CPU s per 1M rows | "
          "peak RSS per worker GB | spilled to disk, peak per worker GB | client peak GB | "
          "groups | smallest class |")
    print("|---|---:|---:|" + "---:|" * len(STAGES) + "---:|---:|---:|---:|---:|---:|")
    for text in args.sizes:
        folder = Path(args.data) / f"adult_{text}"
        if not folder.is_dir():
            raise SystemExit(f"error: {folder} is missing; run benchmarks/make_big_adult.py "
                             f"{args.data} --sizes {text}")
        n = int(float(text.rstrip("M")) * 1_000_000)
        if text in args.memory_at:
            env = dict(os.environ)
            proc = subprocess.run([sys.executable, __file__, "--memory-child", str(folder),
                                   "--k", str(args.k)], env=env, capture_output=True, text=True)
            if proc.returncode:
                print(f"| memory | {n:,} | failed: {proc.stderr.strip().splitlines()[-1]} |")
            else:
                r = json.loads(proc.stdout.strip().splitlines()[-1])
                record["runs"].append(r)
                print(f"| memory (read {r['read_s']:.0f} s, fit {r['fit_s']:.0f} s, write "
                      f"{r['write_s']:.0f} s) | {n:,} | {r['wall_s']:.1f} | " + " | ".join(
                          "-" for _ in STAGES) + f" | {r['cpu_s_per_1M']:.2f} | "
                      f"{r['peak_rss_bytes'] / 1e9:.2f} (one process) | - | - | {r['groups']} | "
                      f"{r['min_class_size']} |", flush=True)
        try:
            r = run_dask(folder, n, args.workers, args.worker_memory, args.k, args.verbose)
        except Exception as exc:  # noqa: BLE001 - recorded, and the next size still runs
            print(f"| dask | {n:,} | failed: {type(exc).__name__}: {str(exc)[:200]} |", flush=True)
            record["runs"].append({"engine": "dask", "rows": n, "error": repr(exc)[:2000]})
            out.write_text(json.dumps(record, indent=1) + "\n")
            continue
        record["runs"].append(r)
        workers = [v for name, v in r["peak_rss_bytes"].items() if name != "client"]
        print(f"| dask | {n:,} | {r['wall_s']:.1f} | " + " | ".join(
            f"{r['stage_s'].get(s, float('nan')):.1f}" for s in STAGES) +
            f" | {r['cpu_s_per_1M']:.2f} | {', '.join(f'{w / 1e9:.2f}' for w in workers)} | "
            f"{', '.join(f'{w / 1e9:.2f}' for w in r['peak_spilled_bytes'].values()) or '-'} | "
            f"{r['peak_rss_bytes']['client'] / 1e9:.2f} | {r['groups']} | "
            f"{r['min_class_size']} |", flush=True)
        io = r["io_bytes_read_written_by_process"]
        print("  per process: system CPU s / GB read / GB written through system calls: " +
              "; ".join(f"{name} {r['system_cpu_s_by_process'][name]:.1f} / {io[name][0] / 1e9:.1f}"
                        f" / {io[name][1] / 1e9:.1f}" for name in io), flush=True)
        out.write_text(json.dumps(record, indent=1) + "\n")
    by = {(r["engine"], r["rows"]): r for r in record["runs"] if "error" not in r}
    for (engine, n), r in sorted(by.items()):
        if engine == "memory" and ("dask", n) in by:
            ratio = by[("dask", n)]["wall_s"] / r["wall_s"]
            record.setdefault("ratios", {})[f"dask_over_memory_wall_{n}"] = ratio
            print(f"\nat {n:,} rows: Dask wall / in-memory wall (read + fit + write) = {ratio:.2f}")
    dask_runs = sorted((n, r) for (e, n), r in by.items() if e == "dask")
    if len(dask_runs) > 1:
        (n0, a), (n1, b) = dask_runs[0], dask_runs[-1]
        ratio = b["cpu_s_per_1M"] / a["cpu_s_per_1M"]
        record.setdefault("ratios", {})["cpu_per_row_growth"] = ratio
        print(f"Dask CPU s per 1M rows at {n1:,} / at {n0:,} = {ratio:.2f}")
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
