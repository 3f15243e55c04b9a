"""The results store: one campaign per file (SQLite, WAL)."""
from .schema import SCHEMA_VERSION
from .sqlite import Store, StoreError, TrialRow, trial_from_dict

__all__ = ["SCHEMA_VERSION", "Store", "StoreError", "TrialRow", "trial_from_dict"]
