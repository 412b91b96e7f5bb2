"""Statistics and probes over traced tensors (numpy in, numpy out)."""
