"""Content-addressed blobs: columnar tables as Parquet, records as gzipped JSON.

A blob is named by the sha256 of its bytes, so storing the same values twice stores them once.
Blobs up to ``INLINE_MAX`` bytes live in the database (one row, read with the record); larger
ones are Parquet or ``.json.gz`` files under the artifact folder (``ab/abcdef....parquet``),
written atomically before the row that names them, so a killed writer leaves at worst an
unreferenced file, never a row naming a missing one.
"""

from __future__ import annotations

import datetime as dt
import gzip
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._errors import InputError
from ..io._atomic import atomic_write

#: blobs larger than this go to files beside the database (bytes)
INLINE_MAX = 4 * 1024 * 1024
SUFFIX = {"parquet": ".parquet", "json.gz": ".json.gz"}


def table_bytes(table: Any) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return bytes(sink.getvalue().to_pybytes())


def json_bytes(obj: Any) -> bytes:
    text = json.dumps(obj, sort_keys=True, ensure_ascii=False, allow_nan=False)
    return gzip.compress(text.encode("utf-8"), compresslevel=6, mtime=0)


@dataclass(frozen=True)
class Stored:
    """A large blob whose file :meth:`Blobs.prepare_table` has already put in place."""

    digest: str
    kind: str
    size: int
    path: str  # relative to the artifact folder


class Blobs:
    """Reads and writes blobs through a connection; files under ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def prepare_table(self, table: Any) -> bytes | Stored:
        """A table as Parquet, made before the write transaction: the bytes of a small one; a
        large one written straight to its file in the artifact folder (no copy in memory, no
        second write, no write lock held meanwhile), for :meth:`put` to name in a row."""
        if table.nbytes <= INLINE_MAX:
            return table_bytes(table)
        import os
        import tempfile

        import pyarrow.parquet as pq

        from ..io._atomic import _fsync_file, _fsync_folder, _mode_for

        self.root.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=".blob-", suffix=".parquet.tmp", dir=self.root)
        os.close(fd)
        tmp = Path(name)
        try:
            pq.write_table(table, tmp)
            size = tmp.stat().st_size
            if size <= INLINE_MAX:  # compressed below the limit: it lives in the row
                return tmp.read_bytes()
            with open(tmp, "rb") as f:
                digest = hashlib.file_digest(f, "sha256").hexdigest()
            rel = f"{digest[:2]}/{digest}{SUFFIX['parquet']}"
            target = self.root / rel
            if not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                _fsync_file(tmp)
                os.chmod(tmp, _mode_for(target))
                os.replace(tmp, target)
                _fsync_folder(target.parent)
            return Stored(digest, "parquet", size, rel)
        finally:
            tmp.unlink(missing_ok=True)

    def put(self, conn: Any, data: bytes | Stored, kind: str) -> str:
        from . import _models as m

        if isinstance(data, Stored):  # its file is in place already
            conn.execute(
                _insert_ignore(conn, m.blobs).values(
                    hash=data.digest,
                    kind=data.kind,
                    size=data.size,
                    data=None,
                    path=data.path,
                    created_at=dt.datetime.now(dt.UTC),
                )
            )
            return data.digest
        digest = hashlib.sha256(data).hexdigest()
        path: str | None = None
        inline: bytes | None = data
        if len(data) > INLINE_MAX:
            rel = f"{digest[:2]}/{digest}{SUFFIX[kind]}"
            target = self.root / rel
            if not target.exists():
                atomic_write(target, data)
            path, inline = rel, None
        row = {
            "hash": digest,
            "kind": kind,
            "size": len(data),
            "data": inline,
            "path": path,
            "created_at": dt.datetime.now(dt.UTC),
        }
        conn.execute(_insert_ignore(conn, m.blobs).values(**row))
        return digest

    def put_table(self, conn: Any, table: Any) -> str:
        return self.put(conn, table_bytes(table), "parquet")

    def put_json(self, conn: Any, obj: Any) -> str:
        return self.put(conn, json_bytes(obj), "json.gz")

    def _locate(self, conn: Any, digest: str) -> bytes | Path:
        """The blob's bytes when inline, else the path of its file."""
        import sqlalchemy as sa

        from . import _models as m

        row = conn.execute(
            sa.select(m.blobs.c.data, m.blobs.c.path).where(m.blobs.c.hash == digest)
        ).first()
        if row is None:
            raise InputError(f"the store has no blob {digest[:12]} (a damaged store?)")
        if row.data is not None:
            return bytes(row.data)
        return self.root / row.path

    @staticmethod
    def _unreadable(target: Path, exc: OSError) -> InputError:
        return InputError(
            f"a stored blob's file is missing or unreadable ({exc.strerror or exc}); the "
            "artifact folder must travel with the database (set RAGMETER_ARTIFACTS for a server "
            "database)",
            path=target,
        )

    def get(self, conn: Any, digest: str) -> bytes:
        found = self._locate(conn, digest)
        if isinstance(found, bytes):
            return found
        try:
            return found.read_bytes()
        except OSError as exc:
            raise self._unreadable(found, exc) from exc

    def get_table(self, conn: Any, digest: str) -> Any:
        import pyarrow as pa
        import pyarrow.parquet as pq

        found = self._locate(conn, digest)
        if isinstance(found, bytes):
            return pq.read_table(pa.BufferReader(found))
        # a file is read in place (no copy of its bytes first): as fast as reading it by hand
        try:
            return pq.read_table(found)
        except OSError as exc:
            raise self._unreadable(found, exc) from exc

    def get_json(self, conn: Any, digest: str) -> Any:
        return json.loads(gzip.decompress(self.get(conn, digest)).decode("utf-8"))

    def collect(self, conn: Any) -> list[Path]:
        """Delete the rows of blobs no row refers to (after a delete); returns the files to
        remove once the transaction has committed (removing them earlier could leave a row
        naming a missing file if it rolled back)."""
        import sqlalchemy as sa

        from . import _models as m

        refs = [
            m.golden_versions.c.questions_blob,
            m.runs.c.ranked_blob,
            m.evaluations.c.values_blob,
            m.evaluations.c.extras_blob,
            m.comparisons.c.values_blob,
            m.answer_sets.c.answers_blob,
            m.judge_labels.c.labels_blob,
        ]
        used = sa.union(*[sa.select(c.label("h")).where(c.is_not(None)) for c in refs]).subquery()
        gone = conn.execute(
            sa.select(m.blobs.c.hash, m.blobs.c.path).where(
                m.blobs.c.hash.not_in(sa.select(used.c.h))
            )
        ).all()
        if gone:
            conn.execute(m.blobs.delete().where(m.blobs.c.hash.in_([g.hash for g in gone])))
        return [self.root / g.path for g in gone if g.path]


def _insert_ignore(conn: Any, table: Any) -> Any:
    """INSERT ... ON CONFLICT DO NOTHING on either database (a blob is written once)."""
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        return pg_insert(table).on_conflict_do_nothing()
    from sqlalchemy.dialects.sqlite import insert as sqlite_insert

    return sqlite_insert(table).on_conflict_do_nothing()
