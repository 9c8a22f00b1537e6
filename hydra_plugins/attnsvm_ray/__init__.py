"""``hydra/launcher=ray``: each job of a sweep is one Ray task, on a local Ray or a Ray cluster.

python -m attnsvm.run -m dataset.d=2,4,8 hydra/launcher=ray                         # local Ray
python -m attnsvm.run -m +sweeps=rank hydra/launcher=ray hydra.launcher.address=auto   # cluster

attnsvm's own launcher on Ray's public API (``ray.init``, ``ray.remote``, ``ray.wait``,
``ray.get``, ``ray.cancel``, ``ray.shutdown``). A task runs its job through Hydra's per-job
machinery exactly as the joblib launcher does (``run_job``, the job's ``HydraConfig``, its
directory under the sweep dir), in the directory the sweep was started from, so the rows and
config hashes are those of the local launcher. Like the Slurm launcher it waits for every task:

- a task whose worker or node dies (killed, out of memory, node lost, cancelled) gets
  ``status: failed`` in its job.json with Ray's error (``ray_error``); the sweep goes on, its
  summary lists the job, and a re-run recomputes it;
- an invalid config stops the sweep, as on every launcher, after cancelling the other tasks;
- if the launching process fails or is interrupted, every task still running is cancelled;
- each job records the Ray node it ran on in job.json (``node``: host and Ray node id);
- a job with ``device=cuda`` asks Ray for one GPU (``num_gpus``; :meth:`RayLauncher.plan`).

With ``address=auto`` and no Ray cluster running the sweep stops at once with one ``attnsvm:``
line saying how to start one, and leaves nothing behind.

The preset is conf/hydra/launcher/ray.yaml; the keys are :class:`RayLauncherConf`'s.
"""

import logging
import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hydra.core.config_store import ConfigStore
from hydra.core.hydra_config import HydraConfig
from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, filter_overrides, run_job, setup_globals
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, open_dict

log = logging.getLogger(__name__)
NODE_ENV = "ATTNSVM_NODE"  # what job.json records as ``node`` (attnsvm.results.store)
# Ray errors that say the task's worker or node is gone, not that attnsvm's code raised
LOST = (
    "WorkerCrashedError",
    "NodeDiedError",
    "OutOfMemoryError",
    "TaskCancelledError",
    "ObjectLostError",
    "LocalRayletDiedError",
)


@dataclass
class RayLauncherConf:
    _target_: str = "hydra_plugins.attnsvm_ray.RayLauncher"
    address: str | None = None  # null: $RAY_ADDRESS if set, else a new local Ray
    num_cpus: float = 1.0  # CPUs Ray reserves for each job (jobs run `threads` threads)
    num_gpus: float | None = None  # GPUs per device=cuda job (null: 1); CPU jobs ask none
    max_concurrent: int | None = None  # at most this many jobs in flight (null: all of them)
    max_retries: int = 0  # Ray re-runs a task whose worker died this many times
    init: dict[str, Any] = field(default_factory=dict)  # more ray.init keywords


ConfigStore.instance().store(
    group="hydra/launcher", name="attnsvm_ray", node=RayLauncherConf, provider="attnsvm"
)


@dataclass
class Exited:
    """A job that raised SystemExit (an invalid config): Ray would take it for a dead worker."""

    code: Any


def execute_job(idx: int, overrides: Sequence[str], shared: tuple, cwd: str) -> JobReturn | Exited:
    """The Ray task: one job, as the joblib launcher's worker runs it."""
    hydra_context, config, task_function, singleton_state = shared
    if not Path(cwd).is_dir():
        raise RuntimeError(
            f"attnsvm: {cwd} (where the sweep started) does not exist on Ray node "
            f"{socket.gethostname()}: hydra/launcher=ray needs a file system every node shares"
        )
    os.chdir(cwd)  # relative paths (sweep dir, data files) mean what they meant there
    import ray

    node_id = ray.get_runtime_context().get_node_id()
    os.environ[NODE_ENV] = f"{socket.gethostname()}/{node_id}"  # job.json's ``node``
    setup_globals()
    Singleton.set_state(singleton_state)
    sweep_config = hydra_context.config_loader.load_sweep_config(config, list(overrides))
    with open_dict(sweep_config):
        sweep_config.hydra.job.id = f"{sweep_config.hydra.job.name}_{idx}"
        sweep_config.hydra.job.num = idx
    HydraConfig.instance().set_config(sweep_config)
    try:
        return run_job(
            hydra_context=hydra_context,
            config=sweep_config,
            task_function=task_function,
            job_dir_key="hydra.sweep.dir",
            job_subdir_key="hydra.sweep.subdir",
        )
    except SystemExit as exc:
        return Exited(exc.code)


