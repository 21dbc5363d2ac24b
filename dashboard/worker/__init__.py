"""What a Celery worker runs and how work reaches it: ``tasks`` gathers every task of the capability
packages (for the worker's autodiscovery and the ingest follow-ups), and ``queueing`` puts jobs on the
queue where a broker can refuse, and hands on the jobs of a worker that died.

May import: every capability package. Only commands, views and tasks import it.
"""
