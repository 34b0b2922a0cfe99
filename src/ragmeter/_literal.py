"""Text for rich consoles that prints exactly as written: names from users and files.

rich reads ``[...]`` in a printed string as markup and ``:name:`` as an emoji code, so a chunker
called ``tokens:100:0`` would print as ``tokens💯0``, a question id ``[red]`` would vanish into a
colour and ``[/x]`` would raise ``MarkupError``. A :class:`rich.text.Text` is never parsed, so
every renderer passes data (ids, run and variant names, slice names, question and document text,
paths, metric strings, notes and messages that embed them) to rich through these helpers rather
than as a plain string: safe on any console, whatever its markup and emoji settings.
Our own fixed markup (``"[green]gate passed[/green]"``) may stay a plain string.
"""

from __future__ import annotations

from rich.text import Text

#: rich's styles for a table's title and caption; a Text title is not styled by the table itself
TITLE = "table.title"
CAPTION = "table.caption"


def lit(value: object, style: str = "") -> Text:
    """``str(value)`` as text rich prints literally (no markup, no emoji codes, no highlighting).

    Use it for table cells, titles (``style=TITLE``), captions (``style=CAPTION``), column
    headers, rules, status and whole printed lines that carry data.
    """
    return Text(str(value), style=style)


def line(*parts: str | tuple[str, str] | Text) -> Text:
    """One printed line from literal parts; a ``(text, style)`` pair is styled, never parsed.

    ``line(("warning:", "yellow"), f" {message}")`` prints the message as written.
    """
    return Text.assemble(*parts)
