"""What every experiment's figures share: the seaborn theme and saving one figure as PNG and
PDF. No experiment's knowledge: each experiment's package draws its own (its plots.py)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import seaborn as sns  # noqa: E402


def theme() -> None:
    """The house style of the figures drawn by ``python -m attnsvm.aggregate``."""
    sns.set_theme(style="whitegrid", context="notebook")


def save(fig, out: Path, name: str) -> list[Path]:
    """``out/name.png`` (110 dpi) and ``out/name.pdf``, tight; closes the figure."""
    paths = [out / f"{name}.png", out / f"{name}.pdf"]
    fig.savefig(paths[0], dpi=110, bbox_inches="tight")
    fig.savefig(paths[1], bbox_inches="tight")
    plt.close(fig)
    return paths
