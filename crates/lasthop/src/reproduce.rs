//! `lasthop reproduce`: run experiments' grids on a pool of threads, then write results, figures, reports.

use crate::claims::Outcome;
use crate::experiment::{handoff_time, load_dir, Experiment, FigureKind, Point, RunnerKind, HANDOFF_TIMES};
use crate::figure::{self, Plot};
use crate::report;
use crate::runner::{series_csv, write_file, RunOutput, RunRequest, Runner, ScenarioSource};
use crate::table::{self, Cell, Table};
use anyhow::{anyhow, bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use lasthop_net::TestbedConfig;
use lasthop_sim::HandoffMetrics;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, RwLock};
use std::time::Instant;

#[derive(Debug, Clone)]
pub struct ReproduceOptions {
    /// Experiment ids; empty: every experiment with `default = true`.
    pub ids: Vec<String>,
    pub quick: bool,
    pub jobs: usize,
    pub out: PathBuf,
    pub experiments_dir: PathBuf,
    /// Show a progress bar (else one line per finished experiment).
    pub progress: bool,
}

/// What one experiment came to.
#[derive(Debug, Clone)]
pub struct ExperimentOutcome {
    pub id: String,
    pub title: String,
    pub paper: String,
    pub claims: Vec<(String, String, Outcome)>,
    /// `label seed N: error` of every run that failed.
    pub failed_runs: Vec<String>,
    pub runs: usize,
    pub dir: PathBuf,
}

#[derive(Debug, Clone, Default)]
pub struct Summary {
    pub experiments: Vec<ExperimentOutcome>,
}

impl Summary {
    /// `(experiment id, claim text, outcome)` of every claim that does not hold.
    pub fn failing_claims(&self) -> Vec<(&str, &str, &Outcome)> {
        self.experiments
            .iter()
            .flat_map(|e| e.claims.iter().filter(|c| !c.2.holds).map(move |c| (e.id.as_str(), c.0.as_str(), &c.2)))
            .collect()
    }
    /// `(experiment id, claim text, outcome)` of every claim whose outcome differs from its record: a claim
    /// recorded to hold that fails, or a recorded divergence that now holds. `--check` fails on these.
    pub fn unexpected_outcomes(&self) -> Vec<(&str, &str, &Outcome)> {
        self.experiments
            .iter()
            .flat_map(|e| {
                e.claims.iter().filter(|c| !c.2.as_expected()).map(move |c| (e.id.as_str(), c.0.as_str(), &c.2))
            })
            .collect()
    }
    pub fn failed_runs(&self) -> usize {
        self.experiments.iter().map(|e| e.failed_runs.len()).sum()
    }
}

