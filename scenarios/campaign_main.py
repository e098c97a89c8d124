"""The campaign as a Spark application, for ``spark-submit`` (README "Running on a Spark cluster")::

    spark-submit --master spark://HOST:7077 --py-files sharesim.zip \\
        "$(python -c 'import scenarios.campaign_main as m; print(m.__file__)')" \\
        swarm --runs 1000000 --out /shared/campaigns/swarm-1

The arguments are ``sharesim campaign``'s; without ``--master`` the session
uses the master spark-submit configured. ``python -m scenarios.campaign_main``
runs the same command without spark-submit.
"""

from __future__ import annotations

from scenarios.campaign.cli import campaign_command

if __name__ == "__main__":
    campaign_command(prog_name="campaign_main")
