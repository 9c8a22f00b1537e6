"""``multitoken.target_accepted``: draw and train seeds in batches until enough pass the
published filters, or until the search is known to fail.

The search ends for one of four stated reasons, recorded as the job's ``search_end`` column and
printed by the summary:

* ``target reached``;
* ``hopeless``: at 95 % confidence the acceptance rate is below ``multitoken.min_rate``. With
  x accepted of N tried, the one-sided Clopper-Pearson bound is the rate p at which x or fewer
  acceptances have probability 5 %; once it is under ``min_rate`` more seeds are not worth
  training (with none accepted that takes about 3 / min_rate seeds: 3,000 at the default);
* ``max_tried reached``;
* ``a whole batch diverged``: the step size, not the draw, so more seeds of it would too.

Progress lines say seeds tried and accepted, and the bound once a few hundred seeds are in.
"""

from __future__ import annotations

from collections.abc import Callable

from scipy.stats import beta

from attnsvm.data.generators import accepted_seeds
from attnsvm.progress import reporter

CONFIDENCE = 0.95


def rate_upper_bound(accepted: int, tried: int, confidence: float = CONFIDENCE) -> float:
    """The one-sided Clopper-Pearson upper bound of an acceptance rate: ``accepted`` of
    ``tried`` (1.0 before any seed is tried, or when every seed was accepted)."""
    if tried == 0 or accepted >= tried:
        return 1.0
    return float(beta.ppf(confidence, accepted + 1, tried - accepted))


def search(cfg, run_batch: Callable, progress=None) -> tuple[list, list, str]:
    """Rows and curves of the seeds from ``cfg.seed`` on, batch by batch, cut at the
    target-th accepted seed (independent of the batch size), and why the search ended."""
    mcfg, target = cfg.multitoken, cfg.multitoken.target_accepted
    rows, curves, next_seed, n_ok = [], [], cfg.seed, 0
    report = reporter(progress)
    while True:
        seeds = accepted_seeds(cfg.dataset, next_seed, cfg.batch_size)
        next_seed = seeds[-1] + 1
        r, c = run_batch(cfg, seeds, analyse_all=False)
        rows, curves = rows + r, curves + c
        n_ok = sum(row["accepted"] for row in rows)
        bound = rate_upper_bound(n_ok, len(rows))
        end = _end(n_ok, len(rows), bound, r, mcfg)
        if report is not None:
            report.searched(len(rows), n_ok, target, bound)
        elif progress is not None:  # the plain contract: accepted seeds of the target
            progress(min(n_ok, target), target)
        if end is not None:
            break
    ok_seeds = [row["seed"] for row in rows if row["accepted"]]
    if len(ok_seeds) >= target:
        last = ok_seeds[target - 1]
        rows = [row for row in rows if row["seed"] <= last]
    return rows, curves, end


def _end(n_ok: int, tried: int, bound: float, batch: list, mcfg) -> str | None:
    """Why the search ends after this batch (None: it goes on). The target wins over the
    others; a batch that diverged whole is a fact of the step size, checked before the rate."""
    if n_ok >= mcfg.target_accepted:
        return "target reached"
    if all(row["status"] == "diverged" for row in batch):
        return "a whole batch diverged"
    if bound < mcfg.min_rate:
        return (
            f"hopeless: {n_ok} of {tried} seeds accepted, so at {CONFIDENCE:.0%} confidence "
            f"the acceptance rate is below {bound:.2g} < multitoken.min_rate={mcfg.min_rate:g}"
        )
    if tried >= mcfg.max_tried:
        return f"max_tried reached: {n_ok} of {tried} seeds accepted"
    return None
