"""What a worker process (local or Dask) runs: one batch of runs, timed. Kept apart from the rest of the
package so a worker imports nothing beyond the native module."""

from __future__ import annotations

import time

from . import _lasthop


def rows(batch):
    """`(jobs, flow)` -> `(seconds spent running, [(kind, cells) | ("error", message)])`."""
    jobs, flow = batch
    start = time.perf_counter()
    out = _lasthop.run_rows(jobs, flow)
    return time.perf_counter() - start, out


def results(jobs):
    """`[(job, trace)]` -> `(seconds, [(ok, metrics JSON or error)])`, for reproductions."""
    start = time.perf_counter()
    out = _lasthop.run_results(jobs)
    return time.perf_counter() - start, out
