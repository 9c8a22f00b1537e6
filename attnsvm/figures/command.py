"""What the experiment-specific figure commands share (``python -m attnsvm.experiments.<name>.plots
SWEEP_DIR``, ...): their arguments and the last lines of each figure."""

from __future__ import annotations

import argparse
from pathlib import Path

from attnsvm.figures import draw_to_files_only


def figure_cli(doc: str, argv: list[str] | None) -> tuple[Path, Path]:
    """``SWEEP_DIR [--out DIR]`` of the experiment-specific figure commands; creates DIR."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("sweep_dir", type=Path)
    parser.add_argument("--out", type=Path, help="output folder (default SWEEP_DIR/summary)")
    args = parser.parse_args(argv)
    out = args.out or args.sweep_dir / "summary"  # where `attnsvm.results.aggregate` writes too
    out.mkdir(parents=True, exist_ok=True)
    draw_to_files_only()
    return args.sweep_dir, out


def save_figure(fig, path: Path, dpi: int = 120) -> None:
    """Lay out, write and close ``fig``: the last lines of every figure command's figures."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