/// The experiments directory: `dir` if given; else `experiments/` in the current directory, falling back
/// to the repository's `experiments/` (next to this crate).
pub fn experiments_dir(dir: Option<&Path>) -> PathBuf {
    if let Some(d) = dir {
        return d.to_path_buf();
    }
    let here = PathBuf::from("experiments");
    if here.is_dir() {
        return here;
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments")
}

/// Chooses experiments by id (or the default ones).
pub fn choose(all: Vec<Experiment>, ids: &[String]) -> Result<Vec<Experiment>> {
    if ids.is_empty() {
        let chosen: Vec<Experiment> = all.into_iter().filter(|e| e.default).collect();
        if chosen.is_empty() {
            bail!("no experiment has `default = true`; name the ones to run");
        }
        return Ok(chosen);
    }
    let known: Vec<String> = all.iter().map(|e| e.id.clone()).collect();
    let mut chosen = Vec::new();
    for id in ids {
        match all.iter().find(|e| &e.id == id) {
            Some(e) if !chosen.iter().any(|c: &Experiment| &c.id == id) => chosen.push(e.clone()),
            Some(_) => {}
            None => bail!("unknown experiment `{id}`; known: {}", known.join(", ")),
        }
    }
    Ok(chosen)
}

/// One run: a seed of a grid point of an experiment.
struct Job {
    exp: usize,
    point: usize,
    seed: u64,
    trace: bool,
    origin: String,
}

struct Planned {
    exp: Experiment,
    points: Vec<Point>,
    seeds: Vec<u64>,
    /// job indices of this experiment (contiguous, in grid-then-seed order)
    jobs: std::ops::Range<usize>,
}

type JobResult = Result<RunOutput, String>;

/// Runs the chosen experiments of `opts.experiments_dir` with `runner`, writes everything under `opts.out`.
pub fn reproduce(opts: &ReproduceOptions, runner: &dyn Runner) -> Result<Summary> {
    let all = load_dir(&opts.experiments_dir)?;
    let chosen = choose(all, &opts.ids)?;
    run_experiments(chosen, opts, runner)
}

/// Runs these experiments (already loaded) and writes their outputs.
pub fn run_experiments(chosen: Vec<Experiment>, opts: &ReproduceOptions, runner: &dyn Runner) -> Result<Summary> {
    let (plans, jobs) = plan(chosen, opts.quick)?;
    std::fs::create_dir_all(&opts.out).with_context(|| format!("creating {}", opts.out.display()))?;
    let progress = Progress::new(opts.progress, jobs.len());
    let mut collector = Collector::new(&plans, &jobs, opts, &progress);
    run_pool(&plans, &jobs, opts.jobs, runner, |i, r| collector.collect(i, r));
    progress.bar.finish_and_clear();
    let summary = collector.into_summary()?;
    write_file(&opts.out.join("summary.md"), report::summary_md(&summary, opts.quick))?;
    Ok(summary)
}

/// Every experiment's grid points and seeds, and the jobs of all of them in order (experiment, grid point,
/// seed).
fn plan(chosen: Vec<Experiment>, quick: bool) -> Result<(Vec<Planned>, Vec<Job>)> {
    let mut plans = Vec::new();
    let mut jobs = Vec::new();
    for (i, exp) in chosen.into_iter().enumerate() {
        let points = exp.points(quick).map_err(|e| anyhow!("{}: {e}", exp.file.display()))?;
        let seeds = exp.seed_list(quick);
        let start = jobs.len();
        for (p, point) in points.iter().enumerate() {
            for &seed in &seeds {
                jobs.push(Job {
                    exp: i,
                    point: p,
                    seed,
                    trace: exp.figure.traces(seed),
                    origin: format!("{} [{}]", exp.file.display(), exp.point_label(point)),
                });
            }
        }
        plans.push(Planned { exp, points, seeds, jobs: start..jobs.len() });
    }
    Ok((plans, jobs))
}

/// Runs every job on `workers` threads (at most one per job), handing each result with its job index to
/// `on_result` on this thread, in the order they finish.
fn run_pool(
    plans: &[Planned],
    jobs: &[Job],
    workers: usize,
    runner: &dyn Runner,
    mut on_result: impl FnMut(usize, JobResult),
) {
    let next = AtomicUsize::new(0);
    // Testbed runs measure real time: each holds this exclusively (no other run of any kind beside it),
    // simulator runs share it.
    let exclusive = RwLock::new(());
    let workers = workers.max(1).min(jobs.len().max(1));
    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::channel::<(usize, JobResult)>();
        for _ in 0..workers {
            let tx = tx.clone();
            let (next, exclusive) = (&next, &exclusive);
            scope.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = jobs.get(i) else { break };
                if tx.send((i, run_job(&plans[job.exp], job, runner, exclusive))).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        for (i, r) in rx {
            on_result(i, r);
        }
    });
}

