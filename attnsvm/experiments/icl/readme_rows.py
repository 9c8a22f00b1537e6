"""What experiment ``icl`` publishes (its entry's ``published()``): its two sweeps' rows of the
README experiment table and their headline rows, from docs/results/icl_*_icl_table.csv."""

from __future__ import annotations

from attnsvm.results.published import Published, joined, num


def _pct_range(rows: list[dict], key: str) -> str:
    """'1.2–1.4 %' (or '1.2 %' when both ends round alike)."""
    lo, hi = (f"{100 * f(num(r, key) for r in rows):.1f}" for f in (min, max))
    return f"{lo} %" if lo == hi else f"{lo}–{hi} %"


def _n_row(rows: list[dict]) -> str:
    """Relative error of the learned A against Gamma^-1 at the smallest, default and largest N
    (the range over spectra and parameterizations), and the least corr."""
    Ns = sorted({int(r["icl.N"]) for r in rows})
    shown = [N for N in Ns if N in (Ns[0], 20, Ns[-1])]
    parts = [
        f"N={N}: {_pct_range([r for r in rows if int(r['icl.N']) == N], 'rel_err_mean')}"
        for N in shown
    ]
    corr = min(num(r, "corr_min") for r in rows)
    seeds = joined(r["ok"] for r in rows)
    return (
        f"| icl_N, one layer: mean relative error ‖A − Γ⁻¹‖/‖Γ⁻¹‖ (range over identity / linear "
        f"spectrum, merged / structured; {seeds} seeds per point) | {'; '.join(parts)}; "
        f"corr(A, Γ⁻¹) ≥ {corr:.4f} |"
    )


def _layers_row(rows: list[dict]) -> str:
    """Test loss of L trained layers (structured / merged) against L steps of the fitted
    preconditioned GD, per spectrum."""
    at = {(r["icl.spectrum"], r["icl.parameterization"], int(r["icl.layers"])): r for r in rows}
    parts = []
    for spectrum in sorted({k[0] for k in at}):
        cells = []
        for L in sorted({k[2] for k in at if k[0] == spectrum}):
            s, m = at[(spectrum, "structured", L)], at[(spectrum, "merged", L)]
            cells.append(
                f"L={L} {num(s, 'icl_loss'):.4f} / {num(m, 'icl_loss'):.4f} vs "
                f"{num(s, 'icl_loss_pgd'):.4f}"
            )
        parts.append(f"{spectrum}: {', '.join(cells)}")
    N, seeds = joined(r["icl.N"] for r in rows), joined(r["ok"] for r in rows)
    return (
        f"| icl_layers, test loss of L trained layers, structured / merged, vs L steps of the "
        f"fitted preconditioned GD (N={N}, {seeds} seeds) | {'; '.join(parts)} |"
    )


SWEEPS = [
    Published(
        "icl_N",
        "icl_N: in-context linear regression, one layer of linear attention vs Γ⁻¹ (N=3..80, "
        "identity and linear spectrum, merged and structured A)",
        (("vs N", "icl_N.png"), ("trajectory", "icl_trajectory.png")),
        ("icl_N_icl_table.csv", _n_row),
    ),
    Published(
        "icl_layers",
        "icl_layers: L=1..4 layers vs L steps of the fitted preconditioned GD (N=20)",
        (("layers", "icl_layers.png"),),
        ("icl_layers_icl_table.csv", _layers_row),
    ),
]
