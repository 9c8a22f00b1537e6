"""What every experiment's figures share: the seaborn theme and saving one figure as PNG and
PDF. No experiment's knowledge: each experiment's package draws its own (its plots.py)."""

from __future__ import annotations

import contextlib
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import seaborn as sns


@contextlib.contextmanager
def theme():
    """The house style of the figures drawn by ``python -m attnsvm.aggregate`` (seaborn's
    ``set_theme(style="whitegrid", context="notebook")``) for the figures drawn inside the block
    only: the caller's matplotlib settings are restored after it, so that no figure, the user's
    or another experiment's, depends on what was drawn before it in the process."""
    rc = {
        **sns.axes_style("whitegrid", rc={"font.family": "sans-serif"}),
        **sns.plotting_context("notebook"),
        "axes.prop_cycle": matplotlib.cycler(color=sns.color_palette("deep")),
    }
    with plt.rc_context(rc):
        yield


def save(fig, out: Path, name: str) -> list[Path]:
    """``out/name.png`` (110 dpi) and ``out/name.pdf``, tight; closes the figure."""
    paths = [out / f"{name}.png", out / f"{name}.pdf"]
    fig.savefig(paths[0], dpi=110, bbox_inches="tight")
    fig.savefig(paths[1], bbox_inches="tight")
    plt.close(fig)
    return paths
