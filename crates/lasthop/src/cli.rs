//! Command-line interface (clap derive); [`main_with`] takes the runner so tests can use a fake one.

use crate::experiment::{apply_override, load_dir, override_sets};
use crate::reproduce::{experiments_dir, reproduce, ReproduceOptions};
use crate::runner::{series_csv, write_file, RunRequest, Runner, ScenarioSource};
use crate::table::fmt_num;
use anyhow::{anyhow, Context, Result};
use clap::{Parser, Subcommand};
use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Debug, Parser)]
#[command(
    name = "lasthop",
    version,
    about = "TCP over wireless last hops: simulator, experiments and a real base station"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one scenario and write its metrics (and traces, pcaps) to a directory.
    Run(RunArgs),
    /// Run experiments (parameter grids × seeds) on all cores; write results, figures, reports and check
    /// the papers' claims.
    Reproduce(ReproduceArgs),
    /// Run a real base station (Linux, root): forward between two interfaces through the agents and an
    /// emulated wireless hop. SIGUSR1 prints the counters; SIGINT/SIGTERM stop and print them.
    Bs(crate::net::BsArgs),
    /// One kernel-TCP transfer through a real base station on a network-namespace testbed (Linux, root):
    /// goodput, hash check, counters.
    Testbed(crate::net::TestbedArgs),
    /// Run one scenario on both faces, the simulator and kernel TCP on the namespace testbed through the
    /// real base station on the same hop (Linux, root), and print them side by side.
    Twin(crate::twin::TwinArgs),
    /// Benchmarks.
    #[command(subcommand)]
    Bench(crate::net::BenchCommand),
    /// Loss traces and the empirical two-state channel (Balakrishnan 1998 §4).
    #[command(subcommand)]
    Channel(crate::channel::ChannelCommand),
    /// List the experiments: id, default flag, paper, title.
    Experiments {
        /// Directory of experiment files [default: ./experiments, else the repository's]
        #[arg(long)]
        experiments: Option<PathBuf>,
    },
}

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Scenario file (TOML)
    pub scenario: PathBuf,
    /// Output directory (created)
    #[arg(long)]
    pub out: PathBuf,
    /// Replace the scenario's seed
    #[arg(long)]
    pub seed: Option<u64>,
    /// Record time series; writes series-<flow>.csv (kind,time_s,value)
    #[arg(long)]
    pub trace: bool,
    /// Write pcaps of the wireless links into the output directory
    #[arg(long)]
    pub pcap: bool,
    /// Also write timing.json: how long reading the scenario, building the world, playing the events and
    /// collecting the metrics took (not deterministic; what `runner = "scale"` experiments read). Runs the
    /// simulator itself
    #[arg(long)]
    pub timing: bool,
    /// Override a scenario field, e.g. --set links.wavelan.error.ber=1e-6 (a TOML value; bare words are
    /// strings; +PATH=VALUE adds a field the scenario leaves at its default). Repeatable.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub set: Vec<String>,
}

#[derive(Debug, clap::Args)]
pub struct ReproduceArgs {
    /// Experiment ids [default: every experiment with `default = true`]
    pub ids: Vec<String>,
    /// Every experiment, also those with `default = false` (e.g. ones that need root)
    #[arg(long, conflicts_with = "ids")]
    pub all: bool,
    /// Fewer seeds and smaller runs (each experiment's [quick] section)
    #[arg(long)]
    pub quick: bool,
    /// Worker threads [default: available cores]; testbed runs (`runner = "testbed"`) always run one at a
    /// time, alone
    #[arg(long, short, value_parser = at_least_one)]
    pub jobs: Option<usize>,
    /// Output directory
    #[arg(long, default_value = "out")]
    pub out: PathBuf,
    /// Exit non-zero when any claim's outcome differs from its record (a claim recorded to hold fails, or
    /// an expected divergence holds)
    #[arg(long)]
    pub check: bool,
    /// Directory of experiment files [default: ./experiments, else the repository's]
    #[arg(long)]
    pub experiments: Option<PathBuf>,
    /// Run the simulator runs on a Dask cluster whose scheduler is at this address (tcp://HOST:PORT),
    /// through the Python package (`pip install ./python[dask]`; `$LASTHOP_PYTHON`, default `python3`,
    /// runs `-m lasthop reproduce`); writes the same outputs as a local run
    #[arg(long, value_name = "ADDRESS")]
    pub scheduler: Option<String>,
}

