"""OpenAI-family logs: Codex CLI rollouts, their ``ResponseItem`` payloads and token counts.

May import: ``projections.formats.reading`` and the log model.
"""
