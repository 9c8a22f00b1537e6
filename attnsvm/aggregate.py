"""``python -m attnsvm.aggregate DIR``: the command; the work is in attnsvm/results/aggregate.py."""

import sys

from attnsvm.results.aggregate import main

if __name__ == "__main__":
    sys.exit(main())