/// Parses `PATH=VALUE`: VALUE as a TOML value (`1e-6`, `"snoop"`, `true`, `[1, 2]`), or a bare string.
pub fn parse_set(s: &str) -> Result<(String, toml::Value)> {
    let (path, value) = s.split_once('=').ok_or_else(|| anyhow!("--set `{s}`: expected PATH=VALUE"))?;
    let path = path.trim();
    if path.is_empty() {
        return Err(anyhow!("--set `{s}`: expected PATH=VALUE"));
    }
    let value = value.trim();
    let v = match toml::from_str::<toml::Table>(&format!("v = {value}")) {
        Ok(mut t) => t.remove("v").unwrap_or_else(|| toml::Value::String(value.to_string())),
        Err(_) => toml::Value::String(value.to_string()),
    };
    Ok((path.to_string(), v))
}

/// Validates the scenario `doc` (the file with every `--set` applied). A field the scenario refuses that a
/// `--set` gave is the command line's mistake: the error names that `--set` (the file has no line for it).
/// Any other error is left to the run, which names the file.
fn check_set_values(doc: &toml::Value, origin: &str, base_dir: &Path, set: &[String]) -> Result<()> {
    // `lasthop twin` also takes the handoff testbed's configuration, which `twin::check` reads and checks.
    if crate::twin::handoff::is_handoff_testbed(doc) {
        return Ok(());
    }
    let Err(e) = lasthop_sim::Scenario::from_toml_in(doc.clone(), origin, base_dir) else { return Ok(()) };
    let Some(field) = e.field.as_deref() else { return Ok(()) };
    let gave = |arg: &&String| arg.split_once('=').is_some_and(|(p, _)| override_sets(p.trim(), field));
    match set.iter().rev().find(gave) {
        Some(arg) => Err(anyhow!("--set '{arg}' (command line): {}", e.detail())),
        None => Ok(()),
    }
}

