"""The ``ragmeter`` command line: a thin layer over the library."""

from ._app import app, entry, main

__all__ = ["app", "entry", "main"]
