"""Database URLs for store tests: a private PostgreSQL schema per test, usable from any process.

``tools/pg_test_server.sh start DIR`` starts a throwaway server and prints its URL; export it as
``RAGMETER_TEST_DATABASE_URL`` (``.ci/run`` does) to run every store test on PostgreSQL too.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager

ENV = "RAGMETER_TEST_DATABASE_URL"
PG_HINT = (
    f"set {ENV} to a PostgreSQL URL to run the store tests on PostgreSQL too; "
    "start a throwaway server with `tools/pg_test_server.sh start DIR` (it prints the URL; "
    "`tools/pg_test_server.sh stop DIR` stops it)"
)


def server_url() -> str | None:
    """The test server's URL, or None when none is configured."""
    return os.environ.get(ENV) or None


def in_schema(url: str, schema: str) -> str:
    """``url`` with every connection's ``search_path`` set to ``schema``.

    The setting travels in the URL (``?options=-csearch_path%3D<schema>``, a libpq option that
    psycopg passes to the server), so a subprocess given the URL uses the schema too.
    """
    from sqlalchemy.engine import make_url

    u = make_url(url).update_query_dict({"options": f"-csearch_path={schema}"})
    return u.render_as_string(hide_password=False)


@contextmanager
def fresh_schema(base_url: str) -> Iterator[str]:
    """Create schema ``t_<random hex>`` on the server, yield a URL that uses it, then drop it
    with everything in it (a connection left idle in a transaction fails the drop after 30 s
    instead of hanging the suite)."""
    import sqlalchemy as sa
    from sqlalchemy.pool import NullPool

    schema = f"t_{secrets.token_hex(8)}"
    engine = sa.create_engine(base_url, poolclass=NullPool)
    try:
        with engine.begin() as conn:
            conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
        try:
            yield in_schema(base_url, schema)
        finally:
            with engine.begin() as conn:
                conn.execute(sa.text("SET LOCAL lock_timeout = '30s'"))
                conn.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
    finally:
        engine.dispose()
