#!/bin/bash
. /work/venv/bin/activate
(
flock 9
echo "$(date -u +%H:%M:%S) identity bucket2 load $(cut -d' ' -f1-3 /proc/loadavg)" >> /tmp/s20/ab.log
cd /tmp/s20/bucket2 && PYTHONPATH=src python benchmarks/check_dask_output_identity.py /tmp/s16/cmp/adult_300000 /tmp/s20/identity > /tmp/s20/identity.txt 2>&1
echo "$(date -u +%H:%M:%S) identity done rc=$?" >> /tmp/s20/ab.log
) 9>/tmp/anonml-bench.lock
TAG=c /tmp/s20/ab_tag.sh /tmp/s20/ab.log bucket2:10M bucket2:100M base:100M bucket2:10M
