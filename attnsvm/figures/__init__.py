"""Figures' shared style (files.py: the theme, PNG + PDF). Each experiment draws its own
figures in its package (its entry's ``figures``); this package names none of them."""
