"""The OTLP/HTTP receiver: export requests in protobuf or JSON, read into usage-only sessions.

May import: ``dashboard.ingest`` (``api.http`` for the shared reading of a request) and what it may import.
"""
