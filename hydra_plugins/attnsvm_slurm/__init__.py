"""``hydra/launcher=slurm``: hydra-submitit-launcher's Slurm job array, made safe for sweeps.

python -m attnsvm.run -m +sweeps=rank hydra/launcher=slurm hydra.sweep.dir=/shared/rank

The preset (conf/hydra/launcher/slurm.yaml) names :class:`SlurmLauncher`, which submits exactly
as hydra-submitit-launcher does and differs in how it waits. A real cluster showed that the
plugin's launcher stops at the first failed array task and leaves the others running; this one
waits for every task, and

- a task that ends without a result (``scancel``, killed at its time limit, node failure, out of
  memory) gets ``status: failed`` in its job.json with Slurm's state (``slurm_state``,
  ``slurm_job_id``, error ``Slurm job 12_3 ended without a result: CANCELLED by 0``); the
  sweep goes on, its summary lists the job, and a re-run recomputes it;
- a task whose Python raised outside attnsvm's own recording (an invalid config) stops the
  sweep as before, after cancelling the array's other tasks;
- if the launching process itself fails or is interrupted, every task of the array is cancelled:
  no job of the sweep is left in the queue.

Task states come from ``sacct``: the cluster needs accounting (slurmdbd), or a cancelled task is
never seen to end. The resolver ``attnsvm_signal_delay`` gives the preset's ``signal_delay_s``
relative to the time limit (docs/scaling.md).
"""

from __future__ import annotations

import contextlib
import io
import logging
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from hydra.core.utils import JobReturn
from omegaconf import OmegaConf

from attnsvm.results.sweep_status import job_status, record_statuses

