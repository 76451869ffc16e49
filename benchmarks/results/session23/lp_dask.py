"""Line profile of the Dask engine's level task (``route_histograms``: its routing and
``_histograms``) in one process: a LocalCluster with processes=False, 1 worker, 1 thread, AG
k=100 on Adult's 12 QI with ``income`` as the guide (as bench_dask_scale.py), in ms.

Usage: PYTHONPATH=src python benchmarks/results/session23/lp_dask.py DATA_FOLDER > out.txt
(session 23: ``lp_dask_10M_before.txt`` on an export of 4c776e3, ``lp_dask_10M_after.txt``)
"""
import logging
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import lp_dask_wrap as W  # noqa: E402  (patches the level task before the engine runs)

from distributed import Client, LocalCluster  # noqa: E402

from anonml.dask import anonymize_dataset  # noqa: E402

QI = ["age", "workclass", "education-num", "marital-status", "occupation", "relationship",
      "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country"]

if __name__ == "__main__":
    data = Path(sys.argv[1])
    client = Client(LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                 memory_limit="16GB"))
    logging.getLogger("distributed").setLevel(logging.ERROR)
    tmp = Path(tempfile.mkdtemp(dir=data.parent))
    try:
        t = time.process_time()
        anonymize_dataset(str(data), tmp / "out", k=100, quasi_identifiers=QI, method="ag",
                          label="income", client=client)
        print("process CPU s", round(time.process_time() - t, 2))
        print("level tasks", len(W.stats), "their wall s (profiled)",
              round(sum(s[3] for s in W.stats), 2))
        print("rows routed (sum over tasks of the partition's rows)",
              sum(s[0] for s in W.stats), "rows still growing after them",
              sum(s[1] for s in W.stats))
        W.lp.print_stats(output_unit=1e-3, stripzeros=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        client.close()
