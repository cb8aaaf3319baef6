"""``Compare``: a table of many Measurements, laid out and coloured as torch's.

The printed table is the contract (tests/oracle/test_utils_benchmark.py compares it byte for
byte); ember builds it in three plain steps instead of torch's row/column objects:

1. *grid*: one table per label; rows keyed by (threads, env, row name), sorted stably by
   (threads, env); columns by description, in order of first appearance; a cell holds a
   Measurement or nothing. Consecutive rows with one thread count form a *group*.
2. *text*: each column gets one number format from all of its cells (enough integer digits
   for the largest, and, when trimming, the fewest decimals any cell's significant figures
   allow; otherwise one decimal), so the digits line up.
3. *layout*: the cells are padded to the widest entry of their column, and coloured against
   the best (lowest) median of their column within the group, or of their row.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field

from ember.utils.benchmark.utils import common

__all__ = ["Colorize", "Compare"]

BEST = "\033[92m"
GOOD = "\033[34m"
BAD = "\033[2m\033[91m"
VERY_BAD = "\033[31m"
BOLD = "\033[1m"
TERMINATE = "\033[0m"

_SEPARATOR = "  |  "
_WARNING_NOTE = "(! XX%) Measurement has high variance, where XX is the IQR / median * 100.\n"

# (is this value close enough to the best, prefix): the first matching band colours a cell
_COLOR_BANDS = (
    (lambda v, best: v <= best * 1.01 or v <= best + 100e-9, BEST + BOLD),
    (lambda v, best: v <= best * 1.1, GOOD + BOLD),
    (lambda v, best: v >= best * 5, VERY_BAD + BOLD),
    (lambda v, best: v >= best * 2, BAD),
)


class Colorize(enum.Enum):
    NONE = "none"
    COLUMNWISE = "columnwise"
    ROWWISE = "rowwise"


def _integer_digits(x: float) -> int:
    # computed in float32, as torch does, so boundary values round the same way
    return math.ceil(common._log10_f32(x))


def _paint(text: str, value: float, best: float) -> str:
    for close_enough, prefix in _COLOR_BANDS:
        if close_enough(value, best):
            return prefix + text + TERMINATE * 2
    return text


@dataclass
class _NumberFormat:
    """How every cell of one column prints."""

    template: str
    trim: bool
    flag_spread: bool  # append " (! XX%)" to high-variance cells

    @classmethod
    def for_column(cls, cells, scale: float, trim: bool, warn: bool) -> _NumberFormat:
        present = [m for m in cells if m is not None]
        digits = [_integer_digits(m.median / scale) for m in present]
        if trim:
            decimals = min(max(m.significant_figures - d, 0) for m, d in zip(present, digits))
        else:
            decimals = 1
        width = max(digits) + decimals + (1 if decimals else 0)
        flag = warn and any(m.has_warnings for m in present)
        return cls(f"{{:>{width}.{decimals}f}}{{:>{7 if flag else 0}}}", trim, flag)

    def text(self, value: float, sigfigs: int, spread: float | None) -> str:
        if self.trim:
            value = common.trim_sigfig(value, sigfigs)
        note = f" (! {spread * 100:.0f}%)" if self.flag_spread and spread is not None else ""
        return self.template.format(value, note)

    def cell(self, m, scale: float) -> str:
        if m is None:  # an empty cell is as wide as a printed 1
            return " " * len(self.text(1, 1, None))
        spread = m.iqr / m.median if m.has_warnings else None
        return self.text(m.median / scale, m.significant_figures, spread)


@dataclass
class _Row:
    threads: int
    env: str | None
    name: str
    group: int = 0
    show_env: bool = False
    opens_group: bool = False
    cells: list = field(default_factory=list)


def _build_rows(results, descriptions: list) -> list[_Row]:
    keyed: dict = {}
    for m in results:
        keyed.setdefault((m.num_threads, m.env, m.as_row_name), {})[m.description] = m
    # stable: rows of one (threads, env) keep the order their first measurement came in
    keys = sorted(keyed, key=lambda k: k[:2])
    several_envs = len({m.env for m in results}) > 1
    rows: list[_Row] = []
    for threads, env, name in keys:
        row = _Row(threads, env, name)
        row.cells = [keyed[threads, env, name].get(d) for d in descriptions]
        previous = rows[-1] if rows else None
        row.opens_group = previous is None or previous.threads != threads
        row.group = 0 if previous is None else previous.group + row.opens_group
        # the env is printed on the first row of each run of one env within a group (a group
        # starts from "no env yet", which an empty-string env does not change)
        prior_env = "" if row.opens_group else previous.env
        row.show_env = several_envs and env != prior_env
        rows.append(row)
    return rows


def _best_medians(row: _Row, rows: list[_Row], colorize: Colorize) -> list:
    """Per column, the median this row's cells are coloured against (None: leave plain)."""
    if colorize == Colorize.ROWWISE:
        lowest = min(m.median for m in row.cells if m is not None)
        return [lowest] * len(row.cells)
    group = [r for r in rows if r.group == row.group]
    best = []
    for column in range(len(row.cells)):
        medians = [r.cells[column].median for r in group if r.cells[column] is not None]
        best.append(min(medians) if medians else None)
    return best


