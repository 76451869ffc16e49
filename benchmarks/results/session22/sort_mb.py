"""Microbenchmark (session 22, see BENCHMARKS.md): python sort_mb.py ROWS [GROUPS]."""
import numpy as np, time, sys
sys.path.insert(0, 'src')
from anonml.anonymize._medians import group_order
m=int(float(sys.argv[1])); G=118000
rng=np.random.default_rng(0)
g=np.sort(rng.integers(0,G,m)); rng.shuffle(g)
v=rng.normal(size=m).round(3)
def lex(): return np.lexsort((v,g))
def two():
    o=np.argsort(v)
    return o.take(group_order(g.take(o),G))
def packed():
    # v rank among distinct values then int64 key
    u,inv=np.unique(v,return_inverse=True)
    key=g.astype(np.int64)*len(u)+inv
    return np.argsort(key)
for f in [lex,two,packed,lex,two,packed]:
    t=time.process_time(); r=f(); print(f.__name__, round(time.process_time()-t,3))
a=lex(); b=two()
print((g[a]==g[b]).all() and (v[a]==v[b]).all())
