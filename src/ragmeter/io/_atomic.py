"""The one way ragmeter writes a file: whole or not at all.

:func:`atomic_write` writes to a temporary file in the target's folder (an unpredictable name
from :mod:`tempfile`, so nobody can plant a link there), flushes it to disk with ``fsync``, and
moves it onto the target with ``os.replace`` (atomic on POSIX and Windows). On any failure,
a full disk, a folder that cannot be written, a writer that raises, even Ctrl-C, the temporary
file is removed and the old target is left as it was: never a 0-byte or half-written file.
An ``OSError`` becomes an :class:`~ragmeter._errors.InputError` naming the target path.

:func:`atomic_path` is the same for writers that want a path (pyarrow, numpy, bm25s); it also
takes a folder written under the temporary name. :func:`append_line` appends one line to a log
in a single ``write`` (under ``flock`` where there is one), for the selection ledger.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO

from .._errors import InputError

__all__ = ["append_line", "atomic_path", "atomic_write", "write_text_lines"]

Writer = Callable[[IO[bytes]], object]


def _failed(path: Path, exc: OSError, what: str = "file") -> InputError:
    reason = exc.strerror or str(exc)
    return InputError(f"cannot write the {what}: {reason}", path=str(path))


def _prepare(path: Path, file: bool = True, what: str = "file") -> None:
    """Create the target's folder; a parent that is a file, or a folder where a file is to be
    written, is a clean error."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise InputError(
            f"cannot write the {what}: {path.parent} is not a folder", path=str(path)
        ) from None
    except OSError as exc:
        raise _failed(path, exc, what) from None
    if file and path.is_dir():
        raise InputError(f"cannot write the {what}: a folder has that name", path=str(path))


def _mode_for(path: Path) -> int:
    """The target's permissions if it exists, else what ``open`` would give (0666 less umask):
    ``mkstemp`` creates 0600 files, which would hide a written corpus from the rest of a team."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _fsync_folder(folder: Path) -> None:
    """Make the rename itself durable (where a folder can be opened; not on Windows)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path: str | os.PathLike[str], data: str | bytes | Writer) -> Path:
    """Write ``data`` (text as UTF-8, bytes, or a function given the open binary file) to
    ``path`` in one step; see the module doc. Returns the path."""
    target = Path(path)
    _prepare(target)
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise _failed(target, exc) from None
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as fh:
            if isinstance(data, str):
                fh.write(data.encode("utf-8"))
            elif isinstance(data, (bytes, bytearray, memoryview)):
                fh.write(data)
            else:
                data(fh)
            closed_by_writer = fh.closed
            if not closed_by_writer:
                fh.flush()
                os.fsync(fh.fileno())
        if closed_by_writer:
            _fsync_file(tmp)
        os.chmod(tmp, _mode_for(target))
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise _failed(target, exc) from None
        raise
    _fsync_folder(target.parent)
    return target


def _fsync_file(tmp: Path) -> None:
    """fsync a file written by path, or closed by its writer (pyarrow closes what it wraps)."""
    fd = os.open(tmp, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_text_lines(path: str | os.PathLike[str], lines: Iterable[str]) -> Path:
    """Write ``lines`` (each without its ending) as UTF-8 text with ``\\n`` endings, atomically."""

    def write(fh: IO[bytes]) -> None:
        for line in lines:
            fh.write(line.encode("utf-8"))
            fh.write(b"\n")

    return atomic_write(path, write)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``path`` (same suffix: some writers choose the format by
    it) for a writer that wants a path; on success the file, or folder, written there replaces
    ``path`` in one step. A folder that loses the race to another process's equal entry (a
    cache) is dropped."""
    target = Path(path)
    _prepare(target, file=False)
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    except OSError as exc:
        raise _failed(target, exc) from None
    holder, tmp = tmp, tmp / target.name  # a private folder holds the temporary name
    try:
        yield tmp
        if tmp.is_dir():
            for file in sorted(tmp.rglob("*")):
                if file.is_file():
                    _fsync_file(file)
            try:
                os.replace(tmp, target)
            except OSError:
                if not target.is_dir():
                    raise
                # another process filled ``target`` first: its entry is equal
        else:
            _fsync_file(tmp)
            os.chmod(tmp, _mode_for(target))
            os.replace(tmp, target)
    except OSError as exc:
        raise _failed(target, exc) from None
    finally:
        shutil.rmtree(holder, ignore_errors=True)
    _fsync_folder(target.parent)


def append_line(path: str | os.PathLike[str], line: str, *, what: str = "file") -> None:
    """Append ``line`` and a ``\\n`` to ``path`` with one ``write`` on an ``O_APPEND`` file,
    under an exclusive ``flock`` where the platform has one: concurrent writers never
    interleave partial lines, and a write that fails part-way (a full disk) is cut back, so the
    log never holds half a line. ``what`` names the file in messages ("cannot write the
    ledger")."""
    target = Path(path)
    data = (line + "\n").encode("utf-8")
    _prepare(target, what=what)
    created = not target.exists()
    try:
        fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError as exc:
        raise _failed(target, exc, what) from None
    try:
        try:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX)
        except ImportError:  # pragma: no cover - not on POSIX
            pass
        size = os.lseek(fd, 0, os.SEEK_END)
        try:
            written = os.write(fd, data)
            if written != len(data):  # a full disk can take part of a line
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)  # never leave half a line behind
                if created and size == 0:  # nor a 0-byte log this call created
                    target.unlink()
            raise
    except OSError as exc:
        raise _failed(target, exc, what) from None
    finally:
        os.close(fd)
