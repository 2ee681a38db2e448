//! Experiment files (`experiments/*.toml`): the typed experiment, its file format, and the loader that checks
//! a file section by section (each section's checks live in a module of its own, named after it).

mod claims_spec;
mod figure;
mod grid;
mod overrides;
mod runner;
mod schema;
#[cfg(test)]
mod tests;

pub use figure::{handoff_time, HANDOFF_TIMES};
pub use overrides::{apply_override, override_sets};

use crate::claims::{Claim, Filter, Metric};
use crate::table::Cell;
use claims_spec::{parse_claim, parse_table};
use figure::parse_figure;
use grid::{parse_grid, parse_quick_grid, variant_is};
use lasthop_channel::error_model::toml_reason;
use overrides::{check_sim_overrides, parse_quick, parse_set};
use runner::{check_testbed_config, parse_flow, parse_repeats, reserved_columns, results_columns, Columns, RowNames};
use schema::RawExperiment;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// An experiment: a base scenario, overrides, a parameter grid, seeds, a figure and claims.
///
/// The file format, every key with its default, the claim kinds and the runners, is documented in the user
/// guide, `docs/src/reference/experiment-file.md` (checked against this parser by
/// `crates/lasthop/tests/reference_docs/`); the results columns in `docs/src/reference/results.md`.
/// In short: `id`, `title`, `paper`, a base `scenario` with `[set]` overrides, `seeds`, `[grid.COLUMN]`
/// axes crossed in file order, a `[quick]` subset for `--quick`, a `[figure]`, and `[[claims]]` quoting the
/// paper, each recorded to hold or, with `expect = "fails"` and `why`, as a traced divergence.
#[derive(Debug, Clone)]
pub struct Experiment {
    pub id: String,
    pub title: String,
    pub paper: String,
    pub description: Option<String>,
    pub default: bool,
    /// The experiment file.
    pub file: PathBuf,
    /// The base scenario as the file names it (relative to the experiment file), its path, and its parsed
    /// contents (before any override).
    pub scenario: String,
    pub scenario_file: PathBuf,
    pub base: toml::Value,
    pub seeds: u64,
    pub flow: Option<String>,
    /// Rows come from a web workload (`flow` names it, or the first) rather than a flow.
    pub web: bool,
    pub set: Vec<(String, toml::Value)>,
    pub quick: Quick,
    pub grid: Vec<Axis>,
    pub figure: Figure,
    pub claims: Vec<Claim>,
    /// Metrics in the report's aggregate table.
    pub table: Vec<Metric>,
    /// What carries out a run: the simulator, or the namespace testbed.
    pub runner: RunnerKind,
    /// `runner = "scale"`: how many times each run is measured (the same deterministic run; only its
    /// clocks differ). 1 for the other runners.
    pub repeats: u64,
}

#[derive(Debug, Clone, Default)]
pub struct Quick {
    pub seeds: Option<u64>,
    pub set: Vec<(String, toml::Value)>,
    /// Axes whose values `--quick` narrows to a subset: (column, values).
    pub grid: Vec<(String, Vec<toml::Value>)>,
}

/// `runner = "sim"` (the default): the base scenario is a simulator scenario; `runner = "testbed"`: it is a
/// TOML of `lasthop_net::TestbedConfig` fields and every run is a real kernel-TCP transfer through the real
/// base station on network namespaces (needs root; runs one at a time whatever `--jobs` says).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunnerKind {
    #[default]
    Sim,
    Testbed,
    /// The simulator, every run a child `lasthop run` process measured alone: one row per run with its
    /// flows, events, wall time and peak memory (`lasthop::scale`).
    Scale,
    /// Both faces (`lasthop twin`): the base scenario is a simulator scenario the testbed can build, or the
    /// handoff testbed's configuration (`handoff` set) the simulator can mirror, and every run is the
    /// simulation and then a real kernel-TCP transfer on the namespace testbed (root; one at a time, alone):
    /// two rows per run, `face` = `sim` and `kernel`.
    Twin,
}

/// The `face` column of a twin experiment's rows: the simulator's, the kernel's.
pub const TWIN_FACES: [&str; 2] = ["sim", "kernel"];

impl RunnerKind {
    /// Whether runs need root and network namespaces and measure real time (so run alone, one at a time).
    pub fn on_testbed(self) -> bool {
        matches!(self, RunnerKind::Testbed | RunnerKind::Twin)
    }
}

/// One grid axis: a results column, the scenario field its values go to, and for named variants the other
/// fields each value sets (`[grid.scheme.variants.eln] "tcp.eln" = true`).
#[derive(Debug, Clone)]
pub struct Axis {
    pub column: String,
    /// The field the value itself goes to; `None` for an axis of named variants only.
    pub path: Option<String>,
    pub values: Vec<toml::Value>,
    /// For a value (as text), the overrides it applies besides `path`.
    pub variants: Vec<(String, Vec<(String, toml::Value)>)>,
}

