"""Parameter sweeps: a base scenario, a grid of overrides and a list of seeds become one run each, carried out
on an engine (this machine's cores or a Dask cluster), optionally kept in a results store so that an
interrupted sweep resumes, and returned as a pandas DataFrame with the columns of `results.csv`.

Grid keys are scenario fields (`links.wavelan.error.ber`; `+path` adds a field the scenario leaves at its
default). A value is

- a list: one axis of the Cartesian product (the first key outermost, as in experiment files);
- for a tuple of fields, a list of tuples: paired values that change together (`zip`);
- a callable: computed for each point from the other fields' values (a dict keyed like the grid), after the
  list axes, in key order.
"""

from __future__ import annotations

import itertools
import json
import time
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, Union

from . import _lasthop, _worker
from .engines import Engine
from .result import ScenarioLike, as_scenario
from .store import Store, run_key

GridKey = Union[str, tuple]


@dataclass
class _Axis:
    key: GridKey
    paths: tuple  # the scenario fields it sets
    values: Optional[list]  # tuples, one per step (None for a callable)
    fn: Optional[Callable[[dict], Any]]


def _axes(grid: Mapping[GridKey, Any]) -> list[_Axis]:
    axes = []
    for key, spec in grid.items():
        paths = tuple(key) if isinstance(key, tuple) else (key,)
        if not paths or not all(isinstance(p, str) and p for p in paths):
            raise ValueError(f"grid key {key!r}: expected a field path or a tuple of field paths")
        if callable(spec):
            axes.append(_Axis(key, paths, None, spec))
            continue
        if isinstance(spec, (str, bytes)) or not isinstance(spec, Iterable):
            raise ValueError(f"grid[{key!r}]: expected a list of values or a callable, got {spec!r}")
        values = list(spec)
        if not values:
            raise ValueError(f"grid[{key!r}]: no values")
        if len(paths) > 1:
            for v in values:
                if not isinstance(v, (tuple, list)) or len(v) != len(paths):
                    raise ValueError(f"grid[{key!r}]: each value must be a tuple of {len(paths)} (paired fields), got {v!r}")
            values = [tuple(v) for v in values]
        else:
            values = [(v,) for v in values]
        axes.append(_Axis(key, paths, values, None))
    return axes


def dimensions(grid: Mapping[GridKey, Any]) -> list[str]:
    """The fields that vary independently: the first of each list axis (paired fields follow it, computed
    ones follow the others)."""
    return [a.paths[0] for a in _axes(grid) if a.fn is None]


def expand(grid: Mapping[GridKey, Any]) -> tuple[list[str], list[dict]]:
    """The grid's fields (in key order) and its points, each a dict field -> value, in run order."""
    axes = _axes(grid)
    fields = [p for a in axes for p in a.paths]
    if len(set(fields)) != len(fields):
        raise ValueError(f"grid: a field appears twice in {fields}")
    listed = [a for a in axes if a.fn is None]
    points = []
    for combo in itertools.product(*(a.values for a in listed)):
        point: dict = {}
        for a, vals in zip(listed, combo):
            point.update(zip(a.paths, vals))
        for a in axes:
            if a.fn is not None:
                got = a.fn(dict(point))
                vals = tuple(got) if len(a.paths) > 1 else (got,)
                if len(vals) != len(a.paths):
                    raise ValueError(f"grid[{a.key!r}]: the callable returned {got!r} for {len(a.paths)} fields")
                point.update(zip(a.paths, vals))
        points.append({f: point[f] for f in fields})
    return fields, points


def _seed_list(seeds: Union[int, Iterable[int]]) -> list[int]:
    if isinstance(seeds, int):
        if seeds < 1:
            raise ValueError("seeds: at least 1")
        return list(range(1, seeds + 1))
    out = [int(s) for s in seeds]
    if not out or any(s < 0 for s in out):
        raise ValueError("seeds: a count, or a non-empty list of non-negative integers")
    return out


@dataclass
class _Run:
    point: int
    seed: int
    key: str
    job: Optional[tuple]  # (scenario text, origin, folder, seed); None when the scenario is invalid
    error: Optional[str]


