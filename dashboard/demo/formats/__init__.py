"""The demo's files in each format Cachescope reads, written as their real writers write them:
Claude Code transcripts, claude-trace logs, Anthropic and OpenAI captures (JSON and SSE on the
wire), and dsh session logs with their projection caches.

May import: the standard library, ``zstandard`` and the rest of ``dashboard.demo``; never Django.
"""
