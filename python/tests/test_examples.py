"""The examples in examples/python run as the guide's Python tutorial (docs/src/tutorials/python-sweeps.md) shows."""

import os
import subprocess
import sys

from conftest import REPO


def _run(script, cwd, *args):
    os.symlink(REPO / "examples", cwd / "examples")
    env = dict(os.environ, MPLBACKEND="Agg")
    r = subprocess.run([sys.executable, str(REPO / "examples" / "python" / script), *args], cwd=cwd, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_ber_sweep_example(tmp_path):
    out = _run("ber_sweep.py", tmp_path)
    assert (tmp_path / "ber-sweep.png").stat().st_size > 10_000
    # the last row (one error per 16 Kbit): Snoop far ahead of plain Reno
    none, snoop = map(float, out.strip().splitlines()[-1].split()[1:])
    assert snoop > 4 * none


def test_dask_cluster_example(tmp_path, dask_client):
    out = _run("dask_cluster.py", tmp_path, dask_client.scheduler.address)
    assert "goodput_mbps" in out
