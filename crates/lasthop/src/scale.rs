//! `runner = "scale"` experiments: every run a child `lasthop run` process, so that its peak memory is its
//! own (a high-water mark of this process could not tell one run of the thread pool from another), measured
//! alone (no other run beside it), one row per run: flows, events, wall time, events per second, peak
//! resident memory, and what a flow costs in memory.
//!
//! - `wall_s` is the child's own clock around reading the scenario, building the world, playing the events
//!   and collecting the metrics (`lasthop run --timing`; no process start, no writing of `metrics.json`);
//!   `events_s` is the part spent playing events and `setup_s` the rest (work per flow, not per event);
//!   `events_cpu_s` is the CPU time of playing the events (the thread's own clock: the time slices other
//!   processes take on a shared machine are not in it), and `events_per_s` = events / `events_cpu_s`, what
//!   a per-event cost that grows with N would lower. With `repeats = k` the same run is measured k times
//!   (its results must be identical each time) and the row holds the medians, `events_per_s_min` and
//!   `events_per_s_max` the spread. These vary from run to run: they are not deterministic and no
//!   byte-identical comparison or claim needing determinism may use them. `events` is deterministic.
//! - `peak_rss_bytes` is the child's `ru_maxrss` (`wait4`), the high-water mark of its resident memory.
//! - `sim_bytes_per_flow` is the slope of peak memory over flows from the run with the fewest flows of the
//!   same seed: (rss − rss₀) / (flows − flows₀); empty for that run itself.
//! - `snoop_bytes_per_connection` is the Snoop agent's own accounting of what one connection costs its
//!   table (`Snoop::bytes_per_connection`: the slot with its inline state, an index entry at the index's
//!   lowest load, a timer-heap entry), in runs with a Snoop agent; cached packets come on top.
//!   `snoop_table_bytes` is what the run's Snoop tables allocated in all (`table_bytes`),
//!   `snoop_connections_peak` the most connections they held at once.

use crate::net::median;
use crate::runner::{RunRequest, ScenarioSource};
use crate::table::{Cell, Table};
use anyhow::{anyhow, bail, Context, Result};
use lasthop_sim::RunResult;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// What one child run measured.
#[derive(Debug, Clone)]
pub struct ScaleRun {
    pub result: RunResult,
    /// The child's clock around each phase (see the module docs); with repeats, each phase's median.
    pub timing: crate::runner::Timing,
    /// The child's peak resident set size (with repeats, the largest).
    pub peak_rss_bytes: u64,
    /// Events per second of CPU time of every repeat, in the order measured (one entry without repeats).
    pub events_per_s: Vec<f64>,
}

impl ScaleRun {
    fn events_per_cpu_s(events: u64, t: &crate::runner::Timing) -> f64 {
        events as f64 / t.events_cpu_s.max(1e-9)
    }
}

/// Measures one run `repeats` times (`run` is one measurement) and folds them into one: the result of the
/// first (every repeat must give the same events and flows: the run is deterministic, only its clocks
/// differ), each phase's median time, the largest peak memory, and every repeat's events per second.
pub fn repeat(repeats: u64, mut run: impl FnMut() -> Result<ScaleRun>) -> Result<ScaleRun> {
    let mut runs = Vec::new();
    for k in 0..repeats.max(1) {
        let r = run()?;
        if let Some(first) = runs.first() {
            let first: &ScaleRun = first;
            let same = |a: &RunResult, b: &RunResult| {
                a.events == b.events
                    && a.flows.iter().map(|f| f.bytes_delivered).eq(b.flows.iter().map(|f| f.bytes_delivered))
            };
            if !same(&first.result, &r.result) {
                bail!(
                    "repeat {} played {} events where the first played {}: the run is not deterministic",
                    k + 1,
                    r.result.events,
                    first.result.events
                );
            }
        }
        runs.push(r);
    }
    let med = |f: fn(&crate::runner::Timing) -> f64| median(&runs.iter().map(|r| f(&r.timing)).collect::<Vec<_>>());
    let timing = crate::runner::Timing {
        parse_s: med(|t| t.parse_s),
        build_s: med(|t| t.build_s),
        events_s: med(|t| t.events_s),
        events_cpu_s: med(|t| t.events_cpu_s),
        finish_s: med(|t| t.finish_s),
        wall_s: med(|t| t.wall_s),
    };
    let peak_rss_bytes = runs.iter().map(|r| r.peak_rss_bytes).max().unwrap_or(0);
    let events_per_s = runs.iter().flat_map(|r| r.events_per_s.iter().copied()).collect();
    let first = runs.swap_remove(0);
    Ok(ScaleRun { result: first.result, timing, peak_rss_bytes, events_per_s })
}

