#!/bin/bash
# usage: ab.sh LOG  slot1 slot2 ... ; slot = version:size
. /work/venv/bin/activate
log=$1; shift
i=0
for slot in "$@"; do
  i=$((i+1)); v=${slot%%:*}; n=${slot##*:}
  (
  flock 9
  echo "$(date -u +%H:%M:%S) slot $i $v $n load $(cut -d' ' -f1-3 /proc/loadavg)" >> $log
  cd /tmp/s20/$v && PYTHONPATH=src python benchmarks/bench_dask_scale.py --sizes $n --memory-at --data /work/bigdata --out /tmp/s20/${TAG}_${i}_${v}_${n}.json > /tmp/s20/${TAG}_${i}_${v}_${n}.txt 2>&1
  echo "$(date -u +%H:%M:%S) done $i rc=$? $(grep -o '"cpu_s_per_1M": [0-9.]*' /tmp/s20/${TAG}_${i}_${v}_${n}.json | tail -1)" >> $log
  ) 9>/tmp/anonml-bench.lock
done
