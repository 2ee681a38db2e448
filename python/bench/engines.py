"""Benchmark: one sweep of 1,000 quick runs (Balakrishnan 1995 Fig. 7's grid at `--quick` size: 5 MB, Reno with and
without Snoop, 10 bit-error rates, 50 seeds) on the local engine, on a Dask LocalCluster of two worker
processes, and through the CLI's `lasthop reproduce` (an experiment file with the same grid); wall times
side by side (median of --repeat), Dask's overhead per run, and whether every route gives the same table.

    python python/bench/engines.py [--repeat 3] [--lasthop target/release/lasthop]
"""

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import pandas as pd
from dask.distributed import Client, LocalCluster

import lasthop

REPO = Path(__file__).resolve().parents[2]
BERS = [2.0**-k for k in range(14, 24)]
SEEDS = 50
NAMES = {"nodes.bs.agent": "agent", "links.wavelan.error.ber": "ber"}


def experiment_file(d: Path) -> Path:
    ber_list = ", ".join(repr(b) for b in BERS)
    (d / "bench.toml").write_text(f"""
id = "bench"
title = "1,000 quick runs"
paper = "Balakrishnan 1995 Fig. 7"
scenario = "{REPO / 'examples' / 'snoop.toml'}"
seeds = {SEEDS}
flow = "bulk"
[set]
"flows.bulk.bytes" = 5_000_000
[grid.agent]
path = "nodes.bs.agent"
values = ["none", "snoop"]
[grid.ber]
path = "links.wavelan.error.ber"
values = [{ber_list}]
[figure]
kind = "line"
x = "ber"
y = "goodput_mbps"
series = "agent"
""")
    return d


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--lasthop", default=str(REPO / "target" / "release" / "lasthop"))
    a = ap.parse_args()
    base = lasthop.Scenario.from_toml(REPO / "examples" / "snoop.toml").set("flows.bulk.bytes", 5_000_000)
    grid = {"nodes.bs.agent": ["none", "snoop"], "links.wavelan.error.ber": BERS}
    tmp = Path(tempfile.mkdtemp())
    exps = experiment_file(tmp)
    times = {"local": [], "dask": [], "cli": []}
    overhead = []
    tables = {}
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0")
    client = Client(cluster)
    try:
        for _ in range(a.repeat):
            df = lasthop.sweep(base, grid, seeds=SEEDS, engine="local", jobs=2, names=NAMES, progress=False)
            times["local"].append(df.attrs["wall_seconds"])
            tables["local"] = df
            df = lasthop.sweep(base, grid, seeds=SEEDS, engine=client, names=NAMES, progress=False)
            times["dask"].append(df.attrs["wall_seconds"])
            tables["dask"] = df
            # what two workers spent beyond the runs themselves, per run, against a run's own time
            per_run = df.attrs["run_seconds"] / len(df)
            overhead.append((df.attrs["wall_seconds"] * 2 - df.attrs["run_seconds"]) / len(df) / per_run)
            out = tmp / "cli-out"
            shutil.rmtree(out, ignore_errors=True)
            t = time.perf_counter()
            subprocess.run([a.lasthop, "reproduce", "bench", "--experiments", str(exps), "--jobs", "2", "--out", str(out)],
                           check=True, capture_output=True)
            times["cli"].append(time.perf_counter() - t)
            tables["cli"] = pd.read_csv(out / "bench" / "results.csv")
    finally:
        client.close()
        cluster.close()
    n = len(tables["local"])
    print(f"{n} runs, {a.repeat} repeats, median wall time (s):")
    for k, v in times.items():
        print(f"  {k:<6} {statistics.median(v):7.2f}   ({', '.join(f'{x:.2f}' for x in v)})")
    print(f"mean run time (Dask workers): {tables['dask'].attrs['run_seconds'] / n * 1000:.1f} ms")
    print(f"Dask overhead per run: median {statistics.median(overhead) * 100:.1f} % of a run's own time "
          f"({', '.join(f'{x * 100:.1f}' for x in overhead)})")
    pd.testing.assert_frame_equal(tables["local"], tables["dask"], check_exact=True)
    cli = tables["cli"]
    local = tables["local"]
    assert list(cli.columns) == list(local.columns), (list(cli.columns), list(local.columns))
    # results.csv writes every float in its shortest exact form: read back, every cell is the same value
    pd.testing.assert_frame_equal(local.reset_index(drop=True), cli, check_exact=True, check_dtype=False)
    print("identical tables: local = dask = CLI results.csv (every column, every row)")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
