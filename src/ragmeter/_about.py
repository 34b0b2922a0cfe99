"""The package version, in the lowest layer so that any module can record it in a result
(``from .._about import __version__``) without importing the public surface above it."""

__version__ = "0.1.0"
