"""gd's p-model examples: the published max-margin examples (maxmargin.py: their paths of p,
``+sweeps=maxmargin``) and attention on real images (digits.py: ``+sweeps=digits``). plots.py
declares their figure parts (each draws the runs whose data set reads its key), readme_rows.py
their rows of the README's results tables."""
