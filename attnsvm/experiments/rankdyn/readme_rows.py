"""What experiment ``rankdyn`` publishes (its entry's ``published()``): its sweep's row of the
README experiment table and its headline row, from docs/results/rankdyn_table.csv."""

from __future__ import annotations

from attnsvm.results.published import Published, joined, num

_RUNS = (("kq", "ngd", "(K,Q) ngd"), ("kq", "gd", "(K,Q) gd"), ("w", "ngd", "W ngd"))


def _row(rows: list[dict]) -> str:
    """At the smallest alpha, per shape: mean stages (rises of the effective rank), the share
    of seeds whose final rank is the nuclear SVM's, and the median corr with that SVM."""
    alpha = min(num(r, "rankdyn.alpha") for r in rows)
    at = {
        ((r["n"], r["T"], r["d"]), r["rankdyn.parameterization"], r["rankdyn.rule"]): r
        for r in rows
        if num(r, "rankdyn.alpha") == alpha
    }
    parts = []
    for shape in sorted({k[0] for k in at}, key=lambda s: tuple(map(int, s))):
        cells = [
            f"{label} {num(r, 'n_stages_mean'):.2f}, {num(r, 'share_rank_match'):.0%}, "
            f"{num(r, 'corr_nuc_median'):.3f}"
            for param, rule, label in _RUNS
            if (r := at.get((shape, param, rule))) is not None
        ]
        parts.append(f"({','.join(shape)}): {'; '.join(cells)}")
    seeds = joined(r["seeds"] for r in rows)
    return (
        f"| rankdyn from α = {alpha:g} ({seeds} seeds): mean stages, share of seeds ending at "
        f"the rank of W^mm_⋆, median corr(KQᵀ, W^mm_⋆) | {' — '.join(parts)} |"
    )


SWEEPS = [
    Published(
        "rankdyn",
        "rankdyn: how the rank of K Qᵀ is learned from a small initialization (α = 1e-4..1, "
        "gd and ngd, (K,Q) vs the merged W)",
        (("(6,8,10)", "rankdyn_time_6_8_10.png"), ("(10,12,16)", "rankdyn_time_10_12_16.png")),
        ("rankdyn_table.csv", _row),
    ),
]
