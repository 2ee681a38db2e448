//! What carries out one run: the simulator, or (in tests) anything else that turns a scenario into a
//! [`RunResult`]; for `runner = "testbed"` experiments, a real kernel-TCP transfer on the namespace testbed
//! ([`Runner::run_testbed`]).

use crate::table;
use anyhow::{Context, Result};
use lasthop_net::{TestbedConfig, TestbedResult};
use lasthop_sim::{FlowSeries, RunOptions, RunResult, Scenario};
use std::path::Path;

/// Where the scenario of a run comes from.
#[derive(Debug, Clone, Copy)]
pub enum ScenarioSource<'a> {
    /// A scenario file as it is (errors point at its lines).
    File(&'a Path),
    /// A scenario document after overrides; `origin` names it in errors, and relative file names in it
    /// (an empirical channel's CDFs) are taken from `base_dir`, the base scenario file's folder.
    Value { value: &'a toml::Value, origin: &'a str, base_dir: &'a Path },
}

/// One run to carry out.
#[derive(Debug, Clone, Copy)]
pub struct RunRequest<'a> {
    pub scenario: ScenarioSource<'a>,
    /// Replaces the scenario's seed when given.
    pub seed: Option<u64>,
    pub trace: bool,
    pub pcap_dir: Option<&'a Path>,
}

/// Turns a scenario into results. Implemented by [`SimRunner`] and by any `Fn(&RunRequest) -> Result<RunResult>`.
pub trait Runner: Sync {
    fn run(&self, req: &RunRequest<'_>) -> Result<RunResult>;

    /// One run of a `runner = "testbed"` experiment: by default the real thing
    /// ([`lasthop_net::run_testbed_transfer`]: root, network namespaces, real time). Tests override it.
    fn run_testbed(&self, cfg: &TestbedConfig) -> Result<TestbedResult> {
        Ok(lasthop_net::run_testbed_transfer(cfg)?)
    }

    /// One run of a `runner = "scale"` experiment: by default a child process of this program
    /// ([`crate::scale::run_child`]). Tests override it.
    fn run_scale(&self, req: &RunRequest<'_>) -> Result<crate::scale::ScaleRun> {
        crate::scale::run_child(&std::env::current_exe()?, req)
    }

    /// One run of a `runner = "twin"` experiment: by default the simulator through [`Runner::run`], then the
    /// real thing on the testbed ([`crate::twin::run`]: root, network namespaces, real time). Tests override it.
    fn run_twin(&self, req: &RunRequest<'_>) -> Result<crate::twin::TwinRun> {
        crate::twin::run(self, req)
    }
}

/// What one run of an experiment produced: simulator metrics, or a testbed transfer's result.
// RunResult grew a `handoffs` list; one value per run is moved, never stored in bulk, so boxing buys nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum RunOutput {
    Sim(RunResult),
    Testbed(TestbedResult),
    Scale(crate::scale::ScaleRun),
    Twin(Box<crate::twin::TwinRun>),
}

