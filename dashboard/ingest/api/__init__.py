"""The ingestion API (docs/api.md): bearer tokens, bounded NDJSON bodies read into sessions, and
background batches stored as ingest jobs.

May import: ``dashboard.ingest`` and what it may import.
"""
