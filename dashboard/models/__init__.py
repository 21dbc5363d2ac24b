"""The normalized records of DESIGN §3 and what is derived from them."""

from dashboard.models.analysis import RequestAnalysis, SessionAnalysis
from dashboard.models.blocks import Block
from dashboard.models.costs import SessionCostLedger
from dashboard.models.followups import PendingFollowup
from dashboard.models.host_notes import HostNote
from dashboard.models.ingest import IngestError, IngestJob, IngestNotice
from dashboard.models.prices import ModelPrice
from dashboard.models.projections import (
    FoldRun,
    FoldRunResult,
    ProjcacheCheck,
    ProjectionRow,
    ProjectionTally,
)
from dashboard.models.requests import Request
from dashboard.models.rollups import UsageRollup
from dashboard.models.savings import ScenarioSaving, SessionSavings
from dashboard.models.sessions import Event, Session
from dashboard.models.sources import Source
from dashboard.models.tokens import ApiToken
from dashboard.models.warnings import Warning, WarningGroup

__all__ = [
    "ApiToken",
    "Block",
    "Event",
    "FoldRun",
    "FoldRunResult",
    "HostNote",
    "IngestError",
    "IngestJob",
    "IngestNotice",
    "ModelPrice",
    "PendingFollowup",
    "ProjcacheCheck",
    "ProjectionRow",
    "ProjectionTally",
    "Request",
    "RequestAnalysis",
    "ScenarioSaving",
    "Session",
    "SessionAnalysis",
    "SessionCostLedger",
    "SessionSavings",
    "Source",
    "UsageRollup",
    "Warning",
    "WarningGroup",
]
