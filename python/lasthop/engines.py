"""Where batches of runs execute: `"local"` (worker processes on this machine's cores), `"serial"` (in this
process), or any Dask cluster through its `distributed.Client` (or the scheduler's address, `tcp://HOST:PORT`).
Nothing here knows what kind of cluster sits behind a Client: LocalCluster, workers started by hand,
dask-jobqueue (Slurm, PBS, SGE) or Kubernetes are all the same to it."""

from __future__ import annotations

import math
import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any, Callable, Iterator, Sequence, Tuple


class Engine:
    """What a sweep or a reproduction runs on. Build one with `Engine.of(engine, jobs)`."""

    def __init__(self, kind: str, client: Any = None, jobs: int | None = None, owns_client: bool = False):
        self.kind = kind
        self.client = client
        self.jobs = jobs
        self._owns_client = owns_client

    @staticmethod
    def of(engine: Any = "local", jobs: int | None = None) -> "Engine":
        if isinstance(engine, Engine):
            return engine
        if engine is None or engine == "local":
            return Engine("local", jobs=jobs or os.cpu_count() or 1)
        if engine == "serial":
            return Engine("serial", jobs=1)
        if isinstance(engine, str) and "://" in engine:
            from distributed import Client

            return Engine("dask", Client(engine), owns_client=True)
        if hasattr(engine, "submit") and hasattr(engine, "gather") and hasattr(engine, "scheduler_info"):
            return Engine("dask", engine)
        raise ValueError(
            f"engine {engine!r}: expected 'local', 'serial', a dask.distributed Client or a scheduler address "
            "like 'tcp://host:8786'"
        )

    def workers(self) -> int:
        """How many runs can go at once."""
        if self.kind == "dask":
            return max(1, sum(self.client.nthreads().values()))
        return max(1, self.jobs or 1)

    def batch_size(self, runs: int, requested: int | None = None) -> int:
        """Runs per task. A simulator run takes milliseconds, a Dask task costs about one: about eight
        tasks per worker keep every worker busy to the end while scheduling stays a small share of the
        time; at most 256 runs per task so that an interrupted sweep loses little."""
        if requested:
            return max(1, int(requested))
        return max(1, min(256, math.ceil(runs / (self.workers() * 8))))

    def map(self, fn: Callable[[Any], Any], batches: Sequence[Any]) -> Iterator[Tuple[int, Any]]:
        """Runs `fn` on every batch; yields `(batch index, fn(batch))` as each finishes (any order)."""
        if not batches:
            return
        if self.kind == "serial":
            for i, b in enumerate(batches):
                yield i, fn(b)
        elif self.kind == "local":
            # fork (on Linux) starts a worker in milliseconds and needs no `if __name__ == "__main__"` guard
            # in the caller's script; elsewhere the platform's default.
            ctx = multiprocessing.get_context("fork") if sys.platform.startswith("linux") else None
            workers = min(self.workers(), len(batches))
            with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
                futures = {pool.submit(fn, b): i for i, b in enumerate(batches)}
                for f in as_completed(futures):
                    yield futures[f], f.result()
        else:
            from distributed import as_completed as dask_completed

            futures = self.client.map(fn, list(batches), pure=False)
            index = {f.key: i for i, f in enumerate(futures)}
            for f, value in dask_completed(futures, with_results=True):
                yield index[f.key], value

    def close(self) -> None:
        if self._owns_client and self.client is not None:
            self.client.close()
            self.client = None

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Engine({self.kind}, workers={self.workers() if self.kind != 'dask' or self.client else '?'})"
