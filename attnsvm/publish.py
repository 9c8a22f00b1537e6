"""``python -m attnsvm.publish``: the command; the work is in attnsvm/results/publish.py."""

import sys

from attnsvm.results.publish import main

if __name__ == "__main__":
    sys.exit(main())
