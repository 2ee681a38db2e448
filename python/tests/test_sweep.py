"""Sweeps: grids (product, paired, computed), identical tables on every engine (a real Dask scheduler and
two worker processes among them), failed runs kept, the store, resuming an interrupted sweep, xarray."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pandas as pd
import pytest

import lasthop
from lasthop.sweep import expand

from conftest import EXAMPLE

GRID = {
    "nodes.bs.agent": ["none", "snoop"],
    # paired: each error rate with its own transfer size
    ("links.wavelan.error.ber", "flows.bulk.bytes"): [(1e-6, 100_000), (2e-5, 60_000)],
    # computed from the others
    "links.ether.delay_ms": lambda p: 1.0 if p["nodes.bs.agent"] == "none" else 2.5,
}


def test_grid_expansion():
    fields, points = expand(GRID)
    assert fields == ["nodes.bs.agent", "links.wavelan.error.ber", "flows.bulk.bytes", "links.ether.delay_ms"]
    assert points == [
        {"nodes.bs.agent": "none", "links.wavelan.error.ber": 1e-6, "flows.bulk.bytes": 100_000, "links.ether.delay_ms": 1.0},
        {"nodes.bs.agent": "none", "links.wavelan.error.ber": 2e-5, "flows.bulk.bytes": 60_000, "links.ether.delay_ms": 1.0},
        {"nodes.bs.agent": "snoop", "links.wavelan.error.ber": 1e-6, "flows.bulk.bytes": 100_000, "links.ether.delay_ms": 2.5},
        {"nodes.bs.agent": "snoop", "links.wavelan.error.ber": 2e-5, "flows.bulk.bytes": 60_000, "links.ether.delay_ms": 2.5},
    ]
    with pytest.raises(ValueError, match="tuple of 2"):
        expand({("a", "b"): [1, 2]})
    with pytest.raises(ValueError, match="no values"):
        expand({"a": []})


def test_rows_are_the_results_csv_columns(small):
    df = lasthop.sweep(small, GRID, seeds=2, engine="serial", progress=False, names={"nodes.bs.agent": "agent"})
    fields = ["agent", "links.wavelan.error.ber", "flows.bulk.bytes", "links.ether.delay_ms"]
    assert list(df.columns) == fields + ["seed"] + lasthop._lasthop.metric_columns("flow")
    assert len(df) == 8 and df.attrs["failed"] == []
    assert list(df["seed"]) == [1, 2] * 4
    assert (df["bytes_delivered"] == df["flows.bulk.bytes"]).all()
    # each row is the run it names
    row = df.iloc[5]
    one = lasthop.run(small.set_all([("nodes.bs.agent", "snoop"), ("links.wavelan.error.ber", 1e-6),
                                     ("flows.bulk.bytes", 100_000), ("links.ether.delay_ms", 2.5)]), seed=2)
    assert row["goodput_mbps"] == one.flow()["goodput_mbps"] and row["events"] == one.events
    # Snoop retransmits locally, plain Reno cannot
    assert (df[df["agent"] == "none"]["local_retransmissions"] == 0).all()
    assert df[df["agent"] == "snoop"]["local_retransmissions"].sum() > 0


def test_identical_table_on_every_engine(small, dask_client):
    kw = dict(seeds=3, progress=False)
    serial = lasthop.sweep(small, GRID, engine="serial", **kw)
    local = lasthop.sweep(small, GRID, engine="local", jobs=2, batch_size=2, **kw)
    dask = lasthop.sweep(small, GRID, engine=dask_client, batch_size=2, **kw)
    address = lasthop.sweep(small, GRID, engine=dask_client.scheduler.address, **kw)
    for other in (local, dask, address):
        pd.testing.assert_frame_equal(serial, other, check_exact=True)
    # both workers took part
    assert len(dask_client.scheduler_info()["workers"]) == 2


def test_a_failing_run_is_recorded_not_fatal(small, dask_client, tmp_path):
    # a negative BER does not validate; 0 would be fine
    grid = {"links.wavelan.error.ber": [0.0, -1.0, 1e-6]}
    with pytest.warns(UserWarning, match="1 of 3 runs failed"):
        df = lasthop.sweep(small, grid, engine=dask_client, progress=False, store=tmp_path / "s.parquet")
    assert list(df["links.wavelan.error.ber"]) == [0.0, 1e-6]
    (failed,) = df.attrs["failed"]
    assert failed["links.wavelan.error.ber"] == -1.0 and failed["seed"] == 1
    assert "`links.wavelan.error`: ber: expected a bit-error rate" in failed["error"]
    stored = lasthop.load_store(tmp_path / "s.parquet")
    assert len(stored) == 3 and stored["error"].notna().sum() == 1
    # again: nothing runs; with retry_failed only the failed run runs (and fails again)
    with pytest.warns(UserWarning):
        again = lasthop.sweep(small, grid, engine="serial", progress=False, store=tmp_path / "s.parquet")
    assert again.attrs["executed"] == 0 and again.attrs["from_store"] == 3
    with pytest.warns(UserWarning):
        retry = lasthop.sweep(small, grid, engine="serial", progress=False, store=tmp_path / "s.parquet",
                              retry_failed=True)
    assert retry.attrs["executed"] == 1
    pd.testing.assert_frame_equal(df, retry)


def test_a_run_that_errors_after_validation_is_recorded(small):
    # the flow exists in the scenario, but `flow=` names another: every row fails to be made
    with pytest.warns(UserWarning):
        df = lasthop.sweep(small, {"nodes.bs.agent": ["none"]}, engine="serial", progress=False, flow="nosuch")
    assert df.empty and "nosuch" in df.attrs["failed"][0]["error"]


def test_store_keys_runs_by_scenario_seed_and_version(small, tmp_path):
    store = tmp_path / "sweep.parquet"
    first = lasthop.sweep(small, GRID, seeds=2, engine="serial", progress=False, store=store)
    assert first.attrs["executed"] == 8
    # one more seed and one more agent value: only the new runs execute
    bigger = dict(GRID, **{"nodes.bs.agent": ["none", "snoop"]})
    second = lasthop.sweep(small, bigger, seeds=3, engine="serial", progress=False, store=store)
    assert second.attrs["executed"] == 4 and second.attrs["from_store"] == 8
    pd.testing.assert_frame_equal(second[second["seed"] < 3].reset_index(drop=True), first, check_exact=True)
    # pandas reads the store directly
    raw = pd.read_parquet(store)
    assert set(raw.columns) == {"key", "params", "seed", "kind", "error", "cells"} and len(raw) == 12
    params = json.loads(raw["params"][0])
    assert set(params) == set(expand(GRID)[0])


def test_resume_after_an_interrupted_sweep(tmp_path, small):
    """Kill a sweep half-way; run it again: only the missing runs execute, and the table is the
    uninterrupted one."""
    store = tmp_path / "resume.parquet"
    script = tmp_path / "sweep.py"
    script.write_text(textwrap.dedent(f"""
        import lasthop
        base = lasthop.Scenario.from_toml({str(EXAMPLE)!r}).set("flows.bulk.bytes", 100_000)
        lasthop.sweep(base, {{"links.wavelan.error.ber": [1e-6, 2e-6, 4e-6, 8e-6]}}, seeds=100,
                      engine="serial", batch_size=1, progress=False, store={str(store)!r})
    """))
    p = subprocess.Popen([sys.executable, str(script)], start_new_session=True)
    deadline = time.time() + 120
    while True:
        parts = [f for f in os.listdir(store) if f.endswith(".parquet")] if store.exists() else []
        if len(parts) >= 200:
            break
        assert p.poll() is None, "the sweep ended before it could be interrupted"
        assert time.time() < deadline
        time.sleep(0.005)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    done = len([f for f in os.listdir(store) if f.endswith(".parquet")])
    assert 200 <= done < 400, done

    grid = {"links.wavelan.error.ber": [1e-6, 2e-6, 4e-6, 8e-6]}
    resumed = lasthop.sweep(small, grid, seeds=100, engine="local", jobs=2, progress=False, store=store)
    assert resumed.attrs["from_store"] == done
    assert resumed.attrs["executed"] == 400 - done
    whole = lasthop.sweep(small, grid, seeds=100, engine="local", jobs=2, progress=False)
    pd.testing.assert_frame_equal(resumed, whole, check_exact=True)


def test_to_xarray(small):
    grid = {"nodes.bs.agent": ["none", "snoop"], "links.wavelan.error.ber": [1e-6, 1e-5]}
    df = lasthop.sweep(small, grid, seeds=2, engine="serial", progress=False, names={"links.wavelan.error.ber": "ber"})
    ds = lasthop.to_xarray(df)
    assert dict(ds.sizes) == {"nodes.bs.agent": 2, "ber": 2, "seed": 2}
    g = ds["goodput_mbps"].sel({"nodes.bs.agent": "snoop", "ber": 1e-5, "seed": 2}).item()
    assert g == df[(df["nodes.bs.agent"] == "snoop") & (df["ber"] == 1e-5) & (df["seed"] == 2)]["goodput_mbps"].item()


def test_to_xarray_paired_and_computed_fields_are_coordinates(small):
    df = lasthop.sweep(small, GRID, seeds=2, engine="serial", progress=False)
    ds = lasthop.to_xarray(df)
    assert dict(ds.sizes) == {"nodes.bs.agent": 2, "links.wavelan.error.ber": 2, "seed": 2}
    assert {"flows.bulk.bytes", "links.ether.delay_ms"} <= set(ds.coords)
    assert int(ds["bytes_delivered"].sel({"nodes.bs.agent": "none", "links.wavelan.error.ber": 2e-5, "seed": 1})) == 60_000
