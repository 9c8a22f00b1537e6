"""attnsvm.results.store."""