log = logging.getLogger(__name__)
POLL_S = 5.0  # seconds between two sacct calls while waiting for the array
# final states of a task Slurm ended from outside: its Python wrote no result, so the sweep does
# not wait for a result file (submitit waits 15 s per task, one task after the other)
ENDED_BY_SLURM = ("CANCELLED", "NODE_FAIL", "TIMEOUT", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE")


def signal_delay_s(timeout_min: int) -> int:
    """Seconds before the time limit at which Slurm signals the job (submitit's ``--signal``):
    a tenth of the limit, at most submitit's 120 s. A fixed 120 s signals a 2-minute job at
    its start, which submitit takes for a timeout."""
    return max(1, min(120, int(timeout_min) * 6))


if not OmegaConf.has_resolver("attnsvm_signal_delay"):
    OmegaConf.register_new_resolver("attnsvm_signal_delay", signal_delay_s)

try:
    from hydra_plugins.hydra_submitit_launcher import submitit_launcher
except ImportError:  # base install: the Slurm extra (.[slurm]) brings the plugin
    submitit_launcher = None


if submitit_launcher is not None:

    class SlurmLauncher(submitit_launcher.SlurmLauncher):
        """hydra-submitit-launcher's SlurmLauncher that waits for every task (module doc)."""

        def launch(
            self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int
        ) -> Sequence[JobReturn]:
            jobs = []
            try:
                jobs = self._submit(job_overrides, initial_job_idx)
                errors = self._wait(jobs)
                returns = [
                    self._result(job, error, list(overrides), initial_job_idx + i)
                    for i, (job, error, overrides) in enumerate(
                        zip(jobs, errors, job_overrides, strict=True)
                    )
                ]
                record_statuses(job_status(r) for r in returns)  # the sweep's last line
                return returns
            except BaseException:
                cancel(jobs)
                raise

        def _submit(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> list:
            """Submit the array exactly as hydra-submitit-launcher 1.2's launch does (its
            executor parameters, its job arguments); returns submitit's jobs, one per task."""
            import submitit
            from hydra.core.singleton import Singleton
            from hydra.core.utils import filter_overrides

            assert self.config is not None
            plan = self.plan(job_overrides)
            executor = submitit.AutoExecutor(
                cluster="slurm",
                folder=self.params["submitit_folder"],
                slurm_max_num_timeout=self.params["max_num_timeout"],
            )
            executor.update_parameters(**plan["executor"])
            sweep_dir = Path(str(self.config.hydra.sweep.dir))
            sweep_dir.mkdir(parents=True, exist_ok=True)
            log.info("Slurm job array for the sweep in %s", sweep_dir)
            args = []
            for idx, overrides in enumerate(job_overrides, start=initial_job_idx):
                log.info("\t#%d : %s", idx, " ".join(filter_overrides(overrides)))
                args.append(
                    (
                        list(overrides),
                        "hydra.sweep.dir",
                        idx,
                        f"job_id_for_{idx}",
                        Singleton.get_state(),
                    )
                )
            said = io.StringIO()  # submitit prints a failed sbatch's stderr: ours says it
            try:
                with contextlib.redirect_stderr(said):
                    jobs = executor.map_array(self, *zip(*args, strict=True))
                sys.stderr.write(said.getvalue())
                return jobs
            except (submitit.core.utils.FailedJobError, OSError) as exc:  # sbatch refused or
                # missing: no task exists, one line says why (the sweeper removes its files)
                why = " ".join(str(exc).split()) or type(exc).__name__
                raise SystemExit(
                    f"attnsvm: hydra/launcher=slurm could not submit the sweep's job array: "
                    f"{why} (no job was started)"
                ) from None

        def plan(self, job_overrides: Sequence[Sequence[str]]) -> dict:
            """What the array is submitted with, without Slurm: ``executor``, submitit's
            parameters (hydra-submitit-launcher's names; ``slurm_`` for Slurm-only keys) and
            ``gpu``: whether a job runs on ``device=cuda``. Then each task asks for one GPU
            (``gres: gpu:1``) unless ``gres`` or a ``gpus_*`` key is set."""
            from hydra_plugins.hydra_submitit_launcher.config import BaseQueueConf

            from hydra_plugins.attnsvm_ray import job_device

            params = dict(self.params)
            gpu = any(job_device(o, self.config) == "cuda" for o in job_overrides)
            gpu_keys = ("gres", "gpus_per_node", "gpus_per_task")
            if gpu and not any(params.get(k) for k in gpu_keys):
                params["gres"] = "gpu:1"
            base = set(OmegaConf.structured(BaseQueueConf).keys())
            executor = {
                k if k in base else f"slurm_{k}": v
                for k, v in params.items()
                if k not in ("submitit_folder", "max_num_timeout")
            }
            return {"executor": executor, "gpu": gpu}

        def _wait(self, jobs: list) -> list:
            """Until every task has a result or Slurm says it ended; returns each task's error
            (None: it has a result). A task whose Python raised outside attnsvm's own recording
            (an invalid config) stops the sweep: the caller cancels the others."""
            from submitit.core.utils import FailedJobError

            errors: dict[int, Exception | None] = {}
            while len(errors) < len(jobs):
                jobs[0].watcher.update()  # one sacct call for the whole array
                for i, job in enumerate(jobs):
                    if i not in errors and job.done():
                        # job.exception() waits for a late result file, once
                        errors[i] = no_result(job) or job.exception()
                        if isinstance(errors[i], FailedJobError):
                            raise errors[i]
                if len(errors) < len(jobs):
                    time.sleep(POLL_S)
            return [errors[i] for i in range(len(jobs))]

        def _result(self, job, error: Exception | None, overrides: list[str], num: int):
            """The task's JobReturn; a task without a result is recorded as a failed job."""
            if error is None:
                return job.results()[0]
            state = job.watcher.get_state(job.job_id, mode="force")
            return self._record_lost(overrides, num, job.job_id, state)

        def _record_lost(self, overrides: list[str], num: int, job_id: str, state: str):
            from attnsvm.lost_jobs import lost_job_return

            assert self.hydra_context is not None and self.config is not None
            error = f"Slurm job {job_id} ended without a result: {state}"
            return lost_job_return(
                self.hydra_context, self.config, overrides, num, error, job_id=job_id,
                slurm_state=state, slurm_job_id=job_id,
            )  # fmt: skip

    def no_result(job) -> Exception | None:
        """Why a finished task has no result to wait for: Slurm ended it (``ENDED_BY_SLURM``)
        and no result file is there. Its job's own files still decide what the sweep records
        (``lost_job_return``: finished when its results are complete)."""
        state = str(job.state)
        if state.startswith(ENDED_BY_SLURM) and not job.paths.result_pickle.exists():
            return RuntimeError(f"Slurm job {job.job_id} ended without a result: {state}")
        return None

    def cancel(jobs: list) -> None:
        """scancel the array (every task of it still queued or running): one call."""
        arrays = sorted({str(job.job_id).split("_")[0] for job in jobs})
        if arrays:
            subprocess.run(["scancel", *arrays], check=False, timeout=60)
            log.warning("cancelled Slurm job(s) %s", ", ".join(arrays))
