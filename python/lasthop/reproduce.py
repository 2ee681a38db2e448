"""The papers' reproductions from Python, as `lasthop reproduce` does them: `lasthop.reproduce(ids, quick=True)`
on this machine, or with `engine=` a Dask Client (or `tcp://HOST:PORT`) on a cluster. On a cluster the
simulator runs of every chosen experiment are batched out to the workers; their metrics come back and the
same Rust code as the CLI's writes results.csv, figures, reports and summary.md, so the outputs are the
ones a local run writes, byte for byte.

Also a command line, `python -m lasthop reproduce [IDS] --quick --check --out DIR --scheduler tcp://HOST:PORT`,
which `lasthop reproduce --scheduler` hands over to."""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, Optional, Sequence, Union

from . import _lasthop, _worker
from .engines import Engine


class RunsFailed(RuntimeError):
    """Some runs of a reproduction failed (the CLI exits with 2)."""

    def __init__(self, summary: dict):
        self.summary = summary
        n = sum(len(e["failed_runs"]) for e in summary["experiments"])
        super().__init__(f"{n} runs failed (see the reports)")


class ClaimsFailed(AssertionError):
    """`check=True` and some claims' outcomes differ from their record (the CLI's `--check` exits with 1): a
    claim recorded to hold fails, or a recorded divergence holds."""

    def __init__(self, summary: dict):
        self.summary = summary
        lines = [_describe(e, c) for e, c in _unexpected(summary)]
        super().__init__(f"{len(lines)} claims differ from their record:\n  " + "\n  ".join(lines))


def _failing(summary: dict):
    return [(e, c) for e in summary["experiments"] for c in e["claims"] if not c["holds"]]


def _unexpected(summary: dict):
    """Claims whose outcome is not the recorded one (what `--check` fails on)."""
    return [(e, c) for e in summary["experiments"] for c in e["claims"] if not c["as_recorded"]]


def _describe(e: dict, c: dict) -> str:
    if c["holds"]:
        what = "HOLDS, recorded to fail"
    elif c["expected"] == "holds":
        what = "FAILS, recorded to hold"
    else:
        what = "NOT MEASURED, recorded to fail on its numbers"
    return f"{what} {e['id']}: {c['text']}: ours {c['ours']} (required {c['required']})"


def experiments(experiments_dir: Optional[str] = None) -> list[dict]:
    """Every experiment file (as `lasthop experiments`): id, default, paper, title, runner, file, grid,
    runs and quick_runs."""
    return _lasthop.experiments(experiments_dir)


def reproduce(
    ids: Union[str, Sequence[str], None] = None,
    quick: bool = False,
    check: bool = False,
    out: Union[str, "os.PathLike[str]"] = "out",
    engine: Any = "local",
    *,
    jobs: Optional[int] = None,
    experiments_dir: Optional[str] = None,
    progress: bool = False,
    batch_size: Optional[int] = None,
) -> dict:
    """Runs experiments (`ids`; default: every experiment with `default = true`) and writes under `out` what
    `lasthop reproduce` writes. Returns the summary: per experiment its claims (text, paper, holds, ours,
    required), runs and failed runs. Raises `RunsFailed` when a run failed and, with `check`, `ClaimsFailed`
    when a claim does not hold (after writing everything).

    `engine="local"`: the CLI's own thread pool (`jobs` threads, default all cores). A Dask Client or a
    scheduler address: the simulator runs go to the cluster in batches; testbed experiments still run here."""
    ids = [ids] if isinstance(ids, str) else list(ids or [])
    out = os.fspath(out)
    eng = Engine.of(engine, jobs)
    try:
        if eng.kind == "local":
            summary = _lasthop.reproduce(ids, quick, out, eng.workers(), experiments_dir, progress)
        else:
            summary = _on_engine(eng, ids, quick, out, experiments_dir, progress, batch_size)
    finally:
        eng.close()
    if any(e["failed_runs"] for e in summary["experiments"]):
        raise RunsFailed(summary)
    if check and _unexpected(summary):
        raise ClaimsFailed(summary)
    return summary


def _on_engine(eng: Engine, ids, quick, out, experiments_dir, progress, batch_size) -> dict:
    planned = _lasthop.plan(ids, quick, experiments_dir)
    size = eng.batch_size(len(planned), batch_size)
    batches = [planned[i : i + size] for i in range(0, len(planned), size)]
    started = time.perf_counter()
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(planned), unit="run", desc="lasthop reproduce")
    precomputed = []
    run_seconds = 0.0
    for bi, (seconds, got) in eng.map(_worker.results, batches):
        run_seconds += seconds
        for (job, trace), (ok, payload) in zip(batches[bi], got):
            precomputed.append((job, trace, ok, payload))
        if bar is not None:
            bar.update(len(got))
    if bar is not None:
        bar.close()
    cluster_seconds = time.perf_counter() - started
    summary = _lasthop.reproduce(ids, quick, out, 1, experiments_dir, False, precomputed)
    summary.update(runs=len(planned), run_seconds=run_seconds, cluster_seconds=cluster_seconds, batch_size=size)
    return summary


def main(argv: Optional[Sequence[str]] = None) -> int:
    """`python -m lasthop reproduce ...`: the CLI's `reproduce`, with `--scheduler` for a Dask cluster."""
    p = argparse.ArgumentParser(prog="python -m lasthop reproduce", description=main.__doc__)
    p.add_argument("ids", nargs="*", help="experiment ids [default: every experiment with default = true]")
    p.add_argument("--all", action="store_true", help="every experiment, also those with default = false")
    p.add_argument("--quick", action="store_true", help="fewer seeds and smaller runs")
    p.add_argument("--check", action="store_true", help="exit non-zero when a claim's outcome differs from its record")
    p.add_argument("--out", default="out", help="output directory [default: out]")
    p.add_argument("-j", "--jobs", type=int, help="worker threads without --scheduler [default: all cores]")
    p.add_argument("--experiments", help="directory of experiment files")
    p.add_argument("--scheduler", help="a Dask scheduler's address, tcp://HOST:PORT: run the grid on its workers")
    p.add_argument("--batch-size", type=int, help="runs per Dask task [default: about eight tasks per worker]")
    a = p.parse_args(argv)
    if a.all and a.ids:
        p.error("--all and experiment ids exclude each other")
    ids = [e["id"] for e in experiments(a.experiments)] if a.all else a.ids
    progress = sys.stderr.isatty() and os.environ.get("CI", "") in ("", "0", "false")
    try:
        summary = reproduce(
            ids,
            quick=a.quick,
            out=a.out,
            engine=a.scheduler or "local",
            jobs=a.jobs,
            experiments_dir=a.experiments,
            progress=progress,
            batch_size=a.batch_size,
        )
        code = 0
    except RunsFailed as e:
        summary, code = e.summary, 2
    total = sum(len(e["claims"]) for e in summary["experiments"])
    failing = _failing(summary)
    unexpected = _unexpected(summary)
    diverging = sum(1 for _, c in failing if c["as_recorded"])
    print(
        f"{total - len(failing)} of {total} claims hold, {diverging} fail as recorded (expected divergences), "
        f"{len(unexpected)} differ from the record; summary: {summary['summary']}"
    )
    for e, c in unexpected:
        print(f"  {_describe(e, c)}")
    if code == 2:
        n = sum(len(e["failed_runs"]) for e in summary["experiments"])
        print(f"error: {n} runs failed (see the reports)", file=sys.stderr)
        return 2
    if a.check and unexpected:
        return 1
    return 0
