"""Cachescope's deterministic demo data: a realistic fleet in every supported format.

``write_demo_dataset`` writes the demo and test fixture dataset with a manifest of what each file
must read as; ``write_corpus`` writes a large dsh corpus for the ingest benchmark; ``refold_corpus``
yields a reference-shaped corpus of event logs for the re-fold benchmark without touching disk.
"""

from __future__ import annotations

from dashboard.demo.corpus import CorpusStats, refold_corpus, write_corpus
from dashboard.demo.dataset import write_demo_dataset
from dashboard.demo.manifest import DemoManifest, ExpectedSession, ManifestFile, UsageTotals

__all__ = [
    "CorpusStats",
    "DemoManifest",
    "ExpectedSession",
    "ManifestFile",
    "UsageTotals",
    "refold_corpus",
    "write_corpus",
    "write_demo_dataset",
]
