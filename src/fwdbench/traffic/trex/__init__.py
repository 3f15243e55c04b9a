"""Cisco TRex (stateless) as fwdbench's generator: ``[generator] type = "trex"``.

generator.py ties the parts together: install.py (finding TRex), config.py
(trex_cfg.yaml), server.py (t-rex-64 -i), client.py + agent.py (TRex's STL
client in a process of its own), plan.py (profile -> streams), result.py
(counters -> TrialResult). docs/trex.md says what is measured and what not.
"""
from fwdbench.traffic.trex.generator import TrexGenerator, TrexSettings

__all__ = ["TrexGenerator", "TrexSettings"]
