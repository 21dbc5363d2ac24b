"""Raw provider traffic of any provider: request/response captures and pairs, the halves of a
logged call whatever wrapped them, and streamed (SSE) response bodies.

May import: ``projections.formats.reading`` and the log model.
"""
