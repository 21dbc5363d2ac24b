"""The folds: projections of a session's event log, the registry of their versions, and the fold loop."""
