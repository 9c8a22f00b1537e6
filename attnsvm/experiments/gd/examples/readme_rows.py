"""What gd's p-model examples publish: the max-margin examples' and the digits' rows of the
README experiment table and their headline rows (gd's readme_rows.py lists them in its order)."""

from __future__ import annotations

from attnsvm.results.published import Published, num


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