/// Runs the program with these arguments and this runner.
pub fn main_with<I, T>(args: I, runner: &dyn Runner) -> Result<ExitCode>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return Ok(if e.use_stderr() { ExitCode::from(2) } else { ExitCode::SUCCESS });
        }
    };
    match cli.command {
        Command::Run(a) => run(a, runner),
        Command::Reproduce(a) => reproduce_cmd(a, runner),
        Command::Bs(a) => crate::net::bs(a),
        Command::Testbed(a) => crate::net::testbed(a),
        Command::Twin(a) => crate::twin::twin_cmd(a, runner),
        Command::Bench(b) => crate::net::bench(b),
        Command::Channel(c) => crate::channel::channel(c).map(|()| ExitCode::SUCCESS),
        Command::Experiments { experiments } => {
            let dir = experiments_dir(experiments.as_deref());
            let all = load_dir(&dir).with_context(|| format!("loading experiments from {}", dir.display()))?;
            let mut out = std::io::stdout().lock();
            for e in all {
                let default = if e.default { "default" } else { "-" };
                let runner = match e.runner {
                    crate::experiment::RunnerKind::Testbed => " (testbed, root)",
                    crate::experiment::RunnerKind::Twin => " (twin, root)",
                    _ => "",
                };
                let line = writeln!(out, "{:<20} {:<8} {:<18} {}{runner}", e.id, default, e.paper, e.title);
                // A reader that stops early (`lasthop experiments | head`) is not an error.
                match line {
                    Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => break,
                    other => other.context("writing the list")?,
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The scenario document with every `--set` applied (checked), or None when there are none and the file is
/// read as it is.
pub fn scenario_with_sets(scenario: &Path, set: &[String]) -> Result<Option<toml::Value>> {
    let overrides: Vec<(String, toml::Value)> = set.iter().map(|s| parse_set(s)).collect::<Result<_>>()?;
    if overrides.is_empty() {
        return Ok(None);
    }
    let origin = scenario.display().to_string();
    let text = std::fs::read_to_string(scenario).with_context(|| format!("reading {origin}"))?;
    let mut d: toml::Value = toml::from_str(&text).map_err(|e| anyhow!("{origin}: {e}"))?;
    for ((p, v), arg) in overrides.iter().zip(set) {
        apply_override(&mut d, p, v).map_err(|e| anyhow!("--set '{arg}' (command line): {e}"))?;
    }
    check_set_values(&d, &origin, scenario.parent().unwrap_or(Path::new("")), set)?;
    Ok(Some(d))
}

/// Where a scenario comes from: the file, or `doc` (the file with its `--set`s) named `origin`.
pub fn scenario_source<'a>(file: &'a Path, doc: &'a Option<toml::Value>, origin: &'a str) -> ScenarioSource<'a> {
    match doc {
        None => ScenarioSource::File(file),
        Some(value) => ScenarioSource::Value { value, origin, base_dir: file.parent().unwrap_or(Path::new("")) },
    }
}

fn run(a: RunArgs, runner: &dyn Runner) -> Result<ExitCode> {
    let origin = a.scenario.display().to_string();
    let doc = scenario_with_sets(&a.scenario, &a.set)?;
    let source = scenario_source(&a.scenario, &doc, &origin);
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    let req =
        RunRequest { scenario: source, seed: a.seed, trace: a.trace, pcap_dir: a.pcap.then_some(a.out.as_path()) };
    let (result, timing) = if a.timing {
        let (r, t) = crate::runner::SimRunner.run_timed(&req).with_context(|| format!("running {origin}"))?;
        (r, Some(t))
    } else {
        (runner.run(&req).with_context(|| format!("running {origin}"))?, None)
    };
    let json = serde_json::to_string_pretty(&result)?;
    write_file(&a.out.join("metrics.json"), json + "\n")?;
    if let Some(t) = timing {
        write_file(&a.out.join("timing.json"), serde_json::to_string_pretty(&t)? + "\n")?;
    }
    if let Some(series) = &result.series {
        for s in series {
            write_file(&a.out.join(format!("series-{}.csv", s.name)), series_csv(s))?;
        }
    }
    for f in &result.flows {
        let done = match (f.completed, f.completion_time_s) {
            (true, Some(t)) => format!("completed in {} s", fmt_num(t)),
            (true, None) => "completed".to_string(),
            (false, _) => format!("NOT completed ({} of {} bytes)", f.bytes_delivered, f.bytes_total),
        };
        let ideal = f.ideal_goodput_mbps.map(|i| format!(" (ideal {} Mb/s)", fmt_num(i))).unwrap_or_default();
        println!(
            "flow {} ({}): goodput {} Mb/s{ideal}, {done}, {} timeouts, {} fast retransmits, {} local retransmissions",
            f.name,
            f.tcp,
            fmt_num(f.goodput_mbps),
            f.sender_timeouts,
            f.fast_retransmits,
            f.local_retransmissions
        );
    }
    println!(
        "seed {}, simulated {} s{}, {} events -> {}",
        result.seed,
        fmt_num(result.sim_time_s),
        if result.hit_time_limit { " (hit the time limit)" } else { "" },
        result.events,
        a.out.join("metrics.json").display()
    );
    Ok(ExitCode::SUCCESS)
}

/// A count of at least 1 (`--jobs 0` would run nothing and wait forever).
fn at_least_one(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("expected a whole number ≥ 1, got `{s}`")),
    }
}

