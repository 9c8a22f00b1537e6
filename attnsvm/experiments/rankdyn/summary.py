"""What a rankdyn job or sweep found, in its own terms: stages, final rank against the rank of
the nuclear-norm SVM at the selected tokens, and how well K Q^T points at it."""

from __future__ import annotations

import numpy as np
import pandas as pd

KEYS = ["n", "T", "d", "rankdyn.parameterization", "rankdyn.rule", "rankdyn.alpha"]


def summary_table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per config point (shape, parameterization, rule, alpha), over its ok seeds."""
    keys = [k for k in KEYS if k in runs]
    ok = runs[runs.status == "ok"].assign(
        rank_match=lambda df: df.final_eff_rank == df.eff_rank_nuc,
        any_stage=lambda df: df.n_stages > 0,
        rise_loss_gap=lambda df: df.plateau_losses.map(_highest).astype(float) - df.loss,
    )
    table = ok.groupby(keys, dropna=False).agg(
        seeds=("seed", "size"),
        n_stages_mean=("n_stages", "mean"),
        n_stages_max=("n_stages", "max"),
        share_with_stage=("any_stage", "mean"),
        first_stage_step_median=("first_stage_step", "median"),
        escape_step_median=("escape_step", "median"),
        lowest_eff_rank_mean=("lowest_eff_rank", "mean"),
        final_eff_rank_mean=("final_eff_rank", "mean"),
        eff_rank_nuc_mean=("eff_rank_nuc", "mean"),
        rank_nuc_mean=("rank_nuc", "mean"),
        rank_fro_mean=("rank_fro", "mean"),
        share_rank_match=("rank_match", "mean"),
        corr_nuc_median=("corr_nuc", "median"),
        corr_nuc_min=("corr_nuc", "min"),
        corr_fro_median=("corr_fro", "median"),
        rise_loss_gap_max=("rise_loss_gap", "max"),
        loss_mean=("loss", "mean"),
    )
    total = runs.groupby(keys, dropna=False).size().rename("runs")
    return table.join(total, how="right").reset_index()


def _highest(joined) -> float:
    """The largest of a comma-joined list of numbers; NaN for an empty one."""
    return max(map(float, joined.split(","))) if isinstance(joined, str) and joined else np.nan


def summary_text(runs: pd.DataFrame, seconds: float) -> str:
    """Printed after a job: per config point, stages, ranks and corr_nuc."""
    from attnsvm.results.contract import not_ok_lines

    lines = [f"rankdyn: {len(runs)} seeds in {seconds:.1f} s"]
    lines += not_ok_lines(runs)
    for _, row in summary_table(runs).iterrows():
        if not row.seeds > 0:
            lines.append(f"  {row['rankdyn.parameterization']} {row['rankdyn.rule']}: no ok seed")
            continue
        lines.append(
            f"  ({row['n']},{row['T']},{row['d']}) {row['rankdyn.parameterization']} "
            f"{row['rankdyn.rule']} alpha={row['rankdyn.alpha']:g}: "
            f"{row.n_stages_mean:.2f} rank rises per seed (max {row.n_stages_max:.0f}), "
            f"final eff_rank {row.final_eff_rank_mean:.2f} vs W^mm_* {row.eff_rank_nuc_mean:.2f} "
            f"(equal in {row.share_rank_match:.0%}), corr_nuc median {row.corr_nuc_median:.4f}, "
            f"escape step {row.escape_step_median:.0f}"
        )
    return "\n".join(lines)


DOCS_MARKERS = ("<!-- rankdyn:table -->", "<!-- /rankdyn:table -->")
DOCS_COLUMNS = {
    "shape": "(n,T,d)",
    "rankdyn.parameterization": "param",
    "rankdyn.rule": "rule",
    "rankdyn.alpha": "alpha",
    "seeds": "seeds",
    "escape_step_median": "escape step (median)",
    "lowest_eff_rank_mean": "lowest eff_rank",
    "n_stages_mean": "rises per seed",
    "first_stage_step_median": "first rise (median step)",
    "final_eff_rank_mean": "final eff_rank",
    "eff_rank_nuc_mean": "eff_rank of W^mm_*",
    "share_rank_match": "equal",
    "rise_loss_gap_max": "loss above final at a rise (max)",
    "corr_nuc_median": "corr_nuc (median)",
    "corr_fro_median": "corr_fro (median)",
}


def docs_table(table: pd.DataFrame) -> str:
    """The summary table as the markdown of docs/rankdyn.md (between ``DOCS_MARKERS``)."""
    df = table.assign(shape=[f"({r.n},{r['T']},{r.d})" for _, r in table.iterrows()])
    df = df.sort_values(["n", "rankdyn.parameterization", "rankdyn.rule", "rankdyn.alpha"],
                        ascending=[True, True, True, False])  # fmt: skip
    lines = ["| " + " | ".join(DOCS_COLUMNS.values()) + " |", "|" + "---|" * len(DOCS_COLUMNS)]
    for _, row in df.iterrows():
        lines.append("| " + " | ".join(_cell(k, row[k]) for k in DOCS_COLUMNS) + " |")
    return "\n".join(lines)


def _cell(key: str, value) -> str:
    if isinstance(value, str):
        return value
    if pd.isna(value):
        return "-"
    if key == "rankdyn.alpha":
        return f"{value:g}"
    if key == "share_rank_match":
        return f"{value:.0%}"
    if key.startswith("corr"):
        return f"{value:.4f}"
    if key == "rise_loss_gap_max":
        return f"{value + 0.0:.1e}"  # no -0.0e+00
    if key.endswith("step_median") or key == "seeds":
        return f"{value:.0f}"
    return f"{value:.2f}"


def render_docs(text: str, table: pd.DataFrame) -> str:
    """``text`` with the block between ``DOCS_MARKERS`` replaced by ``docs_table(table)``."""
    start, end = DOCS_MARKERS
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}\n{docs_table(table)}\n{end}{tail}"


def main(argv: list[str] | None = None) -> None:
    """``python -m attnsvm.experiments.rankdyn.summary docs/rankdyn.md``: the page's table
    rewritten from the published table (docs/results/rankdyn_table.csv, written by
    ``python -m attnsvm.publish outputs/sweeps/rankdyn``)."""
    import argparse
    from pathlib import Path

    ap = argparse.ArgumentParser(description=main.__doc__.split("\n")[0])
    ap.add_argument("page", type=Path)
    ap.add_argument("--table", type=Path, default=Path("docs/results/rankdyn_table.csv"))
    args = ap.parse_args(argv)
    args.page.write_text(render_docs(args.page.read_text(), pd.read_csv(args.table)))


if __name__ == "__main__":
    main()
