//! `[[claims]]` and `table` as the file writes them: filters, kinds, comparison operators, checked against the
//! grid and results columns. Evaluating claims on results is [`crate::claims`]'s job.

use super::runner::Columns;
use super::schema::{RawClaim, RawClaimKind, RawExpect, RawFilter, RawOp};
use super::{Axis, Ctx, ExperimentError, Figure, FigureKind};
use crate::claims::{Aggregate, Claim, ClaimKind, Cond, Expect, Filter, Metric, Op};
use crate::table::Cell;
use toml::Spanned;

/// One `column = condition` of a `where` (or numerator, denominator).
pub(super) fn parse_filter(
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
pub(super) fn parse_claim_filters(
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
pub(super) fn parse_claim(
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
pub(super) fn claim_expect(
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
pub(super) fn claim_kind(
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
pub(super) fn parse_op(
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

pub(super) fn parse_cond(v: &toml::Value) -> Result<Cond, String> {
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

/// `table`: the report table's metrics; by default the line figure's y (else goodput) and the claims'
/// metrics.
pub(super) fn parse_table(
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
