#!/bin/bash
# The runner of sessions 20 and 21's slots: one at a time under flock /tmp/anonml-bench.lock,
# the load average logged before each, from exports of the code in $EXPORTS/<version>
# (default /tmp/s20; session 21: EXPORTS=/tmp/s21/x).
# usage: TAG=x [EXPORTS=dir] runner.sh bench|prof LOG version:size ...   (size: 10M or 100M)
. /work/venv/bin/activate
mode=$1; log=$(realpath -m "$2"); shift 2  # absolute: the slots run in the exports
root=${EXPORTS:-/tmp/s20}
i=0
for slot in "$@"; do
  i=$((i+1)); v=${slot%%:*}; n=${slot##*:}; out=$root/${TAG}_${i}_${v}_${n}
  (
  flock 9
  echo "$(date -u +%H:%M:%S) slot $i $v $n load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$log"
  cd $root/$v || exit 1
  if [ "$mode" = prof ]; then
    PYTHONPATH=src python benchmarks/profile_dask_stages.py /work/bigdata/adult_$n --out $out.json > $out.txt 2>&1
  else
    PYTHONPATH=src python benchmarks/bench_dask_scale.py --sizes $n --memory-at --data /work/bigdata --out $out.json > $out.txt 2>&1
  fi
  echo "$(date -u +%H:%M:%S) done $i rc=$? $(grep -o '"cpu_s_per_1M": [0-9.]*' $out.json | tail -1)" >> "$log"
  ) 9>/tmp/anonml-bench.lock
done
