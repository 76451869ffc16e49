"""Microbenchmark (session 22, see BENCHMARKS.md): python go_mb.py ROWS [GROUPS]."""
import numpy as np, time, sys
sys.path.insert(0, 'src')
from anonml.anonymize._medians import group_order
n=int(float(sys.argv[1])); G=int(float(sys.argv[2]))
rng=np.random.default_rng(0)
groups=rng.integers(0,G,n).astype(np.int32)
def cur(): return group_order(groups,G)
def three():
    order = np.argsort((groups & 0xFFFF).astype(np.uint16), kind="stable")
    high = (groups >> 16).astype(np.uint8).take(order)
    return order.take(np.argsort(high, kind="stable"))
def three_b():
    order = np.argsort((groups & 0xFF).astype(np.uint8), kind="stable")
    high = (groups >> 8).astype(np.uint16).take(order)
    return order.take(np.argsort(high, kind="stable"))
for f in [cur,three,three_b,cur,three,three_b]:
    t=time.process_time(); r=f(); print(f.__name__, round((time.process_time()-t)/(n/1e6)*1e3,1))
print((cur()==three()).all(), (cur()==three_b()).all())