class RayLauncher(Launcher):
    def __init__(
        self,
        address: str | None = None,
        num_cpus: float = 1.0,
        num_gpus: float | None = None,
        max_concurrent: int | None = None,
        max_retries: int = 0,
        init: dict | None = None,
    ) -> None:
        if max_concurrent is not None and max_concurrent < 1:
            raise ValueError(
                f"attnsvm: hydra.launcher.max_concurrent={max_concurrent}: accepted values are "
                "integers >= 1, or null (no limit)"
            )
        self.address, self.num_cpus, self.num_gpus = address, num_cpus, num_gpus
        self.max_concurrent, self.max_retries = max_concurrent, max_retries
        self.init = dict(init or {})
        self.config: DictConfig | None = None
        self.hydra_context: HydraContext | None = None
        self.task_function: TaskFunction | None = None

    def setup(
        self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig
    ) -> None:
        self.config, self.hydra_context, self.task_function = config, hydra_context, task_function

    def launch(
        self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int
    ) -> Sequence[JobReturn]:
        ray = import_ray()
        assert self.config is not None
        jobs = self.jobs_to_dispatch(job_overrides, initial_job_idx)
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        started = bool(jobs) and not ray.is_initialized()
        if started:
            self._init(ray)
        sweep_dir.mkdir(parents=True, exist_ok=True)
        if not jobs:
            return []
        log.info("Ray: %d jobs, sweep output dir: %s", len(jobs), sweep_dir)
        for idx, overrides in jobs:
            log.info("\t#%d : %s", idx, " ".join(filter_overrides(overrides)))
        try:
            return self._run(ray, jobs)
        finally:
            if started:
                ray.shutdown()

    def _init(self, ray) -> None:
        """``ray.init``; no cluster at ``address``: one line saying what to do (the sweeper
        removes the sweep directory it made: results.job_dir.Leftovers)."""
        try:
            ray.init(address=self.address, **self.init)
        except ConnectionError as exc:
            where = "auto" if self.address == "auto" else self.address
            raise SystemExit(
                f"attnsvm: hydra.launcher.address={where}: no Ray cluster to join "
                f"({str(exc).splitlines()[0]}). Start one on this machine with `ray start "
                "--head` (each other node: `ray start --address=HEAD:6379`) and re-run, or drop "
                "hydra.launcher.address to run the sweep on a local Ray started for it"
            ) from None

    def jobs_to_dispatch(
        self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int
    ) -> list[tuple[int, list[str]]]:
        """(job number, overrides) of every job to send to Ray: the one place that decides."""
        return [(initial_job_idx + i, list(o)) for i, o in enumerate(job_overrides)]

    def task_options(self, overrides: Sequence[str]) -> dict[str, Any]:
        """The Ray task options of the job with ``overrides``: its CPUs, its GPUs (one for a
        ``device=cuda`` job, or ``num_gpus``; none for a CPU job) and its retries."""
        gpus = 0
        if job_device(overrides, self.config) == "cuda":
            gpus = 1 if self.num_gpus is None else self.num_gpus
        return {"num_cpus": self.num_cpus, "num_gpus": gpus, "max_retries": self.max_retries}

    def plan(
        self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int = 0
    ) -> list[dict[str, Any]]:
        """What each job is sent to Ray with, without starting Ray: job number, overrides,
        task options."""
        return [
            {"idx": idx, "overrides": overrides, "options": self.task_options(overrides)}
            for idx, overrides in self.jobs_to_dispatch(job_overrides, initial_job_idx)
        ]

    def _run(self, ray, jobs: list[tuple[int, list[str]]]) -> list[JobReturn]:
        """Dispatch at most ``max_concurrent`` tasks at a time; collect each as it ends."""
        remote = ray.remote(execute_job)
        shared = ray.put(
            (self.hydra_context, self.config, self.task_function, Singleton.get_state())
        )
        limit, cwd = self.max_concurrent or len(jobs), os.getcwd()
        waiting, pending = list(range(len(jobs))), {}
        returns: list[JobReturn | None] = [None] * len(jobs)
        try:
            while waiting or pending:
                while waiting and len(pending) < limit:
                    pos = waiting.pop(0)
                    task = remote.options(**self.task_options(jobs[pos][1]))
                    pending[task.remote(*jobs[pos], shared, cwd)] = pos
                done, _ = ray.wait(list(pending), num_returns=1)
                for ref in done:
                    pos = pending.pop(ref)
                    returns[pos] = self._collect(ray, ref, *jobs[pos])
        except BaseException:
            for ref in pending:
                ray.cancel(ref, force=True)
            if pending:
                log.warning("cancelled %d Ray task(s) of the sweep", len(pending))
            raise
        return [r for r in returns if r is not None]

    def _collect(self, ray, ref, idx: int, overrides: list[str]) -> JobReturn:
        """The task's JobReturn; a task whose worker or node died is recorded as a failed job."""
        lost = tuple(getattr(ray.exceptions, name) for name in LOST)
        try:
            ret = ray.get(ref)
        except lost as exc:
            kind, why = type(exc).__name__, str(exc).strip().splitlines()[0]
            error = f"Ray task {ref.task_id().hex()} ended without a result: {kind}: {why}"
            return self._record_lost(overrides, idx, error, ray_error=kind, node=None)
        if isinstance(ret, Exited):
            raise SystemExit(ret.code)
        return ret

    def _record_lost(self, overrides: list[str], num: int, error: str, **extra) -> JobReturn:
        from attnsvm.lost_jobs import lost_job_return

        assert self.hydra_context is not None and self.config is not None
        return lost_job_return(self.hydra_context, self.config, overrides, num, error, **extra)


def import_ray():
    """Ray, imported only by a sweep that uses it (the base install has none)."""
    try:
        import ray
    except ImportError:
        raise SystemExit("attnsvm: hydra/launcher=ray needs Ray: pip install -e '.[ray]'") from None
    return ray


def job_device(overrides: Sequence[str], config: DictConfig | None) -> str:
    """The ``device`` a job runs on: its last ``device=`` override, else the sweep's."""
    for item in reversed(list(overrides)):
        key, sep, value = item.lstrip("+~").partition("=")
        if sep and key == "device":
            return value.strip()
    device = config.get("device", "cpu") if config is not None else "cpu"
    return str(getattr(device, "value", device))  # a structured config holds the enum