/// One job, a panic in it caught and reported as its error.
fn run_job(plan: &Planned, job: &Job, runner: &dyn Runner, exclusive: &RwLock<()>) -> JobResult {
    let point = &plan.points[job.point];
    // A simulator run of this job (`runner = "sim"` or `"scale"`).
    let request = || RunRequest {
        scenario: ScenarioSource::Value {
            value: &point.scenario,
            origin: &job.origin,
            base_dir: plan.exp.scenario_file.parent().unwrap_or(Path::new("")),
        },
        seed: Some(job.seed),
        trace: job.trace,
        pcap_dir: None,
    };
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match plan.exp.runner {
        RunnerKind::Sim => {
            let _shared = exclusive.read().unwrap_or_else(|e| e.into_inner());
            runner.run(&request()).map(RunOutput::Sim)
        }
        RunnerKind::Testbed => {
            let cfg = testbed_config(point, job.seed).map_err(|e| anyhow!("{}: {e}", job.origin))?;
            let _alone = exclusive.write().unwrap_or_else(|e| e.into_inner());
            runner.run_testbed(&cfg).map(RunOutput::Testbed)
        }
        RunnerKind::Twin => {
            let _alone = exclusive.write().unwrap_or_else(|e| e.into_inner());
            runner.run_twin(&request()).map(|r| RunOutput::Twin(Box::new(r)))
        }
        RunnerKind::Scale => {
            // Wall time and peak memory are measured with no other run beside this one.
            let _alone = exclusive.write().unwrap_or_else(|e| e.into_inner());
            crate::scale::repeat(plan.exp.repeats, || runner.run_scale(&request())).map(RunOutput::Scale)
        }
    }));
    match r {
        Ok(Ok(res)) => Ok(res),
        Ok(Err(e)) => Err(format!("{e:#}")),
        Err(p) => Err(format!("panicked: {}", panic_message(&p))),
    }
}

/// The progress bar (or, hidden, one line on stderr per message) and the clock since the runs started.
struct Progress {
    bar: ProgressBar,
    started: Instant,
}

impl Progress {
    fn new(shown: bool, runs: usize) -> Progress {
        let bar = if shown {
            let b = ProgressBar::new(runs as u64);
            b.set_style(
                ProgressStyle::with_template(
                    "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} runs (eta {eta}) {msg}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            b
        } else {
            ProgressBar::hidden()
        };
        Progress { bar, started: Instant::now() }
    }

    fn say(&self, line: String) {
        if self.bar.is_hidden() {
            eprintln!("{line}");
        } else {
            self.bar.println(line);
        }
    }

    /// A testbed or scale run takes seconds: each is shown.
    fn testbed_run(&self, job: &Job, r: &JobResult) {
        let what = match r {
            Ok(RunOutput::Testbed(t)) => format!(
                "{:.3} Mb/s, {} B in {:.1} s, hash {}",
                t.goodput_mbps,
                t.bytes,
                t.duration_s,
                if t.hash_ok { "ok" } else { "MISMATCH" }
            ),
            Ok(RunOutput::Scale(s)) => format!(
                "{} flows, {} events played in {:.3} s, peak RSS {:.1} MB",
                s.result.flows.len(),
                s.result.events,
                s.timing.events_s,
                s.peak_rss_bytes as f64 / 1e6
            ),
            Ok(RunOutput::Twin(t)) => format!(
                "simulator {:.3} Mb/s, kernel {:.3} Mb/s, hash {}",
                t.sim.flows.first().map_or(0.0, |f| f.goodput_mbps),
                t.kernel.goodput_mbps,
                if t.kernel.hash_ok { "ok" } else { "MISMATCH" }
            ),
            Ok(RunOutput::Sim(_)) => "?".into(),
            Err(err) => format!("FAILED: {err}"),
        };
        self.say(format!("  {} seed {}: {what}", job.origin, job.seed));
    }

    fn experiment_done(&self, o: &ExperimentOutcome) {
        let holds = o.claims.iter().filter(|c| c.2.holds).count();
        let failed =
            if o.failed_runs.is_empty() { String::new() } else { format!(", {} runs FAILED", o.failed_runs.len()) };
        self.say(format!(
            "{}: {} runs, claims {holds}/{} hold{failed} (after {:.1} s) -> {}",
            o.id,
            o.runs,
            o.claims.len(),
            self.started.elapsed().as_secs_f64(),
            o.dir.join("report.md").display()
        ));
    }
}

/// Gathers run results as they come; once an experiment's last run is in, writes its outputs.
struct Collector<'a> {
    plans: &'a [Planned],
    jobs: &'a [Job],
    opts: &'a ReproduceOptions,
    progress: &'a Progress,
    results: Vec<Option<JobResult>>,
    /// Runs finished, per experiment.
    done: Vec<usize>,
    outcomes: Vec<Option<ExperimentOutcome>>,
    write_errors: Vec<String>,
}

impl<'a> Collector<'a> {
    fn new(plans: &'a [Planned], jobs: &'a [Job], opts: &'a ReproduceOptions, progress: &'a Progress) -> Self {
        Collector {
            plans,
            jobs,
            opts,
            progress,
            results: (0..jobs.len()).map(|_| None).collect(),
            done: vec![0; plans.len()],
            outcomes: (0..plans.len()).map(|_| None).collect(),
            write_errors: Vec::new(),
        }
    }

