"""``python -m attnsvm.bench``: the benchmark suite (attnsvm/bench/cases.py)."""

from attnsvm.bench.cases import main

main()
