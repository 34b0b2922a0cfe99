"""The store's Alembic migrations create exactly the tables the models describe, on SQLite and on
PostgreSQL, and undo them; ragmeter's idea of the newest schema is Alembic's."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.pool import NullPool

from ragmeter.store import Store
from ragmeter.store import _models as m
from ragmeter.store._migrate import HEAD, KNOWN, alembic_config, current_revision


def _diff(engine: sa.Engine) -> list[object]:
    """Alembic's autogenerate diff between the database and the models ([] when equal)."""
    with engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"compare_type": True})
        return list(compare_metadata(ctx, m.metadata))


def _tables(engine: sa.Engine) -> set[str]:
    with engine.connect() as conn:
        return set(sa.inspect(conn).get_table_names())


def _alembic(engine: sa.Engine, verb: str, revision: str) -> None:
    """``alembic upgrade|downgrade REVISION`` through Alembic's command API on this engine."""
    with engine.connect() as conn, conn.begin():
        getattr(command, verb)(alembic_config(conn), revision)


def test_upgrade_from_empty_equals_the_models_and_downgrade_undoes_it(store_url: str) -> None:
    engine = sa.create_engine(store_url, poolclass=NullPool)
    try:
        assert _tables(engine) == set()
        assert current_revision(engine) is None
        _alembic(engine, "upgrade", "head")
        assert current_revision(engine) == HEAD
        assert _tables(engine) == set(m.metadata.tables) | {"alembic_version"}
        assert _diff(engine) == []

        _alembic(engine, "downgrade", "base")
        assert _tables(engine) & set(m.metadata.tables) == set()
        assert _tables(engine) <= {"alembic_version"}
        assert current_revision(engine) is None

        _alembic(engine, "upgrade", "head")
        assert current_revision(engine) == HEAD
        assert _diff(engine) == []
    finally:
        engine.dispose()


def test_a_diff_is_seen_when_the_database_differs(store_url: str) -> None:
    """The comparison above can fail: a dropped index and an extra column are both reported."""
    engine = sa.create_engine(store_url, poolclass=NullPool)
    try:
        _alembic(engine, "upgrade", "head")
        with engine.begin() as conn:
            conn.execute(sa.text("ALTER TABLE ledger ADD COLUMN stray INTEGER"))
            conn.execute(sa.text("DROP INDEX ix_runs_status"))
        kinds = sorted(d[0] for d in _diff(engine) if isinstance(d, tuple))
        assert kinds == ["add_index", "remove_column"]
    finally:
        engine.dispose()


def test_opening_a_store_migrates_to_the_same_schema(store_url: str) -> None:
    with Store.open(store_url, migrate=True) as store:
        assert current_revision(store.engine) == HEAD
        assert _diff(store.engine) == []


def test_head_and_known_revisions_match_the_script_directory() -> None:
    scripts = ScriptDirectory.from_config(alembic_config())
    assert scripts.get_heads() == [HEAD]
    oldest_first = tuple(r.revision for r in scripts.walk_revisions())[::-1]
    assert oldest_first == KNOWN
    assert KNOWN[-1] == HEAD
