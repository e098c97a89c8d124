"""The row schema documents every column (the reference page "Campaign row schema" is generated from it)."""

from __future__ import annotations

from reports.rows import ARROW_SCHEMA, COLUMN_DOCS, COLUMNS


def test_every_column_has_a_description_and_every_description_a_column() -> None:
    assert list(COLUMN_DOCS) == list(COLUMNS) == ARROW_SCHEMA.names
    assert all(text.strip() for text in COLUMN_DOCS.values())