def sweep(
    base: ScenarioLike,
    grid: Mapping[GridKey, Any],
    seeds: Union[int, Iterable[int]] = 1,
    engine: Any = "local",
    *,
    store: Union[str, "os.PathLike[str]", None] = None,
    flow: Optional[str] = None,
    names: Optional[Mapping[str, str]] = None,
    retry_failed: bool = False,
    progress: bool = True,
    batch_size: Optional[int] = None,
    jobs: Optional[int] = None,
):
    """Runs every grid point with every seed and returns one row per successful run: the swept fields, `seed`
    and the metrics of `flow` (default: the first flow, or the first web workload) -- the columns of
    `results.csv` -- in grid order, then seed.

    `engine`: `"local"` (processes on all cores, or `jobs`), `"serial"`, a `dask.distributed.Client`, or a
    scheduler address (`"tcp://host:8786"`). The same grid gives the same table on every engine.

    `store`: a directory (e.g. `"sweep.parquet"`) keeping every finished run, keyed by a hash of its resolved
    scenario, seed, flow and the lasthop version; runs already there are not run again. Failed runs are kept
    with their error and re-run only with `retry_failed=True`.

    `names`: column names for fields (`{"links.wavelan.error.ber": "ber"}`; default: the field path).

    Failed runs (a scenario that does not validate for some grid value, a run that errors) are not rows:
    they are listed in `df.attrs["failed"]` (swept values, seed, error). `df.attrs` also holds `runs`,
    `executed` (runs carried out or found invalid now), `from_store`, `run_seconds` (their summed simulation time),
    `wall_seconds`, `workers`, `batch_size`, `dims` and `coords` (for `to_xarray`)."""
    import pandas as pd

    started = time.perf_counter()
    base = as_scenario(base)
    fields, points = expand(grid)
    seed_list = _seed_list(seeds)
    names = dict(names or {})
    columns = [names.get(f, f.lstrip("+")) for f in fields]
    if len(set(columns)) != len(columns) or "seed" in columns:
        raise ValueError(f"sweep: column names must differ from each other and from `seed`: {columns}")
    version = _lasthop.version()

    runs: list[_Run] = []
    for i, point in enumerate(points):
        try:
            scenario = base.set_all(list(point.items()))
            text, err = scenario.to_toml(), None
        except (_lasthop.ScenarioError, TypeError, ValueError) as e:
            scenario, text, err = None, None, str(e)
        for seed in seed_list:
            if scenario is None:
                key = run_key(json.dumps([base.to_toml(), _jsonable(point)]), seed, flow, version)
                runs.append(_Run(i, seed, key, None, err))
            else:
                key = run_key(text, seed, flow, version)
                runs.append(_Run(i, seed, key, (text, f"{base.origin} [{_label(point)}]", base.base_dir, seed), None))

    st = Store(store) if store is not None else None
    done = st.records() if st is not None else {}
    outcome: dict[str, dict] = {}
    for r in runs:
        rec = done.get(r.key)
        if rec is not None and not (retry_failed and rec["error"]):
            outcome[r.key] = rec
    from_store = len({r.key for r in runs if r.key in outcome})

    pending: dict[str, _Run] = {}
    invalid: list[dict] = []
    for r in runs:
        if r.key in outcome or r.key in pending:
            continue
        if r.job is None:
            invalid.append(_record(r, points, "", None, r.error))
        else:
            pending[r.key] = r
    for rec in invalid:
        outcome[rec["key"]] = rec
    if st is not None:
        st.append(invalid)

    eng = Engine.of(engine, jobs)
    todo = list(pending.values())
    size = eng.batch_size(len(todo), batch_size)
    batches = [todo[i : i + size] for i in range(0, len(todo), size)]
    run_seconds = 0.0
    bar = _progress(len(runs), len(runs) - len(todo), progress)
    try:
        work = [([r.job for r in b], flow) for b in batches]
        for bi, (seconds, got) in eng.map(_worker.rows, work):
            run_seconds += seconds
            recs = []
            for r, (kind, payload) in zip(batches[bi], got):
                if kind == "error":
                    recs.append(_record(r, points, "", None, payload))
                else:
                    recs.append(_record(r, points, kind, payload, None))
            for rec in recs:
                outcome[rec["key"]] = rec
            if st is not None:
                st.append(recs)
            bar.update(len(recs))
    finally:
        bar.close()
        eng.close()

    rows, failed, kinds = [], [], []
    for r in runs:
        rec = outcome[r.key]
        values = dict(zip(columns, points[r.point].values()))
        if rec["error"]:
            failed.append({**values, "seed": r.seed, "error": rec["error"]})
            continue
        cells = rec["cells"] if isinstance(rec["cells"], list) else json.loads(rec["cells"])
        if rec["kind"] not in kinds:
            kinds.append(rec["kind"])
        rows.append({**values, "seed": r.seed, **dict(zip(_lasthop.metric_columns(rec["kind"]), cells))})
    metric_cols = [c for k in (kinds or ["flow"]) for c in _lasthop.metric_columns(k)]
    ordered = list(dict.fromkeys(columns + ["seed"] + metric_cols))
    df = pd.DataFrame(rows, columns=ordered)
    if failed:
        warnings.warn(f"sweep: {len(failed)} of {len(runs)} runs failed; see df.attrs['failed']", stacklevel=2)
    df.attrs.update(
        runs=len(runs),
        executed=len(todo) + len(invalid),
        from_store=from_store,
        failed=failed,
        run_seconds=run_seconds,
        wall_seconds=time.perf_counter() - started,
        workers=eng.workers() if eng.kind != "dask" else None,
        batch_size=size,
        dims=[columns[fields.index(f)] for f in dimensions(grid)] + ["seed"],
        coords=[c for f, c in zip(fields, columns) if f not in dimensions(grid)],
    )
    return df


def _record(r: _Run, points: Sequence[dict], kind: str, cells: Optional[list], error: Optional[str]) -> dict:
    return {
        "key": r.key,
        "params": json.dumps(_jsonable(points[r.point])),
        "seed": r.seed,
        "kind": kind,
        "error": error or "",
        "cells": json.dumps(cells) if cells is not None else "",
    }


def _jsonable(point: dict) -> dict:
    return {k: (v if isinstance(v, (bool, int, float, str)) or v is None else repr(v)) for k, v in point.items()}


def _label(point: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in point.items())


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _progress(total: int, initial: int, show: bool):
    if not show:
        return _NoBar()
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, unit="run", desc="lasthop sweep")


def to_xarray(df, dims: Optional[Sequence[str]] = None):
    """A sweep's table as an `xarray.Dataset` over the grid's dimensions (the independently swept fields and
    `seed`), one variable per metric; paired and computed fields become coordinates beside them."""
    dims = list(dims or df.attrs.get("dims") or [])
    if not dims:
        raise ValueError("to_xarray: name the dimensions (the table has no sweep `dims` attribute)")
    coords = [c for c in df.attrs.get("coords", []) if c in df.columns and c not in dims]
    return df.set_index(dims).to_xarray().set_coords(coords)
