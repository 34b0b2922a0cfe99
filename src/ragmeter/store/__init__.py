"""The experiment store: every run, evaluation, comparison, answer set and judge validation,
remembered in one database (SQLite by default, PostgreSQL for a team). See docs/store.md.

Everything outside this package reads and writes stored data through these names: the
:class:`Store` and the records it returns; nothing else issues SQL or imports a module of it.
"""

from ._damage import (
    DamagedRowError,
    DamagedRowWarning,
    collect_skipped,
    row_label,
    skipped,
    skipped_so_far,
)
from ._engine import connect_timeout, dispose_engines, is_database_error, on_slow_connect
from ._labelling import EditConflict, ItemRow, LabellerRow, LabelRow, NewItem, QueueRow
from ._listings import (
    AnswerSetRow,
    ComparisonRow,
    GoldenVersionRow,
    JudgeValidationRow,
    RunPage,
    StoredAnswerSet,
    StoredJudgeValidation,
)
from ._migrate import SchemaState, schema_state, upgrade_schema
from ._protect import Protected, export_names, protected_paths
from ._records import RunRecord
from ._runs import end_unfinished, start_runs
from ._store import Store
from ._transfer import Imported, PathImported, export_files
from ._trends import TrendPoint
from ._url import display_url, is_sqlite, resolve_url, sqlite_path
from ._values import row_id

__all__ = [
    "AnswerSetRow",
    "ComparisonRow",
    "DamagedRowError",
    "DamagedRowWarning",
    "EditConflict",
    "GoldenVersionRow",
    "Imported",
    "ItemRow",
    "JudgeValidationRow",
    "LabelRow",
    "LabellerRow",
    "NewItem",
    "PathImported",
    "Protected",
    "QueueRow",
    "RunPage",
    "RunRecord",
    "SchemaState",
    "Store",
    "StoredAnswerSet",
    "StoredJudgeValidation",
    "TrendPoint",
    "collect_skipped",
    "connect_timeout",
    "display_url",
    "dispose_engines",
    "end_unfinished",
    "export_files",
    "export_names",
    "is_database_error",
    "is_sqlite",
    "on_slow_connect",
    "protected_paths",
    "resolve_url",
    "row_id",
    "row_label",
    "schema_state",
    "skipped",
    "skipped_so_far",
    "sqlite_path",
    "start_runs",
    "upgrade_schema",
]
