"""How many threads an embedding model gets: from the cores this process may really use.

``os.cpu_count()`` counts the machine's cores, not the ones a container or a CPU mask lets the
process use: a 2-CPU quota on a 64-core host would start 64 threads that fight over 2 cores.
The cores available are the smaller of the CPU affinity mask (``os.sched_getaffinity``) and
the cgroup CPU quota (``cpu.max`` in cgroup v2, ``cpu.cfs_quota_us / cpu.cfs_period_us`` in
v1), rounded up.

The default (``"auto"``) is one thread per available core. Measured on a shared 2-core box
(docs/benchmarks.md, "Embedding threads"): with idle threads not spinning (the encoders'
setting), two threads encoded as fast as one when the box was saturated by other work and
1.1-1.5x faster when it was not, for the same CPU time; spinning threads cost 10-50% more. So the
cores are used, and the threads yield them when idle. ``threads`` in a dense or e5 retriever
spec (or the encoder's ``threads`` argument), else ``RAGMETER_THREADS``, overrides it.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from .._errors import UsageError

ENV = "RAGMETER_THREADS"
_CGROUP = Path("/sys/fs/cgroup")


def available_cores(cgroup: Path = _CGROUP) -> int:
    """Cores this process may run on: the affinity mask capped by the cgroup CPU quota."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cores = os.cpu_count() or 1
    quota = cgroup_quota(cgroup)
    if quota is not None:
        cores = min(cores, max(1, math.ceil(quota)))
    return max(1, cores)


def cgroup_quota(root: Path = _CGROUP) -> float | None:
    """The cgroup CPU quota in cores (e.g. 1.5), or None when there is none or it is unreadable."""
    try:  # cgroup v2: "max 100000" or "150000 100000"
        text = (root / "cpu.max").read_text().split()
        if len(text) == 2 and text[0] != "max" and int(text[1]) > 0:
            return int(text[0]) / int(text[1])
        if text:
            return None
    except (OSError, ValueError):
        pass
    try:  # cgroup v1: quota -1 means none
        quota = int((root / "cpu" / "cpu.cfs_quota_us").read_text())
        period = int((root / "cpu" / "cpu.cfs_period_us").read_text())
        if quota > 0 and period > 0:
            return quota / period
    except (OSError, ValueError):
        pass
    return None


def auto_threads(cores: int | None = None) -> int:
    """The default thread count for ``cores`` available cores (see the module doc)."""
    return max(1, available_cores() if cores is None else cores)


def resolve_threads(value: int | str | None, *, what: str = "threads") -> int:
    """An explicit ``value`` (a whole number >= 1, or ``"auto"``), else ``RAGMETER_THREADS``,
    else :func:`auto_threads`. A bad value is a UsageError naming where it came from."""
    source = what
    if value is None:
        env = os.environ.get(ENV, "").strip()
        if not env:
            return auto_threads()
        value, source = env, ENV
    if value == "auto":
        return auto_threads()
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError(f"{source} must be a whole number >= 1 or 'auto', got {value!r}")
    return value
