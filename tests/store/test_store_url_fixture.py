"""The ``store_url`` fixture: every store test gets an empty database of its own, on SQLite and on
PostgreSQL (a private schema carried in the URL), that other processes reach through the URL."""

from __future__ import annotations

import os
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path

import pytest
import sqlalchemy as sa
from _database import fresh_schema, server_url
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

#: A child process: insert one row into ``probe`` through the URL, print the schema it wrote to.
CHILD = """
import sys
import sqlalchemy as sa
engine = sa.create_engine(sys.argv[1])
with engine.begin() as conn:
    conn.execute(sa.text("INSERT INTO probe (label) VALUES (:label)"), {"label": sys.argv[2]})
    if engine.dialect.name == "postgresql":
        print(conn.execute(sa.text("SELECT current_schema()")).scalar_one())
engine.dispose()
"""

_seen: set[str] = set()


def _schema(url: str) -> str | None:
    """The schema a PostgreSQL test URL selects (None for SQLite)."""
    options = make_url(url).query.get("options")
    if options is None:
        return None
    assert isinstance(options, str) and options.startswith("-csearch_path=")
    return options.removeprefix("-csearch_path=")


def _probe(url: str) -> tuple[sa.Engine, sa.Table]:
    engine = sa.create_engine(url, poolclass=NullPool)
    table = sa.Table(
        "probe",
        sa.MetaData(),
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("label", sa.String(40), nullable=False),
    )
    table.metadata.create_all(engine)
    return engine, table


def _labels(engine: sa.Engine, table: sa.Table) -> list[str]:
    with engine.connect() as conn:
        return list(conn.execute(sa.select(table.c.label).order_by(table.c.id)).scalars())


def test_a_subprocess_writes_where_the_test_reads(store_url: str) -> None:
    engine, table = _probe(store_url)
    child = subprocess.run(
        [sys.executable, "-c", CHILD, store_url, "from the child"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ},
    )
    assert child.returncode == 0, child.stderr
    assert _labels(engine, table) == ["from the child"]
    schema = _schema(store_url)
    if engine.dialect.name == "postgresql":
        assert schema is not None and schema.startswith("t_")
        # the child wrote into the test's schema, and the table lives there, not in public
        assert child.stdout.strip() == schema
        names = sa.inspect(engine)
        assert "probe" in names.get_table_names(schema=schema)
        assert "probe" not in names.get_table_names(schema="public")
    else:
        assert engine.dialect.name == "sqlite" and schema is None
    engine.dispose()


@pytest.mark.parametrize("turn", ["first", "second"])
def test_every_test_starts_with_an_empty_database_of_its_own(store_url: str, turn: str) -> None:
    # both turns create the same table: a database shared with another test (or left over from
    # one) would already hold it, or the other turn's row
    assert store_url not in _seen
    _seen.add(store_url)
    engine = sa.create_engine(store_url, poolclass=NullPool)
    assert sa.inspect(engine).get_table_names() == []
    engine, table = _probe(store_url)
    with engine.begin() as conn:
        conn.execute(table.insert().values(label=turn))
    assert _labels(engine, table) == [turn]
    engine.dispose()


def test_two_schemas_at_once_do_not_see_each_others_tables(store_url: str, tmp_path: Path) -> None:
    with ExitStack() as stack:
        base = server_url()
        if _schema(store_url) is None:
            other = f"sqlite:///{tmp_path}/other.db"
        else:
            assert base is not None
            other = stack.enter_context(fresh_schema(base))
        assert other != store_url
        mine, my_table = _probe(store_url)
        theirs, their_table = _probe(other)
        with mine.begin() as conn:
            conn.execute(my_table.insert().values(label="mine"))
        with theirs.begin() as conn:
            conn.execute(their_table.insert().values(label="theirs"))
        assert _labels(mine, my_table) == ["mine"]
        assert _labels(theirs, their_table) == ["theirs"]
        # a table made in one is not visible in the other
        sa.Table("only_mine", sa.MetaData(), sa.Column("x", sa.Integer)).create(mine)
        assert "only_mine" in sa.inspect(mine).get_table_names()
        assert "only_mine" not in sa.inspect(theirs).get_table_names()
        mine.dispose()
        theirs.dispose()


def test_the_private_schema_is_dropped_with_its_tables() -> None:
    base = server_url()
    if base is None:
        # justified: a PostgreSQL server is outside the repo; .ci/run starts one and sets the URL
        pytest.skip("needs RAGMETER_TEST_DATABASE_URL (tools/pg_test_server.sh start DIR)")
    with fresh_schema(base) as url:
        schema = _schema(url)
        engine, _ = _probe(url)
        engine.dispose()
    engine = sa.create_engine(base, poolclass=NullPool)
    assert schema is not None and schema not in sa.inspect(engine).get_schema_names()
    engine.dispose()


def test_the_default_store_is_private_to_the_test_session() -> None:
    # the session fixture points the default store away from the repository's .ragmeter/
    url = os.environ["RAGMETER_DATABASE_URL"]
    assert url.startswith("sqlite:///")
    path = Path(url.removeprefix("sqlite:///"))
    repo = Path(__file__).resolve().parents[2]
    assert path.name == "ragmeter.db" and repo not in path.parents
    assert repo not in Path(os.environ["RAGMETER_ARTIFACTS"]).parents
