#!/bin/bash
# usage: prof_tag.sh LOG ver:size ...
. /work/venv/bin/activate
log=$1; shift
i=0
for slot in "$@"; do
  i=$((i+1)); v=${slot%%:*}; n=${slot##*:}
  (
  flock 9
  echo "$(date -u +%H:%M:%S) prof $i $v $n load $(cut -d' ' -f1-3 /proc/loadavg)" >> $log
  cd /tmp/s20/$v && PYTHONPATH=src python benchmarks/profile_dask_stages.py /work/bigdata/adult_$n --out /tmp/s20/${TAG}_${i}_${v}_${n}.json > /tmp/s20/${TAG}_${i}_${v}_${n}.txt 2>&1
  echo "$(date -u +%H:%M:%S) done $i rc=$? $(grep -o '[0-9.]* s per 1M rows' /tmp/s20/${TAG}_${i}_${v}_${n}.txt | head -1)" >> $log
  ) 9>/tmp/anonml-bench.lock
done
