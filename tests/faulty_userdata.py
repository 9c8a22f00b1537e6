"""Generators for dataset=callable that go wrong in the ways tests/test_faults.py checks."""

from userdata_example import make


def returns_list(seeds, n, T, d):
    """The right arrays in the wrong container."""
    return list(make(seeds, n, T, d).values())


def raises(seeds, n, T, d):
    raise RuntimeError("the lab's data server is down")


def huge_tokens(seeds, n, T, d):
    """The published instances with tokens times 1e300: their SVM products overflow."""
    return make(seeds, n, T, d, scale=1e300)


def tiny_tokens(seeds, n, T, d):
    """Tokens times 1e-300: their SVM products underflow to 0 (every seed 'infeasible')."""
    return make(seeds, n, T, d, scale=1e-300)


def no_arguments():
    """Not a generator's signature."""
    return {}
