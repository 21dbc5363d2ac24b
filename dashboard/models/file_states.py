"""Where the ingest of each log file stopped, so a refresh costs what is new (issue 26).

A file whose size, modification time and identity are those recorded is skipped at the cost of
one ``stat``. A file that grew is checked by two hashes (its head, and the bytes just before the
recorded offset) and read from the offset with the reader's state; one that shrank, or whose
hashed bytes changed, is read whole again and its sessions stored anew.
"""

from __future__ import annotations

from django.db import models

from dashboard.models.sessions import Source


class FileState(models.Model):
    """One log file as the last ingest of it left it."""

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="file_states")
    path = models.CharField(max_length=2000, help_text="The file's absolute path.")
    format = models.CharField(max_length=40)
    size = models.BigIntegerField(help_text="Bytes, when it was last read.")
    mtime_ns = models.BigIntegerField(help_text="Modification time in nanoseconds, when it was last read.")
    file_id = models.CharField(
        max_length=60, help_text="Device and inode, ``dev:ino``: a file put in this one's place has others."
    )
    offset = models.BigIntegerField(help_text="Byte offset after the last whole line read.")
    line = models.BigIntegerField(default=0, help_text="Lines before the offset.")
    head_hash = models.CharField(
        max_length=32, help_text="BLAKE2b of the file's first bytes, up to the offset."
    )
    tail_hash = models.CharField(max_length=32, help_text="BLAKE2b of the bytes just before the offset.")
    reader_state = models.JSONField(
        null=True,
        blank=True,
        help_text="What the reader carries across lines; null: read whole when it grows.",
    )
    session_ids = models.JSONField(default=list, help_text="External ids of the sessions the file holds.")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["source", "path"], name="file_state_source_path")]

    def __str__(self) -> str:
        return self.path
