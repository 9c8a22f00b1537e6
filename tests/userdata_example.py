"""A user's own generator, as the README shows it: the published draw, scaled tokens.

python -m attnsvm.run dataset=callable dataset.target=userdata_example.make
"""

import numpy as np

from attnsvm.data.generators import published_instance


def make(seeds, n, T, d, scale=1.0):
    """The published instance of each seed, tokens times ``scale``: dict of (len(seeds), ...)."""
    draws = [published_instance(s, n, T, d) for s in seeds]
    X, Y, Z, v = (np.stack([dr[k].double().numpy() for dr in draws]) for k in range(4))
    return {"X": scale * X, "Y": Y, "Z": Z, "v": v}