def _render_table(results, colorize: Colorize, trim: bool, warn: bool) -> str:
    if len({m.label for m in results}) != 1:
        raise AssertionError("All results must share the same label")
    unit, scale = common.select_unit(min(m.median for m in results))
    descriptions = common.ordered_unique([m.description for m in results])
    rows = _build_rows(results, descriptions)
    formats = [
        _NumberFormat.for_column([r.cells[c] for r in rows], scale, trim, warn)
        for c in range(len(descriptions))
    ]
    env_width = max(len(m.env) for m in results) if len({m.env for m in results}) > 1 else 0

    header = ["", *descriptions]
    lines_text = [header]
    for row in rows:
        env = f"({row.env})" if row.show_env else ""
        first = "  " + env.ljust(env_width + 4) + row.name
        lines_text.append([first] + [f.cell(m, scale) for f, m in zip(formats, row.cells)])
    widths = [max(len(line[c]) for line in lines_text) for c in range(len(header))]

    out = [_SEPARATOR.join(text.center(w) for text, w in zip(header, widths))]
    total_width = len(out[0])
    for row, texts in zip(rows, lines_text[1:]):
        if row.opens_group:
            out.append(f"{row.threads} threads: ".ljust(total_width, "-"))
        best = _best_medians(row, rows, colorize) if colorize != Colorize.NONE else None
        shown = [texts[0].ljust(widths[0])]
        for c, (text, m) in enumerate(zip(texts[1:], row.cells)):
            text = text.center(widths[c + 1])
            if best is not None and m is not None and best[c] is not None:
                text = _paint(text, m.median, best[c])
            shown.append(text)
        out.append(_SEPARATOR.join(shown))

    title = f" {results[0].label or ''} ".center(total_width - 2, "-")
    note = _WARNING_NOTE if warn and any(m.has_warnings for m in results) else ""
    body = "\n".join(out)
    return f"[{title}]\n{body}\n\nTimes are in {common.unit_to_english(unit)}s ({unit}).\n{note}"


class Compare:
    """Print many Measurements as tables: one per label, a row per sub_label (or stmt) and
    thread count, a column per description."""

    def __init__(self, results) -> None:
        self._results: list[common.Measurement] = []
        self.extend_results(results)
        self._trim_significant_figures = False
        self._colorize = Colorize.NONE
        self._highlight_warnings = False

    def __str__(self) -> str:
        return "\n".join(self._render())

    def extend_results(self, results) -> None:
        """Append Measurements to the ones already held."""
        for r in results:
            if not isinstance(r, common.Measurement):
                raise ValueError(f"Expected an instance of `Measurement`, got {type(r)} instead.")
        self._results.extend(results)

    def trim_significant_figures(self) -> None:
        """Show only the figures each measurement's spread supports."""
        self._trim_significant_figures = True

    def colorize(self, rowwise: bool = False) -> None:
        """Colour the cells against the best of their column (or row)."""
        self._colorize = Colorize.ROWWISE if rowwise else Colorize.COLUMNWISE

    def highlight_warnings(self) -> None:
        """Mark the cells of high-variance measurements."""
        self._highlight_warnings = True

    def print(self) -> None:
        """Print the tables."""
        print(str(self))

    def _render(self) -> list[str]:
        by_label: dict = {}
        for m in common.Measurement.merge(self._results):
            by_label.setdefault(m.label, []).append(m)
        options = (self._colorize, self._trim_significant_figures, self._highlight_warnings)
        return [_render_table(group, *options) for group in by_label.values()]
