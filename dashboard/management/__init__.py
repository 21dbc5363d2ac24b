"""CLI verbs: each ``manage.py`` command a thin wrapper over one capability's service."""