    /// The result of job `i`.
    fn collect(&mut self, i: usize, r: JobResult) {
        let e = self.jobs[i].exp;
        if self.plans[e].exp.runner != RunnerKind::Sim {
            self.progress.testbed_run(&self.jobs[i], &r);
        }
        self.results[i] = Some(r);
        self.progress.bar.inc(1);
        self.done[e] += 1;
        if self.done[e] == self.plans[e].jobs.len() {
            self.write_experiment(e);
        }
    }

    fn write_experiment(&mut self, e: usize) {
        let plan = &self.plans[e];
        let rs: Vec<JobResult> =
            plan.jobs.clone().map(|j| self.results[j].take().unwrap_or_else(|| Err("no result".into()))).collect();
        match finish(plan, &rs, self.opts) {
            Ok(o) => {
                self.progress.experiment_done(&o);
                self.outcomes[e] = Some(o);
            }
            Err(err) => {
                self.progress.say(format!("{}: cannot write outputs: {err:#}", plan.exp.id));
                self.write_errors.push(format!("{}: {err:#}", plan.exp.id));
            }
        }
    }

    /// The outcomes in experiment order, once every run is in; an error if any experiment's outputs could
    /// not be written.
    fn into_summary(mut self) -> Result<Summary> {
        // experiments without runs (an empty grid cannot happen, but be safe)
        for (e, plan) in self.plans.iter().enumerate() {
            if self.outcomes[e].is_none() && plan.jobs.is_empty() {
                self.outcomes[e] = Some(finish(plan, &[], self.opts)?);
            }
        }
        if !self.write_errors.is_empty() {
            bail!("writing outputs failed:\n  {}", self.write_errors.join("\n  "));
        }
        Ok(Summary { experiments: self.outcomes.into_iter().flatten().collect() })
    }
}

fn panic_message(p: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".into()
    }
}

/// The testbed configuration of a grid point of a `runner = "testbed"` experiment, with this seed.
pub fn testbed_config(point: &Point, seed: u64) -> Result<TestbedConfig, String> {
    let mut cfg: TestbedConfig = point
        .scenario
        .clone()
        .try_into()
        .map_err(|e: toml::de::Error| format!("not a testbed configuration: {}", e.message()))?;
    cfg.seed = seed;
    Ok(cfg)
}

/// The results table of an experiment from its runs in job order (grid point, then seed); failed runs are
/// returned as messages.
pub fn build_table(
    exp: &Experiment,
    points: &[Point],
    seeds: &[u64],
    results: &[Result<RunOutput, String>],
) -> (Table, Vec<String>) {
    let mut t = Table::new(exp.columns());
    let mut failed = Vec::new();
    let mut k = 0;
    for p in points {
        for &seed in seeds {
            let label = format!("[{}] seed {seed}", exp.point_label(p));
            match results.get(k) {
                Some(Ok(r)) => {
                    let pushed = match r {
                        RunOutput::Sim(r) => t.push_run(&p.values, seed, exp.web, exp.flow.as_deref(), r),
                        RunOutput::Testbed(r) => {
                            testbed_config(p, seed).and_then(|cfg| t.push_testbed(&p.values, seed, &cfg, r))
                        }
                        RunOutput::Scale(r) => crate::scale::push_row(&mut t, &p.values, seed, r),
                        RunOutput::Twin(r) => r.sim.flow(None).and_then(|f| match r.testbed.handoff {
                            Some(_) => t.push_twin_handoff(&p.values, seed, &r.testbed, (&r.sim, f), &r.kernel),
                            None => t.push_twin(&p.values, seed, &r.testbed, f, &r.kernel),
                        }),
                    };
                    if let Err(e) = pushed {
                        failed.push(format!("{label}: {e}"));
                    }
                    let kernel = match r {
                        RunOutput::Testbed(r) => Some(r),
                        RunOutput::Twin(r) => Some(&r.kernel),
                        _ => None,
                    };
                    if let Some(r) = kernel {
                        if !r.hash_ok {
                            failed
                                .push(format!("{label}: the received bytes differ from the sent ones (hash mismatch)"));
                        }
                    }
                }
                Some(Err(e)) => failed.push(format!("{label}: {e}")),
                None => failed.push(format!("{label}: not run")),
            }
            k += 1;
        }
    }
    if exp.runner == RunnerKind::Scale {
        crate::scale::fill_relative(&mut t);
    }
    (t, failed)
}

