"""``python -m tools.demo.evaluate``: print (and optionally write) the demo evaluation tables."""

from .report import main

if __name__ == "__main__":
    main()
