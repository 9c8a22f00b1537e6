"""``python -m attnsvm.bench``: the benchmark suite (attnsvm/bench/cli.py)."""

from attnsvm.bench.cli import main

main()
