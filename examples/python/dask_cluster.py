"""A sweep on any Dask cluster, from a scheduler's address: start one by hand with

    dask scheduler                  # prints tcp://HOST:8786
    dask worker tcp://HOST:8786     # on every machine that should run simulations

then `python examples/python/dask_cluster.py tcp://HOST:8786`. Without an address it
starts a LocalCluster of two worker processes (hence the `__main__` guard). The table is
the same, row for row, as `engine="local"` gives."""

import sys

from dask.distributed import Client, LocalCluster

import lasthop


def main():
    if len(sys.argv) > 1:
        client = Client(sys.argv[1])
    else:
        client = Client(LocalCluster(n_workers=2, threads_per_worker=1))
    base = lasthop.Scenario.from_toml("examples/snoop.toml")
    base = base.set("flows.bulk.bytes", 1_000_000)
    grid = {
        "nodes.bs.agent": ["none", "snoop"],
        # paired fields change together: each error rate with the transfer size that
        # keeps its runs short
        ("links.wavelan.error.ber", "flows.bulk.bytes"): [
            (1e-6, 2_000_000),
            (1e-5, 500_000),
        ],
        # a field computed from the others
        "tcp.max_window": lambda p: 32_768 if p["nodes.bs.agent"] == "none" else 65_535,
    }
    df = lasthop.sweep(base, grid, seeds=10, engine=client)
    print(lasthop.to_xarray(df)["goodput_mbps"].mean("seed"))


if __name__ == "__main__":  # Dask starts worker processes that import this file
    main()
