"""The package version, a leaf: modules that print it import nothing else of attnsvm."""

__version__ = "0.1.0"
