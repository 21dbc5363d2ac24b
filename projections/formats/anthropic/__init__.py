"""Anthropic-family logs: Claude Code transcripts (sessions, subagents, compactions), claude-trace
logs, connectome llm-calls, calls recorded by ``manage.py record``, and Messages content blocks.

May import: ``projections.formats.traffic``, ``projections.formats.reading`` and the log model.
"""
