"""Training and evaluation of ``demo-smol`` (its model and checkpoint: ``interp.demo.smol``)."""
