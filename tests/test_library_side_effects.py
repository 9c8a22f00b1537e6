"""Library code leaves its caller's process as it found it: ``attnsvm.compose``, ``run_job``,
``load_sweep``, ``sql`` and ``aggregate`` called in a notebook's process change no signal
handler, no state of the garbage collector (enabled, thresholds, frozen objects), no malloc
setting, no subreaper flag, no matplotlib setting (the figures' style), and never end the
process. Process-wide switches belong to entry points only
(attnsvm/run.py's ``cli``, a sweep's worker: attnsvm/workers.py, ``__main__`` modules)."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap

from conftest import REPO

SCRIPT = textwrap.dedent(
    """
    import ctypes, gc, signal, sys
    import matplotlib
    mallopts = []
    _getattr = ctypes.CDLL.__getattr__
    def _spy(self, name):                      # every ctypes lookup of a libc function
        if name == "mallopt":
            mallopts.append(name)
        return _getattr(self, name)
    ctypes.CDLL.__getattr__ = _spy

    def state():
        libc = ctypes.CDLL(None)
        flag = ctypes.c_int(-1)
        libc.prctl(37, ctypes.byref(flag), 0, 0, 0)  # PR_GET_CHILD_SUBREAPER
        handlers = {
            int(s): signal.getsignal(s)
            for s in signal.valid_signals()
            if s not in (signal.SIGKILL, signal.SIGSTOP)
        }
        return {
            "signal handlers": handlers,
            "gc enabled": gc.isenabled(),
            "gc thresholds": gc.get_threshold(),
            "gc frozen": gc.get_freeze_count(),
            "subreaper": flag.value,
            "matplotlib settings": dict(matplotlib.rcParams),
        }

    matplotlib.use("svg")  # the user's own backend (a notebook's): library code keeps it
    before = state()
    import attnsvm
    out = sys.argv[1]
    cfg = attnsvm.compose(["dataset.d=3", "seeds=2", "optimizer.steps=20"])
    attnsvm.run_job(cfg, out_dir=out + "/sweep/0")
    attnsvm.run_job(["dataset.d=4", "seeds=1", "optimizer.steps=20"])
    sweep = attnsvm.load_sweep(out + "/sweep")
    rows = attnsvm.sql("SELECT count(*) AS n FROM runs", out + "/sweep")
    from attnsvm.results.aggregate import aggregate
    _, _, written = aggregate(out + "/sweep", out + "/summary")  # gd's figures, in house style
    assert any(p.suffix == ".png" for p in written), written
    assert len(sweep.runs) == 2 and int(rows.n[0]) == 2, (len(sweep.runs), rows)
    after = state()
    changed = {k: (before[k], after[k]) for k in before if before[k] != after[k]}
    assert not changed, changed
    assert not mallopts, "mallopt called by library code"
    print("left as found")
    """
)


def test_library_calls_leave_the_process_as_they_found_it(tmp_path):
    script = tmp_path / "notebook.py"
    script.write_text(SCRIPT)
    res = subprocess.run(
        [sys.executable, str(script), str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.rstrip().endswith("left as found"), res.stdout + res.stderr  # no early exit


SWITCHES = {
    ("gc", "freeze"),
    ("gc", "disable"),
    ("gc", "unfreeze"),
    ("gc", "set_threshold"),
    ("os", "_exit"),
    ("signal", "signal"),
    ("matplotlib", "use"),  # the backend
    ("sns", "set_theme"),  # every figure's style after it
}
WORDS = ("mallopt", "PR_SET_CHILD_SUBREAPER")
# where a process-wide switch may be made: entry points (the CLI, a sweep's worker, __main__
# modules), the guard a job runs under that puts signal handlers back as they were, and the
# backend choice that the drawing entry points call (attnsvm/figures: draw_to_files_only)
ENTRY_POINTS = {
    "attnsvm/run.py",
    "attnsvm/workers.py",
    "attnsvm/interrupt.py",
    "attnsvm/figures/__init__.py",
}


def test_process_wide_switches_are_made_by_entry_points_only():
    found = []
    for path in sorted([*REPO.glob("attnsvm/**/*.py"), *REPO.glob("hydra_plugins/**/*.py")]):
        rel = path.relative_to(REPO).as_posix()
        if rel in ENTRY_POINTS or path.name == "__main__.py":
            continue
        text = path.read_text()
        found += [f"{rel}: {word}" for word in WORDS if word in text]
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                if (node.value.id, node.attr) in SWITCHES:
                    found.append(f"{rel}:{node.lineno}: {node.value.id}.{node.attr}")
    assert not found, found
