"""DeepSeek Harness logs (the dsh vocabulary itself): ``session.jsonl`` and zstd-framed logs, the
provider calls recovered from them, and the host's projection cache files.

May import: ``projections.formats.reading`` and the log model.
"""
