"""Figures' shared style (files.py: the theme, PNG + PDF). Each experiment draws its own
figures in its package (its entry's ``figures``); this package names none of them."""


def draw_to_files_only() -> None:
    """For entry points that draw only into files (``python -m attnsvm.aggregate``, the report,
    the figure commands): matplotlib's Agg backend, whatever display the machine has. Library
    code never chooses the backend: in a notebook it stays the notebook's."""
    import matplotlib

    matplotlib.use("Agg")
