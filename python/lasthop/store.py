"""The results store of sweeps: a directory (`sweep.parquet/`, which pandas and pyarrow read as one dataset)
of Parquet parts, one per finished batch, each written whole and then renamed into place, so a sweep killed
half-way leaves every finished batch behind and none half-written.

A record is one run: `key` (a hash of the resolved scenario, the seed, the flow picked and the lasthop
version), the swept values (`params`, JSON), `seed`, `kind` (`flow` / `web`, or empty for a failed run),
`error` (empty when the run succeeded) and `cells` (the metrics after `seed`, JSON: integers stay integers)."""

from __future__ import annotations

import hashlib
import json
import os
import time
import uuid
from typing import Iterable

FIELDS = ("key", "params", "seed", "kind", "error", "cells")


def run_key(scenario_toml: str, seed: int, flow: str | None, version: str) -> str:
    """The store key of a run."""
    h = hashlib.sha256()
    for part in (f"lasthop {version}", f"seed {seed}", f"flow {flow or ''}", scenario_toml):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


class Store:
    """A directory of Parquet parts; later records of a key replace earlier ones."""

    def __init__(self, path: str | os.PathLike):
        self.path = os.fspath(path)
        if os.path.exists(self.path) and not os.path.isdir(self.path):
            raise ValueError(f"store {self.path}: exists and is not a directory of Parquet parts")

    def records(self) -> dict[str, dict]:
        """Every run in the store by key, the newest record of each key."""
        import pyarrow.parquet as pq

        out: dict[str, dict] = {}
        if not os.path.isdir(self.path):
            return out
        # part names start with a time stamp: reading them in name order makes newer records win
        for name in sorted(os.listdir(self.path)):
            if not name.endswith(".parquet") or name.startswith("."):
                continue
            table = pq.read_table(os.path.join(self.path, name))
            for rec in table.to_pylist():
                out[rec["key"]] = rec
        return out

    def append(self, records: Iterable[dict]) -> None:
        """Writes these records as one new part (atomically)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        records = list(records)
        if not records:
            return
        os.makedirs(self.path, exist_ok=True)
        table = pa.table(
            {
                "key": pa.array([r["key"] for r in records], pa.string()),
                "params": pa.array([r["params"] for r in records], pa.string()),
                "seed": pa.array([r["seed"] for r in records], pa.int64()),
                "kind": pa.array([r["kind"] for r in records], pa.string()),
                "error": pa.array([r["error"] for r in records], pa.string()),
                "cells": pa.array([r["cells"] for r in records], pa.string()),
            }
        )
        name = f"part-{time.time_ns():020d}-{uuid.uuid4().hex[:8]}.parquet"
        tmp = os.path.join(self.path, "." + name + ".tmp")
        pq.write_table(table, tmp)
        os.replace(tmp, os.path.join(self.path, name))


def load_store(path: str | os.PathLike):
    """The store as a DataFrame: one row per run (newest record of each key), the swept values and the
    metrics spread into columns, `error` set on failed runs."""
    import pandas as pd

    from ._lasthop import metric_columns

    rows = []
    for rec in Store(path).records().values():
        row = dict(json.loads(rec["params"]))
        row["seed"] = rec["seed"]
        if rec["kind"]:
            row.update(zip(metric_columns(rec["kind"]), json.loads(rec["cells"])))
        row["error"] = rec["error"] or None
        row["key"] = rec["key"]
        rows.append(row)
    return pd.DataFrame(rows)
