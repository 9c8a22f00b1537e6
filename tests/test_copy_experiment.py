"""docs/extending.md's recipe for a new built-in experiment, done in a copy of the tree: copy
the smallest package (regpath) to ``mypath``, rename it everywhere, delete its readme_rows.py; the
new experiment runs with its own group (no conf/experiment/mypath.yaml: its job config at its
defaults), and the default job's hash is the one this checkout gives (a new experiment moves no
old job)."""

from __future__ import annotations

import shutil

import pandas as pd
from test_remove_experiment import _copy_without, _run

from cli_helpers import REPO

PROBE = "from attnsvm.composition import RunConfig, config_hash; "
PROBE += "print(config_hash(RunConfig()))"


def test_a_copy_of_the_smallest_package_is_a_new_experiment(tmp_path):
    tree = _copy_without(tmp_path, None)
    experiments = tree / "attnsvm" / "experiments"
    shutil.copytree(experiments / "regpath", experiments / "mypath")
    for module in (experiments / "mypath").glob("*.py"):
        module.write_text(module.read_text().replace("regpath", "mypath"))
    (experiments / "mypath" / "readme_rows.py").unlink()  # the README's rows: it has none yet

    out = tmp_path / "run"
    overrides = ["experiment=mypath", "mypath.points=3", "mypath.steps=20", "seeds=2"]
    proc = _run(tree, "-m", "attnsvm.run", *overrides, f"hydra.run.dir={out}")
    assert proc.returncode == 0, proc.stdout
    runs = pd.read_parquet(out / "runs.parquet")
    assert set(runs.experiment) == {"mypath"} and len(runs) == 2

    here, copied = _run(REPO, "-c", PROBE), _run(tree, "-c", PROBE)
    assert copied.returncode == 0 and here.returncode == 0, copied.stdout + here.stdout
    assert copied.stdout.split()[-1] == here.stdout.split()[-1]