impl Axis {
    /// Every override that grid value `v` applies to the scenario.
    pub fn overrides<'a>(&'a self, v: &'a toml::Value) -> impl Iterator<Item = (&'a str, &'a toml::Value)> + 'a {
        let extra = self.variants.iter().find(|(k, _)| variant_is(k, v)).map(|(_, o)| o.as_slice()).unwrap_or(&[]);
        self.path.as_deref().map(|p| (p, v)).into_iter().chain(extra.iter().map(|(p, x)| (p.as_str(), x)))
    }

    /// "`path`" or "variants of …" for reports.
    pub fn describe(&self) -> String {
        match &self.path {
            Some(p) => format!("`{p}`"),
            None => "named variants".to_string(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scale {
    #[default]
    Linear,
    Log2,
    Log10,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Ticks {
    #[default]
    Value,
    Reciprocal,
}

#[derive(Debug, Clone, PartialEq)]
pub enum FigureKind {
    Line {
        x: String,
        y: Metric,
        x_scale: Scale,
        x_ticks: Ticks,
    },
    Sequence {
        /// Mark the sender's erroneous fast retransmits (Eom 2002 §3.2, Fig. 7 and 10) on the plot.
        erroneous_fast_retransmits: bool,
    },
    /// The empirical distribution of a per-handoff time (one of [`HANDOFF_TIMES`]).
    Cdf {
        x: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    pub kind: FigureKind,
    /// Rows the figure shows (`where`); empty: all.
    pub filter: Vec<Filter>,
    /// Grid columns: one curve per combination of their values (empty: one curve).
    pub series: Vec<String>,
    pub series_labels: BTreeMap<String, String>,
    pub x_label: Option<String>,
    pub y_label: Option<String>,
}

impl Figure {
    /// Whether the run of `seed` records traces: sequence figures trace the seed-1 run of every grid point.
    pub fn traces(&self, seed: u64) -> bool {
        matches!(self.kind, FigureKind::Sequence { .. }) && seed == 1
    }
}

/// One grid point: its values (in grid column order) and the scenario to run.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub values: Vec<Cell>,
    pub scenario: toml::Value,
}

/// A mistake in an experiment file: which file, which field, which line, what was expected.
#[derive(Debug, Clone, PartialEq)]
pub struct ExperimentError {
    pub file: PathBuf,
    pub line: Option<usize>,
    /// The field at fault (dotted, e.g. `claims[2].where.ber`); empty for TOML syntax errors, whose message
    /// shows the line.
    pub field: String,
    pub message: String,
}

impl fmt::Display for ExperimentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
        }
        if !self.field.is_empty() {
            write!(f, ": `{}`", self.field)?;
        }
        write!(f, ": {}", self.message.trim_end())
    }
}

impl ExperimentError {
    /// A mistake in the file as a whole (unreadable, not TOML), not in one field.
    fn of_file(file: &Path, line: Option<usize>, message: impl Into<String>) -> ExperimentError {
        ExperimentError { file: file.to_path_buf(), line, field: String::new(), message: message.into() }
    }
}

impl std::error::Error for ExperimentError {}

struct Ctx<'a> {
    file: &'a Path,
    text: &'a str,
}

impl Ctx<'_> {
    fn line(&self, span: std::ops::Range<usize>) -> usize {
        self.text[..span.start.min(self.text.len())].matches('\n').count() + 1
    }
    fn err(
        &self,
        span: std::ops::Range<usize>,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> ExperimentError {
        ExperimentError {
            file: self.file.to_path_buf(),
            line: Some(self.line(span)),
            field: field.into(),
            message: message.into(),
        }
    }
}

/// `id`: letters, digits, `-` and `_`, equal to the file name without `.toml`.
fn check_id(cx: &Ctx, id: &Spanned<String>) -> Result<(), ExperimentError> {
    if let Some(stem) = cx.file.file_stem().and_then(|s| s.to_str()) {
        if id.get_ref() != stem {
            return Err(cx.err(id.span(), "id", format!("`{}` must equal the file name `{stem}`", id.get_ref())));
        }
    }
    if id.get_ref().is_empty() || !id.get_ref().chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
        return Err(cx.err(id.span(), "id", "expected letters, digits, `-` and `_` only"));
    }
    Ok(())
}

/// `scenario`: the base scenario's path (relative to the experiment file) and its parsed contents.
fn load_base(cx: &Ctx, scenario: &Spanned<String>) -> Result<(PathBuf, toml::Value), ExperimentError> {
    let dir = cx.file.parent().unwrap_or(Path::new("."));
    let scenario_file = dir.join(scenario.get_ref());
    let text = std::fs::read_to_string(&scenario_file)
        .map_err(|e| cx.err(scenario.span(), "scenario", format!("cannot read {}: {e}", scenario_file.display())))?;
    let base = toml::from_str(&text).map_err(|e| {
        cx.err(scenario.span(), "scenario", format!("{} is not valid TOML: {e}", scenario_file.display()))
    })?;
    Ok((scenario_file, base))
}