/// Runs `req` in a child process of the `lasthop` program `exe` and measures it. The scenario goes to the
/// child as a file in a fresh temporary folder (relative file names in it, an empirical channel's CDFs, are
/// not supported), removed afterwards.
pub fn run_child(exe: &Path, req: &RunRequest<'_>) -> Result<ScaleRun> {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("lasthop-scale-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let r = run_child_in(exe, req, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    r
}

fn run_child_in(exe: &Path, req: &RunRequest<'_>, dir: &Path) -> Result<ScaleRun> {
    let scenario: PathBuf = match req.scenario {
        ScenarioSource::File(p) => p.to_path_buf(),
        ScenarioSource::Value { value, .. } => {
            let p = dir.join("scenario.toml");
            std::fs::write(&p, toml::to_string(value)?).with_context(|| format!("writing {}", p.display()))?;
            p
        }
    };
    let out = dir.join("out");
    let stderr = std::fs::File::create(dir.join("stderr.txt"))?;
    let mut cmd = Command::new(exe);
    cmd.arg("run").arg(&scenario).arg("--out").arg(&out).arg("--timing");
    if let Some(seed) = req.seed {
        cmd.arg("--seed").arg(seed.to_string());
    }
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .with_context(|| format!("starting {}", exe.display()))?;
    let (status, peak_rss_bytes) = wait_with_peak_rss(child.id())?;
    if status != 0 {
        let err = std::fs::read_to_string(dir.join("stderr.txt")).unwrap_or_default();
        bail!("`lasthop run` exited with status {status}: {}", err.trim());
    }
    let read = |name: &str| -> Result<String> {
        std::fs::read_to_string(out.join(name)).with_context(|| format!("reading the child's {name}"))
    };
    let result: RunResult = serde_json::from_str(&read("metrics.json")?)?;
    let timing = serde_json::from_str(&read("timing.json")?).map_err(|e| anyhow!("timing.json: {e}"))?;
    let events_per_s = vec![ScaleRun::events_per_cpu_s(result.events, &timing)];
    Ok(ScaleRun { result, timing, peak_rss_bytes, events_per_s })
}

/// Waits for child `pid` and returns its exit status (or 128 + signal) and its peak resident set size in
/// bytes (`ru_maxrss`, which Linux gives in KiB).
fn wait_with_peak_rss(pid: u32) -> Result<(i32, u64)> {
    let mut status = 0;
    // SAFETY: `rusage` is plain data that wait4 fills; `pid` is our own child, not yet waited for.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(pid as libc::pid_t, &mut status, 0, &mut usage) };
    if r < 0 {
        bail!("waiting for the child: {}", std::io::Error::last_os_error());
    }
    let code = if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { 128 + libc::WTERMSIG(status) };
    Ok((code, usage.ru_maxrss.max(0) as u64 * 1024))
}

