"""What experiment ``gd`` publishes (its entry's ``published()``): its sweeps' rows of the
README experiment table and the headline rows rendered from their tables in docs/results/."""

from __future__ import annotations

from attnsvm.results.published import Published, joined, num, ranges, small

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


def _geometry_row(rows: list[dict]) -> str:
    """Per step rule: its predicted norm's final margin ratio against the best other norm."""
    by_rule: dict[str, list[dict]] = {}
    for r in rows:
        by_rule.setdefault(r["rule"], []).append(r)
    parts, held = [], 0
    for rule in sorted(by_rule):
        cells = by_rule[rule]
        own = [r for r in cells if r["predicted"] == "True"]
        if not own:
            continue
        own = own[0]
        other = max((r for r in cells if r is not own), key=lambda r: num(r, "margin_mean"))
        wins = num(own, "margin_mean") > num(other, "margin_mean")
        held += wins
        parts.append(
            f"{rule}→{own['norm']} {num(own, 'margin_mean'):.3f} "
            f"{'>' if wins else '<'} {other['norm']} {num(other, 'margin_mean'):.3f}"
        )
    seeds = joined(r["seeds"] for r in rows)
    return (
        f"| geometry, d={rows[0]['d']}, final margin ratio γ_N(W)/γ*_N (mean, {seeds} ok seeds "
        f"per rule): predicted norm vs best other | {'; '.join(parts)} — the predicted norm "
        f"wins for {held} of {len(parts)} step rules |"
    )


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


def _mirror_row(rows: list[dict]) -> str:
    """Final mean Bregman divergence of each p-path (N(0,1) init) to each lp-SVM."""
    cols = [c for c in rows[0] if c.startswith("bregman_l")]  # the lp-SVMs
    parts = []
    for r in sorted((r for r in rows if r["init"] == "normal"), key=lambda r: r["rule"]):
        ds = ", ".join(
            f"{c.removeprefix('bregman_').replace('p', '.')} {small(num(r, c))}" for c in cols
        )
        parts.append(f"{r['rule']}: {ds}")
    what = "mirror, final mean Bregman divergence D_p to the lp-SVMs (N(0,1) init)"
    return f"| {what} | {'; '.join(parts)} |"


def _maxmargin_row(rows: list[dict]) -> str:
    """Per published example (logistic loss): the least final corr of p with its own SVM (the
    relaxed one for joint_relaxed) at float64, the published float32 form in parentheses, and
    ||p|| where each ends."""
    at = {(r["example"], r["dtype"]): r for r in rows if r["loss_function"] == "logistic"}
    order = ["single", "single_local", "multi", "joint", "joint_relaxed", "loss"]
    parts = []
    for ex in (e for e in order if (e, "float64") in at):
        col = "corr_relaxed_min" if ex == "joint_relaxed" else "corr_p_mm_min"
        r64, r32 = at[(ex, "float64")], at.get((ex, "float32"))
        text = f"{ex} {num(r64, col):.5f}" + (f" ({num(r32, col):.4f})" if r32 else "")
        if ex == "joint_relaxed":
            text += f", vs the ordinary p-SVM {num(r64, 'corr_p_mm_min'):.4f}"
        if r64.get("corr_v_mm_min"):
            text += f", corr(v, v^mm) {num(r64, 'corr_v_mm_min'):.5f}"
        parts.append(text)
    norms = [num(r, "w_norm_mean") for (_, dtype), r in at.items() if dtype == "float32"]
    ends = [num(r, "w_norm_mean") for (_, dtype), r in at.items() if dtype == "float64"]
    what = (
        "maxmargin: least final corr(p, p^mm) after 1000 NGD steps, float64 (published float32 "
        "form)"
    )
    tail = f"‖p‖ {min(ends):.0f}–{max(ends):.0f} at float64; float32 freezes at "
    tail += f"{min(norms):.0f}–{max(norms):.0f}"
    return f"| {what} | {'; '.join(parts)}; {tail} |"


def _digits_row(rows: list[dict]) -> str:
    """Per (n, patch): SVM at the optimal patches feasible, saturated seeds, corr(p, p^mm) at
    the selected patches, and how often GD selected the highest-scoring patch."""
    parts = []
    for r in sorted(rows, key=lambda r: (int(r["patch"]), int(r["n"]))):
        parts.append(
            f"patch {r['patch']}, n={r['n']}: opt-SVM feasible {num(r, 'opt_svm_feasible'):.0%}, "
            f"saturated {num(r, 'saturated'):.0%}, corr {num(r, 'corr_p_mm_mean'):.3f}, "
            f"top patch selected {num(r, 'share_selected_opt'):.0%}"
        )
    return f"| digits 0 vs 1, p-model, 20 image draws per point | {'; '.join(parts)} |"


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
    Published(
        "geometry",
        "geometry: every step rule × every SVM norm (n=6, T=8, d=10, 100 seeds)",
        (("heatmap", "geometry.png"),),
        ("geometry_table.csv", _geometry_row),
    ),
    Published(
        "geometry_d",
        "geometry_d: the pairing vs d (d=4, 10, 20; 50 seeds)",
        (("vs d", "geometry_d.png"),),
    ),
    Published(
        "geometry_adam",
        "geometry_adam: Signum's β, Adam's decay exponent a, AdamW's λ and batch size B against "
        "their proven limits (n=6, T=8, d=10, 20 seeds)",
        (("closer to l_inf", "geometry_adam.png"),),
    ),
    Published(
        "mirror",
        "mirror: lp mirror descent, p=1.75/2/3, Bregman divergence to the lp-SVMs (100 seeds; "
        "N(0,1) and zero init)",
        (("Bregman", "mirror.png"),),
        ("mirror_table.csv", _mirror_row),
    ),
    Published("mirror_joint", "mirror_joint: the 2-D joint example, W and v by mirror descent"),
    Published(
        "rates",
        "rates: convergence rate to W^mm of ngd, gd and the Polyak step (100 seeds, every step "
        "recorded)",
        headline=("rates_geometry_table.csv", _rates_row),
    ),
    Published(
        "digits",
        "digits: real images, scikit-learn's 8×8 digits 0 vs 1 as patch tokens, p-model (n=10, "
        "40; patch 2, 4; 20 image draws)",
        (("digits", "digits.png"),),
        ("digits_table.csv", _digits_row),
    ),
    Published(
        "maxmargin",
        "maxmargin: the published p-model examples (single, local, multi, joint, relaxed joint, "
        "loss), float64 vs the published float32 form",
        (("paths", "maxmargin.png"), ("loss", "maxmargin_loss.png")),
        ("maxmargin_table.csv", _maxmargin_row),
    ),
]
