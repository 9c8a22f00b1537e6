"""What gd's optimizer-geometry studies publish: their sweeps' rows of the README experiment
table and the headline rows rendered from their tables in docs/results/ (gd's readme_rows.py
lists them in its order)."""

from __future__ import annotations

from attnsvm.results.published import Published, joined, num, small


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


SWEEPS = [
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
]
