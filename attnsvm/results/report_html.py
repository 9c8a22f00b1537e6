"""HTML pieces of the sweep report: escaped tables that sort by a click, embedded images, the page.

Everything the page needs is inside it (style, a few lines of script, images as data URIs), so
it opens from disk, offline, in any browser; nothing here knows what a sweep is.
"""

from __future__ import annotations

import base64
import html
import math
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

# the conv_type colours of the convergence figure (matplotlib's tab: colours); others grey
COLOURS = {"global": "#2ca02c", "local": "#ff7f0e", "other": "#7f7f7f", "not_converged": "#d62728"}

CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1200px; color: #222;
       padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ddd; }
code, pre { background: #f4f4f4; padding: 0.1em 0.3em; border-radius: 3px; }
pre { padding: 0.6em; overflow-x: auto; white-space: pre-wrap; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: 0.2em 0.5em; text-align: right; }
th { background: #f0f0f0; } td.t, th.t { text-align: left; }
table.sortable th { cursor: pointer; user-select: none; }
th[aria-sort="ascending"]::after { content: " \\25B2"; }
th[aria-sort="descending"]::after { content: " \\25BC"; }
.scroll { overflow-x: auto; }
figure { display: inline-block; margin: 0.5em 1em 1em 0; vertical-align: top; }
figure img { max-width: 100%; border: 1px solid #eee; }
.bar { display: flex; width: 240px; height: 14px; background: #eee; }
.bar span { display: block; height: 100%; }
.key span { display: inline-block; width: 0.9em; height: 0.9em; margin: 0 0.3em 0 1em; }
.bad { color: #b00; } .note { color: #666; }
"""

# Click a header: sort the body rows by that column, ascending, then descending on a second
# click. Cells carry their sort value in data-v; numbers sort as numbers, blanks last.
SCRIPT = """
document.querySelectorAll("table.sortable").forEach(function (table) {
  table.querySelectorAll("thead th").forEach(function (th, col) {
    th.addEventListener("click", function () {
      var up = th.getAttribute("aria-sort") !== "ascending";
      table.querySelectorAll("thead th").forEach(function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", up ? "ascending" : "descending");
      var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      var key = function (r) { var v = r.cells[col].getAttribute("data-v");
        return v === "" || v === null ? null : (isNaN(Number(v)) ? v : Number(v)); };
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        if (x === null || y === null) { return (x === null) - (y === null); }
        var c = typeof x !== typeof y ? (typeof x < typeof y ? -1 : 1)
          : (x < y ? -1 : x > y ? 1 : 0);
        return up ? c : -c;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
"""


def esc(value) -> str:
    return html.escape(str(value), quote=True)


def _blank(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA


def cell(value) -> tuple[str, str, bool]:
    """(shown text, sort value, is text) of one table cell: floats to 4 significant digits."""
    if _blank(value):
        return "", "", False
    if isinstance(value, bool):
        return str(value), str(int(value)), False
    if isinstance(value, int | float) and not isinstance(value, bool):
        shown = f"{value:.4g}" if isinstance(value, float) else str(value)
        return shown, repr(value), False
    if hasattr(value, "item"):  # numpy scalars
        return cell(value.item())
    return str(value), str(value), True


def table(df: pd.DataFrame, sortable: bool = True, raw: Iterable[str] = ()) -> str:
    """``df`` as an HTML table (escaped); the columns named in ``raw`` hold ready HTML."""
    raw = set(raw)
    kind = ' class="sortable"' if sortable else ""
    texts = {c: df[c].map(lambda v: cell(v)[2]).all() if len(df) else True for c in df.columns}
    head = "".join(
        f'<th class="t" scope="col">{esc(c)}</th>' if texts[c] else f'<th scope="col">{esc(c)}</th>'
        for c in df.columns
    )
    rows = []
    for rec in df.itertuples(index=False):
        tds = []
        for c, v in zip(df.columns, rec, strict=True):
            if c in raw:
                tds.append(f'<td class="t" data-v="">{v}</td>')
                continue
            shown, key, text = cell(v)
            cls = ' class="t"' if text else ""
            tds.append(f'<td{cls} data-v="{esc(key)}">{esc(shown)}</td>')
        rows.append("<tr>" + "".join(tds) + "</tr>")
    body = "\n".join(rows)
    return (
        f'<div class="scroll"><table{kind}><thead><tr>{head}</tr></thead>'
        f"<tbody>\n{body}\n</tbody></table></div>"
    )


def bar(counts: dict[str, int]) -> str:
    """A stacked bar of ``counts`` (one segment per key, width its share of the total)."""
    total = sum(counts.values())
    spans = "".join(
        f'<span style="width:{100 * n / total:.2f}%;background:{COLOURS.get(k, "#bbb")}" '
        f'title="{esc(k)}: {n}"></span>'
        for k, n in counts.items()
        if n and total
    )
    return f'<div class="bar">{spans}</div>'


def legend(kinds: Iterable[str]) -> str:
    items = "".join(
        f'<span style="background:{COLOURS.get(k, "#bbb")}"></span>{esc(k)}' for k in kinds
    )
    return f'<p class="key">{items}</p>'


def image(path: Path) -> str:
    """A figure embedded as a data URI, captioned with its file name."""
    data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
    mime = "image/svg+xml" if Path(path).suffix == ".svg" else f"image/{Path(path).suffix[1:]}"
    return (
        f'<figure><img src="data:{mime};base64,{data}" alt="{esc(Path(path).stem)}">'
        f"<figcaption>{esc(Path(path).name)}</figcaption></figure>"
    )


def section(title: str, anchor: str, body: str) -> str:
    return f'<section id="{anchor}"><h2>{esc(title)}</h2>\n{body}\n</section>'


def page(title: str, sections: list[tuple[str, str, str]]) -> str:
    """The whole document: a table of contents, then each (title, anchor, body) section."""
    toc = " · ".join(f'<a href="#{a}">{esc(t)}</a>' for t, a, _ in sections)
    parts = "\n".join(section(t, a, b) for t, a, b in sections)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<link rel="icon" href="data:,"><title>{esc(title)}</title>'
        f"<style>{CSS}</style></head>\n<body><h1>{esc(title)}</h1>\n<nav>{toc}</nav>\n"
        f"{parts}\n<script>{SCRIPT}</script>\n</body></html>\n"
    )
