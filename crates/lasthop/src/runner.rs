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
}

/// What one run of an experiment produced: simulator metrics, or a testbed transfer's result.
// RunResult grew a `handoffs` list; one value per run is moved, never stored in bulk, so boxing buys nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum RunOutput {
    Sim(RunResult),
    Testbed(TestbedResult),
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

impl Runner for SimRunner {
    fn run(&self, req: &RunRequest<'_>) -> Result<RunResult> {
        let mut scenario = match req.scenario {
            ScenarioSource::File(p) => Scenario::load(p)?,
            ScenarioSource::Value { value, origin, base_dir } => {
                Scenario::from_toml_in(value.clone(), origin, base_dir)?
            }
        };
        if let Some(seed) = req.seed {
            scenario.set_seed(seed);
        }
        let options = RunOptions { trace: req.trace, pcap_dir: req.pcap_dir.map(Path::to_path_buf) };
        Ok(lasthop_sim::run(&scenario, &options)?)
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
