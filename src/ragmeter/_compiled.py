"""Optional compiled loops (numba, the ``fast`` extra): whether they can run, and compiling one.

A module holding compiled kernels imports numba at its top and is itself imported only after
:func:`available` said yes, so nothing imports numba (about 0.3 s) unless a kernel is about to
run on an input large enough to repay it.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from typing import Any, Literal


def available() -> bool:
    """Whether compiled kernels can run here: numba importable and its JIT not disabled
    (``NUMBA_DISABLE_JIT=1`` turns every kernel off; the numpy paths run instead)."""
    if importlib.util.find_spec("numba") is None:
        return False
    return os.environ.get("NUMBA_DISABLE_JIT", "0") in ("", "0")


def compile_kernel(fn: Callable[..., Any], *, inline: bool = False) -> Any:
    """``numba.njit`` with the machine code kept on disk (next to the module, or numba's
    per-user cache folder where that is read-only), so only the first call on a machine compiles;
    compiled in each process where no cache location is writable. nogil: a kernel releases the
    GIL while it runs. ``inline``: a helper called from other kernels in their hot loops is
    compiled into each caller (a call between kernels passes every array with its reference
    count: a tenfold slowdown in a loop over rows)."""
    import numba

    how: Literal["always", "never"] = "always" if inline else "never"
    try:
        return numba.njit(cache=True, nogil=True, inline=how)(fn)
    except RuntimeError:  # no writable cache location
        return numba.njit(cache=False, nogil=True, inline=how)(fn)
