"""Help and warnings in words a person reads.

- Types: typer prints an option's type as ``<bool>``, ``<str>``, ``<list[Path]>`` and a required
  argument as ``{paths}`` in the usage line. Here a flag shows no type, a value shows a word
  (TEXT, INTEGER, FLOAT, PATH), a choice its values ``[table|json|csv]``, and arguments are
  written in capitals (``PATHS...``), as click and most CLIs do.
- Text: typer's rich mode reads ``[judge]`` in a docstring or option help as a markup tag and
  drops it, and keeps a docstring's hard line breaks, so a command's description breaks
  mid-sentence in an 80-column terminal. :func:`tidy_help` escapes the brackets and joins each
  paragraph's lines (a list item or an indented line keeps its own line).
- Warnings: Python prints a warning with the file and line of the code that raised it and that
  line's source (``typer/main.py:1445: ... return callback(**use_params)``); the CLI prints
  ``warning: <message>`` only.
"""

from __future__ import annotations

import inspect
import re
import warnings
from typing import Any

_WORDS = {"str": "TEXT", "int": "INTEGER", "float": "FLOAT", "Path": "PATH", "bool": ""}


def _word(param: Any, ctx: Any) -> str | None:
    """The type word of one parameter (None: nothing to show)."""
    if getattr(param, "is_flag", False) or getattr(param, "count", False):
        return None
    desc = param.type_descriptor
    if desc.is_choice:
        label = "[" + "|".join(str(getattr(c, "value", c)) for c in desc.choices or ()) + "]"
    elif desc.is_path:
        label = "PATH"
    else:
        label = param.display_type(ctx).strip("<>")
        inner = label[5:-1] if label.startswith("list[") and label.endswith("]") else label
        label = _WORDS.get(inner, inner.upper())
    return label or None


def use_words_for_types() -> None:
    """Patch typer's help rendering once (the classes are typer's; the words are ours)."""
    from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

    if getattr(TyperOption, "_ragmeter_words", False):
        return

    def option_type(self: Any, ctx: Any) -> str | None:
        if self.metavar is not None:
            return str(self.metavar)
        word = _word(self, ctx)
        return word + "..." if word and self.nargs != 1 else word

    def argument_type(self: Any, ctx: Any) -> str | None:
        return None if self.metavar is not None else _word(self, ctx)

    def usage_name(self: Any) -> str:
        name = str(self.metavar) if self.metavar is not None else self.name.upper()
        name = name if self.required else f"[{name}]"
        return name + "..." if self.nargs != 1 and not name.endswith("...") else name

    def rich_name(self: Any) -> str:
        name = str(self.metavar) if self.metavar is not None else self.name.upper()
        return name + "..." if self.nargs != 1 and not name.endswith("...") else name

    for cls in (TyperCommand, TyperGroup):
        cls.format_help = _folding(cls.format_help)  # type: ignore[method-assign]
    TyperOption.display_type_rich = option_type  # type: ignore[method-assign]
    TyperArgument.display_type_rich = argument_type  # type: ignore[method-assign]
    TyperArgument._usage_display_name = usage_name  # type: ignore[method-assign]
    TyperArgument._rich_display_name = rich_name  # type: ignore[method-assign]
    TyperOption._ragmeter_words = True  # type: ignore[attr-defined]


_OWN_LINE = re.compile(r"^(\s|[-*] |\d+[.)] )")


def _joined(paragraph: str) -> str:
    """One paragraph's lines joined by spaces, except lines that start a list item or are
    indented, which keep their line break."""
    out: list[str] = []
    for ln in paragraph.split("\n"):
        if out and not _OWN_LINE.match(ln):
            out[-1] = f"{out[-1].rstrip()} {ln.strip()}"
        else:
            out.append(ln.rstrip())
    return "\n".join(out)


def tidied(text: str) -> str:
    """Help text as typer's rich mode should draw it: paragraphs joined, markup escaped."""
    from rich.markup import escape

    paragraphs = inspect.cleandoc(text).split("\n\n")
    return escape("\n\n".join(_joined(p) for p in paragraphs))


def tidy_help(app: Any) -> None:
    """Tidy the help text of every command, group and parameter of ``app`` (once)."""
    from typer.models import ArgumentInfo, OptionInfo

    if getattr(app, "_ragmeter_tidy", False):
        return
    app._ragmeter_tidy = True
    if isinstance(app.info.help, str):
        app.info.help = tidied(app.info.help)
    # a group's own callback (``ragmeter lab``) and each command, with their parameters
    infos = [app.registered_callback] if app.registered_callback is not None else []
    for info in [*infos, *app.registered_commands]:
        if info.callback is None:
            continue
        doc = info.help if isinstance(info.help, str) else inspect.getdoc(info.callback)
        if doc:
            info.help = tidied(doc)
        for param in inspect.signature(info.callback).parameters.values():
            default = param.default
            if isinstance(default, OptionInfo | ArgumentInfo) and isinstance(default.help, str):
                default.help = tidied(default.help)
    for group in app.registered_groups:
        if isinstance(group.help, str):
            group.help = tidied(group.help)
        if group.typer_instance is not None:
            tidy_help(group.typer_instance)


def _folding(format_help: Any) -> Any:
    """typer's help tables cut a long word with an ellipsis ("sqlite:///.ragmeter/ragme…",
    "--min-slice,--min-slice…"); with folding the word continues on the next line. Patched when
    help is first drawn: typer.rich_utils costs 0.2 s to import, and most runs never show help."""

    def wrapped(self: Any, ctx: Any, formatter: Any) -> Any:
        from rich.columns import Columns
        from rich.table import Table
        from rich.text import Text
        from typer import rich_utils

        if not getattr(rich_utils.Table, "_ragmeter_fold", False):

            class FoldTable(Table):
                _ragmeter_fold = True

                def add_row(self, *renderables: Any, **kwargs: Any) -> None:
                    super().add_row(*renderables, **kwargs)
                    for column in self.columns:
                        column.overflow = "fold"

            class FoldColumns(Columns):
                def __init__(self, renderables: Any = None, *args: Any, **kwargs: Any) -> None:
                    items = list(renderables or [])
                    for item in items:
                        if isinstance(item, Text):
                            item.overflow = "fold"
                    super().__init__(items, *args, **kwargs)

            rich_utils.Table = FoldTable  # type: ignore[misc]
            rich_utils.Columns = FoldColumns  # type: ignore[misc]
        return format_help(self, ctx, formatter)

    return wrapped


def _format(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    line: str | None = None,
) -> str:
    return f"warning: {message}\n"


def show_warnings_as_messages() -> None:
    """Warnings print as ``warning: <message>`` on stderr (no file, line or source). Only the
    format changes: where a warning goes (stderr, a test's recorder, an error filter) is left
    to Python's warning machinery."""
    warnings.formatwarning = _format
