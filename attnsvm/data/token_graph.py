"""The token-priority graphs G^(k) of next-token data and their strongly connected components:
a property of the data (whether an instance is cyclic is a draw's acceptance rule), read by the
graph-SVM (attnsvm/svm/graph.py), which sits above the data.

One instance: ``ids`` (n, T) of distinct vocabulary ids per sequence, the query its last token,
and ``src`` (n, T) the source positions (the label's for the global graph, GD's selections for
the local one). G^(k) has an edge c -> j from each source id c of a sequence ending in k to
every other id j of that sequence; SCCs by ``scipy.sparse.csgraph`` (no recursion).
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components


def edges(ids: np.ndarray, src: np.ndarray):
    """(i, t, u) of every edge ids[i, t] -> ids[i, u]: t a source position, u any other one."""
    T = ids.shape[1]
    i, t, u = np.nonzero(src[:, :, None] & ~np.eye(T, dtype=bool)[None])
    return i, t, u


def scc_table(ids: np.ndarray, src: np.ndarray, K: int) -> np.ndarray:
    """SCC label (K, K) of vocabulary id j in G^(k), row k; a last token that ends no sequence
    gets the edgeless graph (every id its own SCC)."""
    i, t, u = edges(ids, src)
    last = ids[:, -1]
    out = np.tile(np.arange(K), (K, 1))
    for k in np.unique(last):
        on = last[i] == k
        adj = coo_matrix((np.ones(on.sum()), (ids[i[on], t[on]], ids[i[on], u[on]])), (K, K))
        out[k] = connected_components(adj, directed=True, connection="strong")[1]
    return out


def is_cyclic(scc: np.ndarray, last: np.ndarray) -> bool:
    """Some G^(k) of an occurring last token k has an SCC of two or more ids."""
    return any(np.bincount(scc[k]).max() >= 2 for k in np.unique(last))


def scc_text(scc: np.ndarray, last: np.ndarray) -> str:
    """Readable SCCs of the occurring last tokens, e.g. ``0:{1,3}{2}{4}{5}{0}``."""
    parts = []
    for k in np.unique(last):
        groups = {}
        for j, c in enumerate(scc[k]):
            groups.setdefault(c, []).append(j)
        parts.append(f"{k}:" + "".join("{" + ",".join(map(str, g)) + "}" for g in groups.values()))
    return " ".join(parts)
