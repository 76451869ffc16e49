"""Helper of ``lp_dask.py``: the level task, wrapped so that its line profile is taken in the
worker thread that runs it (a module of its own, so that Dask pickles the wrapper by name).
Works with the code before session 23 (the level kernels in ``anonml.engine._kernels``) and
after (``anonml.engine._levels``)."""
import time

from line_profiler import LineProfiler

try:
    import anonml.engine._levels as M
except ImportError:  # before session 23
    import anonml.engine._kernels as M

lp = LineProfiler()
# (the routing is ``_route`` before session 23's last commit, ``route`` after it)
for f in [getattr(M, "_route", M.route), M._histograms]:
    lp.add_function(f)
stats = []  # (rows of the partition, rows still growing after the level, frontier nodes, s)
_orig = M.route_histograms


def route_histograms(state, step, *a, **kw):
    t = time.perf_counter()
    lp.enable_by_count()  # (line_profiler traces the thread that enables it)
    try:
        out = _orig(state, step, *a, **kw)
    finally:
        lp.disable_by_count()
    grown = out.active.size if out.active is not None else state.y.size
    stats.append((state.y.size, grown, a[-1], time.perf_counter() - t))
    return out


M.route_histograms = route_histograms
