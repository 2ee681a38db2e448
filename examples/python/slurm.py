"""The same sweep on a Slurm cluster: dask-jobqueue starts Dask workers as batch jobs, lasthop batches the runs
out to them. Only the engine changes; PBS (PBSCluster), SGE (SGECluster) and Kubernetes (dask-kubernetes)
work the same way. Needs `pip install ./python[dask] dask-jobqueue` on the login node and the workers.

Resumable: every finished run lands in sweep.parquet/, so running the script again after a time-out runs
only what is missing."""

from dask.distributed import Client
from dask_jobqueue import SLURMCluster

import lasthop

cluster = SLURMCluster(queue="normal", cores=8, processes=8, memory="16GB", walltime="01:00:00")
cluster.scale(jobs=4)  # 4 nodes x 8 worker processes
client = Client(cluster)

base = lasthop.Scenario.from_toml("examples/snoop.toml")
grid = {"nodes.bs.agent": ["none", "snoop"], "links.wavelan.error.ber": [2.0**-k for k in range(14, 25)]}
df = lasthop.sweep(base, grid, seeds=100, engine=client, store="sweep.parquet")
df.to_csv("results.csv", index=False)
print(df.groupby(["links.wavelan.error.ber", "nodes.bs.agent"])["goodput_mbps"].describe())
