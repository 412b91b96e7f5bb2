"""Repository tooling, outside the installed packages: the zoo runner and docs/families.md, the real-tokenizer fetcher and fixtures, the pins, digests and import-layer checks."""
