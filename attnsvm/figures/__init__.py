"""attnsvm.figures.common."""
