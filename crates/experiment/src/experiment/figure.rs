//! `[figure]`: the line, sequence or cdf figure an experiment draws, checked against its grid and results
//! columns, and the per-handoff times a cdf figure can show.

use super::claims_spec::parse_filter;
use super::grid::grid_columns;
use super::runner::Columns;
use super::schema::{RawFigure, RawFigureKind, RawSeries};
use super::{Axis, Ctx, ExperimentError, Figure, FigureKind, RunnerKind, Scale};
use crate::table::Cell;
use toml::Spanned;

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

/// `[figure]`.
pub(super) fn parse_figure(
    cx: &Ctx,
    raw: &Spanned<RawFigure>,
    grid: &[Axis],
    cols: &Columns,
    runner: RunnerKind,
) -> Result<Figure, ExperimentError> {
    let rf = raw.get_ref();
    let series = parse_series(cx, rf.series.as_ref(), grid, runner)?;
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

/// `figure.series`: one or more distinct grid columns (and for a twin experiment `face`).
pub(super) fn parse_series(
    cx: &Ctx,
    raw: Option<&Spanned<RawSeries>>,
    grid: &[Axis],
    runner: RunnerKind,
) -> Result<Vec<String>, ExperimentError> {
    let mut series = Vec::new();
    let Some(s) = raw else { return Ok(series) };
    let names = match s.get_ref() {
        RawSeries::One(c) => vec![c.clone()],
        RawSeries::Many(cs) => cs.clone(),
    };
    if names.is_empty() {
        return Err(cx.err(s.span(), "figure.series", "expected at least one grid column"));
    }
    let mut grid_cols = grid_columns(grid);
    if runner == RunnerKind::Twin {
        grid_cols.push("face".into());
    }
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
pub(super) fn line_figure(
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
pub(super) fn cdf_figure(cx: &Ctx, raw: &Spanned<RawFigure>) -> Result<FigureKind, ExperimentError> {
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
