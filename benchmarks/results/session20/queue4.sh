#!/bin/bash
. /work/venv/bin/activate
(
flock 9
echo "$(date -u +%H:%M:%S) identity bucket3 load $(cut -d' ' -f1-3 /proc/loadavg)" >> /tmp/s20/ab.log
cd /tmp/s20/bucket3 && PYTHONPATH=src python benchmarks/check_dask_output_identity.py /tmp/s16/cmp/adult_300000 /tmp/s20/identity3 > /tmp/s20/identity3.txt 2>&1
echo "$(date -u +%H:%M:%S) identity done rc=$?" >> /tmp/s20/ab.log
) 9>/tmp/anonml-bench.lock
TAG=d /tmp/s20/ab_tag.sh /tmp/s20/ab.log bucket3:10M bucket3:100M bucket2:100M bucket3:10M
TAG=r /tmp/s20/prof_tag.sh /tmp/s20/prof.log bucket3:100M
