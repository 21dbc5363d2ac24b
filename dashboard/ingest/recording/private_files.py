"""The recorder's files as only its own user may read them: each holds whole prompts and answers.

The archive and the spool were written 0644 under 0755 folders, so any local user could read every
recorded conversation. Folders are made (and, made before, set) 0700 and files 0600, whatever the
process's umask.
"""

from __future__ import annotations

import os
from pathlib import Path

FOLDER_MODE = 0o700
FILE_MODE = 0o600


def private_folder(folder: Path) -> Path:
    """``folder``, made if missing, readable by this user only."""
    folder.mkdir(parents=True, exist_ok=True, mode=FOLDER_MODE)
    if folder.stat().st_mode & 0o777 != FOLDER_MODE:
        folder.chmod(FOLDER_MODE)
    return folder


def private_open(path: Path, *, append: bool) -> int:
    """A descriptor on ``path`` for writing (appending, or truncating), made 0600; a file an older
    release left readable by others is set 0600 too."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC)
    descriptor = os.open(path, flags, FILE_MODE)
    os.fchmod(descriptor, FILE_MODE)
    return descriptor