/// Appends the row of one run: `grid` values, the seed, what it measured. The columns relative to the
/// run with the fewest flows are filled by [`fill_relative`] once every row is in.
pub fn push_row(t: &mut Table, grid: &[Cell], seed: u64, r: &ScaleRun) -> Result<(), String> {
    let res = &r.result;
    let snoop = |name: &str| -> u64 { res.agents.values().filter_map(|c| c.get(name)).sum() };
    let (table_bytes, peak_conns) = (snoop("table_bytes"), snoop("connections_peak"));
    let has_snoop = res.agents.values().any(|c| c.contains_key("table_bytes"));
    let int = |x: u64| Cell::Int(x as i64);
    let mut row: Vec<Cell> = grid.to_vec();
    row.push(int(seed));
    row.extend([
        int(res.flows.len() as u64),
        int(res.flows.iter().filter(|f| f.completed).count() as u64),
        Cell::Bool(res.flows.iter().all(|f| f.completed)),
        int(res.flows.iter().map(|f| f.bytes_delivered).sum()),
        int(res.flows.iter().map(|f| f.corrupt_bytes).sum()),
        Cell::Float(res.sim_time_s),
        int(res.events),
        Cell::Float(r.timing.wall_s),
        Cell::Float(r.timing.events_s),
        Cell::Float(r.timing.wall_s - r.timing.events_s),
        Cell::Float(median(&r.events_per_s)),
        Cell::Empty,
        int(r.peak_rss_bytes),
        Cell::Empty,
        if has_snoop { int(lasthop_agents::snoop::Snoop::bytes_per_connection() as u64) } else { Cell::Empty },
        if has_snoop { int(table_bytes) } else { Cell::Empty },
        if has_snoop { int(peak_conns) } else { Cell::Empty },
        int(r.events_per_s.len() as u64),
        Cell::Float(r.timing.events_cpu_s),
        Cell::Float(r.events_per_s.iter().copied().fold(f64::INFINITY, f64::min)),
        Cell::Float(r.events_per_s.iter().copied().fold(f64::NEG_INFINITY, f64::max)),
    ]);
    if row.len() != t.columns.len() {
        return Err(format!("internal: row has {} cells for {} columns", row.len(), t.columns.len()));
    }
    t.rows.push(row);
    Ok(())
}