fn finish(plan: &Planned, results: &[Result<RunOutput, String>], opts: &ReproduceOptions) -> Result<ExperimentOutcome> {
    let exp = &plan.exp;
    let dir = opts.out.join(&exp.id);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let (table, failed_runs) = build_table(exp, &plan.points, &plan.seeds, results);
    write_file(&dir.join("results.csv"), table.to_csv())?;

    // traces and the figure
    let plot = match &exp.figure.kind {
        FigureKind::Line { .. } => figure::line_curves(exp, &table)?,
        FigureKind::Sequence { erroneous_fast_retransmits } => {
            let mut curves = Vec::new();
            let mut marks: Vec<f64> = Vec::new();
            let mut events = Vec::new();
            for (p, point) in plan.points.iter().enumerate() {
                let Some(j) = plan.seeds.iter().position(|&s| s == 1) else { continue };
                let Some(Ok(RunOutput::Sim(r))) = results.get(p * plan.seeds.len() + j) else { continue };
                let Ok(fm) = r.flow(exp.flow.as_deref()) else { continue };
                let Some(series) = r.series.as_ref().and_then(|s| s.iter().find(|s| s.name == fm.name)) else {
                    continue;
                };
                let name = series_name(point);
                let label = series_label(exp, point);
                let mut csv = series_csv(series);
                if *erroneous_fast_retransmits {
                    let wrong = erroneous_fast_retransmits_of(series);
                    csv.push_str(&erroneous_csv_rows(&wrong));
                    let pts = wrong.iter().map(|&(t, off)| (t, off as f64 / 1e6)).collect();
                    events.push((format!("erroneous fast retransmit ({label})"), pts));
                }
                write_file(&dir.join(format!("series-{name}.csv")), csv)?;
                curves.push((label, series.received.iter().map(|&(t, off)| (t, off as f64 / 1e6)).collect()));
                marks.extend(series.handoffs.iter().copied());
            }
            marks.sort_by(f64::total_cmp);
            marks.dedup();
            let (x_label, y_label) = ("time (s)".into(), "received stream offset (MB)".into());
            Plot::Sequence { curves, marks, events, x_label, y_label }
        }
        FigureKind::Cdf { x } => {
            write_file(&dir.join("handoffs.csv"), handoffs_csv(exp, &plan.points, &plan.seeds, results))?;
            let mut curves: Vec<(String, Vec<f64>)> = Vec::new();
            for (p, point) in plan.points.iter().enumerate() {
                let label = series_label(exp, point);
                let values = (0..plan.seeds.len())
                    .filter_map(|j| match results.get(p * plan.seeds.len() + j) {
                        Some(Ok(RunOutput::Sim(r))) => Some(r),
                        _ => None,
                    })
                    .flat_map(|r| r.families.handoffs.iter().filter_map(|h| handoff_time(h, x)));
                match curves.iter_mut().find(|c| c.0 == label) {
                    Some(c) => c.1.extend(values),
                    None => curves.push((label, values.collect())),
                }
            }
            let x_label = exp.figure.x_label.clone().unwrap_or_else(|| x.clone());
            Plot::Cdf { curves, x_label }
        }
    };
    figure::write(&plot, &format!("{} ({})", exp.title, exp.paper), &dir)?;

    let claims: Vec<(String, String, Outcome)> =
        exp.claims.iter().map(|c| (c.text.clone(), c.paper.clone(), c.evaluate(&table))).collect();
    let outcome = ExperimentOutcome {
        id: exp.id.clone(),
        title: exp.title.clone(),
        paper: exp.paper.clone(),
        claims,
        failed_runs,
        runs: results.len(),
        dir: dir.clone(),
    };
    write_file(
        &dir.join("report.md"),
        report::experiment_md(exp, &plan.points, &plan.seeds, &table, &outcome, opts.quick),
    )?;
    Ok(outcome)
}

