"""gd's optimizer-geometry studies: step rules against SVM norms (``+sweeps=geometry``,
``geometry_d``), variants of one rule (``geometry_adam``) and mirror descent's Bregman paths
(``+sweeps=mirror``). figures.py draws them (variants.py the variants' table and figure),
plots.py declares their figure part, readme_rows.py their rows of the README's results tables."""
