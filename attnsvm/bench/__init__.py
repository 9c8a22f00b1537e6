"""attnsvm.bench.cases."""
