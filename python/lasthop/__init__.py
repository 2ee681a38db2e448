"""lasthop from Python: scenarios, runs, parameter sweeps on one machine or any Dask cluster, and the
papers' reproductions, over the Rust simulator.

>>> import lasthop
>>> s = lasthop.Scenario.from_toml("examples/snoop.toml").set("links.wavelan.error.ber", 1e-5)
>>> lasthop.run(s).flow()["goodput_mbps"]
>>> df = lasthop.sweep(s, {"links.wavelan.error.ber": [1e-6, 1e-5], "nodes.bs.agent": ["none", "snoop"]}, seeds=3)
"""

from ._lasthop import Scenario, ScenarioError
from ._lasthop import version as _native_version
from .engines import Engine
from .reproduce import ClaimsFailed, RunsFailed, experiments, reproduce
from .result import Result, run
from .store import Store, load_store
from .sweep import sweep, to_xarray

__version__ = _native_version()

__all__ = [
    "ClaimsFailed",
    "Engine",
    "Result",
    "RunsFailed",
    "Scenario",
    "ScenarioError",
    "Store",
    "experiments",
    "load_store",
    "reproduce",
    "run",
    "sweep",
    "to_xarray",
]