/// Fills `events_per_s_ratio` (events per second over that of the run with the fewest flows of the same
/// seed) and `sim_bytes_per_flow` (the slope of peak memory from that run; empty for it).
pub fn fill_relative(t: &mut Table) {
    let (Some(seed), Some(n), Some(eps), Some(rss), Some(ratio), Some(slope)) = (
        t.col("seed"),
        t.col("n_flows"),
        t.col("events_per_s"),
        t.col("peak_rss_bytes"),
        t.col("events_per_s_ratio"),
        t.col("sim_bytes_per_flow"),
    ) else {
        return;
    };
    let num = |row: &[Cell], c: usize| row[c].as_f64().unwrap_or(f64::NAN);
    let base: Vec<(f64, f64, f64, f64)> =
        t.rows.iter().map(|r| (num(r, seed), num(r, n), num(r, eps), num(r, rss))).collect();
    for row in &mut t.rows {
        let (s, flows) = (num(row, seed), num(row, n));
        let Some(&(_, n0, eps0, rss0)) = base.iter().filter(|b| b.0 == s).min_by(|a, b| a.1.total_cmp(&b.1)) else {
            continue;
        };
        row[ratio] = Cell::Float(num(row, eps) / eps0);
        if flows > n0 {
            row[slope] = Cell::Float((num(row, rss) - rss0) / (flows - n0));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_columns_come_from_the_run_with_fewest_flows_of_the_same_seed() {
        let mut t = Table::new(crate::table::scale_columns(&["n".into()]));
        let run = |flows: usize, events: u64, wall_s: f64, rss: u64| {
            let mut result: RunResult = serde_json::from_value(serde_json::json!({
                "seed": 1, "sim_time_s": 1.0, "hit_time_limit": false, "events": events,
                "flows": [], "links": [], "agents": {"bs": {"table_bytes": 800, "connections_peak": 10}},
                "undeliverable_packets": 0
            }))
            .unwrap();
            let f = serde_json::from_value(serde_json::json!({
                "name": "f", "tcp": "reno", "bytes_total": 10, "bytes_delivered": 10, "completed": true,
                "duration_s": 1.0, "completion_time_s": 1.0, "goodput_mbps": 1.0, "ideal_goodput_mbps": null,
                "sender_timeouts": 0, "fast_retransmits": 0, "segments_sent": 1, "segments_retransmitted": 0,
                "eln_retransmits": 0, "local_retransmissions": 0, "dupacks_suppressed": 0, "corrupt_bytes": 0,
                "longest_pause_s": 0.0, "bytes_acked_not_delivered": 0, "wireless_goodput": null,
                "wired_goodput": 1.0
            }))
            .unwrap();
            result.flows = vec![f; flows];
            let timing = crate::runner::Timing { events_s: wall_s, events_cpu_s: wall_s, wall_s, ..Default::default() };
            let events_per_s = vec![ScaleRun::events_per_cpu_s(events, &timing)];
            ScaleRun { result, timing, peak_rss_bytes: rss, events_per_s }
        };
        for (flows, events, wall, rss) in [(1, 1000, 1.0, 1000), (10, 1000, 0.5, 10_000), (100, 3000, 1.0, 100_000)] {
            push_row(&mut t, &[Cell::Int(flows)], 1, &run(flows as usize, events, wall, rss)).unwrap();
        }
        fill_relative(&mut t);
        let col = |r: usize, c: &str| t.get(&t.rows[r], c).clone();
        assert_eq!(col(0, "events_per_s_ratio"), Cell::Float(1.0));
        assert_eq!(col(1, "events_per_s_ratio"), Cell::Float(2.0));
        assert_eq!(col(2, "events_per_s_ratio"), Cell::Float(3.0));
        assert_eq!(col(0, "sim_bytes_per_flow"), Cell::Empty);
        assert_eq!(col(1, "sim_bytes_per_flow"), Cell::Float(1000.0));
        assert_eq!(col(2, "sim_bytes_per_flow"), Cell::Float(1000.0));
        let per_conn = lasthop_agents::snoop::Snoop::bytes_per_connection() as i64;
        assert_eq!(col(2, "snoop_bytes_per_connection"), Cell::Int(per_conn));
        assert_eq!(col(2, "snoop_table_bytes"), Cell::Int(800));
        assert_eq!(col(2, "n_flows"), Cell::Int(100));
    }

    fn measured(events: u64, events_cpu_s: f64, rss: u64) -> ScaleRun {
        let result: RunResult = serde_json::from_value(serde_json::json!({
            "seed": 1, "sim_time_s": 1.0, "hit_time_limit": false, "events": events,
            "flows": [], "links": [], "agents": {}, "undeliverable_packets": 0
        }))
        .unwrap();
        let timing = crate::runner::Timing { events_s: 2.0 * events_cpu_s, events_cpu_s, ..Default::default() };
        let events_per_s = vec![ScaleRun::events_per_cpu_s(events, &timing)];
        ScaleRun { result, timing, peak_rss_bytes: rss, events_per_s }
    }

    #[test]
    fn repeats_give_the_median_and_the_spread_and_must_agree() {
        let cpu = [0.5, 0.1, 0.2, 0.4, 0.25];
        let mut k = 0;
        let r = repeat(5, || {
            k += 1;
            Ok(measured(1000, cpu[k - 1], 100 * k as u64))
        })
        .unwrap();
        assert_eq!(k, 5);
        assert_eq!(r.timing.events_cpu_s, 0.25);
        assert_eq!(r.timing.events_s, 0.5);
        assert_eq!(r.peak_rss_bytes, 500);
        assert_eq!(r.events_per_s, [2000.0, 10_000.0, 5000.0, 2500.0, 4000.0]);
        let mut t = Table::new(crate::table::scale_columns(&[]));
        push_row(&mut t, &[], 1, &r).unwrap();
        let col = |c: &str| t.get(&t.rows[0], c).clone();
        assert_eq!(col("events_per_s"), Cell::Float(4000.0));
        assert_eq!(col("events_per_s_min"), Cell::Float(2000.0));
        assert_eq!(col("events_per_s_max"), Cell::Float(10_000.0));
        assert_eq!(col("repeats"), Cell::Int(5));
        // A repeat that plays other events than the first is an error, not a median.
        let mut n = 0;
        let err = repeat(3, || {
            n += 1;
            Ok(measured(1000 + n, 0.1, 1))
        })
        .unwrap_err();
        assert!(err.to_string().contains("not deterministic"), "{err}");
    }
}
