"""One run from Python: metrics as plain objects, time series as DataFrames, and the GIL released."""

import threading
import time

import lasthop


def test_run_metrics_match_the_scenario(small):
    r = lasthop.run(small)
    f = r.flow("bulk")
    assert f["bytes_delivered"] == f["bytes_total"] == 100_000
    assert f["completed"] and f["corrupt_bytes"] == 0
    assert 0 < f["goodput_mbps"] < 2.0
    assert r.seed == 1 and not r.traced
    assert lasthop.run(small, seed=2).seed == 2
    # deterministic: the same scenario and seed give the same metrics
    assert lasthop.run(small).metrics == r.metrics


def test_trace_gives_dataframes(small):
    r = lasthop.run(small, trace=True)
    df = r.series("bulk")
    assert list(df.columns) == ["kind", "time_s", "value"]
    assert set(df["kind"]) >= {"sent", "received", "acked", "cwnd"}
    received = df[df["kind"] == "received"]
    assert received["time_s"].is_monotonic_increasing
    assert received["value"].max() < 100_000


def test_the_gil_is_released_while_simulating(small):
    """Two threads run two scenarios while this thread keeps executing Python: with the GIL held through a
    run, this thread could not take a single step until the runs ended."""
    # Long enough to tell: 0.06 s (Reno, to the time limit) and 0.12 s (Snoop) each on the project's machine.
    # 60 MB in 600 s became too short once the simulator got faster.
    big = small.set("flows.bulk.bytes", 150_000_000).set("time_limit_s", 1800)
    scenarios = [big, big.set("nodes.bs.agent", "none")]
    alone = [lasthop.run(s).metrics for s in scenarios]
    results = [None, None]
    started = threading.Barrier(3)

    def work(i):
        started.wait()
        results[i] = lasthop.run(scenarios[i]).metrics

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    started.wait()
    steps, t0 = 0, time.perf_counter()
    while any(t.is_alive() for t in threads):
        steps += 1
        time.sleep(0.001)
    elapsed = time.perf_counter() - t0
    for t in threads:
        t.join()
    assert results == alone
    # about one step per millisecond of the runs; a held GIL would allow a step or two in all
    assert elapsed > 0.05, "the runs were too short to tell"
    assert steps >= 20, f"{steps} steps in {elapsed:.3f} s"
