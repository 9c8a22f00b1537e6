"""What experiment ``multitoken`` publishes (its entry's ``published()``)."""

from __future__ import annotations

from attnsvm.results.published import Published, num, small


def _multitoken_row(rows: list[dict]) -> str:
    rows = sorted(rows, key=lambda r: int(r["d"]))
    lo, hi = rows[0], rows[-1]
    names = {"svmeq": "SVMeq", "dir": "W^dir", "1token": "W^1token"}
    parts = ", ".join(
        f"{label} {small(num(lo, f'mean_1-corr_{k}'))} / {small(num(hi, f'mean_1-corr_{k}'))}"
        for k, label in names.items()
    )
    return f"| multitoken, final 1 − corr at d={lo['d']} / {hi['d']} (mean) | {parts} |"


SWEEPS = [
    Published(
        "multitoken",
        "multitoken: ReLU head, W^SVMeq vs W^dir vs W^1token (n=3, T=4, d=4..10, 500 accepted "
        "per d)",
        (("multitoken", "multitoken.png"),),
        ("multitoken_table.csv", _multitoken_row),
    ),
]
