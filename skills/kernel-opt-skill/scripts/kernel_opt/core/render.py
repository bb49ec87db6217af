"""Render Markdown reports from jinja2 templates (kernel_opt/templates/*.md.j2).

Renderers only format: every verdict and number in a report arrives already computed in the
record passed to `render`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2
from tabulate import tabulate

TEMPLATE_DIR = Path(__file__).resolve().parents[1] / "templates"


def markdown_table(rows: Iterable[Sequence[Any]], headers: Sequence[str]) -> str:
    """A GitHub Markdown table; None cells print as an em dash."""
    cleaned = [["—" if cell is None else cell for cell in row] for row in rows]
    return tabulate(cleaned, headers=list(headers), tablefmt="github", disable_numparse=True)


def markdown_cell(value: Any) -> Any:
    """Free text made safe for one table cell: a pipe or a newline in it would break the row.

    Non-text values pass through, for the table renderer to format.
    """
    return value.replace("|", "\\|").replace("\n", " ") if isinstance(value, str) else value


def compact_markdown_table(rows: Iterable[Sequence[Any]], headers: Sequence[str]) -> str:
    """A GitHub Markdown table without column padding, for long listings (hundreds of ncu metrics).

    Padding every row to the widest cell made a profile's metric listing megabytes long;
    renderers align the columns anyway. Like markdown_table, it leaves escaping pipes inside
    cells to the caller.
    """
    def line(cells: Sequence[Any]) -> str:
        return "| " + " | ".join("—" if cell is None else str(cell) for cell in cells) + " |"

    return "\n".join([line(headers), "| " + " | ".join("---" for _ in headers) + " |", *(line(row) for row in rows)])


def format_number(value: Any, digits: int = 4) -> str:
    """Significant-digit formatting for report cells: 0.000123 -> '1.23e-04', 12.5 -> '12.5'."""
    if value is None:
        return "—"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if math.isnan(value) or math.isinf(value):
        return str(value)
    if value != 0 and (abs(value) < 1e-3 or abs(value) >= 1e6):
        return f"{value:.{digits - 1}e}"
    return f"{value:.{digits}g}"


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATE_DIR)),
        undefined=jinja2.StrictUndefined,  # a missing field is a bug, not an empty cell
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    environment.filters["num"] = format_number
    environment.globals["table"] = markdown_table
    return environment


def render(template_name: str, **context: Any) -> str:
    return _environment().get_template(template_name).render(**context)
