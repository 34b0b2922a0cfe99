"""Alembic environment for the ragmeter store: runs on the connection ragmeter hands over
(``config.attributes["connection"]``), or on ``sqlalchemy.url`` when Alembic's own command line
is used (``alembic -x url=...``)."""

from __future__ import annotations

from typing import Any

from alembic import context

from ragmeter.store._models import metadata

config = context.config


def _run(connection: Any) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=True,  # SQLite alters tables by copying them
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


connection = config.attributes.get("connection")
if connection is not None:
    _run(connection)
else:  # pragma: no cover - the alembic command line
    from sqlalchemy import create_engine

    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option(
        "sqlalchemy.url"
    )
    if not url:
        raise SystemExit("give the database: alembic -x url=sqlite:///PATH upgrade head")
    with create_engine(url).connect() as conn:
        _run(conn)
        conn.commit()
