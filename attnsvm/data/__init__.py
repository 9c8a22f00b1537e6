"""attnsvm.data.generators."""
