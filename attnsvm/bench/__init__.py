"""The benchmarks: ``python -m attnsvm.bench`` (cli.py: the cases of train_cases.py,
svm_cases.py and experiment_cases.py, timed by timing.py against naive.py, reported by
report.py and readme.py), ``python -m attnsvm.bench.gpu`` and ``python -m attnsvm.bench.scale``."""
