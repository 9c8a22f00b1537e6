"""What experiment ``gd`` publishes (its entry's ``published()``): its sweeps' rows of the
README experiment table and the headline rows rendered from their tables in docs/results/."""

from __future__ import annotations

from attnsvm.results.published import Published, joined, num, ranges

from .examples.readme_rows import SWEEPS as EXAMPLES
from .geometry.readme_rows import SWEEPS as GEOMETRY

# the d values the headline row of overparam shows (a choice of columns; those the file lacks
# are skipped, and the smallest and largest d of the file are always shown)
OVERPARAM_SHOWN_D = (2, 4, 10, 20, 30)


def _local_row(rows: list[dict]) -> str:
    by = {r["parameterization"]: r for r in rows}
    w, kq = by["w"], by["kq"]
    seeds = joined(r["seeds"] for r in rows)
    return (
        f"| local ({seeds} seeds) | final corr(W, W^mm_α) {num(w, 'corr_fro_mean'):.4f}, "
        f"corr(KQᵀ, W^mm_⋆,α) {num(kq, 'corr_nuc_mean'):.4f}; cross-norm "
        f"{num(w, 'corr_nuc_mean'):.3f} / {num(kq, 'corr_fro_mean'):.3f} |"
    )


def _rank_row(rows: list[dict]) -> str:
    d = max(int(r["d"]) for r in rows)
    top = [r for r in rows if int(r["d"]) == d]
    ts = {}
    for r in top:  # the slice over n: the T shared by most n values
        ts.setdefault(int(r["T"]), []).append(r)
    T, sl = max(ts.items(), key=lambda kv: (len(kv[1]), -kv[0]))
    sl = sorted(sl, key=lambda r: int(r["n"]))
    fro = [num(r, "rank_fro_mean") for r in sl]
    ns = [int(r["n"]) for r in sl]
    nuc = ", ".join(f"{num(r, 'rank_nuc_mean'):.1f}" for r in sl)
    if fro == [float(n) for n in ns]:
        fro_text = f"Frobenius rank = n ({', '.join(map(str, ns))})"
    else:
        fro_text = f"Frobenius rank {', '.join(f'{x:.1f}' for x in fro)} at n = " + ", ".join(
            map(str, ns)
        )
    return f"| rank, d={d} | {fro_text}; nuclear rank {nuc} at T={T} |"


def _overparam_row(rows: list[dict]) -> str:
    rows = sorted(
        (r for r in rows if r.get("parameterization", "w") == "w"), key=lambda r: int(r["d"])
    )
    ds = [int(r["d"]) for r in rows]
    shown = {ds[0], ds[-1], *(d for d in OVERPARAM_SHOWN_D if d in ds)}
    shares = ", ".join(
        f"{num(r, 'global_share') * 100:.0f} % (d={r['d']})" for r in rows if int(r["d"]) in shown
    )
    others = ("global", "other", "not_converged")  # not_converged: absent before it existed
    local_first = [
        int(r["d"]) for r in rows if num(r, "local") > max(num(r, k) for k in others if k in r)
    ]
    tail = f"; local is the most frequent outcome at d={ranges(local_first)}" if local_first else ""
    return f"| overparam, global share | {shares}{tail} |"


def _rates_row(rows: list[dict]) -> str:
    """Median slope of log(1 - corr(W, W^mm)) vs log t for the rules that target W^mm."""
    fro = {
        r["rule"]: r for r in rows if r["norm"] == "fro" and r["rule"] in ("ngd", "gd", "polyak")
    }
    parts = [
        f"{rule} {float(r['rate_median'] or 'nan'):.2f} "
        f"({r['rate_fitted']} of {r['seeds']} seeds fitted)"
        for rule, r in sorted(fro.items())
    ]
    what = "rates: median slope of log(1 − corr(W, W^mm)) vs log t, last two decades"
    return f"| {what} | {'; '.join(parts)} |"


SWEEPS = [
    Published(
        "paths",
        "paths: 2-D GD paths vs SVM rays (n=2, T=3 and 5, d=2; W and (K,Q))",
        (("T=3", "paths_T3.png"), ("T=5", "paths_T5.png")),
    ),
    Published(
        "rank",
        "rank: rank of W^mm / W^mm_⋆ and feasibility vs d (both published slices, 100 instances "
        "per point)",
        (("rank", "rank.png"),),
        ("rank_summary.csv", _rank_row),
    ),
    Published(
        "local",
        "local: softmax saturation and corr vs iteration, W vs (K,Q) (n=6, T=8, d=10, 100 seeds)",
        (("curves", "local_curves.png"),),
        ("local_summary.csv", _local_row),
    ),
    Published(
        "overparam",
        "overparam: global / local / other convergence and feasibility vs d (d=2..30, 100 seeds)",
        (("convergence", "overparam_convergence.png"),),
        ("overparam_summary.csv", _overparam_row),
    ),
    Published("sequential", "sequential: every token a query, causal mask"),
    *GEOMETRY,
    Published(
        "rates",
        "rates: convergence rate to W^mm of ngd, gd and the Polyak step (100 seeds, every step "
        "recorded)",
        headline=("rates_geometry_table.csv", _rates_row),
    ),
    *EXAMPLES,
]
