"""What experiment ``regpath`` publishes (its entry's ``published()``)."""

from __future__ import annotations

from attnsvm.results.published import Published, joined, num


def _regpath_row(rows: list[dict]) -> str:
    d = max(int(r["d"]) for r in rows)
    by = {r["parameterization"]: r for r in rows if int(r["d"]) == d}
    w, kq = by["w"], by["kq"]
    seeds = joined(f"{num(r, c):.0f}" for r, c in ((w, "corr_fro_count"), (kq, "corr_nuc_count")))
    return (
        f"| regpath, d={d} | corr(W̄_R, W^mm) {num(w, 'corr_fro_mean'):.4f}, "
        f"corr(K̄Q̄ᵀ, W^mm_⋆) {num(kq, 'corr_nuc_mean'):.4f}, mean over {seeds} seeds at "
        "each seed's largest R before its gradient underflows |"
    )


SWEEPS = [
    Published(
        "regpath",
        "regpath: regularization path → W^mm / W^mm_⋆",
        (("regpath", "regpath.png"),),
        ("regpath_summary.csv", _regpath_row),
    ),
]
