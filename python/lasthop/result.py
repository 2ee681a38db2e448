"""One run: `lasthop.run(scenario)` plays a scenario (the GIL released while it simulates) and returns its
metrics as plain Python objects and, with `trace=True`, each flow's time series as a pandas DataFrame."""

from __future__ import annotations

import json
import os
from typing import Optional, Union

from . import _lasthop
from ._lasthop import Scenario

ScenarioLike = Union[Scenario, str, "os.PathLike[str]", dict]


def as_scenario(s: ScenarioLike) -> Scenario:
    """A Scenario from a Scenario, a TOML file name or text, or a dict."""
    if isinstance(s, Scenario):
        return s
    if isinstance(s, dict):
        return Scenario.from_dict(s)
    return Scenario.from_toml(s)


class Result:
    """The metrics of one run (the content of `metrics.json`).

    `metrics` is the whole document; `flows`, `links`, `agents`, `handoffs` and `web` are its parts;
    `series(flow)` is a flow's time series (`kind`, `time_s`, `value`) when the run was traced."""

    def __init__(self, metrics: dict):
        self.metrics = metrics

    seed = property(lambda self: self.metrics["seed"])
    sim_time_s = property(lambda self: self.metrics["sim_time_s"])
    events = property(lambda self: self.metrics["events"])
    hit_time_limit = property(lambda self: self.metrics["hit_time_limit"])
    flows = property(lambda self: self.metrics["flows"])
    links = property(lambda self: self.metrics["links"])
    agents = property(lambda self: self.metrics["agents"])
    handoffs = property(lambda self: self.metrics.get("handoffs", []))
    web = property(lambda self: self.metrics.get("web", []))

    def flow(self, name: Optional[str] = None) -> dict:
        """The metrics of flow `name` (default: the first)."""
        for f in self.flows:
            if name is None or f["name"] == name:
                return f
        raise KeyError(f"no flow {name!r}; flows: {[f['name'] for f in self.flows]}")

    @property
    def traced(self) -> bool:
        return self.metrics.get("series") is not None

    def series(self, flow: Optional[str] = None):
        """The time series of a flow as a DataFrame with columns `kind` (sent, received, acked, cwnd,
        handoff), `time_s`, `value`: what `lasthop run --trace` writes to `series-<flow>.csv`."""
        import pandas as pd

        if not self.traced:
            raise ValueError("the run was not traced: lasthop.run(scenario, trace=True)")
        name = self.flow(flow)["name"]
        s = next(x for x in self.metrics["series"] if x["name"] == name)
        rows: list[tuple[str, float, int]] = []
        for kind in ("sent", "received", "acked", "cwnd"):
            rows.extend((kind, t, v) for t, v in s[kind])
        rows.extend(("handoff", t, 0) for t in s["handoffs"])
        return pd.DataFrame(rows, columns=["kind", "time_s", "value"])

    def __repr__(self) -> str:
        flows = ", ".join(f"{f['name']}: {f['goodput_mbps']:.3g} Mb/s" for f in self.flows)
        return f"Result(seed={self.seed}, sim_time_s={self.sim_time_s:.3g}, {flows})"


def run(scenario: ScenarioLike, trace: bool = False, seed: Optional[int] = None) -> Result:
    """Plays `scenario` to the end (seed: the scenario's own unless given). Other threads keep running
    meanwhile: the simulator holds no GIL."""
    s = as_scenario(scenario)
    return Result(json.loads(_lasthop.run_json(s, seed, trace)))

