"""The experiment store: every run, evaluation, comparison, answer set and judge validation,
remembered in one database (SQLite by default, PostgreSQL for a team). See docs/store.md."""

from ._records import RunRecord
from ._store import Store

__all__ = ["RunRecord", "Store"]
