#!/usr/bin/env bash
# A local Ray cluster (`ray start --head`) in its own virtual environment, and the launcher test
# against it: the same sweep through hydra/launcher=ray_cluster gives the same rows as the basic
# and joblib launchers (tests/test_launchers.py, run with that environment's Python).
#
#   .ci/ray-cluster.sh test     # venv if missing, start the head, run the tests, stop the head
#   .ci/ray-cluster.sh up       # venv if missing, start the head (idempotent)
#   .ci/ray-cluster.sh down     # ray stop
#
# Not part of CI: building the environment (torch, ray, hydra-ray-launcher) takes about two
# minutes and the sweep one more, beyond the cluster tier's budget; docs/scaling.md.
# hydra-ray-launcher pins cloudpickle<3 and so an older joblib than attnsvm's main environment:
# the venv is $ATTNSVM_RAY_VENV (default .venv-ray), kept between runs.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${ATTNSVM_RAY_VENV:-.venv-ray}
CPUS=${ATTNSVM_RAY_CPUS:-2}

say() { echo "ray-cluster: $*" >&2; }

venv() {
    if [ ! -x "$VENV/bin/ray" ] || ! "$VENV/bin/python" -c "import pytest" 2>/dev/null; then
        say "building $VENV (torch, .[ray], pytest)"
        python3 -m venv "$VENV"
        "$VENV/bin/pip" install -q "$(grep -E '^torch==' constraints.txt)"
        "$VENV/bin/pip" install -q -e ".[ray]" "pytest>=8"
    fi
}

up() {
    venv
    if "$VENV/bin/ray" status >/dev/null 2>&1; then
        say "a Ray cluster is already running: using it"
        return 0
    fi
    "$VENV/bin/ray" start --head --num-cpus="$CPUS" --include-dashboard=false \
        --disable-usage-stats >/dev/null
    "$VENV/bin/ray" status >/dev/null
    say "up: a Ray head with $CPUS CPUs (RAY_ADDRESS=auto)"
}

down() {
    [ -x "$VENV/bin/ray" ] && "$VENV/bin/ray" stop >/dev/null 2>&1 || true
}

case ${1:-} in
    up) up ;;
    down) down ;;
    test)
        venv
        if ! "$VENV/bin/ray" status >/dev/null 2>&1; then up && trap down EXIT; fi
        RAY_ADDRESS=auto "$VENV/bin/python" -m pytest -p no:cacheprovider -q \
            tests/test_launchers.py ;;
    *) echo "usage: $0 up|down|test" >&2; exit 2 ;;
esac
