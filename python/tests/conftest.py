"""Shared fixtures: the repository's example scenario made small, and a real Dask cluster (a scheduler and
two worker processes on the loopback address, each its own OS process) started and stopped by the tests."""

import shutil
import subprocess
import sys
import time
from pathlib import Path

import distributed
import pytest

import lasthop

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "snoop.toml"


@pytest.fixture(scope="session")
def repo():
    return REPO


@pytest.fixture(scope="session")
def small():
    """Balakrishnan 1995's Fig. 6 topology with a 100 KB transfer: a run takes milliseconds."""
    return lasthop.Scenario.from_toml(EXAMPLE).set("flows.bulk.bytes", 100_000)


def _start(args, log):
    return subprocess.Popen([sys.executable, "-m", *args], stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


@pytest.fixture(scope="session")
def dask_client(tmp_path_factory):
    """A Client of a scheduler and two single-threaded worker processes started here on 127.0.0.1."""
    d = tmp_path_factory.mktemp("dask")
    sched_file = d / "scheduler.json"
    log = open(d / "cluster.log", "w")
    procs = [
        _start(["distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0", "--dashboard-address", ":0",
                "--scheduler-file", str(sched_file)], log)
    ]
    try:
        deadline = time.time() + 60
        while not sched_file.exists():
            if time.time() > deadline or procs[0].poll() is not None:
                raise RuntimeError(f"the Dask scheduler did not start: {(d / 'cluster.log').read_text()}")
            time.sleep(0.1)
        for i in range(2):
            procs.append(
                _start(["distributed.cli.dask_worker", "--scheduler-file", str(sched_file), "--nthreads", "1",
                        "--host", "127.0.0.1", "--dashboard-address", ":0", "--name", f"w{i}",
                        "--local-directory", str(d / f"w{i}")], log)
            )
        client = distributed.Client(scheduler_file=str(sched_file), timeout=60)
        client.wait_for_workers(2, timeout=120)
        assert len(client.scheduler_info()["workers"]) == 2
        yield client
        client.close()
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in reversed(procs):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
        log.close()
        shutil.rmtree(d, ignore_errors=True)
