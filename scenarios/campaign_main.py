"""The campaign as a Spark application, for ``spark-submit`` (README "Running on a Spark cluster")::

    spark-submit --master spark://HOST:7077 --py-files sharesim.zip \\
        "$(python -c 'import scenarios.campaign_main as m; print(m.__file__)')" \\
        swarm --runs 1000000 --out /shared/campaigns/swarm-1

The arguments are ``sharesim campaign``'s (``--debug`` first prints a failure's
traceback, as ``sharesim --debug``); without ``--master`` the session uses the
master spark-submit configured. ``python -m scenarios.campaign_main`` runs the
same command without spark-submit. Failures and exit codes are ``sharesim``'s
(``scenarios/entry.py``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from scenarios.campaign.cli import campaign_command
from scenarios.entry import guarded, set_debug


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    set_debug(args[:1] == ["--debug"])
    args = args[1:] if args[:1] == ["--debug"] else args
    return guarded(lambda: campaign_command.main(args, prog_name="python -m scenarios.campaign_main",
                                                 standalone_mode=False))


if __name__ == "__main__":
    sys.exit(main())
