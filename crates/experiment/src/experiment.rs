//! Experiment files (`experiments/*.toml`): parsing, validation against the base scenario, grid expansion.

use crate::claims::{Aggregate, Claim, ClaimKind, Cond, Expect, Filter, Metric, Op, Require};
use crate::table::{self, Cell};
use lasthop_channel::error_model::toml_reason;
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
}

/// `series = "agent"` or `series = ["agent", "cc"]` (one curve per combination).
#[derive(Deserialize)]
#[serde(untagged)]
enum RawSeries {
    One(String),
    Many(Vec<String>),
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

/// Whether a `variants` key names grid value `v`: its text, or for a number any text of the same number
/// (`variants."1.53e-5"` for the value 1.53e-5, however TOML prints it).
fn variant_is(key: &str, v: &toml::Value) -> bool {
    variant_key(v) == key
        || (v.is_float() || v.is_integer())
            && key.trim().parse::<f64>().is_ok_and(|k| Cell::from_toml(v).matches(&Cell::Float(k)))
}

fn variant_key(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
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

/// Per-handoff times (ms after the mobile's decision) a `cdf` figure can show, as `handoffs.csv` names them:
/// the first word from the new BS (data or acceptance), the first data packet from it, its acceptance, the
/// request's arrival at it, the old BS learning of the handoff (`lasthop_sim::HandoffMetrics`).
pub const HANDOFF_TIMES: &[&str] =
    &["completion_ms", "latency_ms", "accepted_ms", "request_at_new_bs_ms", "old_bs_told_ms"];

/// The per-handoff time `name` (one of [`HANDOFF_TIMES`]) of handoff `h`, in ms.
pub fn handoff_time(h: &lasthop_sim::HandoffMetrics, name: &str) -> Option<f64> {
    let s = match name {
        "completion_ms" => h.completion_s,
        "latency_ms" => h.latency_s,
        "accepted_ms" => h.accepted_s,
        "request_at_new_bs_ms" => h.request_at_new_bs_s,
        "old_bs_told_ms" => h.old_bs_told_s,
        _ => None,
    };
    s.map(|s| s * 1e3)
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

// ---------------------------------------------------------------------------------------------------------
// The file as written.

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExperiment {
    id: Spanned<String>,
    title: String,
    paper: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    default: bool,
    scenario: Spanned<String>,
    #[serde(default)]
    seeds: Option<Spanned<u64>>,
    #[serde(default)]
    flow: Option<Spanned<String>>,
    #[serde(default)]
    table: Vec<Spanned<String>>,
    #[serde(default)]
    set: RawSet,
    #[serde(default)]
    quick: Option<RawQuick>,
    #[serde(default)]
    grid: BTreeMap<Spanned<String>, Spanned<RawAxis>>,
    figure: Spanned<RawFigure>,
    #[serde(default)]
    claims: Vec<Spanned<RawClaim>>,
    #[serde(default)]
    runner: RunnerKind,
    #[serde(default)]
    repeats: Option<Spanned<u64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawQuick {
    #[serde(default)]
    seeds: Option<Spanned<u64>>,
    #[serde(default)]
    set: RawSet,
    /// column = [values]: a subset of a grid axis's values, for `--quick`.
    #[serde(default)]
    grid: BTreeMap<Spanned<String>, Spanned<Vec<Spanned<toml::Value>>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAxis {
    #[serde(default)]
    path: Option<Spanned<String>>,
    values: Spanned<Vec<Spanned<toml::Value>>>,
    /// value -> { "dotted.path" = value, ... }: several fields set together for one axis value.
    #[serde(default)]
    variants: BTreeMap<Spanned<String>, BTreeMap<Spanned<String>, Spanned<toml::Value>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFigure {
    kind: RawFigureKind,
    #[serde(default)]
    x: Option<Spanned<String>>,
    #[serde(default)]
    y: Option<Spanned<String>>,
    #[serde(default)]
    series: Option<Spanned<RawSeries>>,
    #[serde(default)]
    series_labels: BTreeMap<String, String>,
    #[serde(default)]
    x_scale: Scale,
    #[serde(default)]
    x_ticks: Ticks,
    #[serde(default)]
    x_label: Option<String>,
    #[serde(default)]
    y_label: Option<String>,
    #[serde(default, rename = "where")]
    filter: RawFilter,
    #[serde(default)]
    mark_erroneous_fast_retransmits: Option<Spanned<bool>>,
}

#[derive(Deserialize, PartialEq)]
#[serde(rename_all = "lowercase")]
enum RawFigureKind {
    Line,
    Sequence,
    Cdf,
}

#[derive(Deserialize, Clone, Copy)]
enum RawOp {
    #[serde(rename = "<")]
    Lt,
    #[serde(rename = "<=")]
    Le,
    #[serde(rename = ">")]
    Gt,
    #[serde(rename = ">=")]
    Ge,
    #[serde(rename = "between")]
    Between,
}

#[derive(Deserialize, Clone, Copy, PartialEq)]
#[serde(rename_all = "lowercase")]
enum RawClaimKind {
    Value,
    Ratio,
    All,
}

type RawFilter = RawSet;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawClaim {
    text: String,
    paper: String,
    kind: RawClaimKind,
    metric: Spanned<String>,
    #[serde(default, rename = "where")]
    filter: RawFilter,
    #[serde(default)]
    numerator: Option<Spanned<RawFilter>>,
    #[serde(default)]
    denominator: Option<Spanned<RawFilter>>,
    #[serde(default)]
    aggregate: Option<Aggregate>,
    #[serde(default)]
    op: Option<Spanned<RawOp>>,
    #[serde(default)]
    value: Option<Spanned<toml::Value>>,
    #[serde(default)]
    for_each: Option<Spanned<String>>,
    #[serde(default)]
    require: Option<Require>,
    #[serde(default)]
    expect: Option<Spanned<RawExpect>>,
    #[serde(default)]
    why: Option<Spanned<String>>,
}

#[derive(Deserialize, Clone, Copy, PartialEq)]
#[serde(rename_all = "lowercase")]
enum RawExpect {
    Holds,
    Fails,
}

// ---------------------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------------------
// The sections of the file, each checked by its own function, in the order `Experiment::from_str` calls them.

type RawSet = BTreeMap<Spanned<String>, Spanned<toml::Value>>;
/// `(dotted path, value)` overrides of the base scenario, in order.
type Overrides = Vec<(String, toml::Value)>;

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

/// `repeats`: 1 to 100, and only for `runner = "scale"` (a simulator run repeated gives the same rows).
fn parse_repeats(cx: &Ctx, repeats: Option<&Spanned<u64>>, runner: RunnerKind) -> Result<u64, ExperimentError> {
    let Some(r) = repeats else { return Ok(1) };
    if runner != RunnerKind::Scale {
        return Err(cx.err(r.span(), "repeats", "only a scale experiment (runner = \"scale\") repeats its runs"));
    }
    match *r.get_ref() {
        n @ 1..=100 => Ok(n),
        n => Err(cx.err(r.span(), "repeats", format!("expected 1 to 100, found {n}"))),
    }
}

/// `[set]` or `[quick.set]`: overrides, each applied to `doc` (which checks it against the base scenario).
fn parse_set(cx: &Ctx, set: &RawSet, prefix: &str, doc: &mut toml::Value) -> Result<Overrides, ExperimentError> {
    let mut out = Vec::new();
    for (k, v) in set {
        apply_override(doc, k.get_ref(), v.get_ref())
            .map_err(|m| cx.err(k.span(), format!("{prefix}.\"{}\"", k.get_ref()), m))?;
        out.push((k.get_ref().clone(), v.get_ref().clone()));
    }
    Ok(out)
}

/// `[quick]` but its grid (checked once the grid is known): its seeds and overrides, and the scenario
/// document with them applied on top of `doc` (the base with `[set]`).
fn parse_quick(cx: &Ctx, quick: Option<&RawQuick>, doc: &toml::Value) -> Result<(Quick, toml::Value), ExperimentError> {
    let mut quick_doc = doc.clone();
    let Some(q) = quick else { return Ok((Quick::default(), quick_doc)) };
    let seeds = parse_seeds(cx, q.seeds.as_ref(), "quick.seeds")?;
    let set = parse_set(cx, &q.set, "quick.set", &mut quick_doc)?;
    Ok((Quick { seeds, set, grid: Vec::new() }, quick_doc))
}

/// The flows and web workloads of the base scenario, by name.
struct RowNames {
    flows: Vec<String>,
    web: Vec<String>,
}

impl RowNames {
    fn of(base: &toml::Value) -> RowNames {
        let names = |t: &str| {
            base.get(t).and_then(|x| x.as_table()).map(|x| x.keys().cloned().collect::<Vec<_>>()).unwrap_or_default()
        };
        RowNames { flows: names("flows"), web: names("web") }
    }

    /// Whether rows come from a web workload: `flow` names one, or there are web workloads and no flows.
    fn rows_from_web(&self, runner: RunnerKind, flow: Option<&Spanned<String>>) -> bool {
        runner == RunnerKind::Sim
            && match flow {
                Some(f) => self.web.contains(f.get_ref()),
                None => self.flows.is_empty() && !self.web.is_empty(),
            }
    }
}

/// Whether flow rows carry the Mobile IP columns: the base scenario has a `[mobile_ip]` table.
fn has_mobile_ip(base: &toml::Value) -> bool {
    base.get("mobile_ip").is_some()
}

/// The results columns of an experiment with these grid columns.
fn results_columns(runner: RunnerKind, web: bool, mobile_ip: bool, grid_columns: &[String]) -> Vec<String> {
    match runner {
        RunnerKind::Sim if web => table::web_columns(grid_columns),
        RunnerKind::Sim if mobile_ip => table::mobile_ip_columns(grid_columns),
        RunnerKind::Sim => table::columns(grid_columns),
        RunnerKind::Testbed => table::testbed_columns(grid_columns),
        RunnerKind::Scale => table::scale_columns(grid_columns),
    }
}

/// Names a grid axis may not take: every results column of a simulator experiment (flow or web rows) but
/// `tcp` ([`table::CONFIG_COLUMNS`]), or a testbed experiment's own columns but agent/cc/sack/ber: a grid may
/// take those over.
fn reserved_columns(runner: RunnerKind, web: bool, mobile_ip: bool) -> Vec<String> {
    let taken_over = match runner {
        RunnerKind::Sim => table::CONFIG_COLUMNS,
        RunnerKind::Testbed => table::TESTBED_CONFIG_COLUMNS,
        RunnerKind::Scale => &[],
    };
    let mut reserved = results_columns(runner, web, mobile_ip, &[]);
    if runner == RunnerKind::Sim {
        reserved.extend(table::columns(&[]));
        reserved.extend(table::web_columns(&[]));
        reserved.extend(table::mobile_ip_columns(&[]));
    }
    reserved.retain(|c| !taken_over.contains(&c.as_str()));
    reserved
}

/// `[grid.*]`, in file order. Every value and variant is applied to a copy of `doc` and to `quick_doc`
/// (which keeps the path values, so the testbed check sees them).
fn parse_grid(
    cx: &Ctx,
    raw: &BTreeMap<Spanned<String>, Spanned<RawAxis>>,
    reserved: &[String],
    doc: &toml::Value,
    quick_doc: &mut toml::Value,
) -> Result<Vec<Axis>, ExperimentError> {
    let mut axes: Vec<(&Spanned<String>, &Spanned<RawAxis>)> = raw.iter().collect();
    axes.sort_by_key(|(_, a)| a.span().start);
    axes.into_iter().map(|(name, axis)| parse_axis(cx, name, axis.get_ref(), reserved, doc, quick_doc)).collect()
}

/// One `[grid.NAME]`.
fn parse_axis(
    cx: &Ctx,
    name: &Spanned<String>,
    a: &RawAxis,
    reserved: &[String],
    doc: &toml::Value,
    quick_doc: &mut toml::Value,
) -> Result<Axis, ExperimentError> {
    let col = name.get_ref();
    let field = format!("grid.{col}");
    if reserved.contains(col) {
        return Err(cx.err(name.span(), field, "this name is a results column already; choose another column name"));
    }
    if a.values.get_ref().is_empty() {
        return Err(cx.err(a.values.span(), format!("{field}.values"), "expected at least one value"));
    }
    if a.path.is_none() && a.variants.is_empty() {
        return Err(cx.err(name.span(), field, "expected `path`, `variants`, or both"));
    }
    let variants = parse_variants(cx, &field, a, doc, quick_doc)?;
    let values = parse_axis_values(cx, &field, a, doc, quick_doc)?;
    // check the path on the base too (the value loop already did, this names the path line)
    if let Some(path) = &a.path {
        let mut probe = doc.clone();
        apply_override(&mut probe, path.get_ref(), &a.values.get_ref()[0].get_ref().clone())
            .map_err(|m| cx.err(path.span(), format!("{field}.path"), m))?;
    }
    Ok(Axis { column: col.clone(), path: a.path.as_ref().map(|p| p.get_ref().clone()), values, variants })
}

/// `[grid.NAME.variants]`: each key one of the axis's values, each override valid on the base and quick
/// scenarios; without `path`, every value needs its variant.
fn parse_variants(
    cx: &Ctx,
    field: &str,
    a: &RawAxis,
    doc: &toml::Value,
    quick_doc: &toml::Value,
) -> Result<Vec<(String, Overrides)>, ExperimentError> {
    let mut variants = Vec::new();
    for (key, sets) in &a.variants {
        let vfield = format!("{field}.variants.{}", key.get_ref());
        if !a.values.get_ref().iter().any(|v| variant_is(key.get_ref(), v.get_ref())) {
            return Err(cx.err(key.span(), vfield, "not one of the axis's values"));
        }
        let mut overrides = Vec::new();
        for (p, v) in sets {
            for d in [&mut doc.clone(), &mut quick_doc.clone()] {
                apply_override(d, p.get_ref(), v.get_ref())
                    .map_err(|m| cx.err(p.span(), format!("{vfield}.{}", p.get_ref()), m))?;
            }
            overrides.push((p.get_ref().clone(), v.get_ref().clone()));
        }
        variants.push((key.get_ref().clone(), overrides));
    }
    if a.path.is_none() {
        if let Some(v) = a.values.get_ref().iter().find(|v| !variants.iter().any(|(k, _)| variant_is(k, v.get_ref()))) {
            return Err(cx.err(
                v.span(),
                format!("{field}.values"),
                "a value without `path` needs a table under `variants`",
            ));
        }
    }
    Ok(variants)
}

/// `grid.NAME.values`: distinct, each valid at `path` (applied to a copy of `doc` and to `quick_doc`).
fn parse_axis_values(
    cx: &Ctx,
    field: &str,
    a: &RawAxis,
    doc: &toml::Value,
    quick_doc: &mut toml::Value,
) -> Result<Vec<toml::Value>, ExperimentError> {
    let mut values = Vec::new();
    for v in a.values.get_ref() {
        if let Some(path) = &a.path {
            for d in [&mut doc.clone(), &mut *quick_doc] {
                apply_override(d, path.get_ref(), v.get_ref())
                    .map_err(|m| cx.err(v.span(), format!("{field}.values"), m))?;
            }
        }
        if values.iter().any(|w: &toml::Value| Cell::from_toml(w).matches(&Cell::from_toml(v.get_ref()))) {
            return Err(cx.err(v.span(), format!("{field}.values"), format!("duplicate value {}", v.get_ref())));
        }
        values.push(v.get_ref().clone());
    }
    Ok(values)
}

/// The results columns once the grid is known, for checking the names that figures, claims and the
/// table use.
struct Columns {
    all: Vec<String>,
    /// Columns that hold text (grid axes of strings, and the runner's own), never a metric.
    text: Vec<String>,
}

impl Columns {
    fn new(runner: RunnerKind, web: bool, mobile_ip: bool, grid: &[Axis]) -> Columns {
        let grid_cols: Vec<String> = grid.iter().map(|a| a.column.clone()).collect();
        let own_text: &[&str] = match runner {
            RunnerKind::Sim => &["flow", "tcp", "workload"],
            RunnerKind::Testbed => &["agent", "cc", "cc_used"],
            RunnerKind::Scale => &[],
        };
        let text = grid
            .iter()
            .filter(|a| a.values.iter().all(|v| v.is_str()))
            .map(|a| a.column.clone())
            .chain(own_text.iter().map(|s| s.to_string()))
            .collect();
        Columns { all: results_columns(runner, web, mobile_ip, &grid_cols), text }
    }

    /// `s` names a results column.
    fn check(&self, cx: &Ctx, s: &Spanned<String>, field: &str) -> Result<(), ExperimentError> {
        if self.all.contains(s.get_ref()) {
            Ok(())
        } else {
            Err(cx.err(
                s.span(),
                field,
                format!("unknown column `{}`; expected one of: {}", s.get_ref(), self.all.join(", ")),
            ))
        }
    }

    /// `s` is a metric (a column or `ratio:A/B`) over numeric results columns.
    fn metric(&self, cx: &Ctx, s: &Spanned<String>, field: &str) -> Result<Metric, ExperimentError> {
        let m = Metric::parse(s.get_ref()).map_err(|e| cx.err(s.span(), field, e))?;
        for c in m.columns() {
            if !self.all.iter().any(|k| k == c) {
                return Err(cx.err(
                    s.span(),
                    field,
                    format!("unknown column `{c}`; expected one of: {} (or `ratio:A/B`)", self.all.join(", ")),
                ));
            }
            if self.text.iter().any(|k| k == c) {
                return Err(cx.err(s.span(), field, format!("column `{c}` holds text; a metric must be a number")));
            }
        }
        Ok(m)
    }
}

fn grid_columns(grid: &[Axis]) -> Vec<String> {
    grid.iter().map(|a| a.column.clone()).collect()
}

/// `[quick.grid]`: for some axes, a subset of their values.
fn parse_quick_grid(cx: &Ctx, q: &RawQuick, grid: &[Axis]) -> Result<Vec<(String, Vec<toml::Value>)>, ExperimentError> {
    let mut subsets = Vec::new();
    for (name, vals) in &q.grid {
        let field = format!("quick.grid.{}", name.get_ref());
        let Some(axis) = grid.iter().find(|a| &a.column == name.get_ref()) else {
            return Err(cx.err(
                name.span(),
                field,
                format!("not a grid axis; expected one of: {}", grid_columns(grid).join(", ")),
            ));
        };
        if vals.get_ref().is_empty() {
            return Err(cx.err(vals.span(), field, "expected at least one value"));
        }
        let mut out = Vec::new();
        for v in vals.get_ref() {
            if !axis.values.iter().any(|w| Cell::from_toml(w).matches(&Cell::from_toml(v.get_ref()))) {
                let have: Vec<String> = axis.values.iter().map(|w| Cell::from_toml(w).to_string()).collect();
                return Err(cx.err(
                    v.span(),
                    field,
                    format!("{} is not a value of grid.{} ({})", v.get_ref(), name.get_ref(), have.join(", ")),
                ));
            }
            out.push(v.get_ref().clone());
        }
        subsets.push((name.get_ref().clone(), out));
    }
    Ok(subsets)
}

/// The field a scenario error names and what it says: scenario errors read "`dotted.path`: expected …".
pub fn refused_field(message: &str) -> Option<(&str, &str)> {
    message.strip_prefix('`')?.split_once("`: ")
}

/// Whether the override at `path` (`+` for an added field) sets `field` or a field inside it.
pub fn override_sets(path: &str, field: &str) -> bool {
    let path = path.trim_start_matches('+');
    path == field || field.strip_prefix(path).is_some_and(|r| r.starts_with('.'))
}

/// A simulator experiment's overrides against the scenario checks (`Scenario::from_toml_in`): a value from
/// `[set]`, `[quick.set]` or a grid axis's `values` that the scenario refuses (a rate of 1e-300 Mb/s, a window
/// of 0) is an error at its own line here, not a failure of every run later. Only errors in a field the
/// override itself sets are blamed on it (a grid axis may still set what `[set]` leaves invalid).
fn check_sim_overrides(
    cx: &Ctx,
    raw: &RawExperiment,
    scenario_file: &Path,
    doc: &toml::Value,
) -> Result<(), ExperimentError> {
    let base_dir = scenario_file.parent().unwrap_or(Path::new(""));
    let origin = scenario_file.display().to_string();
    let refused = |d: toml::Value| {
        let e = lasthop_sim::Scenario::from_toml_in(d, &origin, base_dir).err()?;
        refused_field(&e.message).map(|(f, m)| (f.to_string(), m.to_string()))
    };
    let grid_sets = |field: &str| {
        raw.grid.values().any(|a| {
            let a = a.get_ref();
            a.path.as_ref().is_some_and(|p| override_sets(p.get_ref(), field))
                || a.variants.values().flat_map(|v| v.keys()).any(|p| override_sets(p.get_ref(), field))
        })
    };
    let blame = |set: &RawSet, prefix: &str, d: &toml::Value| -> Result<(), ExperimentError> {
        let Some((field, message)) = refused(d.clone()) else { return Ok(()) };
        match set.keys().rev().find(|k| override_sets(k.get_ref(), &field)) {
            Some(k) if !grid_sets(&field) => Err(cx.err(
                k.span(),
                format!("{prefix}.\"{}\"", k.get_ref()),
                format!("`{field}` in {}: {message}", scenario_file.display()),
            )),
            _ => Ok(()),
        }
    };
    blame(&raw.set, "set", doc)?;
    // A quick set that changes nothing would only build the same scenario again.
    if let Some(q) = raw.quick.as_ref().filter(|q| !q.set.is_empty()) {
        let mut quick_doc = doc.clone();
        for (k, v) in &q.set {
            // Already checked by `parse_set`; an error here cannot happen, so nothing to blame.
            if apply_override(&mut quick_doc, k.get_ref(), v.get_ref()).is_err() {
                return Ok(());
            }
        }
        blame(&q.set, "quick.set", &quick_doc)?;
    }
    for (name, a) in &raw.grid {
        let a = a.get_ref();
        let Some(path) = &a.path else { continue };
        for v in a.values.get_ref() {
            let mut d = doc.clone();
            if apply_override(&mut d, path.get_ref(), v.get_ref()).is_err() {
                continue;
            }
            if let Some((field, message)) = refused(d).filter(|(f, _)| override_sets(path.get_ref(), f)) {
                return Err(cx.err(
                    v.span(),
                    format!("grid.{}.values", name.get_ref()),
                    format!("`{field}` in {}: {message}", scenario_file.display()),
                ));
            }
        }
    }
    Ok(())
}

/// A testbed experiment's base "scenario" is a testbed configuration, with `[set]` and with `[quick.set]`.
fn check_testbed_config(
    cx: &Ctx,
    scenario: &Spanned<String>,
    scenario_file: &Path,
    docs: [(&toml::Value, &str); 2],
) -> Result<(), ExperimentError> {
    for (d, what) in docs {
        d.clone().try_into::<lasthop_net::TestbedConfig>().map_err(|e| {
            cx.err(
                scenario.span(),
                "scenario",
                format!(
                    "{} (with [{what}]) is not a testbed configuration (lasthop_net::TestbedConfig): {}",
                    scenario_file.display(),
                    e.message()
                ),
            )
        })?;
    }
    Ok(())
}

/// `flow`: a flow or web workload of the base scenario; none for a testbed experiment.
fn parse_flow(
    cx: &Ctx,
    flow: Option<&Spanned<String>>,
    runner: RunnerKind,
    base: &toml::Value,
    names: &RowNames,
) -> Result<Option<String>, ExperimentError> {
    let Some(f) = flow else { return Ok(None) };
    if runner == RunnerKind::Testbed {
        return Err(cx.err(f.span(), "flow", "a testbed experiment has one transfer; remove `flow`"));
    }
    if runner == RunnerKind::Scale {
        return Err(cx.err(f.span(), "flow", "a scale experiment has one row per run, over every flow; remove `flow`"));
    }
    if !names.flows.contains(f.get_ref()) && !names.web.contains(f.get_ref()) {
        let have = table_keys(base.get("flows"));
        let webs = table_keys(base.get("web"));
        return Err(cx.err(
            f.span(),
            "flow",
            format!("no flow or web workload `{}` in the base scenario (flows: {have}; web: {webs})", f.get_ref()),
        ));
    }
    Ok(Some(f.get_ref().clone()))
}

/// `[figure]`.
fn parse_figure(
    cx: &Ctx,
    raw: &Spanned<RawFigure>,
    grid: &[Axis],
    cols: &Columns,
    runner: RunnerKind,
) -> Result<Figure, ExperimentError> {
    let rf = raw.get_ref();
    let series = parse_series(cx, rf.series.as_ref(), grid)?;
    let kind = match rf.kind {
        RawFigureKind::Line => line_figure(cx, raw, grid, cols)?,
        RawFigureKind::Sequence if runner != RunnerKind::Sim => {
            return Err(cx.err(raw.span(), "figure.kind", "only a simulator experiment has traces; use \"line\""));
        }
        RawFigureKind::Sequence => {
            for (name, f) in [("figure.x", &rf.x), ("figure.y", &rf.y)] {
                if let Some(f) = f {
                    return Err(cx.err(
                        f.span(),
                        name,
                        "a sequence figure plots received offset against time; remove `x`/`y`",
                    ));
                }
            }
            FigureKind::Sequence {
                erroneous_fast_retransmits: rf.mark_erroneous_fast_retransmits.as_ref().is_some_and(|m| *m.get_ref()),
            }
        }
        RawFigureKind::Cdf if runner != RunnerKind::Sim => {
            return Err(cx.err(raw.span(), "figure.kind", "only a simulator experiment has handoffs; use \"line\""));
        }
        RawFigureKind::Cdf => cdf_figure(cx, raw)?,
    };
    if let (Some(m), false) = (&rf.mark_erroneous_fast_retransmits, matches!(kind, FigureKind::Sequence { .. })) {
        return Err(cx.err(m.span(), "figure.mark_erroneous_fast_retransmits", "only a sequence figure has them"));
    }
    let mut filter = Vec::new();
    for (k, v) in &rf.filter {
        let field = format!("figure.where.{}", k.get_ref());
        filter.push(parse_filter(cx, k, v, &field, cols)?);
    }
    Ok(Figure {
        filter,
        kind,
        series,
        series_labels: rf.series_labels.clone(),
        x_label: rf.x_label.clone(),
        y_label: rf.y_label.clone(),
    })
}

/// `figure.series`: one or more distinct grid columns.
fn parse_series(cx: &Ctx, raw: Option<&Spanned<RawSeries>>, grid: &[Axis]) -> Result<Vec<String>, ExperimentError> {
    let mut series = Vec::new();
    let Some(s) = raw else { return Ok(series) };
    let names = match s.get_ref() {
        RawSeries::One(c) => vec![c.clone()],
        RawSeries::Many(cs) => cs.clone(),
    };
    if names.is_empty() {
        return Err(cx.err(s.span(), "figure.series", "expected at least one grid column"));
    }
    let grid_cols = grid_columns(grid);
    for n in names {
        if !grid_cols.contains(&n) || series.contains(&n) {
            return Err(cx.err(
                s.span(),
                "figure.series",
                format!("expected distinct grid columns ({}), got `{n}`", grid_cols.join(", ")),
            ));
        }
        series.push(n);
    }
    Ok(series)
}

/// `kind = "line"`: `x` a numeric grid column (positive on a log scale), `y` a metric.
fn line_figure(
    cx: &Ctx,
    raw: &Spanned<RawFigure>,
    grid: &[Axis],
    cols: &Columns,
) -> Result<FigureKind, ExperimentError> {
    let rf = raw.get_ref();
    let x = rf.x.as_ref().ok_or_else(|| cx.err(raw.span(), "figure.x", "a line figure needs `x` (a grid column)"))?;
    let Some(xa) = grid.iter().find(|a| &a.column == x.get_ref()) else {
        return Err(cx.err(
            x.span(),
            "figure.x",
            format!("expected a grid column ({})", grid_columns(grid).join(", ")),
        ));
    };
    if !xa.values.iter().all(|v| v.is_integer() || v.is_float()) {
        return Err(cx.err(x.span(), "figure.x", "expected a grid column with numeric values"));
    }
    if rf.x_scale != Scale::Linear && xa.values.iter().any(|v| Cell::from_toml(v).as_f64().unwrap_or(0.0) <= 0.0) {
        return Err(cx.err(x.span(), "figure.x_scale", "a log scale needs every x value > 0"));
    }
    let y = rf.y.as_ref().ok_or_else(|| cx.err(raw.span(), "figure.y", "a line figure needs `y` (a metric)"))?;
    let y = cols.metric(cx, y, "figure.y")?;
    Ok(FigureKind::Line { x: x.get_ref().clone(), y, x_scale: rf.x_scale, x_ticks: rf.x_ticks })
}

/// `kind = "cdf"`: `x` one of [`HANDOFF_TIMES`], no `y`.
fn cdf_figure(cx: &Ctx, raw: &Spanned<RawFigure>) -> Result<FigureKind, ExperimentError> {
    let rf = raw.get_ref();
    if let Some(y) = &rf.y {
        return Err(cx.err(y.span(), "figure.y", "a cdf figure plots the fraction of handoffs; remove `y`"));
    }
    let x = rf.x.as_ref().ok_or_else(|| {
        cx.err(raw.span(), "figure.x", format!("a cdf figure needs `x`, one of: {}", HANDOFF_TIMES.join(", ")))
    })?;
    if !HANDOFF_TIMES.contains(&x.get_ref().as_str()) {
        return Err(cx.err(x.span(), "figure.x", format!("expected one of: {}", HANDOFF_TIMES.join(", "))));
    }
    Ok(FigureKind::Cdf { x: x.get_ref().clone() })
}

/// One `column = condition` of a `where` (or numerator, denominator).
fn parse_filter(
    cx: &Ctx,
    k: &Spanned<String>,
    v: &Spanned<toml::Value>,
    field: &str,
    cols: &Columns,
) -> Result<Filter, ExperimentError> {
    cols.check(cx, k, field)?;
    let cond = parse_cond(v.get_ref()).map_err(|m| cx.err(v.span(), field, m))?;
    Ok(Filter { column: k.get_ref().clone(), cond })
}

/// A claim's filters (`claims[i].where` etc.); equality on a grid column must name one of its values (a typo
/// would match nothing).
fn parse_claim_filters(
    cx: &Ctx,
    f: &RawFilter,
    at: &str,
    grid: &[Axis],
    cols: &Columns,
) -> Result<Vec<Filter>, ExperimentError> {
    let mut out = Vec::new();
    for (k, v) in f {
        let field = format!("{at}.{}", k.get_ref());
        let filter = parse_filter(cx, k, v, &field, cols)?;
        if let Some(axis) = grid.iter().find(|a| &a.column == k.get_ref()) {
            let wanted: Vec<&Cell> = match &filter.cond {
                Cond::Eq(c) => vec![c],
                Cond::AnyOf(cs) => cs.iter().collect(),
                Cond::Range { .. } => vec![],
            };
            for w in wanted {
                if !axis.values.iter().any(|gv| Cell::from_toml(gv).matches(w)) {
                    let vals: Vec<String> = axis.values.iter().map(|v| Cell::from_toml(v).to_string()).collect();
                    return Err(cx.err(
                        v.span(),
                        &field,
                        format!("{w} is not a value of the grid ({})", vals.join(", ")),
                    ));
                }
            }
        }
        out.push(filter);
    }
    Ok(out)
}

/// One `[[claims]]`, the `i`-th.
fn parse_claim(
    cx: &Ctx,
    i: usize,
    rc: &Spanned<RawClaim>,
    grid: &[Axis],
    cols: &Columns,
) -> Result<Claim, ExperimentError> {
    let span = rc.span();
    let c = rc.get_ref();
    let at = |f: &str| format!("claims[{i}].{f}");
    let metric = cols.metric(cx, &c.metric, &at("metric"))?;
    let filter = parse_claim_filters(cx, &c.filter, &at("where"), grid, cols)?;
    if let Some(fe) = &c.for_each {
        cols.check(cx, fe, &at("for_each"))?;
    }
    if c.require.is_some() && c.for_each.is_none() {
        return Err(cx.err(span.clone(), at("require"), "`require` needs `for_each`"));
    }
    let kind = claim_kind(cx, span.clone(), c, &at, &metric, grid, cols)?;
    let expect = claim_expect(cx, span, c, &at)?;
    Ok(Claim {
        text: c.text.clone(),
        paper: c.paper.clone(),
        kind,
        metric,
        filter,
        for_each: c.for_each.as_ref().map(|s| s.get_ref().clone()),
        require: c.require.unwrap_or_default(),
        expect,
    })
}

/// An expected divergence names its traced mechanism; a claim expected to hold needs no reason.
fn claim_expect(
    cx: &Ctx,
    span: std::ops::Range<usize>,
    c: &RawClaim,
    at: &dyn Fn(&str) -> String,
) -> Result<Expect, ExperimentError> {
    match (c.expect.as_ref().map(|e| *e.get_ref()), &c.why) {
        (None | Some(RawExpect::Holds), None) => Ok(Expect::Holds),
        (None | Some(RawExpect::Holds), Some(w)) => Err(cx.err(
            w.span(),
            at("why"),
            "`why` explains an expected divergence: add `expect = \"fails\"` or remove it",
        )),
        (Some(RawExpect::Fails), Some(w)) if !w.get_ref().trim().is_empty() => {
            Ok(Expect::Fails { why: w.get_ref().trim().to_string() })
        }
        (Some(RawExpect::Fails), _) => Err(cx.err(
            c.expect.as_ref().map(|e| e.span()).unwrap_or(span),
            at("why"),
            "missing: an expected divergence needs `why`, the mechanism traced in the runs",
        )),
    }
}

/// What a claim compares, by its `kind`: the fields each kind takes and those it must not have.
fn claim_kind(
    cx: &Ctx,
    span: std::ops::Range<usize>,
    c: &RawClaim,
    at: &dyn Fn(&str) -> String,
    metric: &Metric,
    grid: &[Axis],
    cols: &Columns,
) -> Result<ClaimKind, ExperimentError> {
    let forbid = |present: bool, name: &str, why: &str| -> Result<(), ExperimentError> {
        if present {
            Err(cx.err(span.clone(), at(name), why.to_string()))
        } else {
            Ok(())
        }
    };
    let op = || parse_op(cx, span.clone(), c, at);
    Ok(match c.kind {
        RawClaimKind::Value => {
            forbid(
                c.numerator.is_some() || c.denominator.is_some(),
                "numerator",
                "only `ratio` claims take numerator/denominator",
            )?;
            ClaimKind::Value { aggregate: c.aggregate.unwrap_or(Aggregate::Mean), op: op()? }
        }
        RawClaimKind::Ratio => {
            forbid(c.aggregate.is_some(), "aggregate", "a `ratio` claim divides means; remove `aggregate`")?;
            let n = c
                .numerator
                .as_ref()
                .ok_or_else(|| cx.err(span.clone(), at("numerator"), "missing: a filter like { agent = \"snoop\" }"))?;
            let d = c.denominator.as_ref().ok_or_else(|| {
                cx.err(span.clone(), at("denominator"), "missing: a filter like { agent = \"none\" }")
            })?;
            ClaimKind::Ratio {
                numerator: parse_claim_filters(cx, n.get_ref(), &at("numerator"), grid, cols)?,
                denominator: parse_claim_filters(cx, d.get_ref(), &at("denominator"), grid, cols)?,
                op: op()?,
            }
        }
        RawClaimKind::All => {
            forbid(
                c.op.is_some() || c.value.is_some(),
                "op",
                "an `all` claim takes no op/value: it checks the metric is true on every run",
            )?;
            forbid(c.aggregate.is_some(), "aggregate", "an `all` claim takes no aggregate")?;
            forbid(
                c.numerator.is_some() || c.denominator.is_some(),
                "numerator",
                "only `ratio` claims take numerator/denominator",
            )?;
            if !matches!(metric, Metric::Column(_)) {
                return Err(cx.err(
                    c.metric.span(),
                    at("metric"),
                    "an `all` claim needs a true/false column such as `completed`",
                ));
            }
            ClaimKind::All
        }
    })
}

/// A claim's `op` and `value`: a number, or `[low, high]` for `between`.
fn parse_op(
    cx: &Ctx,
    span: std::ops::Range<usize>,
    c: &RawClaim,
    at: &dyn Fn(&str) -> String,
) -> Result<Op, ExperimentError> {
    let op =
        c.op.as_ref()
            .ok_or_else(|| cx.err(span, at("op"), "missing: expected \"<\", \"<=\", \">\", \">=\" or \"between\""))?;
    let val =
        c.value.as_ref().ok_or_else(|| cx.err(op.span(), at("value"), "missing: the threshold to compare with"))?;
    let num = |v: &toml::Value| -> Option<f64> {
        match v {
            toml::Value::Integer(i) => Some(*i as f64),
            toml::Value::Float(f) => Some(*f),
            _ => None,
        }
    };
    let threshold = || num(val.get_ref()).ok_or_else(|| cx.err(val.span(), at("value"), "expected a number"));
    Ok(match op.get_ref() {
        RawOp::Between => match val.get_ref().as_array().map(|a| a.iter().map(num).collect::<Option<Vec<f64>>>()) {
            Some(Some(v)) if v.len() == 2 && v[0] <= v[1] => Op::Between(v[0], v[1]),
            _ => {
                return Err(cx.err(
                    val.span(),
                    at("value"),
                    "`between` expects [low, high], two numbers with low ≤ high",
                ))
            }
        },
        RawOp::Lt => Op::Lt(threshold()?),
        RawOp::Le => Op::Le(threshold()?),
        RawOp::Gt => Op::Gt(threshold()?),
        RawOp::Ge => Op::Ge(threshold()?),
    })
}

/// `table`: the report table's metrics; by default the line figure's y (else goodput) and the claims'
/// metrics.
fn parse_table(
    cx: &Ctx,
    raw: &[Spanned<String>],
    figure: &Figure,
    claims: &[Claim],
    cols: &Columns,
) -> Result<Vec<Metric>, ExperimentError> {
    let mut metrics = Vec::new();
    for (i, t) in raw.iter().enumerate() {
        metrics.push(cols.metric(cx, t, &format!("table[{i}]"))?);
    }
    if metrics.is_empty() {
        if let FigureKind::Line { y, .. } = &figure.kind {
            metrics.push(y.clone());
        } else {
            metrics.push(Metric::Column("goodput_mbps".into()));
        }
        for c in claims {
            if !matches!(c.kind, ClaimKind::All) && !metrics.contains(&c.metric) {
                metrics.push(c.metric.clone());
            }
        }
    }
    Ok(metrics)
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
        let mobile_ip = has_mobile_ip(&base);
        let grid = parse_grid(&cx, &raw.grid, &reserved_columns(runner, web, mobile_ip), &doc, &mut quick_doc)?;
        let cols = Columns::new(runner, web, mobile_ip, &grid);
        if let Some(q) = &raw.quick {
            quick.grid = parse_quick_grid(&cx, q, &grid)?;
        }
        if runner == RunnerKind::Testbed {
            check_testbed_config(&cx, &raw.scenario, &scenario_file, [(&doc, "set"), (&quick_doc, "quick.set")])?;
        }
        if runner == RunnerKind::Sim {
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

    /// Every column of this experiment's results table.
    pub fn columns(&self) -> Vec<String> {
        results_columns(self.runner, self.web, has_mobile_ip(&self.base), &self.grid_columns())
    }

    /// The values an axis takes (with `quick`, the `[quick.grid]` subset when there is one).
    pub fn axis_values<'a>(&'a self, axis: &'a Axis, quick: bool) -> &'a [toml::Value] {
        match self.quick.grid.iter().find(|(c, _)| c == &axis.column).filter(|_| quick) {
            Some((_, v)) => v,
            None => &axis.values,
        }
    }

    pub fn grid_columns(&self) -> Vec<String> {
        self.grid.iter().map(|a| a.column.clone()).collect()
    }

    /// The seeds of every grid point: 1..=seeds (quick: the quick seed count, if given).
    pub fn seed_list(&self, quick: bool) -> Vec<u64> {
        let n = if quick { self.quick.seeds.unwrap_or(self.seeds) } else { self.seeds };
        (1..=n).collect()
    }

    /// Every grid point in order (first axis outermost), each with its scenario (base + set [+ quick.set] +
    /// the point's values).
    pub fn points(&self, quick: bool) -> Result<Vec<Point>, String> {
        let mut doc = self.base.clone();
        let sets = self.set.iter().chain(if quick { self.quick.set.iter() } else { [].iter() });
        for (p, v) in sets {
            apply_override(&mut doc, p, v)?;
        }
        let mut points = vec![Point { values: vec![], scenario: doc }];
        for axis in &self.grid {
            let mut next = Vec::with_capacity(points.len() * axis.values.len());
            for p in &points {
                for v in self.axis_values(axis, quick) {
                    let mut q = p.clone();
                    for (path, value) in axis.overrides(v) {
                        apply_override(&mut q.scenario, path, value)
                            .map_err(|e| format!("grid.{}: {e}", axis.column))?;
                    }
                    q.values.push(Cell::from_toml(v));
                    next.push(q);
                }
            }
            points = next;
        }
        Ok(points)
    }

    /// `agent=snoop, ber=3.81e-6`
    pub fn point_label(&self, p: &Point) -> String {
        self.grid.iter().zip(&p.values).map(|(a, v)| format!("{}={v}", a.column)).collect::<Vec<_>>().join(", ")
    }
}

/// One grid point: its values (in grid column order) and the scenario to run.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub values: Vec<Cell>,
    pub scenario: toml::Value,
}

fn parse_cond(v: &toml::Value) -> Result<Cond, String> {
    match v {
        toml::Value::Array(a) => {
            if a.is_empty() {
                return Err("expected at least one value in the list".into());
            }
            if a.iter().any(|x| x.is_array() || x.is_table()) {
                return Err("expected a list of plain values".into());
            }
            Ok(Cond::AnyOf(a.iter().map(Cell::from_toml).collect()))
        }
        toml::Value::Table(t) => {
            let mut min = None;
            let mut max = None;
            for (k, x) in t {
                let n = match x {
                    toml::Value::Integer(i) => *i as f64,
                    toml::Value::Float(f) => *f,
                    _ => return Err(format!("`{k}` must be a number")),
                };
                match k.as_str() {
                    "min" => min = Some(n),
                    "max" => max = Some(n),
                    other => return Err(format!("unknown key `{other}` in a range; expected `min` and/or `max`")),
                }
            }
            if min.is_none() && max.is_none() {
                return Err("a range needs `min` and/or `max`".into());
            }
            Ok(Cond::Range { min, max })
        }
        toml::Value::Datetime(_) => Err("expected a number, string, boolean, list or { min, max } range".into()),
        other => Ok(Cond::Eq(Cell::from_toml(other))),
    }
}

fn table_keys(v: Option<&toml::Value>) -> String {
    match v.and_then(|v| v.as_table()) {
        Some(t) if !t.is_empty() => t.keys().cloned().collect::<Vec<_>>().join(", "),
        _ => "nothing".into(),
    }
}

fn type_name(v: &toml::Value) -> &'static str {
    match v {
        toml::Value::String(_) => "a string",
        toml::Value::Integer(_) => "an integer",
        toml::Value::Float(_) => "a float",
        toml::Value::Boolean(_) => "a boolean",
        toml::Value::Datetime(_) => "a date-time",
        toml::Value::Array(_) => "an array",
        toml::Value::Table(_) => "a table",
    }
}

/// Sets `path` (dotted: `links.wavelan.error.ber`) in a scenario document to `value`.
///
/// Every table on the way must exist, and so must the field itself, unless the path starts with `+`
/// (`+tcp.min_rto_ms`), which adds a field the scenario leaves at its default. The value must have the
/// type of the value it replaces (an integer where a float was is converted).
pub fn apply_override(doc: &mut toml::Value, path: &str, value: &toml::Value) -> Result<(), String> {
    let (create, path) = match path.strip_prefix('+') {
        Some(p) => (true, p),
        None => (false, path),
    };
    let parts: Vec<&str> = path.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err(format!("`{path}` is not a dotted path like `links.wavelan.error.ber`"));
    }
    let mut cur = doc;
    let mut walked = String::new();
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let where_ = if walked.is_empty() {
            "the base scenario".to_string()
        } else {
            format!("`{walked}` of the base scenario")
        };
        let keys = table_keys(Some(cur));
        let what = type_name(cur);
        let table = match cur.as_table_mut() {
            Some(t) => t,
            None => return Err(format!("`{walked}` is {what} in the base scenario, not a table")),
        };
        if last {
            match table.get_mut(*part) {
                Some(old) => {
                    let new = match (&*old, value) {
                        (toml::Value::Float(_), toml::Value::Integer(i)) => toml::Value::Float(*i as f64),
                        (o, n) if std::mem::discriminant(o) == std::mem::discriminant(n) => n.clone(),
                        (o, n) => {
                            return Err(format!(
                                "`{path}` is {} in the base scenario ({o}); got {} ({n})",
                                type_name(o),
                                type_name(n)
                            ))
                        }
                    };
                    *old = new;
                }
                None if create => {
                    table.insert(part.to_string(), value.clone());
                }
                None => {
                    return Err(format!(
                        "no field `{part}` in {where_} (it has: {keys}); write \"+{path}\" to add a field the scenario leaves at its default"
                    ))
                }
            }
            return Ok(());
        }
        match table.get_mut(*part) {
            Some(next) => cur = next,
            None => return Err(format!("no `{part}` in {where_} (it has: {keys})")),
        }
        if !walked.is_empty() {
            walked.push('.');
        }
        walked.push_str(part);
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    const SCENARIO: &str = r#"
seed = 1
[nodes.bs]
agent = "snoop"
[links.wavelan.error]
model = "ber"
ber = 3.9e-6
[flows.bulk]
bytes = 10_000_000
[tcp]
variant = "reno"
"#;

    const GOOD: &str = r#"
id = "exp"
title = "T"
paper = "Balakrishnan 1995 Fig. 7"
default = true
scenario = "base.toml"
seeds = 3
flow = "bulk"

[set]
"flows.bulk.bytes" = 1_000_000

[quick]
seeds = 1
set = { "flows.bulk.bytes" = 1000 }

[grid.agent]
path = "nodes.bs.agent"
values = ["none", "snoop"]

[grid.ber]
path = "links.wavelan.error.ber"
values = [1e-7, 1e-6, 1]

[figure]
kind = "line"
x = "ber"
x_scale = "log2"
y = "goodput_mbps"
series = "agent"

[[claims]]
text = "snoop ahead"
paper = "4x"
kind = "ratio"
metric = "goodput_mbps"
where = { ber = 1e-6 }
numerator = { agent = "snoop" }
denominator = { agent = "none" }
op = ">="
value = 3

[[claims]]
text = "close at low ber"
paper = "same"
kind = "ratio"
metric = "goodput_mbps"
where = { ber = { max = 5e-7 } }
numerator = { agent = "snoop" }
denominator = { agent = "none" }
op = "between"
value = [0.9, 1.1]
for_each = "ber"

[[claims]]
text = "completes"
paper = "completes"
kind = "all"
metric = "completed"
where = { agent = "snoop", ber = 1 }

[[claims]]
text = "near ideal"
paper = "-"
kind = "value"
aggregate = "min"
metric = "ratio:goodput_mbps/ideal_goodput_mbps"
where = { agent = ["snoop"] }
op = ">"
value = 0.9
"#;

    fn write(dir: &Path, exp: &str) -> PathBuf {
        std::fs::write(dir.join("base.toml"), SCENARIO).unwrap();
        let p = dir.join("exp.toml");
        std::fs::write(&p, exp).unwrap();
        p
    }

    fn load(exp: &str) -> Result<Experiment, ExperimentError> {
        let d = tempfile::tempdir().unwrap();
        let p = write(d.path(), exp);
        Experiment::load(&p)
    }

    fn line_of(text: &str, needle: &str) -> usize {
        text[..text.find(needle).unwrap()].matches('\n').count() + 1
    }

    /// An experiment on the repository's `examples/snoop.toml` (a valid scenario), with `extra` appended.
    fn on_snoop_example(extra: &str) -> String {
        let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/snoop.toml");
        format!(
            "id = \"exp\"\ntitle = \"T\"\npaper = \"P\"\nscenario = {:?}\n{extra}\n[figure]\nkind = \"line\"\nx = \"rate\"\ny = \"goodput_mbps\"\n",
            base.display().to_string()
        )
    }

    #[test]
    fn an_override_the_scenario_refuses_is_blamed_on_its_line() {
        let grid = "[grid.rate]\npath = \"links.wavelan.rate_mbps\"\nvalues = [2.0, 1.0]\n";
        assert!(load(&on_snoop_example(grid)).is_ok());

        let text = on_snoop_example(&format!("[set]\n\"tcp.max_window\" = 0\n{grid}"));
        let e = load(&text).unwrap_err();
        assert_eq!(e.line, Some(line_of(&text, "\"tcp.max_window\" = 0")), "{e}");
        assert_eq!(e.field, "set.\"tcp.max_window\"");
        assert!(e.message.contains("`tcp.max_window`") && e.message.contains("expected a window"), "{e}");

        let text = on_snoop_example(&format!("[quick]\nset = {{ \"tcp.max_window\" = 0 }}\n{grid}"));
        let e = load(&text).unwrap_err();
        assert_eq!(
            (e.line, e.field.as_str()),
            (Some(line_of(&text, "set = {")), "quick.set.\"tcp.max_window\""),
            "{e}"
        );

        let text = on_snoop_example(&grid.replace("1.0]", "\n  1e-300]"));
        let e = load(&text).unwrap_err();
        assert_eq!(e.line, Some(line_of(&text, "1e-300")), "{e}");
        assert_eq!(e.field, "grid.rate.values");
        assert!(e.message.contains("expected a rate"), "{e}");

        // A field `[set]` leaves invalid but every grid value sets is not the override's fault.
        let text = on_snoop_example(&format!("[set]\n\"links.wavelan.rate_mbps\" = 1e-300\n{grid}"));
        assert!(load(&text).is_ok());
    }

    #[test]
    fn good_file_parses() {
        let e = load(GOOD).unwrap();
        assert_eq!(e.id, "exp");
        assert!(e.default);
        assert_eq!(e.seeds, 3);
        assert_eq!(e.seed_list(false), vec![1, 2, 3]);
        assert_eq!(e.seed_list(true), vec![1]);
        assert_eq!(e.grid_columns(), vec!["agent", "ber"]);
        assert_eq!(e.claims.len(), 4);
        let f = |a: &str| vec![Filter { column: "agent".into(), cond: Cond::Eq(Cell::Str(a.into())) }];
        assert_eq!(
            e.claims[1].kind,
            ClaimKind::Ratio { numerator: f("snoop"), denominator: f("none"), op: Op::Between(0.9, 1.1) }
        );
        assert_eq!(
            e.claims[1].filter,
            vec![Filter { column: "ber".into(), cond: Cond::Range { min: None, max: Some(5e-7) } }]
        );
        assert_eq!(
            e.table,
            vec![
                Metric::Column("goodput_mbps".into()),
                Metric::Ratio("goodput_mbps".into(), "ideal_goodput_mbps".into())
            ]
        );
        assert!(matches!(e.figure.kind, FigureKind::Line { x_scale: Scale::Log2, .. }));
    }

    #[test]
    fn grid_expansion_order_and_overrides() {
        let e = load(GOOD).unwrap();
        let pts = e.points(false).unwrap();
        assert_eq!(pts.len(), 6);
        let labels: Vec<String> = pts.iter().map(|p| e.point_label(p)).collect();
        assert_eq!(labels[0], "agent=none, ber=1e-7");
        assert_eq!(labels[2], "agent=none, ber=1");
        assert_eq!(labels[3], "agent=snoop, ber=1e-7");
        let s = &pts[2].scenario;
        assert_eq!(s["nodes"]["bs"]["agent"].as_str(), Some("none"));
        // integer 1 on a float field becomes a float
        assert_eq!(s["links"]["wavelan"]["error"]["ber"].as_float(), Some(1.0));
        assert_eq!(s["flows"]["bulk"]["bytes"].as_integer(), Some(1_000_000));
        let q = e.points(true).unwrap();
        assert_eq!(q[0].scenario["flows"]["bulk"]["bytes"].as_integer(), Some(1000));
        // the base is untouched
        assert_eq!(e.base["flows"]["bulk"]["bytes"].as_integer(), Some(10_000_000));
    }

    #[test]
    fn named_variants_set_several_fields() {
        let text = GOOD.replace(
            "[grid.agent]\npath = \"nodes.bs.agent\"\nvalues = [\"none\", \"snoop\"]",
            "[grid.agent]\nvalues = [\"none\", \"snoop\"]\nvariants.none = { \"nodes.bs.agent\" = \"none\", \"tcp.variant\" = \"reno\" }\nvariants.snoop = { \"nodes.bs.agent\" = \"snoop\", \"tcp.variant\" = \"sack\" }",
        );
        assert_ne!(text, GOOD, "the test must rewrite the agent axis");
        let e = load(&text).unwrap();
        let pts = e.points(false).unwrap();
        assert_eq!(pts[0].scenario["tcp"]["variant"].as_str(), Some("reno"));
        assert_eq!(pts[3].scenario["nodes"]["bs"]["agent"].as_str(), Some("snoop"));
        assert_eq!(pts[3].scenario["tcp"]["variant"].as_str(), Some("sack"));
        assert_eq!(e.point_label(&pts[3]), "agent=snoop, ber=1e-7");

        let missing =
            text.replace("variants.none = { \"nodes.bs.agent\" = \"none\", \"tcp.variant\" = \"reno\" }\n", "");
        let err = load(&missing).unwrap_err().to_string();
        assert!(err.contains("grid.agent.values") && err.contains("variants"), "{err}");
        let bad_path = text.replace("\"tcp.variant\" = \"sack\"", "\"tcp.varient\" = \"sack\"");
        let err = load(&bad_path).unwrap_err().to_string();
        assert!(err.contains("grid.agent.variants.snoop.tcp.varient"), "{err}");
    }

    #[test]
    fn override_paths() {
        let mut doc: toml::Value = toml::from_str(SCENARIO).unwrap();
        assert!(apply_override(&mut doc, "tcp.variant", &"sack".into()).is_ok());
        let e = apply_override(&mut doc, "links.wavlan.error.ber", &1.0.into()).unwrap_err();
        assert!(e.contains("no `wavlan`") && e.contains("wavelan"), "{e}");
        let e = apply_override(&mut doc, "tcp.min_rto", &1.0.into()).unwrap_err();
        assert!(e.contains("no field `min_rto`") && e.contains("+tcp.min_rto"), "{e}");
        assert!(apply_override(&mut doc, "+tcp.min_rto", &1.0.into()).is_ok());
        assert_eq!(doc["tcp"]["min_rto"].as_float(), Some(1.0));
        let e = apply_override(&mut doc, "+tcp.nope.x", &1.0.into()).unwrap_err();
        assert!(e.contains("no `nope`"), "{e}");
        let e = apply_override(&mut doc, "nodes.bs.agent", &toml::Value::Integer(3)).unwrap_err();
        assert!(e.contains("a string") && e.contains("an integer"), "{e}");
        let e = apply_override(&mut doc, "seed.x", &toml::Value::Integer(3)).unwrap_err();
        assert!(e.contains("not a table"), "{e}");
        let e = apply_override(&mut doc, "flows.bulk.bytes", &toml::Value::Float(3.5)).unwrap_err();
        assert!(e.contains("an integer"), "{e}");
    }

    /// Replaces `from` by `to` in GOOD, loads it, and checks the error names the field, the line of `at`
    /// in the edited text and contains `expect`.
    fn bad(from: &str, to: &str, field: &str, at: &str, expect: &str) {
        assert!(GOOD.contains(from), "{from}");
        let text = GOOD.replacen(from, to, 1);
        let e = load(&text).unwrap_err();
        assert_eq!(e.field, field, "{e}");
        assert_eq!(e.line, Some(line_of(&text, at)), "{e}");
        assert!(e.message.contains(expect), "{e}");
        let shown = e.to_string();
        assert!(shown.contains("exp.toml:"), "{shown}");
    }

    #[test]
    fn unknown_key_names_field_and_line() {
        // (`repeats` is a field now, of scale experiments; `retries` is not.)
        let text = GOOD.replacen("seeds = 3", "seeds = 3\nretries = 4", 1);
        let e = load(&text).unwrap_err();
        assert_eq!(e.line, Some(line_of(&text, "retries")));
        assert!(e.message.contains("unknown field `retries`") && e.message.contains("expected one of"), "{e}");
        let text = GOOD.replacen("x_scale = \"log2\"", "x_scael = \"log2\"", 1);
        let e = load(&text).unwrap_err();
        assert_eq!(e.line, Some(line_of(&text, "x_scael")));
        assert!(e.message.contains("x_scael"), "{e}");
    }

    #[test]
    fn wrong_types_name_line_and_expectation() {
        let text = GOOD.replacen("seeds = 3", "seeds = \"three\"", 1);
        let e = load(&text).unwrap_err();
        assert_eq!(e.line, Some(line_of(&text, "seeds = \"three\"")));
        assert!(e.message.contains("expected"), "{e}");
        let text = GOOD.replacen("x_scale = \"log2\"", "x_scale = \"log3\"", 1);
        let e = load(&text).unwrap_err();
        assert_eq!(e.line, Some(line_of(&text, "log3")));
        assert!(e.message.contains("log2"), "{e}");
        let text = GOOD.replacen("op = \">=\"", "op = \"=>\"", 1);
        let e = load(&text).unwrap_err();
        assert_eq!(e.line, Some(line_of(&text, "\"=>\"")));
        assert!(e.message.contains("`>=`"), "{e}");
    }

    #[test]
    fn bad_override_paths() {
        bad(
            "\"flows.bulk.bytes\" = 1_000_000",
            "\"flows.bulk.bites\" = 1_000_000",
            "set.\"flows.bulk.bites\"",
            "flows.bulk.bites",
            "no field `bites`",
        );
        bad(
            "set = { \"flows.bulk.bytes\" = 1000 }",
            "set = { \"flows.blk.bytes\" = 1000 }",
            "quick.set.\"flows.blk.bytes\"",
            "flows.blk",
            "no `blk`",
        );
        bad(
            "path = \"nodes.bs.agent\"",
            "path = \"nodes.base.agent\"",
            "grid.agent.values",
            "values = [\"none\"",
            "no `base`",
        );
        bad(
            "values = [\"none\", \"snoop\"]",
            "values = [\"none\", 3]",
            "grid.agent.values",
            "values = [\"none\", 3]",
            "a string",
        );
        bad("values = [\"none\", \"snoop\"]", "values = []", "grid.agent.values", "values = []", "at least one");
        bad("[grid.agent]", "[grid.seed]", "grid.seed", "[grid.seed]", "results column");
    }

    #[test]
    fn only_a_sequence_figure_marks_erroneous_fast_retransmits() {
        bad(
            "series = \"agent\"\n",
            "series = \"agent\"\nmark_erroneous_fast_retransmits = true\n",
            "figure.mark_erroneous_fast_retransmits",
            "mark_erroneous",
            "only a sequence figure",
        );
        let seq = |mark: &str| {
            GOOD.replacen(
                "kind = \"line\"\nx = \"ber\"\nx_scale = \"log2\"\ny = \"goodput_mbps\"\n",
                &format!("kind = \"sequence\"\n{mark}"),
                1,
            )
        };
        let marked = load(&seq("mark_erroneous_fast_retransmits = true\n")).unwrap();
        assert_eq!(marked.figure.kind, FigureKind::Sequence { erroneous_fast_retransmits: true });
        assert!(marked.figure.traces(1));
        let plain = load(&seq("")).unwrap();
        assert_eq!(plain.figure.kind, FigureKind::Sequence { erroneous_fast_retransmits: false });
    }

    #[test]
    fn claims_referring_to_unknown_columns() {
        bad(
            "metric = \"goodput_mbps\"\nwhere = { ber = 1e-6 }",
            "metric = \"goodput\"\nwhere = { ber = 1e-6 }",
            "claims[0].metric",
            "\"goodput\"",
            "unknown column `goodput`",
        );
        bad("where = { ber = 1e-6 }", "where = { bre = 1e-6 }", "claims[0].where.bre", "{ bre", "unknown column `bre`");
        bad(
            "where = { ber = 1e-6 }",
            "where = { ber = 2e-6 }",
            "claims[0].where.ber",
            "{ ber = 2e-6",
            "not a value of the grid",
        );
        bad(
            "numerator = { agent = \"snoop\" }",
            "numerator = { agent = \"snop\" }",
            "claims[0].numerator.agent",
            "\"snop\"",
            "not a value",
        );
        bad("for_each = \"ber\"", "for_each = \"bre\"", "claims[1].for_each", "\"bre\"", "unknown column");
        bad(
            "metric = \"ratio:goodput_mbps/ideal_goodput_mbps\"",
            "metric = \"ratio:goodput_mbps/ideal\"",
            "claims[3].metric",
            "ratio:goodput_mbps/ideal\"",
            "unknown column `ideal`",
        );
        bad("metric = \"completed\"", "metric = \"agent\"", "claims[2].metric", "metric = \"agent\"", "holds text");
    }

    #[test]
    fn claim_shape_mistakes() {
        bad("value = [0.9, 1.1]", "value = 0.9", "claims[1].value", "value = 0.9", "[low, high]");
        bad(
            "op = \">\"\nvalue = 0.9",
            "op = \">\"\nvalue = \"high\"",
            "claims[3].value",
            "value = \"high\"",
            "expected a number",
        );
        bad("op = \">\"\nvalue = 0.9", "op = \">\"", "claims[3].value", "op = \">\"", "missing");
        bad(
            "denominator = { agent = \"none\" }\nop = \">=\"",
            "op = \">=\"",
            "claims[0].denominator",
            "[[claims]]\ntext = \"snoop ahead\"",
            "missing",
        );
        bad(
            "where = { ber = { max = 5e-7 } }",
            "where = { ber = { below = 5e-7 } }",
            "claims[1].where.ber",
            "{ below",
            "unknown key `below`",
        );
    }

    #[test]
    fn expected_divergences_name_their_mechanism() {
        let e = load(GOOD).unwrap();
        assert!(e.claims.iter().all(|c| c.expect == Expect::Holds));
        let text = GOOD.replacen("value = 3\n", "value = 3\nexpect = \"fails\"\nwhy = \" traced: x \"\n", 1);
        let e = load(&text).unwrap();
        assert_eq!(e.claims[0].expect, Expect::Fails { why: "traced: x".into() });
        let text = GOOD.replacen("value = 3\n", "value = 3\nrequire = \"max\"\nfor_each = \"ber\"\n", 1);
        assert_eq!(load(&text).unwrap().claims[0].require, Require::Max);
        bad("value = 3\n", "value = 3\nexpect = \"fails\"\n", "claims[0].why", "expect = \"fails\"", "needs `why`");
        bad("value = 3\n", "value = 3\nexpect = \"fails\"\nwhy = \"  \"\n", "claims[0].why", "expect", "needs `why`");
        bad("value = 3\n", "value = 3\nwhy = \"because\"\n", "claims[0].why", "why = ", "add `expect");
        let text = GOOD.replacen("value = 3\n", "value = 3\nexpect = \"maybe\"\n", 1);
        let e = load(&text).unwrap_err();
        assert_eq!(e.line, Some(line_of(&text, "expect = ")), "{e}");
        assert!(e.message.contains("expected `holds` or `fails`"), "{e}");
    }

    #[test]
    fn figure_mistakes() {
        bad("x = \"ber\"", "x = \"bre\"", "figure.x", "x = \"bre\"", "grid column");
        bad("series = \"agent\"", "series = \"seed\"", "figure.series", "series = \"seed\"", "grid column");
        bad("y = \"goodput_mbps\"", "y = \"goodput\"", "figure.y", "y = \"goodput\"", "unknown column");
    }

    #[test]
    fn misc_mistakes() {
        bad("id = \"exp\"", "id = \"other\"", "id", "id = \"other\"", "file name");
        bad("flow = \"bulk\"", "flow = \"bluk\"", "flow", "flow = \"bluk\"", "no flow or web workload `bluk`");
        bad("scenario = \"base.toml\"", "scenario = \"missing.toml\"", "scenario", "scenario =", "cannot read");
        bad("seeds = 3", "seeds = 0", "seeds", "seeds = 0", "at least 1");
    }

    #[test]
    fn syntax_error_has_a_line() {
        let text = GOOD.replacen("seeds = 3", "seeds = = 3", 1);
        let e = load(&text).unwrap_err();
        assert_eq!(e.line, Some(line_of(&text, "seeds = =")));
    }

    #[test]
    fn a_lone_carriage_return_is_an_error_that_says_so() {
        // Found by the `experiments` fuzz target: the toml crate gives no message for it, so the error said nothing.
        let text = GOOD.replacen("seeds = 3", "seeds = [3,\r\0 4]", 1);
        let e = load(&text).unwrap_err();
        assert_eq!(e.line, Some(line_of(&text, "seeds = [")));
        assert!(e.message.contains("carriage return"), "{e}");
    }

    // The section checkers on their own.

    fn cx(text: &str) -> Ctx<'_> {
        Ctx { file: Path::new("dir/exp.toml"), text }
    }

    #[test]
    fn id_must_be_the_file_name_in_plain_characters() {
        let text = "id = \"exp\"\n";
        assert_eq!(check_id(&cx(text), &Spanned::new(5..10, "exp".into())), Ok(()));
        let e = check_id(&cx(text), &Spanned::new(5..10, "other".into())).unwrap_err();
        assert_eq!((e.field.as_str(), e.line), ("id", Some(1)));
        assert!(e.message.contains("must equal the file name `exp`"), "{e}");
        let odd = Ctx { file: Path::new("e x.toml"), text };
        let e = check_id(&odd, &Spanned::new(5..10, "e x".into())).unwrap_err();
        assert!(e.message.contains("letters, digits"), "{e}");
    }

    #[test]
    fn seeds_when_given_are_at_least_one() {
        let text = "\n[quick]\nseeds = 0\n";
        let zero = Spanned::new(text.find('0').unwrap()..text.len() - 1, 0);
        let e = parse_seeds(&cx(text), Some(&zero), "quick.seeds").unwrap_err();
        assert_eq!((e.field.as_str(), e.line, e.message.as_str()), ("quick.seeds", Some(3), "expected at least 1"));
        assert_eq!(parse_seeds(&cx(text), Some(&Spanned::new(0..1, 4)), "seeds"), Ok(Some(4)));
        assert_eq!(parse_seeds(&cx(text), None, "seeds"), Ok(None));
    }

    #[test]
    fn repeats_are_for_scale_experiments_and_bounded() {
        let text = "runner = \"scale\"\nrepeats = 0\n";
        let at = |n| Spanned::new(text.find("repeats").unwrap()..text.len() - 1, n);
        assert_eq!(parse_repeats(&cx(text), None, RunnerKind::Scale), Ok(1));
        assert_eq!(parse_repeats(&cx(text), Some(&at(5)), RunnerKind::Scale), Ok(5));
        for n in [0, 101] {
            let e = parse_repeats(&cx(text), Some(&at(n)), RunnerKind::Scale).unwrap_err();
            assert_eq!((e.field.as_str(), e.line), ("repeats", Some(2)));
            assert_eq!(e.message, format!("expected 1 to 100, found {n}"));
        }
        let e = parse_repeats(&cx(text), Some(&at(3)), RunnerKind::Sim).unwrap_err();
        assert!(e.message.contains("only a scale experiment"), "{e}");
    }

    #[test]
    fn rows_come_from_a_web_workload_only_in_the_simulator() {
        let base: toml::Value = toml::from_str("[flows.bulk]\n[web.pages]\n").unwrap();
        let only_web: toml::Value = toml::from_str("[web.pages]\n").unwrap();
        let names = RowNames::of(&base);
        assert_eq!(
            (names.flows.as_slice(), names.web.as_slice()),
            (&["bulk".to_string()][..], &["pages".to_string()][..])
        );
        let pages = Spanned::new(0..0, "pages".to_string());
        assert!(names.rows_from_web(RunnerKind::Sim, Some(&pages)));
        assert!(!names.rows_from_web(RunnerKind::Sim, None), "flows come first");
        assert!(RowNames::of(&only_web).rows_from_web(RunnerKind::Sim, None));
        assert!(!RowNames::of(&only_web).rows_from_web(RunnerKind::Testbed, None));
    }

    #[test]
    fn grid_axes_may_not_take_results_columns_but_testbed_grids_may_take_its_settings() {
        let sim = reserved_columns(RunnerKind::Sim, false, false);
        for c in ["goodput_mbps", "seed", "downloads", "flow"] {
            assert!(sim.iter().any(|r| r == c), "{c}: {sim:?}");
        }
        // `tcp` reports the variant a grid sets (Eom 2002's column contract); so do Mobile IP's experiments
        for mobile_ip in [false, true] {
            assert!(!reserved_columns(RunnerKind::Sim, false, mobile_ip).iter().any(|r| r == "tcp"));
        }
        let testbed = reserved_columns(RunnerKind::Testbed, false, false);
        assert!(testbed.iter().any(|r| r == "goodput_mbps"), "{testbed:?}");
        for c in table::TESTBED_CONFIG_COLUMNS {
            assert!(!testbed.iter().any(|r| r == c), "{c}: {testbed:?}");
        }
    }

    #[test]
    fn metrics_must_be_numeric_columns() {
        let grid = vec![Axis {
            column: "agent".into(),
            path: Some("nodes.bs.agent".into()),
            values: vec!["none".into(), "snoop".into()],
            variants: vec![],
        }];
        let cols = Columns::new(RunnerKind::Sim, false, false, &grid);
        let text = "y = \"agent\"";
        let at = |m: &str| Spanned::new(4..text.len(), m.to_string());
        assert_eq!(cols.metric(&cx(text), &at("goodput_mbps"), "figure.y"), Ok(Metric::Column("goodput_mbps".into())));
        let e = cols.metric(&cx(text), &at("agent"), "figure.y").unwrap_err();
        assert!(e.message.contains("column `agent` holds text"), "{e}");
        let e = cols.metric(&cx(text), &at("ratio:goodput_mbps/nope"), "figure.y").unwrap_err();
        assert!(e.message.contains("unknown column `nope`"), "{e}");
        assert!(cols.check(&cx(text), &at("agent"), "claims[0].for_each").is_ok());
    }

    #[test]
    fn claim_ops_take_a_number_or_an_ordered_pair() {
        let claim = |op_value: &str| {
            let text = format!("text = \"t\"\npaper = \"p\"\nkind = \"value\"\nmetric = \"m\"\n{op_value}\n");
            let raw: RawClaim = toml::from_str(&text).unwrap();
            let c = cx(&text);
            parse_op(&c, 0..1, &raw, &|f: &str| format!("claims[0].{f}")).map_err(|e| (e.field, e.line, e.message))
        };
        assert_eq!(claim("op = \">=\"\nvalue = 3"), Ok(Op::Ge(3.0)));
        assert_eq!(claim("op = \"between\"\nvalue = [1, 2.5]"), Ok(Op::Between(1.0, 2.5)));
        let e = claim("op = \"between\"\nvalue = [2, 1]").unwrap_err();
        assert_eq!((e.0.as_str(), e.1), ("claims[0].value", Some(6)));
        assert!(e.2.contains("low ≤ high"), "{}", e.2);
        assert_eq!(claim("op = \"<\"\nvalue = \"x\"").unwrap_err().2, "expected a number");
        assert_eq!(claim("op = \"<\"").unwrap_err().0, "claims[0].value");
        assert_eq!(claim("").unwrap_err().0, "claims[0].op");
    }
}
