"""attnsvm.train.loop."""