fn reproduce_cmd(a: ReproduceArgs, runner: &dyn Runner) -> Result<ExitCode> {
    if let Some(address) = &a.scheduler {
        return reproduce_on_dask(&a, address);
    }
    let jobs = a.jobs.unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)).max(1);
    let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
    let experiments_dir = experiments_dir(a.experiments.as_deref());
    let ids = if a.all {
        load_dir(&experiments_dir)
            .with_context(|| format!("loading experiments from {}", experiments_dir.display()))?
            .into_iter()
            .map(|e| e.id)
            .collect()
    } else {
        a.ids
    };
    let opts = ReproduceOptions {
        ids,
        quick: a.quick,
        jobs,
        out: a.out,
        experiments_dir,
        progress: std::io::stderr().is_terminal() && !ci,
    };
    let summary = reproduce(&opts, runner)?;
    let failing = summary.failing_claims();
    let unexpected = summary.unexpected_outcomes();
    let total: usize = summary.experiments.iter().map(|e| e.claims.len()).sum();
    let diverging = failing.iter().filter(|(_, _, o)| o.as_expected()).count();
    println!(
        "{} of {total} claims hold, {diverging} fail as recorded (expected divergences), {} differ from the record; \
         summary: {}",
        total - failing.len(),
        unexpected.len(),
        opts.out.join("summary.md").display()
    );
    for (id, text, o) in &unexpected {
        let what = match (o.holds, o.expect.holds()) {
            (true, _) => "HOLDS, recorded to fail",
            (false, true) => "FAILS, recorded to hold",
            (false, false) => "NOT MEASURED, recorded to fail on its numbers",
        };
        println!("  {what} {id}: {text}: ours {} (required {})", o.ours, o.required);
    }
    let failed_runs = summary.failed_runs();
    if failed_runs > 0 {
        eprintln!("error: {failed_runs} runs failed (see the reports)");
        return Ok(ExitCode::from(2));
    }
    if a.check && !unexpected.is_empty() {
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// `reproduce --scheduler`: hands the same arguments to the Python package, which batches the runs out to the
/// Dask workers and writes the outputs with this crate's code.
fn reproduce_on_dask(a: &ReproduceArgs, address: &str) -> Result<ExitCode> {
    let python = std::env::var_os("LASTHOP_PYTHON").unwrap_or_else(|| "python3".into());
    let mut cmd = std::process::Command::new(&python);
    cmd.args(["-m", "lasthop", "reproduce"]).args(&a.ids);
    for (on, flag) in [(a.all, "--all"), (a.quick, "--quick"), (a.check, "--check")] {
        if on {
            cmd.arg(flag);
        }
    }
    cmd.arg("--out").arg(&a.out).arg("--experiments").arg(experiments_dir(a.experiments.as_deref()));
    cmd.args(["--scheduler", address]);
    let status = cmd.status().with_context(|| {
        format!(
            "starting {} -m lasthop (reproduce --scheduler needs the Python package: pip install ./python[dask])",
            python.to_string_lossy()
        )
    })?;
    Ok(ExitCode::from(status.code().and_then(|c| u8::try_from(c).ok()).unwrap_or(1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_values() {
        assert_eq!(parse_set("a.b=1e-6").unwrap(), ("a.b".into(), toml::Value::Float(1e-6)));
        assert_eq!(parse_set("a.b=snoop").unwrap(), ("a.b".into(), toml::Value::String("snoop".into())));
        assert_eq!(parse_set("a.b=\"x y\"").unwrap(), ("a.b".into(), toml::Value::String("x y".into())));
        assert_eq!(parse_set("a=10_000").unwrap(), ("a".into(), toml::Value::Integer(10_000)));
        assert!(parse_set("novalue").is_err());
        assert!(parse_set("=3").is_err());
    }

    #[test]
    fn a_refused_set_value_names_the_set() {
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/snoop.toml");
        let text = std::fs::read_to_string(&file).unwrap();
        let apply = |set: &[&str]| {
            let mut d: toml::Value = toml::from_str(&text).unwrap();
            let set: Vec<String> = set.iter().map(|s| s.to_string()).collect();
            for s in &set {
                let (p, v) = parse_set(s).unwrap();
                apply_override(&mut d, &p, &v).unwrap();
            }
            check_set_values(&d, "examples/snoop.toml", file.parent().unwrap(), &set)
        };
        assert!(apply(&["links.wavelan.rate_mbps=1.5", "tcp.max_window=1000"]).is_ok());
        let e = apply(&["tcp.max_window=1000", "links.wavelan.rate_mbps=1e-300"]).unwrap_err().to_string();
        assert!(
            e.starts_with(
                "--set 'links.wavelan.rate_mbps=1e-300' (command line): `links.wavelan.rate_mbps`: expected a rate"
            ),
            "{e}"
        );
        // The last --set of a field is the one in force.
        let e = apply(&["tcp.max_window=0", "tcp.max_window = 0"]).unwrap_err().to_string();
        assert!(e.starts_with("--set 'tcp.max_window = 0' (command line): `tcp.max_window`: expected"), "{e}");
    }

    #[test]
    fn zero_counts_are_refused_with_the_flag() {
        use clap::Parser;
        for (flag, args) in [
            ("--jobs", &["lasthop", "reproduce", "--jobs", "0"][..]),
            (
                "--packets",
                &["lasthop", "channel", "trace", "--model", "{ model = \"none\" }", "--packets", "0", "--out", "x"],
            ),
        ] {
            let e = Cli::try_parse_from(args).unwrap_err().to_string();
            assert!(e.contains(flag), "{e}");
        }
        assert!(Cli::try_parse_from(["lasthop", "reproduce", "--jobs", "1"]).is_ok());
    }
}
