"""``manage.py record``: a reverse proxy in front of a model API that records every call it passes.

- :mod:`.proxy` forwards and streams (aiohttp), never waiting on storage;
- :mod:`.headers` decides which headers go upstream, come back, and are ever written;
- :mod:`.conversations` groups calls into sessions and keeps each one's last response id;
- :mod:`.diagnose` adds the provider's cache diagnostics request field;
- :mod:`.capture` turns a passed call into a claude-trace record;
- :mod:`.recorder` stores records on a thread of its own, spooling them (:mod:`.spool`) while the
  database is away.
"""
