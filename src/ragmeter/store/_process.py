"""Is the process that started a run still alive? (A run left ``running`` by a dead process
was interrupted: killed, out of memory, the machine restarted.)"""

from __future__ import annotations

import os
import socket


def host() -> str:
    return socket.gethostname()


def start_token(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (Linux ``/proc``), which tells a live
    process apart from a later one that reused its pid; None where there is no ``/proc``."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode("ascii", "replace")
    except OSError:
        return None
    # the command name (field 2) may hold spaces and parentheses: fields resume after the last ")"
    fields = stat[stat.rfind(")") + 2 :].split()
    return fields[19] if len(fields) > 19 else None


def alive(pid: int, token: str | None) -> bool:
    """True when process ``pid`` exists and, where the start time is known, is the same one."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, owned by someone else
    if token is not None:
        now = start_token(pid)
        if now is not None and now != token:
            return False
    return True
