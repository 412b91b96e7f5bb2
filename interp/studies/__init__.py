"""The studies: one subpackage per paper, each built on the core engine only, and ``audit``, which
runs them all.

=============  ==================================================================================
study          what it measures
=============  ==================================================================================
``coe``        chain of embedding: the layer-wise distance between last-token states with and
               without the image, the Visual Integration Point (VIP) and Total Visual Integration
               (TVI); CLI ``interp coe``
``decoding``   training-free contrastive decoding (VCD, ICD, VDD, M3ID, PAI) evaluated POPE-style,
               greedy and sampled; CLI ``interp decoding``
``conflict``   modality conflict: which evidence source the answer follows, per evidence form and
               order, layer-wise probes, contrastive decoding as a diagnostic; CLI
               ``interp conflict``
``flow``       information flow by attention knockout: Δ log p(answer) when the question or the
               last position cannot read the image (or the question) in a window of layers, the
               causal integration layer; CLI ``interp flow``
``audit``      every study the data supports, one self-contained HTML report; CLI ``interp audit``
``drives``     temporal causal drives: per-token question, visual and prefix drives (the paper's
               QCD, VCD, PCD; this VCD is not visual contrastive decoding) of a generated answer by
               teacher-forced scoring under interventions on the image, the question and the
               prefix; source removal, recovery vs PMI, trajectory clusters, S_PV; CLI
               ``interp drives``
``ablation``   no-image ablation across question wordings: accuracy of the same items with and
               without the image per wording variant and category, the text-only baseline,
               in-context examples matched to the variant; CLI ``interp ablation``
``recall``     visual-reference recall: Text-Only / Visual / Full Info accuracy, the logit lens and
               Visual-vs-Full-Info cosine of linking successes and failures, failure probes with
               selective prediction and cross-family transfer; CLI ``interp recall``
``attribute``  where in the image: occlusion, attribution-patching and attention maps over image
               regions, and the share of each map's mass in the asked object's box; CLI
               ``interp attribute``
``reproduce``  each paper's main table on a model, with the paper's settings, beside the paper's
               published rows (the recipes the studies' registry entries name); CLI
               ``interp reproduce``
=============  ==================================================================================

A study is a package here — ``__init__`` (lazy public names, and ``ENTRY``, the study's
declaration in the study registry, :mod:`interp.study_registry`, which the one line of the
``interp.studies`` entry points of ``pyproject.toml`` names), ``measure`` (the model runs),
``analysis`` (tables, statistics), ``figures``, ``cli`` (its command: the ``register(subparsers)``
its entry names), ``audit`` (what data it needs and its section of the ``interp audit`` report: the
``STUDY`` its entry names) and job modules where a job is big — plus a notebook and a bench script.
The core (``interp``'s top-level modules) never imports a study, nor does the audit. This table is
checked against the registry (``tests/core/test_study_registry.py``).
"""
