"""The catalogue as the reports list it."""

from __future__ import annotations

from invariants.catalogue import CATALOGUE
from reports.checked import checked_invariants, find


def test_every_catalogue_entry_is_listed_in_order() -> None:
    assert [c.id for c in checked_invariants()] == [entry.id for entry in CATALOGUE]


def test_an_invariant_is_found_by_its_id_or_its_spec_rule() -> None:
    by_id = find("delivery-count-limit")
    assert by_id is not None and by_id.spec == "SP-5, E-4"
    assert find("E-4") == by_id and find("SP-6") == find("spso-monotonic")
    assert find("no-such-invariant") is None
