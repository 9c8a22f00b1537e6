"""``experiment=gd``: gradient descent against the attention SVMs, the paper's pipeline
(attnsvm/pipeline.py trains and analyses, attnsvm/summary.py summarises)."""

from attnsvm.pipeline import run_gd_job as run_job
from attnsvm.summary import gd_summary_text as summary_text

__all__ = ["run_job", "summary_text"]
