"""The normalized records of DESIGN §3 and what is derived from them."""

from dashboard.models.alerts import Alert, AlertNotification, AlertRule
from dashboard.models.analysis import RequestAnalysis, SessionAnalysis
from dashboard.models.costs import ModelPrice, SessionCostLedger
from dashboard.models.file_states import FileState
from dashboard.models.followups import PendingFollowup
from dashboard.models.host_notes import HostNote
from dashboard.models.ingest import IngestError, IngestJob, IngestNotice
from dashboard.models.projections import (
    FoldRun,
    FoldRunResult,
    ProjcacheCheck,
    ProjectionRow,
    ProjectionTally,
)
from dashboard.models.requests import Block, Request
from dashboard.models.rollups import UsageRollup
from dashboard.models.savings import ScenarioSaving, SessionSavings
from dashboard.models.sessions import Event, Session, Source
from dashboard.models.tokens import ApiToken
from dashboard.models.warnings import Warning, WarningGroup

__all__ = [
    "Alert",
    "AlertNotification",
    "AlertRule",
    "ApiToken",
    "Block",
    "Event",
    "FileState",
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
