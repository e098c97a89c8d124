"""A share-partition leader that outlives its group's deletion must not write its old life into the new one.

Dense swarm seeds 4300022205136953387 and 6394583595046328460 violated spso-monotonic (SP-6): the
group was deleted (its share-group state tombstoned, GC-8/SC-8) while a leader kept the
share-partition in memory; the group, created again, re-initialized the state at state epoch 1
(GC-7: the new group's epoch) with no leader epoch stored, so nothing fenced the old leader (SC-5),
whose writes of changed batches, computed against the old life's durable state, were accepted and
let its SPSO jump past offsets the new state has no terminal record of. A leader now drops its
state and reads again when the share coordinator answers that the state does not exist (SC-9):
the summary read when a share session opens, or a write.
"""

from __future__ import annotations

import pytest

from model.sim.runner import run
from scenarios import library

SEEDS = (4300022205136953387, 6394583595046328460)


@pytest.mark.parametrize("seed", SEEDS)
def test_swarm_seed_with_a_deleted_and_recreated_group_runs_clean(seed: int) -> None:
    result = run(library.get("swarm"), seed, stop_on_first_violation=False)
    assert result.violations == [], [v.describe() for v in result.violations]
    assert result.faults_fired.get("admin_delete_group", 0) >= 1