/// Every handoff of every run, one row each: grid values, seed, handoff index, from, to, decision time (s),
/// the per-handoff times in ms ([`HANDOFF_TIMES`]), packets lost, re-sent from the buffer, duplicates.
fn handoffs_csv(exp: &Experiment, points: &[Point], seeds: &[u64], results: &[Result<RunOutput, String>]) -> String {
    let runs = points.iter().enumerate().flat_map(|(p, point)| {
        seeds.iter().enumerate().filter_map(move |(j, &seed)| match results.get(p * seeds.len() + j) {
            Some(Ok(RunOutput::Sim(r))) => Some((point.values.as_slice(), seed, r.families.handoffs.as_slice())),
            _ => None,
        })
    });
    handoff_rows_csv(exp.grid_columns(), runs)
}

/// [`handoffs_csv`] from `(grid values, seed, handoffs)` of each run, under these grid columns.
fn handoff_rows_csv<'a>(
    grid_columns: Vec<String>,
    runs: impl Iterator<Item = (&'a [Cell], u64, &'a [HandoffMetrics])>,
) -> String {
    let mut header = grid_columns;
    header.extend(["seed", "index", "from", "to", "decided_s"].map(String::from));
    header.extend(HANDOFF_TIMES.iter().map(|t| t.to_string()));
    header.extend(["packets_lost", "resent_from_buffer", "duplicates"].map(String::from));
    let rows = runs.flat_map(|(values, seed, handoffs)| {
        handoffs.iter().map(move |h| {
            let mut row: Vec<String> = values.iter().map(Cell::to_string).collect();
            row.extend([seed.to_string(), h.index.to_string(), h.from.clone(), h.to.clone(), h.decided_s.to_string()]);
            row.extend(HANDOFF_TIMES.iter().map(|t| handoff_time(h, t).map(|v| format!("{v:.3}")).unwrap_or_default()));
            row.extend([h.packets_lost, h.resent_from_buffer, h.duplicates].map(|v| v.to_string()));
            row
        })
    });
    table::csv_text(std::iter::once(header).chain(rows))
}

/// File-name part for a grid point's trace: the values joined by `-` (e.g. `snoop`, `snoop-3.81e-6`).
/// Eom 2002's erroneous fast retransmits (§3.2) in a traced flow: (time s, stream offset), by
/// `lasthop_sim::mobile_ip::erroneous` from what the sender sent, the ACKs it got and what the receiver got.
fn erroneous_fast_retransmits_of(s: &lasthop_sim::FlowSeries) -> Vec<(f64, u64)> {
    use lasthop_sim::mobile_ip::erroneous;
    erroneous::erroneous(&erroneous::fast_retransmits(&s.sent, &s.acked), &s.sent, &s.received)
}

/// `erroneous_fast_retransmit,time_s,offset` rows for a series CSV (after [`series_csv`]'s).
fn erroneous_csv_rows(wrong: &[(f64, u64)]) -> String {
    let rows =
        wrong.iter().map(|(t, off)| ["erroneous_fast_retransmit".to_string(), format!("{t:?}"), off.to_string()]);
    table::csv_text(rows)
}

fn series_name(p: &Point) -> String {
    let raw = if p.values.is_empty() {
        "run".to_string()
    } else {
        p.values.iter().map(Cell::to_string).collect::<Vec<_>>().join("-")
    };
    raw.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.+".contains(c) { c } else { '_' }).collect()
}

