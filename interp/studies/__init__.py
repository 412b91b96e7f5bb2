"""The studies: one module (or subpackage) per paper, each built on the core engine only.

=============  ==================================================================================
study          what it measures
=============  ==================================================================================
``coe``        chain of embedding: the layer-wise distance between last-token states with and
               without the image, the Visual Integration Point (VIP) and Total Visual Integration
               (TVI); CLI ``interp diagnose``
``recall``     visual-reference recall: Text-Only / Visual / Full Info accuracy, the logit lens and
               Visual-vs-Full-Info cosine of linking successes and failures, failure probes with
               selective prediction and cross-family transfer; CLI ``interp recall``
=============  ==================================================================================

A study is a module here, a CLI subcommand (a ``register(subparsers)`` function listed in the
``interp.studies`` entry points of ``pyproject.toml``), a notebook and a bench script. The core
(``interp``'s top-level modules) never imports a study.
"""
