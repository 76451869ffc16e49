"""Microbenchmark (session 22, see BENCHMARKS.md): python gather_mb.py ROWS [GROUPS]."""
import numpy as np, time, sys
n=int(float(sys.argv[1])); c=6
rng=np.random.default_rng(0)
groups=rng.integers(0,n//170,n)
order=np.argsort(groups,kind='stable')
cols=[rng.integers(0,200,n).astype(np.uint8) for _ in range(c)]
def sep():
    return [b.take(order) for b in cols]
def packed():
    P=np.empty((n,c),dtype=np.uint8)
    for j,b in enumerate(cols): P[:,j]=b
    Pv=P.view(np.dtype((np.void,c))).ravel()
    Pg=np.empty((n,c),dtype=np.uint8)
    Pgv=Pg.view(np.dtype((np.void,c))).ravel()
    B=1<<20
    for s in range(0,n,B):
        Pgv[s:s+B]=Pv.take(order[s:s+B])
    return Pg
def packed8():
    P=np.zeros((n,8),dtype=np.uint8)
    for j,b in enumerate(cols): P[:,j]=b
    Pv=P.view(np.uint64).ravel()
    Pg=Pv.take(order).view(np.uint8).reshape(n,8)
    return Pg
for f in [sep,packed,packed8,sep,packed,packed8]:
    t=time.process_time(); f(); print(f.__name__, round((time.process_time()-t)/(n/1e6)*1e3,1),'ms/1M')
