"""What experiment ``nexttoken`` publishes (its entry's ``published()``): its sweeps' rows of
the README experiment table (its numbers are in docs/nexttoken.md)."""

from __future__ import annotations

from attnsvm.results.published import Published

SWEEPS = [
    Published(
        "nexttoken_global",
        "nexttoken, global notebook: nll, the 10 published instances (n=6, T=4, K=6, d=8); W vs "
        "the graph-SVM, (K,Q) vs the nuclear one",
        (("curves", "nexttoken_global_curves.png"),),
    ),
    Published(
        "nexttoken_local",
        "nexttoken, local notebook: lsq2, the 10 published instances; GD vs the local graph-SVM",
        (("curves", "nexttoken_local_curves.png"),),
    ),
    Published(
        "nexttoken_d",
        "nexttoken over d (2–32), cyclic and acyclic, 100 instances per point",
        (("d sweep", "nexttoken_d.png"),),
    ),
    Published(
        "nexttoken_K",
        "nexttoken over K (4–16) at d=8, cyclic and acyclic, 100 instances per point",
        (("K sweep", "nexttoken_K.png"),),
    ),
]
