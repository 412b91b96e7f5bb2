"""The demo models' training and evaluation code (repository only, not installed).

``python -m tools.demo.train`` reproduces the demo model's checkpoint (``interp/demo/checkpoint``)
from a seed and ``python -m tools.demo.evaluate`` prints its evaluation tables; ``tools.demo.smol``
and ``tools.demo.omni`` do the same for ``demo-smol`` and ``demo-omni``. Run them from the
repository root (``make train-demo``, ``make evaluate-demo`` ...). The models' architecture,
processors and checkpoints stay in the installed package (``interp.demo``), which never imports
this one.
"""
