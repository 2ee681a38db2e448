//! What the runner kind (`sim`, `testbed`, `scale`, `twin`) decides: the results columns, the names a grid may not
//! take, `flow`, `repeats` and the testbed configuration check.

use super::overrides::table_keys;
use super::{Axis, Ctx, ExperimentError, RunnerKind};
use crate::claims::Metric;
use crate::table;
use std::path::Path;
use toml::Spanned;

/// The flows and web workloads of the base scenario, by name.
pub(super) struct RowNames {
    pub(super) flows: Vec<String>,
    pub(super) web: Vec<String>,
}

impl RowNames {
    pub(super) fn of(base: &toml::Value) -> RowNames {
        let names = |t: &str| {
            base.get(t).and_then(|x| x.as_table()).map(|x| x.keys().cloned().collect::<Vec<_>>()).unwrap_or_default()
        };
        RowNames { flows: names("flows"), web: names("web") }
    }

    /// Whether rows come from a web workload: `flow` names one, or there are web workloads and no flows.
    pub(super) fn rows_from_web(&self, runner: RunnerKind, flow: Option<&Spanned<String>>) -> bool {
        runner == RunnerKind::Sim
            && match flow {
                Some(f) => self.web.contains(f.get_ref()),
                None => self.flows.is_empty() && !self.web.is_empty(),
            }
    }
}

/// The results columns of an experiment with these grid columns and base scenario `base`: a simulator
/// scenario's family tables add their families' columns ([`table::sim_columns`]), a testbed configuration's
/// `handoff` (two base stations and a moving mobile) the handoff columns.
pub(super) fn results_columns(
    runner: RunnerKind,
    web: bool,
    base: &toml::Value,
    grid_columns: &[String],
) -> Vec<String> {
    let has_table = |t: &str| base.get(t).is_some();
    match runner {
        RunnerKind::Sim => table::sim_columns(grid_columns, web, &has_table),
        RunnerKind::Testbed if has_table("handoff") => table::testbed_handoff_columns(grid_columns),
        RunnerKind::Testbed => table::testbed_columns(grid_columns),
        RunnerKind::Scale => table::scale_columns(grid_columns),
        RunnerKind::Twin if has_table("handoff") => table::twin_handoff_columns(grid_columns),
        RunnerKind::Twin => table::twin_columns(grid_columns),
    }
}

/// Names a grid axis may not take: every results column of a simulator experiment (flow or web rows) but
/// `tcp` ([`table::CONFIG_COLUMNS`]), or a testbed experiment's own columns but agent/cc/sack/ber: a grid may
/// take those over.
pub(super) fn reserved_columns(runner: RunnerKind, web: bool, base: &toml::Value) -> Vec<String> {
    let taken_over = match runner {
        RunnerKind::Sim => table::CONFIG_COLUMNS,
        RunnerKind::Testbed => table::TESTBED_CONFIG_COLUMNS,
        RunnerKind::Twin if base.get("handoff").is_some() => table::TESTBED_CONFIG_COLUMNS,
        RunnerKind::Twin => table::TWIN_CONFIG_COLUMNS,
        RunnerKind::Scale => &[],
    };
    let mut reserved = results_columns(runner, web, base, &[]);
    if runner == RunnerKind::Sim {
        // Every family's columns, for flow and web rows alike.
        reserved.extend([false, true].into_iter().flat_map(|web| table::sim_columns(&[], web, &|_| true)));
    }
    reserved.retain(|c| !taken_over.contains(&c.as_str()));
    reserved
}

/// The results columns once the grid is known, for checking the names that figures, claims and the
/// table use.
pub(super) struct Columns {
    all: Vec<String>,
    /// Columns that hold text (grid axes of strings, and the runner's own), never a metric.
    text: Vec<String>,
}

impl Columns {
    pub(super) fn new(runner: RunnerKind, web: bool, base: &toml::Value, grid: &[Axis]) -> Columns {
        let grid_cols: Vec<String> = grid.iter().map(|a| a.column.clone()).collect();
        let own_text: &[&str] = match runner {
            RunnerKind::Sim => &["flow", "tcp", "workload"],
            RunnerKind::Testbed => &["agent", "cc", "cc_used"],
            RunnerKind::Twin => &["face", "agent", "cc", "point", "sender", "cc_used"],
            RunnerKind::Scale => &[],
        };
        let text = grid
            .iter()
            .filter(|a| a.values.iter().all(|v| v.is_str()))
            .map(|a| a.column.clone())
            .chain(own_text.iter().map(|s| s.to_string()))
            .collect();
        Columns { all: results_columns(runner, web, base, &grid_cols), text }
    }

    /// `s` names a results column.
    pub(super) fn check(&self, cx: &Ctx, s: &Spanned<String>, field: &str) -> Result<(), ExperimentError> {
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
    pub(super) fn metric(&self, cx: &Ctx, s: &Spanned<String>, field: &str) -> Result<Metric, ExperimentError> {
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

/// `repeats`: 1 to 100, and only for `runner = "scale"` (a simulator run repeated gives the same rows).
pub(super) fn parse_repeats(
    cx: &Ctx,
    repeats: Option<&Spanned<u64>>,
    runner: RunnerKind,
) -> Result<u64, ExperimentError> {
    let Some(r) = repeats else { return Ok(1) };
    if runner != RunnerKind::Scale {
        return Err(cx.err(r.span(), "repeats", "only a scale experiment (runner = \"scale\") repeats its runs"));
    }
    match *r.get_ref() {
        n @ 1..=100 => Ok(n),
        n => Err(cx.err(r.span(), "repeats", format!("expected 1 to 100, found {n}"))),
    }
}

/// A testbed experiment's base "scenario" is a testbed configuration, with `[set]` and with `[quick.set]`.
pub(super) fn check_testbed_config(
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
pub(super) fn parse_flow(
    cx: &Ctx,
    flow: Option<&Spanned<String>>,
    runner: RunnerKind,
    base: &toml::Value,
    names: &RowNames,
) -> Result<Option<String>, ExperimentError> {
    let Some(f) = flow else { return Ok(None) };
    if runner.on_testbed() {
        return Err(cx.err(f.span(), "flow", "a testbed or twin experiment has one transfer; remove `flow`"));
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
