"""Training and evaluation of ``demo-omni`` and its control model (their model and checkpoints:
``interp.demo.omni``)."""
