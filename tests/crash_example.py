"""A generator whose process dies at one config point: how a killed job looks to a launcher.

python -m attnsvm.run -m dataset=callable dataset.target=crash_example.make \
    +dataset.kwargs.exit_at_d=3 dataset.d=2,3,4

At ``d == exit_at_d`` the job's process ends at once (``os._exit``: no exception, no cleanup),
as a worker killed by the OOM killer or a lost node does; other points are the published draw.

A positive ``sleep_s`` makes each draw last that long first (same numbers): a job long enough
to lose its node while it runs (tests/test_cluster_ray_nodes.py). With $CRASH_EXAMPLE_CALLS
set, each call appends its ``d`` to that file: which jobs drew their data.
"""

import os
import time

from userdata_example import make as published


def make(seeds, n, T, d, exit_at_d=-1, sleep_s=0.0):
    if os.environ.get("CRASH_EXAMPLE_CALLS"):
        with open(os.environ["CRASH_EXAMPLE_CALLS"], "a") as fh:
            fh.write(f"{d}\n")
    if d == exit_at_d:
        os._exit(1)
    time.sleep(sleep_s)
    return published(seeds, n, T, d)
