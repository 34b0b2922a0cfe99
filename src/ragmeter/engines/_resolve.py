"""Which engine a name (``--engine``, ``engine=``) stands for."""

from __future__ import annotations

from ._local import Engine, LocalEngine

ENGINES = ("local", "ray")


def resolve_engine(engine: str | Engine | None, *, address: str | None = None) -> Engine:
    """The engine ``engine`` names (``"local"``, ``"ray"``), or the engine object itself;
    ``address`` is a Ray cluster's address (only with ``"ray"``)."""
    from .._errors import UsageError

    if engine is None or engine == "local":
        if address is not None:
            raise UsageError("a Ray address needs the Ray engine (--engine ray)")
        return LocalEngine()
    if engine == "ray":
        from ._ray import RayEngine

        return RayEngine(address=address)
    if isinstance(engine, str):
        raise UsageError(f"engine must be one of {', '.join(ENGINES)}, got '{engine}'")
    if not isinstance(engine, Engine):
        raise UsageError(
            f"engine must be 'local', 'ray' or an engine object, got {type(engine).__name__}"
        )
    return engine
