"""Microbenchmark (session 22, see BENCHMARKS.md): the group order of ROWS rows in GROUPS groups, by the current two 16-bit radix passes and by alternatives. python go_mb.py ROWS GROUPS."""
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
def msd():
    H = ((G - 1) >> 16) + 1
    high = (groups >> 16).astype(np.uint16)
    parts = []
    for h in range(H):
        idx = np.flatnonzero(high == h)
        low = groups.take(idx).astype(np.uint16)
        parts.append(idx.take(np.argsort(low, kind="stable")))
    return np.concatenate(parts)
def msd2():
    H = ((G - 1) >> 16) + 1
    hi_order = np.argsort((groups >> 16).astype(np.uint16), kind="stable")  # radix; 
    cnt = np.bincount(groups >> 16, minlength=H)
    low = groups.take(hi_order).astype(np.uint16)
    out = np.empty(n, dtype=np.int64); s = 0
    for h in range(H):
        e = s + cnt[h]
        out[s:e] = hi_order[s:e].take(np.argsort(low[s:e], kind="stable"))
        s = e
    return out
for f in [cur,three,three_b,msd,msd2,cur,three,three_b,msd,msd2]:
    t=time.process_time(); r=f(); print(f.__name__, round((time.process_time()-t)/(n/1e6)*1e3,1))
print(all((cur()==f()).all() for f in [three,three_b,msd,msd2]))