fn series_label(exp: &Experiment, p: &Point) -> String {
    let mut values = Vec::new();
    for col in &exp.figure.series {
        if let Some(i) = exp.grid.iter().position(|a| &a.column == col) {
            values.push((col, p.values[i].to_string()));
        }
    }
    if values.is_empty() {
        return exp.point_label(p);
    }
    let key = values.iter().map(|(_, v)| v.as_str()).collect::<Vec<_>>().join("/");
    exp.figure
        .series_labels
        .get(&key)
        .cloned()
        .unwrap_or_else(|| values.iter().map(|(c, v)| format!("{c} = {v}")).collect::<Vec<_>>().join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use lasthop_sim::RunResult;

    fn experiments(ids: &[&str]) -> Vec<Experiment> {
        let all = load_dir(&experiments_dir(None)).unwrap();
        choose(all, &ids.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn plan_lists_jobs_by_experiment_point_and_seed_tracing_seed_1_of_sequence_figures() {
        let (plans, jobs) = plan(experiments(&["snoop-ber", "snoop-seq"]), false).unwrap();
        assert_eq!(plans.len(), 2);
        assert_eq!(plans[0].jobs, 0..2 * 11 * 10);
        assert_eq!(plans[1].jobs, 220..222);
        let first: Vec<(usize, u64)> = jobs[..12].iter().map(|j| (j.point, j.seed)).collect();
        assert_eq!(first[..3], [(0, 1), (0, 2), (0, 3)]);
        assert_eq!(first[10..], [(1, 1), (1, 2)]);
        assert!(jobs[..220].iter().all(|j| j.exp == 0 && !j.trace));
        assert!(jobs[220..].iter().all(|j| j.exp == 1 && j.trace && j.seed == 1));
        assert!(jobs[220].origin.ends_with("snoop-seq.toml [agent=none]"), "{}", jobs[220].origin);
    }

    #[test]
    fn the_pool_runs_every_job_once_and_turns_a_panic_into_that_run_s_error() {
        let (plans, jobs) = plan(experiments(&["snoop-ber"]), true).unwrap();
        let runner = |req: &RunRequest<'_>| -> Result<RunResult> {
            let seed = req.seed.unwrap();
            assert_ne!(seed, 3, "seed 3 breaks");
            Ok(RunResult { seed, ..RunResult::default() })
        };
        let mut got: Vec<Option<JobResult>> = (0..jobs.len()).map(|_| None).collect();
        run_pool(&plans, &jobs, 3, &runner, |i, r| {
            assert!(got[i].is_none(), "job {i} reported twice");
            got[i] = Some(r);
        });
        for (job, r) in jobs.iter().zip(got) {
            match r.expect("every job reported") {
                Ok(RunOutput::Sim(r)) => assert_eq!((r.seed, job.seed == 3), (job.seed, false)),
                Err(e) => assert!(job.seed == 3 && e.starts_with("panicked: ") && e.contains("seed 3 breaks"), "{e}"),
                Ok(RunOutput::Testbed(_) | RunOutput::Scale(_) | RunOutput::Twin(_)) => {
                    panic!("a simulator experiment ran elsewhere")
                }
            }
        }
    }

    #[test]
    fn handoffs_csv_quotes_node_names_and_reads_back() {
        let h = HandoffMetrics {
            index: 2,
            from: "bs \"old\", west".into(),
            to: "bs2".into(),
            decided_s: 10.5,
            latency_s: Some(0.0123),
            packets_lost: 3,
            ..HandoffMetrics::default()
        };
        let values = [Cell::Str("snoop".into())];
        let text = handoff_rows_csv(vec!["agent".into()], std::iter::once((&values[..], 1, std::slice::from_ref(&h))));
        let mut r = csv::Reader::from_reader(text.as_bytes());
        let header: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
        let rows: Vec<csv::StringRecord> = r.records().collect::<Result<_, _>>().unwrap();
        assert_eq!(rows.len(), 1, "{text}");
        let get = |c: &str| rows[0][header.iter().position(|h| h == c).unwrap()].to_string();
        assert_eq!((get("agent"), get("seed"), get("index")), ("snoop".into(), "1".into(), "2".into()));
        assert_eq!((get("from"), get("to")), ("bs \"old\", west".into(), "bs2".into()));
        assert_eq!(
            (get("decided_s"), get("latency_ms"), get("accepted_ms")),
            ("10.5".into(), "12.300".into(), String::new())
        );
        assert_eq!(get("packets_lost"), "3");
        assert_eq!(header.len(), rows[0].len());
    }

    #[test]
    fn series_names_are_safe_file_names() {
        let p = Point {
            values: vec![Cell::Str("snoop/x y".into()), Cell::Float(3.81e-6)],
            scenario: toml::Value::Integer(0),
        };
        assert_eq!(series_name(&p), "snoop_x_y-3.81e-6");
        assert_eq!(series_name(&Point { values: vec![], scenario: toml::Value::Integer(0) }), "run");
    }
}
