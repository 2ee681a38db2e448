"""A sweep on a batch cluster: dask-jobqueue submits Dask workers as batch jobs and
lasthop sends its runs to them in batches. Only the engine differs from a sweep on one
machine.

    python examples/python/jobqueue.py slurm   # or pbs, sge, lsf
    python examples/python/jobqueue.py local   # the same jobs as local processes

Needs `pip install "./python[jobqueue]"` on the submitting node and the workers (a
shared file system, or the same environment on every node). The queue, account and
walltime your site needs go into dask-jobqueue's configuration
(~/.config/dask/jobqueue.yaml), not into this script.

Resumable: every finished run lands in sweep.parquet/, so running the script again
after a job was killed runs only what is missing."""

import sys

import dask_jobqueue
from dask.distributed import Client
# dask-jobqueue's own LocalCluster: the same jobs, as processes on this machine
from dask_jobqueue.local import LocalCluster as LocalJobCluster

import lasthop

CLUSTERS = {
    "slurm": dask_jobqueue.SLURMCluster,
    "pbs": dask_jobqueue.PBSCluster,
    "sge": dask_jobqueue.SGECluster,
    "lsf": dask_jobqueue.LSFCluster,
    "local": LocalJobCluster,
}


def main(kind):
    # each job: two worker processes; two jobs
    cluster = CLUSTERS[kind](cores=2, processes=2, memory="2GB")
    cluster.scale(jobs=2)
    client = Client(cluster)

    base = lasthop.Scenario.from_toml("examples/snoop.toml")
    base = base.set("flows.bulk.bytes", 500_000)
    grid = {
        "nodes.bs.agent": ["none", "snoop"],
        "links.wavelan.error.ber": [1e-6, 4e-6, 1.6e-5],
    }
    names = {"nodes.bs.agent": "agent", "links.wavelan.error.ber": "ber"}
    df = lasthop.sweep(base, grid, seeds=4, engine=client, store="sweep.parquet",
                       names=names)
    print(df.groupby(["ber", "agent"])["goodput_mbps"].mean().unstack())

    client.close()
    cluster.close()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "slurm")
