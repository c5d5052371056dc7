"""``python -m labkit VERB``: the thin entry point; the command line lives in `labkit.cli`."""
import sys

from labkit.cli import main

if __name__ == "__main__":
    sys.exit(main())
