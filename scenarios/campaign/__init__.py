"""Spark fault campaigns: many runs of a scenario, aggregated, with reproducers (README "Spark campaigns")."""

from scenarios.campaign.driver import Options, run_campaign
from scenarios.campaign.execute import CampaignExists, StaleWorkers
from scenarios.campaign.identity import CampaignMismatch
from scenarios.campaign.plan import Campaign, RunTask, TaskList, Workload, run_seed
from scenarios.campaign.session import spark_session

__all__ = ["Campaign", "CampaignExists", "CampaignMismatch", "Options", "RunTask", "StaleWorkers", "TaskList",
           "Workload", "run_campaign", "run_seed", "spark_session"]
