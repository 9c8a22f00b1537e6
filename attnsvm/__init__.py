"""attnsvm: reproduce and extend *Transformers as Support Vector Machines* (arXiv:2308.16898)."""

__version__ = "0.1.0"
