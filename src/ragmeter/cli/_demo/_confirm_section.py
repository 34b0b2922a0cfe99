"""Demo section 6: the rule's survivor confirmed once on the held-out split.

Section 5 ends with "Next: confirm hybrid once on the heldout split". This section makes that
comparison with :func:`ragmeter.workflows.confirm.confirm_in_result`, the job of ``ragmeter
confirm`` (same metric, seed and numbers), prints it as that command prints it, and names the
command that records it. The demo stores nothing, so the confirmation is not recorded in any
selection ledger here.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from ..._literal import lit

if TYPE_CHECKING:  # pragma: no cover
    from ...diagnosis import Verdicts
    from ...experiments import ExperimentResult
    from ...workflows.confirm import Confirmation


def confirm_section(
    console: Console, result: ExperimentResult, verdicts: Verdicts | None
) -> Confirmation | None:
    """Print section 6 when section 5 left exactly one survivor and a held-out split to confirm
    it on; returns the confirmation (recorded nowhere), else None and prints nothing."""
    from ...workflows.confirm import HELDOUT, confirm_in_result
    from .._confirm import print_confirmation
    from ._lab_section import invoked_as

    if verdicts is None or len(verdicts.survivors) != 1:
        return None
    if HELDOUT not in dict(verdicts.held_out):
        return None
    name = verdicts.survivors[0].variant
    c = confirm_in_result(result, name, metric=str(verdicts.metric))
    console.rule(f"[bold]6. The last step: confirm {name} once on the {c.split} split")
    console.print(
        lit(
            f"The rule chose {name} on the tune split; the {c.n_split} questions of the "
            f"{c.split} split played no part in that choice ({c.result.n} of them are scored at "
            f"{c.metric}). Compared there once, as `ragmeter confirm` compares it:"
        )
    )
    print_confirmation(console, c)
    command = [invoked_as(), "confirm", _shown(result.experiment.path), "--variant", name]
    console.print(
        lit(
            "The demo records nothing. To record this confirmation in the selection ledger "
            "(once: a second, different variant confirmed on the same held-out split is warned "
            "about, and exits 1):"
        )
    )
    console.print(lit("  " + " ".join(shlex.quote(w) for w in command)), soft_wrap=True)
    return c


def _shown(path: Path) -> str:
    """``path`` relative to the current folder when it is under it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
