"""The HTML pieces: escaping, tables, embedded figures."""

from __future__ import annotations

import base64
import re

import matplotlib.pyplot as plt

from reports import html


def test_text_and_cells_are_escaped() -> None:
    table = html.table(("a<b", "n"), [("<script>", 3), (None, 0.123456)])
    assert "<script>" not in table and "&lt;script&gt;" in table and "a&lt;b" in table
    assert '<td class="num">3</td>' in table and '<td class="num">0.1235</td>' in table


def test_a_key_value_table_has_no_header_row() -> None:
    assert "<thead>" not in html.table(("", ""), [("seed", 1)])


def test_a_figure_is_embedded_as_png_and_closed() -> None:
    fig, ax = plt.subplots()
    ax.bar(["a", "b"], [1, 2])
    img = html.figure_img(fig, 'say "hi"')
    data = re.search(r'src="data:image/png;base64,([^"]+)"', img)
    assert data is not None and base64.b64decode(data.group(1)).startswith(b"\x89PNG")
    assert 'alt="say &quot;hi&quot;"' in img
    assert not plt.fignum_exists(fig.number)


def test_a_page_is_one_document_with_its_style_inline() -> None:
    page = html.page("T & U", html.section("S", html.paragraph("p")))
    assert page.startswith("<!DOCTYPE html>") and "<style>" in page and "<title>T &amp; U</title>" in page
    assert "<link" not in page and "<script" not in page
