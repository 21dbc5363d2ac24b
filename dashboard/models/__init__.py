"""The normalized records of DESIGN §3 and what is derived from them."""

from dashboard.models.blocks import Block
from dashboard.models.ingest import IngestError, IngestJob
from dashboard.models.requests import Request
from dashboard.models.sessions import Event, Session
from dashboard.models.sources import Source
from dashboard.models.warnings import Warning

__all__ = ["Block", "Event", "IngestError", "IngestJob", "Request", "Session", "Source", "Warning"]
