"""``python -m attnsvm.query "SQL" DIR...``: the command (attnsvm/results/query.py)."""

import sys

from attnsvm.results.query import main

if __name__ == "__main__":
    sys.exit(main())
