"""Fixed-width text: :class:`Table` (a title, a header, rows of text, notes; what the text and the HTML page
both render), :func:`text_table` (columns aligned, a table wider than the report split into parts), :func:`wrap`.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:  # pragma: no cover
    pass

__all__ = [
    "WIDTH",
    "Table",
    "reference_lines",
    "render_table",
    "table_body",
    "text_table",
    "wrap",
]


#: The widest line the text report prints (a terminal's width): wider tables are split into parts, longer
#: paragraphs wrapped. Only a word longer than this, or a table whose repeated columns and one more column are
#: wider, can pass it.
WIDTH = 120


def text_table(
    head: Sequence[str],
    rows: Sequence[Sequence[str]],
    align: str,
    width: int = WIDTH,
    keep: Sequence[int] = (),
    groups: Sequence[Sequence[int]] = (),
) -> list[str]:
    """Fixed-width lines: ``align`` has one ``<`` or ``>`` per column. A table wider than ``width`` is split
    into parts, one after another (each with its header and rule): each part repeats the ``keep`` columns (the
    contender) and takes, in order, as many of the ``groups`` of the other columns (default: one group per
    column; a group is never split unless it alone is too wide) as fit."""
    widths = [max(len(h), *(len(r[c]) for r in rows)) if rows else len(h) for c, h in enumerate(head)]

    def lines(cols: Sequence[int]) -> list[str]:
        def line(cells: Sequence[str]) -> str:
            return "  ".join(f"{cells[c]:{align[c]}{widths[c]}}" for c in cols).rstrip()

        first = line(head)
        return [first, "-" * len(first), *(line(r) for r in rows)]

    def span(cols: Sequence[int]) -> int:
        return sum(widths[k] + 2 for k in cols) - 2

    kept = [c for c in keep if 0 <= c < len(head)]
    if span(range(len(head))) <= width or len(kept) == len(head):
        return lines(range(len(head)))
    units = [[c for c in g if c not in kept] for g in groups] or [
        [c] for c in range(len(head)) if c not in kept
    ]
    units = [u for g in units for u in ([g] if span([*kept, *g]) <= width else [[c] for c in g]) if u]
    parts: list[list[int]] = []
    for unit in units:
        if parts and span([*kept, *parts[-1], *unit]) <= width:
            parts[-1] += unit
        else:
            parts.append(list(unit))
    return [line for part in parts for line in lines(sorted({*kept, *part}))]


def wrap(text: str, width: int = WIDTH, indent: str = "") -> list[str]:
    """``text`` as lines of at most ``width`` characters (continuations indented by ``indent``); a word is
    never broken, so only a word longer than ``width`` passes it."""
    return textwrap.wrap(
        text, width=width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False
    ) or [""]


class Table(NamedTuple):
    """A table's contents, for text (:func:`format_problem`, :func:`format_overall`) and HTML alike.

    Attributes:
      title: the heading line.
      head: the column names.
      rows: the cells, one list of text per row, in display order.
      align: one ``<`` or ``>`` per column.
      notes: the table's short reference: what is particular to it (its pairs, its margin, a power warning)
        and which part of "How to read these tables" (:func:`how_to_read`) explains its columns.
      extra: lines printed between the rows and the notes (the chosen configurations of a random search).
      keep: the columns every part repeats when the text splits a wide table (:func:`text_table`); ``groups``:
        the columns kept together in a part.
      guide: the part of "How to read these tables" that explains the columns (a key of :data:`GUIDES`).
    """

    title: str
    head: list[str]
    rows: list[list[str]]
    align: str
    notes: list[str]
    extra: tuple[str, ...] = ()
    keep: tuple[int, ...] = ()
    guide: str = ""
    groups: tuple[tuple[int, ...], ...] = ()


def table_body(t: Table, width: int = WIDTH) -> list[str]:
    """A table's title (wrapped), its rows (split into parts where wider than ``width``) and its extra lines."""
    return [
        *wrap(t.title, width, "   "),
        *text_table(t.head, t.rows, t.align, width, t.keep, t.groups),
        *t.extra,
    ]


def reference_lines(t: Table, width: int = WIDTH) -> list[str]:
    """The short reference under a table (:attr:`Table.notes`), each line of a note wrapped to ``width``
    (continuations indented two more than the line)."""
    return [
        line
        for note in t.notes
        for part in note.split("\n")
        for line in wrap(part, width, " " * (len(part) - len(part.lstrip()) + 2))
    ]


def render_table(t: Table, width: int = WIDTH) -> str:
    return "\n".join([*table_body(t, width), *reference_lines(t, width)])
