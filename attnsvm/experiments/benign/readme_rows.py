"""What experiment ``benign`` publishes (its entry's ``published()``): its two sweeps' rows of the
README experiment table and their headline rows, from docs/results/benign_*_benign_table.csv."""

from __future__ import annotations

from attnsvm.results.published import Published, joined, num


def _cut(rows: list[dict]) -> str:
    """The smallest snr where at least half the seeds overfit benignly, or '> max'."""
    hits = [num(r, "benign.snr") for r in rows if num(r, "share_benign") >= 0.5]
    return f"{min(hits):g}" if hits else f"> {max(num(r, 'benign.snr') for r in rows):g}"


def _snr_row(rows: list[dict]) -> str:
    """Per setting and eta: the benign threshold in snr, and the test accuracy below / above."""
    parts = []
    for setting in sorted({r["benign.setting"] for r in rows}):
        for eta in sorted({r["benign.eta"] for r in rows}, key=float):
            at = [r for r in rows if r["benign.setting"] == setting and r["benign.eta"] == eta]
            at = sorted(at, key=lambda r: num(r, "benign.snr"))
            lo, hi = at[0], at[-1]
            parts.append(
                f"{setting} η={eta}: benign from snr {_cut(at)} (test acc "
                f"{num(lo, 'test_acc_mean'):.2f} at snr {num(lo, 'benign.snr'):g}, "
                f"{num(hi, 'test_acc_mean'):.2f} at {num(hi, 'benign.snr'):g})"
            )
    seeds = joined(str(int(num(r, "seeds"))) for r in rows)
    return (
        f"| benign_snr: where overfitting noisy labels turns benign ({seeds} seeds per point) | "
        f"{'; '.join(parts)} |"
    )


def _n_row(rows: list[dict]) -> str:
    """The threshold per n, and threshold x sqrt(n) (constant under the papers' scaling)."""
    parts = []
    for n in sorted({int(float(r["n"])) for r in rows}):
        cut = _cut([r for r in rows if int(float(r["n"])) == n])
        scaled = f" (× √n = {float(cut) * n**0.5:.2f})" if not cut.startswith(">") else ""
        parts.append(f"n={n}: {cut}{scaled}")
    return f"| benign_n, two_token η=0.2: benign threshold in snr per n | {'; '.join(parts)} |"


SWEEPS = [
    Published(
        "benign_snr",
        "benign_snr: benign overfitting of noisy labels in attention (two_token, token_selection; "
        "snr 0.1..2, η = 0.1, 0.2)",
        (
            ("two_token", "benign_two_token_n20.png"),
            ("token_selection", "benign_token_selection_n20.png"),
        ),  # fmt: skip
        ("benign_snr_benign_table.csv", _snr_row),
    ),
    Published(
        "benign_n",
        "benign_n: the benign threshold in snr against n (two_token, n = 10..80)",
        (("n=40", "benign_two_token_n40.png"),),
        ("benign_n_benign_table.csv", _n_row),
    ),
]