impl<F> Runner for F
where
    F: Fn(&RunRequest<'_>) -> Result<RunResult> + Sync,
{
    fn run(&self, req: &RunRequest<'_>) -> Result<RunResult> {
        self(req)
    }
}

/// The simulator (`lasthop_sim`).
#[derive(Debug, Clone, Copy, Default)]
pub struct SimRunner;

/// How long the phases of one run took on this machine's clock, seconds (`lasthop run --timing`): not
/// deterministic, never part of the results.
#[derive(Debug, Clone, Copy, Default, serde::Serialize, serde::Deserialize)]
pub struct Timing {
    /// Reading and validating the scenario (with its `[scale]` copies).
    pub parse_s: f64,
    /// Building the world: nodes, links, routes, agents, endpoints.
    pub build_s: f64,
    /// Playing the events.
    pub events_s: f64,
    /// Playing the events, in the CPU time of the thread that plays them (`CLOCK_THREAD_CPUTIME_ID`): what
    /// `events_s` is without the time slices other processes took (on a loaded machine wall time is
    /// inflated by them, by a factor that changes from run to run).
    #[serde(default)]
    pub events_cpu_s: f64,
    /// Collecting the metrics.
    pub finish_s: f64,
    /// All four.
    pub wall_s: f64,
}

impl SimRunner {
    /// [`Runner::run`] with its phases timed.
    pub fn run_timed(&self, req: &RunRequest<'_>) -> Result<(RunResult, Timing)> {
        let t0 = std::time::Instant::now();
        let scenario = self.scenario(req)?;
        let t1 = std::time::Instant::now();
        let mut staged = lasthop_sim::stage(&scenario, &self.options(req))?;
        let t2 = std::time::Instant::now();
        let c2 = lasthop_net::sys::thread_cpu_time();
        staged.play();
        let c3 = lasthop_net::sys::thread_cpu_time();
        let t3 = std::time::Instant::now();
        let result = staged.finish()?;
        let t4 = std::time::Instant::now();
        let s = |a: std::time::Instant, b: std::time::Instant| (b - a).as_secs_f64();
        let timing = Timing {
            parse_s: s(t0, t1),
            build_s: s(t1, t2),
            events_s: s(t2, t3),
            events_cpu_s: c3.saturating_sub(c2).as_secs_f64(),
            finish_s: s(t3, t4),
            wall_s: s(t0, t4),
        };
        Ok((result, timing))
    }

    fn scenario(&self, req: &RunRequest<'_>) -> Result<Scenario> {
        let mut scenario = match req.scenario {
            ScenarioSource::File(p) => Scenario::load(p)?,
            ScenarioSource::Value { value, origin, base_dir } => {
                Scenario::from_toml_in(value.clone(), origin, base_dir)?
            }
        };
        if let Some(seed) = req.seed {
            scenario.set_seed(seed);
        }
        Ok(scenario)
    }

    fn options(&self, req: &RunRequest<'_>) -> RunOptions {
        RunOptions { trace: req.trace, pcap_dir: req.pcap_dir.map(Path::to_path_buf) }
    }
}

impl Runner for SimRunner {
    fn run(&self, req: &RunRequest<'_>) -> Result<RunResult> {
        Ok(lasthop_sim::run(&self.scenario(req)?, &self.options(req))?)
    }
}

/// The time series of one flow as CSV: `kind,time_s,value` with kind in sent / received / acked / cwnd /
/// handoff (value: stream offset in bytes, the congestion window in bytes, or 0 for a handoff decision).
pub fn series_csv(s: &FlowSeries) -> String {
    let header = ["kind", "time_s", "value"].map(String::from);
    let points = [("sent", &s.sent), ("received", &s.received), ("acked", &s.acked), ("cwnd", &s.cwnd)]
        .into_iter()
        .flat_map(|(kind, pts)| pts.iter().map(move |(t, v)| [kind.to_string(), format!("{t:?}"), v.to_string()]));
    let handoffs = s.handoffs.iter().map(|t| ["handoff".to_string(), format!("{t:?}"), "0".to_string()]);
    table::csv_text(std::iter::once(header).chain(points).chain(handoffs))
}

/// Writes `path`, creating its directory.
pub fn write_file(path: &Path, contents: impl AsRef<[u8]>) -> Result<()> {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
    std::fs::write(path, contents).with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_as_csv() {
        let s = FlowSeries {
            name: "bulk".into(),
            sent: vec![(0.0, 0), (0.5, 1460)],
            received: vec![(0.01, 0)],
            acked: vec![],
            cwnd: vec![(0.0, 2920)],
            handoffs: vec![1.5],
        };
        assert_eq!(
            series_csv(&s),
            "kind,time_s,value\nsent,0.0,0\nsent,0.5,1460\nreceived,0.01,0\ncwnd,0.0,2920\nhandoff,1.5,0\n"
        );
    }
}
