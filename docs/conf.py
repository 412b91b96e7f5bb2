"""Sphinx configuration of the documentation site (``make docs`` builds it into ``docs/_build/html``).

Pages are MyST Markdown; the notebooks of ``notebooks/`` are rendered with myst-nb from their stored
outputs (the test suite executes them; the build never does); the API reference is autodoc over the
Google-style docstrings (napoleon). ``tests/demo/test_docs_site.py`` builds the site with warnings as
errors.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# importing the package for autodoc must not start threads or touch the network
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

project = "vlm-interp"
author = "the vlm-interp authors"
copyright = "the vlm-interp authors, Apache-2.0"
release = "0.2.0"

extensions = [
    "myst_nb",  # MyST Markdown pages and .ipynb notebooks
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
]

source_suffix = {".md": "myst-nb", ".ipynb": "myst-nb"}
root_doc = "index"
exclude_patterns = ["_build", "quoted_numbers", "**/.ipynb_checkpoints"]

# MyST: $...$ / $$...$$ math, GitHub-style heading anchors (the pages link to #section-names)
myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 4

# notebooks are shown with the outputs they were stored with; the test suite executes them
nb_execution_mode = "off"
nb_merge_streams = True

# autodoc: members in source order, the signature's types in the description
autodoc_member_order = "bysource"
autodoc_typehints = "description"
# every name is documented once, in the module that defines it: a module's ``__all__`` may list
# names it re-exports (interp.errors re-exports probes' errors), which would be documented twice
autodoc_default_options = {"members": True, "show-inheritance": True, "ignore-module-all": True}
napoleon_google_docstring = True
napoleon_numpy_docstring = False

html_theme = "alabaster"
html_title = "vlm-interp"
html_static_path: list[str] = []

# beartype (the test suite's run-time type checker, imported by interp.testing.typechecking) fails
# to import once nnsight has been imported ("unhashable type: 'instancemethod'"); the test suite
# imports it first (tests/conftest.py), and so does the build
try:
    import beartype  # noqa: F401
except ImportError:
    pass


def _skip_foreign(app, what, name, obj, skip, options):
    """scikit-learn adds ``set_*_request`` methods to every estimator subclass (metadata routing);
    their docstrings are scikit-learn's, with references to its own glossary: not documented here."""
    module = getattr(obj, "__module__", None) or ""
    if module.startswith("sklearn"):
        return True
    return skip


class _SameAliasFilter(logging.Filter):
    """Two studies name their judge type ``Judge`` (``interp.studies.conflict.labels.Judge``,
    ``interp.datasets.benchmarks.registry.Judge``), a type alias whose short name is all a
    signature shows: its cross-reference from a third module's signature is ambiguous by
    construction. Only that one warning is dropped; every other ambiguity fails the build."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "cross-reference 'Judge'" not in record.getMessage()


def _generated_lists(app, docname, source):
    """The studies page's table and contents and the studies' API reference, from the study
    registry (a registered study is listed without editing either page)."""
    from interp import study_registry as registry

    if docname == "studies":
        source[0] = source[0].replace(registry.STUDIES_MARKER, registry.studies_page())
    elif docname == "api/studies":
        source[0] = source[0].replace(registry.API_MARKER, registry.studies_api())


def setup(app):
    app.connect("autodoc-skip-member", _skip_foreign)
    app.connect("source-read", _generated_lists)
    logging.getLogger("sphinx.sphinx.domains.python").addFilter(_SameAliasFilter())