/// `seeds` or `quick.seeds`: at least 1 when given.
fn parse_seeds(cx: &Ctx, seeds: Option<&Spanned<u64>>, field: &str) -> Result<Option<u64>, ExperimentError> {
    match seeds {
        Some(s) if *s.get_ref() == 0 => Err(cx.err(s.span(), field, "expected at least 1")),
        other => Ok(other.map(|s| *s.get_ref())),
    }
}

impl Experiment {
    /// Reads and validates an experiment file (and its base scenario).
    pub fn load(path: &Path) -> Result<Experiment, ExperimentError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ExperimentError::of_file(path, None, format!("cannot read: {e}")))?;
        Experiment::from_str(&text, path)
    }

    /// Parses and validates experiment text as if read from `file` (the base scenario is found relative to it).
    ///
    /// Sections are checked in file-format order, each by its own function: id, base scenario, seeds, `[set]`,
    /// `[quick]`, `[grid]`, `[quick.grid]`, the testbed configuration, `flow`, `[figure]`, `[[claims]]`,
    /// `table`. The first mistake found is the error.
    pub fn from_str(text: &str, file: &Path) -> Result<Experiment, ExperimentError> {
        let cx = Ctx { file, text };
        let raw: RawExperiment = toml::from_str(text)
            .map_err(|e| ExperimentError::of_file(file, e.span().map(|s| cx.line(s)), toml_reason(&e, text)))?;
        check_id(&cx, &raw.id)?;
        let (scenario_file, base) = load_base(&cx, &raw.scenario)?;
        let seeds = parse_seeds(&cx, raw.seeds.as_ref(), "seeds")?.unwrap_or(1);
        let mut doc = base.clone();
        let set = parse_set(&cx, &raw.set, "set", &mut doc)?;
        let (mut quick, mut quick_doc) = parse_quick(&cx, raw.quick.as_ref(), &doc)?;
        let runner = raw.runner;
        let repeats = parse_repeats(&cx, raw.repeats.as_ref(), runner)?;
        let names = RowNames::of(&base);
        let web = names.rows_from_web(runner, raw.flow.as_ref());
        let grid = parse_grid(&cx, &raw.grid, &reserved_columns(runner, web, &base), &doc, &mut quick_doc)?;
        let cols = Columns::new(runner, web, &base, &grid);
        if let Some(q) = &raw.quick {
            quick.grid = parse_quick_grid(&cx, q, &grid)?;
        }
        // A twin experiment's base is a simulator scenario, or the handoff testbed's configuration that the
        // twin translates into one.
        let testbed_base =
            runner == RunnerKind::Testbed || (runner == RunnerKind::Twin && base.get("handoff").is_some());
        if testbed_base {
            check_testbed_config(&cx, &raw.scenario, &scenario_file, [(&doc, "set"), (&quick_doc, "quick.set")])?;
        }
        if matches!(runner, RunnerKind::Sim | RunnerKind::Twin) && !testbed_base {
            check_sim_overrides(&cx, &raw, &scenario_file, &doc)?;
        }
        let flow = parse_flow(&cx, raw.flow.as_ref(), runner, &base, &names)?;
        let figure = parse_figure(&cx, &raw.figure, &grid, &cols, runner)?;
        let claims = raw
            .claims
            .iter()
            .enumerate()
            .map(|(i, c)| parse_claim(&cx, i, c, &grid, &cols))
            .collect::<Result<Vec<_>, _>>()?;
        let table = parse_table(&cx, &raw.table, &figure, &claims, &cols)?;
        Ok(Experiment {
            id: raw.id.into_inner(),
            title: raw.title,
            paper: raw.paper,
            description: raw.description,
            default: raw.default,
            file: file.to_path_buf(),
            scenario: raw.scenario.into_inner(),
            scenario_file,
            base,
            seeds,
            flow,
            web,
            set,
            quick,
            grid,
            figure,
            claims,
            table,
            runner,
            repeats,
        })
    }

    /// The values a figure's series column takes: a grid axis's, or a twin experiment's two faces.
    pub fn series_values(&self, column: &str) -> Vec<toml::Value> {
        match self.grid.iter().find(|a| a.column == column) {
            Some(axis) => axis.values.clone(),
            None if self.runner == RunnerKind::Twin && column == "face" => {
                TWIN_FACES.iter().map(|f| toml::Value::String(f.to_string())).collect()
            }
            None => Vec::new(),
        }
    }

    /// Every column of this experiment's results table.
    pub fn columns(&self) -> Vec<String> {
        results_columns(self.runner, self.web, &self.base, &self.grid_columns())
    }
}

/// Loads every `*.toml` in `dir`, sorted by id. Any broken file is an error.
pub fn load_dir(dir: &Path) -> Result<Vec<Experiment>, ExperimentError> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| ExperimentError::of_file(dir, None, format!("cannot read the experiments directory: {e}")))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    let mut out: Vec<Experiment> = Vec::new();
    for f in files {
        out.push(Experiment::load(&f)?);
    }
    out.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(out)
}
