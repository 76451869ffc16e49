"""Engine-neutral kernels of one level of the distributed tree (split from
:mod:`anonml.engine._kernels`, step 3 of its list).

A partition's :class:`PartState` holds its bins and class codes and the tree's progress over
its rows. :func:`route` applies the splits decided for the last level; :func:`class_histograms`
counts classes per (node, bin) of the smaller child of each sibling pair ((count, sum of y)
for a regression target); :func:`route_histograms` does both in one task. The sum over the
partitions (:func:`anonml.engine._kernels.sum_arrays`) gives the histograms of
:class:`~anonml.anonymize._hist_tree.HistTree`, so the split search is the same code.
:func:`node_class_counts` counts a frontier's classes, :func:`finish` gives every row its node.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["PartState", "route", "route_histograms", "state_histograms", "finish",
           "class_histograms", "node_class_counts"]


@dataclass
class PartState:
    """What a worker keeps of its partition between levels: bins, class codes (float64 targets
    for a regression guide: every kernel reads the kind from ``y.dtype``), and the tree's
    progress, in narrow integer types (these arrays stay in the workers' memory for the
    whole tree).

    The progress is kept in arrays of the rows still growing, not of every row: ``active``
    (those rows, increasing; None: every row) and ``pos`` (each one's position in the current
    frontier), and, for the rows that stopped, the pieces ``stops`` ((rows, node) pairs, one
    a level) over ``base`` (each row's root). A level then costs the rows still growing:
    copying and scattering an array of every row at every level cost a quarter of a level's
    routing (BENCHMARKS.md, "Session 23"). :attr:`local` and :attr:`leaf` give the arrays of
    every row, when asked."""

    B: np.ndarray
    y: np.ndarray
    #: each row's root (its node while it has not moved), int32; None before :meth:`start`
    base: np.ndarray | None = None
    #: the rows still growing, increasing (None: every row)
    active: np.ndarray | None = None
    #: the frontier position of each row of ``active`` (int32), None before :meth:`start`
    pos: np.ndarray | None = None
    #: (rows, node) of the rows that stopped, a piece a level, in the order they stopped
    stops: tuple = ()
    hist: list | None = None  # a level's class histograms, set by route_histograms
    #: ``B`` (and ``y``) are those of the binned state this one was routed from, which the
    #: worker holds too: not counted again by :meth:`__sizeof__`
    shared: tuple = ()

    @property
    def local(self) -> np.ndarray | None:
        """Each row's position in the current frontier, -1 once its node stopped."""
        if self.pos is None:
            return None
        if self.active is None:
            return self.pos.copy()
        local = np.full(self.y.size, -1, dtype=self.pos.dtype)
        local[self.active] = self.pos
        return local

    @property
    def leaf(self) -> np.ndarray | None:
        """Each row's node: where it stopped, else the root it started from."""
        if self.base is None:
            return None
        leaf = self.base.copy()
        for rows, node in self.stops:
            leaf[rows] = node
        return leaf

    def growing(self) -> tuple[np.ndarray, np.ndarray]:
        """(``active``, ``pos``): the rows still growing, as an index array, and their
        frontier positions."""
        act = self.active
        if act is None:
            act = np.arange(self.B.shape[0], dtype=_index_type(self.B))
        return act, self.pos

    def __sizeof__(self) -> int:
        """Bytes held, arrays included: what Dask's ``sizeof`` (which falls back to
        ``sys.getsizeof``) counts as this object's managed memory; without it a 2M-row state
        (about 42 MB) counted as 56 bytes and the workers' memory looked unmanaged. The
        arrays shared with the binned state (:attr:`shared`) count there only (counted in
        every level's state too, a partition's bins counted twice). A fresh state's positions
        are its roots, the same array: counted once."""
        arrays = [None if "B" in self.shared else self.B, None if "y" in self.shared else self.y,
                  self.base, self.active, None if self.pos is self.base else self.pos,
                  *(a for piece in self.stops for a in piece), *(self.hist or [])]
        return object.__sizeof__(self) + sum(int(a.nbytes) for a in arrays if a is not None)

    def __setstate__(self, state: dict) -> None:
        """Unpickled (spilled, or moved to another worker): its arrays are its own now."""
        self.__dict__.update(state)
        self.shared = ()

    def start(self, init: np.ndarray | None) -> "PartState":
        """A fresh tree over these rows (from root 0, or from roots ``init``)."""
        n = self.y.size
        base = np.zeros(n, dtype=np.int32) if init is None else np.array(init, dtype=np.int32)
        # (every row grows from its root: positions = roots, frontier = the roots in order)
        return PartState(self.B, self.y, base, None, base, shared=("B", "y"))


def _index_type(B: np.ndarray) -> type:
    """The integer type of row indices and flat positions into the bins ``B`` (n x F):
    32 bits where every flat position fits."""
    n, F = B.shape
    return np.int32 if n * max(F, 1) < 2**31 - 1 else np.int64


def route(state: PartState, step: dict | None) -> PartState:
    """Apply the splits decided for the last level.

    ``step`` holds, per position of the last frontier: ``split`` (bool), ``feature``,
    ``threshold``, ``offset`` (tables of :class:`~anonml.anonymize._hist_tree.TreeBuilder`),
    ``flat`` (category masks), ``node`` (node id) and ``child`` (new frontier position of the
    left child), and optionally ``table`` (the level's go-left table, which gives the same
    decisions in fewer passes). Rows of nodes that did not split stop there (``leaf`` = that
    node).

    As the in-memory tree routes (:func:`~anonml.anonymize._hist_tree._route_level`): one
    lookup per row in the level's go-left table when ``step`` holds it (``"table"``, from
    :func:`~anonml.anonymize._hist_tree.left_table`, built once a level by the driver),
    32-bit positions where they fit, and index arrays taken with ``take`` rather
    than boolean masks (the stopped rows found once). Only the rows still growing are read
    and written: nothing of every row is copied (the stopped rows are one more piece of
    ``stops``).
    """
    if step is None:
        return state
    n = state.B.shape[0]
    it = _index_type(state.B)
    act, pos = state.growing()
    sp = step["split"].take(pos)
    stops = state.stops
    if sp.all():
        rows = act
    else:
        gone = np.flatnonzero(~sp)
        stops = stops + ((act.take(gone), step["node"].take(pos.take(gone)).astype(np.int32)),)
        del gone
        kept = np.flatnonzero(sp)
        rows, pos = act.take(kept), pos.take(kept)
        del kept
    del act, sp
    child = np.zeros(0, dtype=np.int32)
    if rows.size:
        at = step["feature"].astype(it).take(pos)  # column f starts at f * n (column-major)
        at *= it(n)
        at += rows
        b = state.B.ravel(order="F").take(at)
        del at
        table = step.get("table")
        if table is not None:  # the row's cell: position * W + bin (below 2**22)
            cell = np.multiply(pos, table.shape[1], dtype=it)
            cell += b
            go_left = table.ravel().take(cell)
            del cell
        else:
            go_left = b.astype(np.int64) <= step["threshold"].take(pos)
            off = step["offset"].take(pos)
            cat = off >= 0
            if cat.any():
                flat = step["flat"]
                go_left = np.where(cat, flat[np.where(cat, off + b, 0)], go_left)
        child = step["child"].astype(np.int32).take(pos)
        child += ~go_left
    return PartState(state.B, state.y, state.base, rows, child, stops, shared=state.shared)


def route_histograms(
    state: PartState, step: dict | None, n_bins: np.ndarray, n_classes: int,
    small_side: np.ndarray | None, n_nodes: int, count: bool = True,
) -> PartState:
    """One task per partition and level: :func:`route` with ``step``, then (``count``) the
    :func:`class_histograms` of the new frontier, kept in the returned state's ``hist`` (read
    by :func:`state_histograms`). The same numbers as the two kernels in turn, with one pass
    over the rows' frontier positions instead of two. For a regression guide the list ends
    with the :func:`node_class_counts` of the new frontier (count, sum, sum of squares): the
    sum of squares, for the purity test, is not in the histograms."""
    new = route(state, step)
    if not count:
        return new
    new.hist = _histograms(new, n_bins, n_classes, small_side, n_nodes)
    if _regression(new):
        new.hist.append(_node_totals(new, n_nodes))
    return new


def state_histograms(state: PartState) -> list[np.ndarray]:
    """The histograms counted by :func:`route_histograms`."""
    return state.hist


def finish(state: PartState, frontier: np.ndarray) -> np.ndarray:
    """Final node of every row, once the growth stopped with ``frontier`` still open."""
    leaf = state.leaf
    act, pos = state.growing()
    leaf[act] = frontier[pos]
    return leaf


def class_histograms(
    state: PartState, n_bins: np.ndarray, n_classes: int, small_side: np.ndarray | None,
    n_nodes: int,
) -> list[np.ndarray]:
    """Per feature, class counts per (node, bin) of this partition's rows, shape
    (n_h, n_bins[f], n_classes), as int32 (int64 past 2**31 rows). For a regression guide (float ``y``) the last axis
    is (count, sum of y), width 2, as the in-memory ``HistTree``'s regression histograms.

    With ``small_side`` (the frontier is sibling pairs 2p, 2p+1): only the rows of the smaller
    child ``2p + small_side[p]`` are counted, at index p. Otherwise every frontier node.
    """
    return _histograms(state, n_bins, n_classes, small_side, n_nodes)


def _histograms(
    state: PartState, n_bins: np.ndarray, n_classes: int, small_side: np.ndarray | None,
    n_nodes: int,
) -> list[np.ndarray]:
    """:func:`class_histograms` over the rows still growing."""
    act, node = state.growing()
    if small_side is not None:
        small = (np.arange(2 * small_side.size) & 1) == np.repeat(small_side, 2)
        keep = np.flatnonzero(small.take(node))
        act, node = act.take(keep), node.take(keep) >> 1
        del keep
        n_h = small_side.size
    else:
        n_h = n_nodes
    y = state.y.take(act)
    out = []
    if _regression(state):
        node = node.astype(np.int64)
        for f, nb in enumerate(np.asarray(n_bins).tolist()):
            idx = node * nb + state.B[:, f].take(act)
            Hc = np.bincount(idx, minlength=n_h * nb).reshape(n_h, nb).astype(np.float64)
            Hs = np.bincount(idx, weights=y, minlength=n_h * nb).reshape(n_h, nb)
            out.append(np.stack([Hc, Hs], axis=2))
        return out
    # (bin, node, class) codes: bin * (n_h * C) + node * C + class, the node-and-class part
    # shared by every feature; each histogram then turned to (node, bin, class) order
    top = n_h * int(np.max(n_bins, initial=1)) * n_classes
    code = np.int32 if top < 2**31 - 1 else np.int64
    hc = np.multiply(node, n_classes, dtype=code)
    hc += y
    del node, y
    # counts of one partition in 32 bits (half the bytes to hold and send of float64; the
    # reduction adds them in 64 bits, sum_arrays)
    ctype = np.int32 if act.size < 2**31 else np.int64
    for f, nb in enumerate(np.asarray(n_bins).tolist()):
        idx = np.multiply(state.B[:, f].take(act), n_h * n_classes, dtype=code)
        idx += hc
        H = np.bincount(idx, minlength=nb * n_h * n_classes).reshape(nb, n_h, n_classes)
        del idx
        out.append(np.ascontiguousarray(H.transpose(1, 0, 2), dtype=ctype))
    return out


def _regression(state: PartState) -> bool:
    return state.y.dtype.kind == "f"


def _node_totals(state: PartState, n_nodes: int) -> np.ndarray:
    """Count, sum and sum of squares of the float targets per frontier node, (n_nodes, 3)."""
    act, node = state.growing()
    node = node.astype(np.int64)
    y = state.y[act]
    return np.column_stack([np.bincount(node, minlength=n_nodes).astype(np.float64),
                            np.bincount(node, weights=y, minlength=n_nodes),
                            np.bincount(node, weights=y * y, minlength=n_nodes)])


def node_class_counts(state: PartState, n_nodes: int, n_classes: int) -> np.ndarray:
    """Class counts per frontier node, shape (n_nodes, n_classes); for a regression guide the
    count, sum and sum of squares of the targets, shape (n_nodes, 3)."""
    if _regression(state):
        return _node_totals(state, n_nodes)
    act, node = state.growing()
    T = np.bincount(node.astype(np.int64) * n_classes + state.y[act],
                    minlength=n_nodes * n_classes)
    return T.reshape(n_nodes, n_classes).astype(np.float64)
