"""Content-addressed blobs: columnar tables as Parquet, records as gzipped JSON.

A blob is named by the sha256 of its bytes, so storing the same values twice stores them once.
Blobs up to ``INLINE_MAX`` bytes live in the database (one row, read with the record); larger
ones are Parquet or ``.json.gz`` files under the artifact folder (``ab/abcdef....parquet``),
written atomically before the row that names them, so a killed writer leaves at worst an
unreferenced file, never a row naming a missing one.

Nothing a row says is trusted when it is read back (a shared server is a trust boundary): a
file must be named exactly as the writer names it and lie inside the artifact folder once links
are resolved, and every blob's bytes must hash to its name; anything else is a damaged row
(:class:`~ragmeter.store._damage.DamagedRowError`), never a file opened, read or removed
elsewhere. Deleting never follows a path a row names out of the folder.
"""

from __future__ import annotations

import datetime as dt
import gzip
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._errors import InputError
from ..io import atomic_write

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

        from ..io import atomic_path

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
            rel = relative(digest, "parquet")
            target = self._target(rel)
            if not _holds(target, digest):
                with atomic_path(target) as final:  # synced, given the target's mode, renamed
                    os.replace(tmp, final)
            return Stored(digest, "parquet", size, rel)
        finally:
            tmp.unlink(missing_ok=True)

    def _target(self, rel: str) -> Path:
        """Where a new blob's file goes: refused when the artifact folder holds a link that would
        take it elsewhere (the folder may be shared; nothing is written outside it)."""
        target = self.root / rel
        if not _inside(target, self.root):
            raise InputError(
                "the artifact folder holds a link leading out of it; not writing a blob there",
                path=target,
            )
        return target

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
            rel = relative(digest, kind)
            target = self._target(rel)
            if not _holds(target, digest):
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

    def _locate(self, conn: Any, digest: str) -> tuple[str, bytes | Path]:
        """The blob's kind, and its bytes when inline, else the path of its file.

        Nothing read from the database is trusted (a shared server is a trust boundary): the
        hash must be a sha256, the kind one the writer uses, and a file's path exactly the one
        the writer gives it (``ab/<sha256>.parquet`` or ``.json.gz`` under the artifact folder)
        and still inside that folder once links are resolved; anything else is a damaged row,
        never a file opened elsewhere."""
        import sqlalchemy as sa

        from . import _models as m
        from ._damage import DamagedRowError, decode_errors

        try:
            row = conn.execute(
                sa.select(m.blobs.c.kind, m.blobs.c.data, m.blobs.c.path).where(
                    m.blobs.c.hash == digest
                )
            ).first()
        except decode_errors() as exc:
            raise DamagedRowError("blobs", _short(digest), f"cannot be read: {exc}") from None
        if row is None:
            raise DamagedRowError("blobs", _short(digest), "the store has no such blob")
        if not isinstance(digest, str) or not _HASH.fullmatch(digest):
            raise DamagedRowError("blobs", _short(digest), "its name is not a sha256")
        if row.kind not in SUFFIX:
            raise DamagedRowError("blobs", _short(digest), f"unknown kind {row.kind!r}")
        if row.data is not None:
            return row.kind, bytes(row.data)
        return row.kind, self.contained(digest, row.kind, row.path)

    def contained(self, digest: str, kind: str, path: Any) -> Path:
        """The file of a blob: ``path`` must be exactly ``relative(digest, kind)`` and lead,
        links resolved, to a place inside the artifact folder (DamagedRowError otherwise)."""
        from ._damage import DamagedRowError

        expected = relative(digest, kind)
        if path != expected:
            shown = repr(path)[:200]
            raise DamagedRowError(
                "blobs",
                _short(digest),
                f"its file is named {shown}, not {digest[:2]}/<its sha256>{SUFFIX.get(kind, '')} "
                "in the artifact folder",
            )
        target = self.root / expected
        if not _inside(target, self.root):
            raise DamagedRowError(
                "blobs", _short(digest), f"its file {expected} leads out of the artifact folder"
            )
        return target

    @staticmethod
    def _unreadable(target: Path, exc: OSError) -> InputError:
        return InputError(
            f"a stored blob's file is missing or unreadable ({exc.strerror or exc}); the "
            "artifact folder must travel with the database (set RAGMETER_ARTIFACTS for a server "
            "database)",
            path=target,
        )

    def _checked(self, conn: Any, digest: str, kind: str) -> bytes | Path:
        """The blob's bytes, or the path of its file, once they are known to be the bytes
        stored under that hash: a damaged disk, an edited file or row, another table's bytes
        under this name are refused, never read as other numbers. A file is hashed as it is
        streamed (about 1 GB/s) and then read in place by its reader: no copy of it in memory
        and no memory map, so a read error stays an error and never a crash."""
        from ._damage import DamagedRowError

        found_kind, found = self._locate(conn, digest)
        if found_kind != kind:
            raise DamagedRowError(
                "blobs", _short(digest), f"it holds {found_kind}, where {kind} was expected"
            )
        if isinstance(found, bytes):
            actual = hashlib.sha256(found).hexdigest()
        else:
            try:
                with open(found, "rb") as f:
                    actual = hashlib.file_digest(f, "sha256").hexdigest()
            except OSError as exc:
                raise self._unreadable(found, exc) from exc
        if actual != digest:
            raise DamagedRowError("blobs", _short(digest), "its bytes do not match its hash")
        return found

    def get(self, conn: Any, digest: str, kind: str = "json.gz") -> bytes:
        from ._damage import DamagedRowError

        found_kind, found = self._locate(conn, digest)
        if found_kind != kind:
            raise DamagedRowError(
                "blobs", _short(digest), f"it holds {found_kind}, where {kind} was expected"
            )
        if isinstance(found, bytes):
            data = found
        else:
            try:
                data = found.read_bytes()
            except OSError as exc:
                raise self._unreadable(found, exc) from exc
        if hashlib.sha256(data).hexdigest() != digest:  # the bytes read are the bytes checked
            raise DamagedRowError("blobs", _short(digest), "its bytes do not match its hash")
        return data

    def get_table(self, conn: Any, digest: str) -> Any:
        import pyarrow as pa
        import pyarrow.parquet as pq

        from ._damage import DamagedRowError

        found = self._checked(conn, digest, "parquet")
        try:
            if isinstance(found, bytes):
                return pq.read_table(pa.BufferReader(found))
            # a file is read in place (no copy of its bytes first): as fast as reading it by hand
            return pq.read_table(found)
        except OSError as exc:
            if isinstance(found, Path) and not isinstance(exc, pa.ArrowException):
                raise self._unreadable(found, exc) from exc
            raise DamagedRowError("blobs", _short(digest), f"not a Parquet table: {exc}") from None
        except (pa.ArrowException, ValueError) as exc:
            raise DamagedRowError("blobs", _short(digest), f"not a Parquet table: {exc}") from None

    def get_json(self, conn: Any, digest: str) -> Any:
        import zlib

        from ._damage import DamagedRowError

        data = self.get(conn, digest, "json.gz")
        try:
            return json.loads(gzip.decompress(data).decode("utf-8"))
        except (OSError, EOFError, zlib.error, UnicodeDecodeError, ValueError) as exc:
            raise DamagedRowError("blobs", _short(digest), f"not gzipped JSON: {exc}") from None

    def collect(self, conn: Any) -> list[Path]:
        """Delete the rows of blobs no row refers to (after a delete); returns the files to
        remove once the transaction has committed (removing them earlier could leave a row
        naming a missing file if it rolled back). A row whose file is not one the writer names
        (``..``, an absolute path, a link out of the artifact folder) loses its row, but its
        path is reported and never followed: nothing outside the artifact folder is removed."""
        import warnings

        import sqlalchemy as sa

        from . import _models as m
        from ._damage import DamagedRowError, DamagedRowWarning

        refs = [
            m.golden_versions.c.questions_blob,
            m.runs.c.ranked_blob,
            m.evaluations.c.values_blob,
            m.evaluations.c.extras_blob,
            m.comparisons.c.values_blob,
            m.answer_sets.c.answers_blob,
            m.judge_labels.c.labels_blob,
            m.label_queues.c.corpus_blob,
        ]
        used = sa.union(*[sa.select(c.label("h")).where(c.is_not(None)) for c in refs]).subquery()
        gone = conn.execute(
            sa.select(m.blobs.c.hash, m.blobs.c.kind, m.blobs.c.path).where(
                m.blobs.c.hash.not_in(sa.select(used.c.h))
            )
        ).all()
        if gone:
            conn.execute(m.blobs.delete().where(m.blobs.c.hash.in_([g.hash for g in gone])))
        files: list[Path] = []
        for g in gone:
            if g.path is None:
                continue
            try:
                if not isinstance(g.hash, str) or not _HASH.fullmatch(g.hash):
                    raise DamagedRowError("blobs", _short(g.hash), "its name is not a sha256")
                files.append(self.contained(g.hash, g.kind if g.kind in SUFFIX else "?", g.path))
            except DamagedRowError as exc:
                warnings.warn(
                    f"{exc}; its row is deleted, the path it names is left alone",
                    DamagedRowWarning,
                    stacklevel=3,
                )
                # its own file (the name the writer gave it, if there) goes with its row
                if isinstance(g.hash, str) and _HASH.fullmatch(g.hash) and g.kind in SUFFIX:
                    own = self.root / relative(g.hash, g.kind)
                    if _inside(own, self.root):
                        files.append(own)
        return files


