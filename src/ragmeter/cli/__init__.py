"""The ``ragmeter`` command line: a thin layer over the library."""

from ._app import app, main

__all__ = ["app", "main"]
