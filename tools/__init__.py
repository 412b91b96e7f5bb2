"""Repository tooling: not part of the installed package."""
