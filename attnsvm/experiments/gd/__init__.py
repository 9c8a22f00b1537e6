"""``experiment=gd``: gradient descent against the attention SVMs, the paper's pipeline
(pipeline.py trains and analyses, summary.py summarises)."""

from attnsvm.experiments.gd.pipeline import run_gd_job as run_job
from attnsvm.experiments.gd.summary import gd_summary_text as summary_text

__all__ = ["run_job", "summary_text"]
