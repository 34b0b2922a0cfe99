"""Numbers, money, durations, percentages and dates found in text, as comparable values.

``extract_values("The fee is $75 within 90 days of March 1, 2026")`` gives
``{("money", "USD", "75"), ("duration", "day", "90"), ("date", "", "2026-03-01")}``.

Normal forms
- money: currency code + decimal amount without trailing zeros (``$75`` = ``75 USD`` =
  ``USD 75.00`` = ``75 dollars``); a bare ``$`` is read as USD.
- duration: minutes/hours -> minutes, days/weeks -> days, months/years -> months
  (``2 weeks`` = ``14 days``, ``24 hours`` = ``1440`` minutes, ``1 year`` = ``12 months``).
- percent: ``10%`` = ``10 percent``.
- date: ISO ``YYYY-MM-DD`` from ``2026-03-01``, ``March 1, 2026``, ``1 March 2026``, ``Mar. 1st
  2026``; numeric ``03/01/2026`` forms are ambiguous (US vs day-first) and are not read as dates.
- number: any other number written in digits (``1,250.5``); number words up to ninety-nine
  (``ninety days``) are read only next to a unit, since a bare "one" is rarely a quantity.
Spans already read as money, a duration, a percentage or a date are not read again as numbers.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from functools import lru_cache

Value = tuple[str, str, str]  # (kind, unit, canonical amount or ISO date)

_UNITS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_TENS = {
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
}
_WORD_NUMBER = (
    r"(?:(?:"
    + "|".join(_TENS)
    + r")(?:[- ](?:"
    + "|".join(_UNITS[1:10])
    + r"))?|"
    + "|".join(sorted(_UNITS, key=len, reverse=True))
    + r")"
)
_NUM = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
_AMOUNT = rf"(?:{_NUM}|{_WORD_NUMBER})"

_SYMBOLS = {"$": "USD", "US$": "USD", "€": "EUR", "£": "GBP", "¥": "JPY", "C$": "CAD", "A$": "AUD"}
_CODES = (
    "USD",
    "EUR",
    "GBP",
    "JPY",
    "CAD",
    "AUD",
    "CHF",
    "NZD",
    "SEK",
    "NOK",
    "DKK",
    "INR",
    "CNY",
    "SGD",
    "HKD",
    "MXN",
    "BRL",
    "ZAR",
)
_CURRENCY_WORDS = {
    "dollar": "USD",
    "dollars": "USD",
    "euro": "EUR",
    "euros": "EUR",
    "pound": "GBP",
    "pounds": "GBP",
}
_DURATION = {
    "minute": ("minute", 1),
    "min": ("minute", 1),
    "mins": ("minute", 1),
    "hour": ("minute", 60),
    "hr": ("minute", 60),
    "hrs": ("minute", 60),
    "day": ("day", 1),
    "week": ("day", 7),
    "month": ("month", 1),
    "year": ("month", 12),
}
_MONTHS = {
    m: i
    for i, m in enumerate(
        [
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ],
        start=1,
    )
}
_MONTH_RE = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|"
    r"aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)

_SYM_RE = "|".join(re.escape(s) for s in sorted(_SYMBOLS, key=len, reverse=True))
_CODE_RE = "|".join(_CODES)
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("iso", re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")),
    (
        "mdy",
        re.compile(
            rf"\b({_MONTH_RE})\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.IGNORECASE
        ),
    ),
    (
        "dmy",
        re.compile(
            rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH_RE}),?\s+(\d{{4}})\b",
            re.IGNORECASE,
        ),
    ),
    ("sym", re.compile(rf"(?<![A-Za-z])({_SYM_RE})\s?({_NUM})(?:\s?({_CODE_RE})\b)?")),
    ("code_pre", re.compile(rf"\b({_CODE_RE})\s?({_NUM})")),
    ("code_post", re.compile(rf"(?<![\w.])({_NUM})\s?({_CODE_RE})\b")),
    ("cur_word", re.compile(rf"\b({_AMOUNT})\s+(dollars?|euros?|pounds?)\b", re.IGNORECASE)),
    ("percent", re.compile(rf"\b({_AMOUNT})\s?(%|percent\b|per cent\b)", re.IGNORECASE)),
    (
        "duration",
        re.compile(
            rf"\b({_AMOUNT})[\s-]?(minutes?|mins?|hours?|hrs?|days?|weeks?|months?|years?)\b",
            re.IGNORECASE,
        ),
    ),
    ("number", re.compile(rf"(?<![\w.])({_NUM})(?![\w])")),
]


def _word_to_int(word: str) -> int | None:
    w = word.lower().replace(" ", "-")
    if w in _UNITS:
        return _UNITS.index(w)
    head, _, tail = w.partition("-")
    if head in _TENS:
        if not tail:
            return _TENS[head]
        if tail in _UNITS[1:10]:
            return _TENS[head] + _UNITS.index(tail)
    return None


def parse_amount(text: str) -> Decimal | None:
    """``"1,250.50"`` -> ``Decimal("1250.5")``; number words up to ninety-nine; else None."""
    t = text.strip()
    n = _word_to_int(t)
    if n is not None:
        return Decimal(n)
    try:
        return Decimal(t.replace(",", ""))
    except InvalidOperation:
        return None


def _canon(d: Decimal) -> str:
    s = format(d.normalize(), "f")
    return s.rstrip("0").rstrip(".") if "." in s else s


def _date(y: str, m: int, d: str) -> str | None:
    import datetime

    try:
        return datetime.date(int(y), m, int(d)).isoformat()
    except ValueError:
        return None


def _month(name: str) -> int:
    key = name.lower().rstrip(".")
    return next(i for full, i in _MONTHS.items() if full.startswith(key[:3]))


def _read(kind: str, m: re.Match[str]) -> Value | None:
    g = m.groups()
    if kind == "iso":
        iso = _date(g[0], int(g[1]), g[2])
        return ("date", "", iso) if iso else None
    if kind == "mdy":
        iso = _date(g[2], _month(g[0]), g[1])
        return ("date", "", iso) if iso else None
    if kind == "dmy":
        iso = _date(g[2], _month(g[1]), g[0])
        return ("date", "", iso) if iso else None
    if kind == "sym":
        cur, amt = (g[2] or _SYMBOLS[g[0]]), parse_amount(g[1])
    elif kind == "code_pre":
        cur, amt = g[0], parse_amount(g[1])
    elif kind == "code_post":
        cur, amt = g[1], parse_amount(g[0])
    elif kind == "cur_word":
        cur, amt = _CURRENCY_WORDS[g[1].lower()], parse_amount(g[0])
    elif kind == "percent":
        amt = parse_amount(g[0])
        return None if amt is None else ("percent", "%", _canon(amt))
    elif kind == "duration":
        amt = parse_amount(g[0])
        unit = g[1].lower()
        unit = unit[:-1] if unit.endswith("s") and unit[:-1] in _DURATION else unit
        base, factor = _DURATION[unit]
        return None if amt is None else ("duration", base, _canon(amt * factor))
    else:
        amt = parse_amount(g[0])
        return None if amt is None else ("number", "", _canon(amt))
    return None if amt is None else ("money", cur.upper(), _canon(amt))


def extract_values(text: str) -> set[Value]:
    """Every value in ``text`` (see the module docstring for the normal forms)."""
    return set(_remembered(text) if len(text) <= _REMEMBERED_CHARS else _values_in(text))


#: texts up to this long (a passage, an answer; not a whole document) have their values
#: remembered: a faithfulness check looks for each value of an answer in every passage of its
#: context, the same passages over and over (issue 28: a fifth of the lab's diagnosis page and
#: of the report); at most 8,192 of them, so at most 160 MB held
_REMEMBERED_CHARS = 20_000


def _values_in(text: str) -> frozenset[Value]:
    taken = [False] * len(text)
    out: set[Value] = set()
    for kind, pattern in _PATTERNS:
        for m in pattern.finditer(text):
            if any(taken[m.start() : m.end()]):
                continue
            value = _read(kind, m)
            if value is None:
                continue
            out.add(value)
            for i in range(m.start(), m.end()):
                taken[i] = True
    return frozenset(out)


_remembered = lru_cache(maxsize=8192)(_values_in)


def describe(value: Value) -> str:
    """Human form of a value: ``75 USD``, ``90 days``, ``24 hours``, ``2026-03-01``, ``10%``."""
    kind, unit, amount = value
    if kind in ("date", "number"):
        return amount
    if kind == "percent":
        return f"{amount}%"
    if kind == "duration":
        n = Decimal(amount)
        for base, big, size in (("minute", "hour", 60), ("month", "year", 12)):
            if unit == base and n >= size and n % size == 0:
                unit, n = big, n / size
        return f"{_canon(n)} {unit}{'' if n == 1 else 's'}"
    return f"{amount} {unit}"
