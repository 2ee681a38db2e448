"""Reproductions from Python and on a Dask cluster: the same files, byte for byte, as a local run."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import lasthop

from conftest import REPO


def _files(d: Path) -> dict:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def _lasthop_binary() -> Path:
    """The CLI built by `cargo test --workspace --release` (or `cargo build --release`)."""
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    exe = Path(os.environ.get("LASTHOP_BIN", target / "release" / "lasthop"))
    assert exe.exists(), f"{exe}: build the CLI first (cargo build --release -p lasthop) or set LASTHOP_BIN"
    return exe


def test_experiments_are_listed():
    exps = {e["id"]: e for e in lasthop.experiments()}
    assert exps["snoop-ber"]["default"] and exps["snoop-ber"]["grid"] == ["agent", "ber"]
    assert exps["snoop-seq"]["quick_runs"] <= exps["snoop-seq"]["runs"]
    assert exps["testbed-ber"]["runner"] == "testbed"


def test_dask_route_writes_what_the_local_route_writes(dask_client, tmp_path):
    ids = ["snoop-seq", "snoop-memory"]  # a traced sequence figure and a line figure with claims
    local = lasthop.reproduce(ids, quick=True, out=tmp_path / "local", jobs=2)
    on_dask = lasthop.reproduce(ids, quick=True, out=tmp_path / "dask", engine=dask_client, batch_size=3)
    # every run came from the workers
    assert on_dask["precomputed_used"] == on_dask["runs"] > 0 and on_dask["ran_here"] == []
    assert [e["claims"] for e in local["experiments"]] == [e["claims"] for e in on_dask["experiments"]]
    a, b = _files(tmp_path / "local"), _files(tmp_path / "dask")
    assert "snoop-seq/results.csv" in a and "snoop-memory/figure.svg" in a
    assert a.keys() == b.keys()
    for name in a:
        assert a[name] == b[name], name


def test_cli_scheduler_flag_writes_what_the_cli_writes(dask_client, tmp_path):
    exe = _lasthop_binary()
    env = dict(os.environ, LASTHOP_PYTHON=sys.executable)
    args = [str(exe), "reproduce", "snoop-seq", "--quick", "--check"]
    plain = subprocess.run(args + ["--out", str(tmp_path / "cli"), "--jobs", "2"], env=env, capture_output=True, text=True)
    assert plain.returncode == 0, plain.stderr
    on_dask = subprocess.run(args + ["--out", str(tmp_path / "dask"), "--scheduler", dask_client.scheduler.address],
                             env=env, capture_output=True, text=True)
    assert on_dask.returncode == 0, on_dask.stderr
    assert plain.stdout.splitlines()[0].split(";")[0] == on_dask.stdout.splitlines()[0].split(";")[0]
    a, b = _files(tmp_path / "cli"), _files(tmp_path / "dask")
    assert a.keys() == b.keys() and all(a[k] == b[k] for k in a)


def test_python_m_lasthop_reproduce(tmp_path):
    r = subprocess.run([sys.executable, "-m", "lasthop", "reproduce", "snoop-seq", "--quick", "--out", str(tmp_path)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "claims hold, " in r.stdout and "differ from the record; summary:" in r.stdout
    assert (tmp_path / "snoop-seq" / "results.csv").exists()


def test_unknown_experiment():
    with pytest.raises(ValueError, match="unknown experiment `nope`"):
        lasthop.reproduce(["nope"], quick=True, engine="serial")
