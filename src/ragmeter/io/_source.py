"""Opening input files: existence checks, transparent gzip (by magic bytes), whole or streamed.

A file is gzip when its first two bytes are ``1f 8b``, whatever its name; everything else is read
as is. Readers get the decompressed bytes either as one ``bytes`` object (small files, the slow
validating pass) or as a pyarrow input stream (the columnar fast path, which never holds the
whole file in memory).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from .._errors import InputError

GZIP_MAGIC = b"\x1f\x8b"
BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class Source:
    """A readable input file; ``display`` is how messages name it (the path as given)."""

    path: Path
    display: str
    gzip: bool
    size: int

    def arrow_stream(self) -> Any:
        """A pyarrow input stream of the decompressed bytes."""
        import pyarrow as pa

        if self.gzip:
            return pa.input_stream(str(self.path), compression="gzip")
        return pa.input_stream(str(self.path))

    def open_binary(self) -> IO[bytes]:
        """A Python binary file object of the decompressed bytes."""
        if self.gzip:
            import gzip

            return gzip.open(self.path, "rb")  # type: ignore[return-value]
        return open(self.path, "rb")

    def read_head(self, n: int) -> bytes:
        """The first ``n`` decompressed bytes (fewer at the end of the file); BOM removed."""
        try:
            with self.open_binary() as f:
                head = f.read(n)
        except (OSError, EOFError) as exc:
            raise self.error(f"cannot read the file: {exc}") from None
        return head.removeprefix(BOM)

    def read_all(self) -> bytes:
        """All decompressed bytes (UTF-8 byte order mark removed)."""
        try:
            with self.open_binary() as f:
                data = f.read()
        except (OSError, EOFError) as exc:
            raise self.error(f"cannot read the file: {exc}") from None
        return data.removeprefix(BOM)

    def error(self, message: str, line: int | None = None, field: str | None = None) -> InputError:
        return InputError(message, path=self.display, line=line, field=field)


def open_source(path: str | os.PathLike[str], *, allow_empty: bool = False) -> Source:
    """Check that ``path`` is a readable (non-empty, unless ``allow_empty``) file and sniff gzip
    from its magic bytes."""
    if isinstance(path, bytes) or not isinstance(path, (str, os.PathLike)):
        from .._errors import UsageError

        raise UsageError(f"expected a file path (str or pathlib.Path), got {type(path).__name__}")
    display = os.fspath(path)
    p = Path(display).expanduser()
    if not p.exists():
        raise InputError("file not found", path=display)
    if not p.is_file():
        raise InputError("not a regular file", path=display)
    try:
        size = p.stat().st_size
        with open(p, "rb") as f:
            magic = f.read(2)
    except OSError as exc:
        raise InputError(f"cannot read the file: {exc.strerror or exc}", path=display) from None
    if size == 0 and not allow_empty:
        raise InputError("the file is empty", path=display)
    return Source(path=p, display=display, gzip=magic == GZIP_MAGIC, size=size)


def is_jsonl_path(path: str | os.PathLike[str]) -> bool:
    """True for names ending in ``.jsonl`` or ``.jsonl.gz`` (case-insensitive)."""
    name = os.fspath(path).lower()
    return name.endswith((".jsonl", ".jsonl.gz"))