#: a blob's name: the sha256 of its bytes, as 64 lowercase hex digits
_HASH = re.compile(r"[0-9a-f]{64}")


def relative(digest: str, kind: str) -> str:
    """The one path (under the artifact folder) the writer gives a blob's file."""
    return f"{digest[:2]}/{digest}{SUFFIX.get(kind, '.' + kind)}"


def _short(digest: Any) -> str:
    """A blob's name as messages show it (a hostile one printed as text, cut short)."""
    text = str(digest)
    return text[:12] if _HASH.fullmatch(text) else repr(text[:80])


def _holds(target: Path, digest: str) -> bool:
    """The file of blob ``digest`` is there with the right bytes (a file left damaged is written
    again rather than named by one more row)."""
    try:
        with open(target, "rb") as f:
            return hashlib.file_digest(f, "sha256").hexdigest() == digest
    except OSError:
        return False


def _inside(target: Path, root: Path) -> bool:
    """``target`` is inside ``root`` once every link on the way is resolved (neither need exist
    yet; a target that is itself a link out of the folder is outside)."""
    try:
        return target.resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError):  # a link loop, an unreadable folder: not contained
        return False


def _insert_ignore(conn: Any, table: Any) -> Any:
    """INSERT ... ON CONFLICT DO NOTHING on either database (a blob is written once)."""
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        return pg_insert(table).on_conflict_do_nothing()
    from sqlalchemy.dialects.sqlite import insert as sqlite_insert

    return sqlite_insert(table).on_conflict_do_nothing()
