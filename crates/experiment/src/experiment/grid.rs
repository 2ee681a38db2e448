//! Grid axes: `[grid.*]` and `[quick.grid]` checked against the base scenario, and their expansion into the
//! grid points an experiment runs (first axis outermost).

use super::overrides::apply_override;
use super::schema::{Overrides, RawAxis, RawQuick};
use super::{Axis, Ctx, Experiment, ExperimentError, Point};
use crate::table::Cell;
use std::collections::BTreeMap;
use toml::Spanned;

/// Whether a `variants` key names grid value `v`: its text, or for a number any text of the same number
/// (`variants."1.53e-5"` for the value 1.53e-5, however TOML prints it).
pub(super) fn variant_is(key: &str, v: &toml::Value) -> bool {
    variant_key(v) == key
        || (v.is_float() || v.is_integer())
            && key.trim().parse::<f64>().is_ok_and(|k| Cell::from_toml(v).matches(&Cell::Float(k)))
}

pub(super) fn variant_key(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `[grid.*]`, in file order. Every value and variant is applied to a copy of `doc` and to `quick_doc`
/// (which keeps the path values, so the testbed check sees them).
pub(super) fn parse_grid(
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
pub(super) fn parse_axis(
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
pub(super) fn parse_variants(
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
pub(super) fn parse_axis_values(
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

pub(super) fn grid_columns(grid: &[Axis]) -> Vec<String> {
    grid.iter().map(|a| a.column.clone()).collect()
}

/// `[quick.grid]`: for some axes, a subset of their values.
pub(super) fn parse_quick_grid(
    cx: &Ctx,
    q: &RawQuick,
    grid: &[Axis],
) -> Result<Vec<(String, Vec<toml::Value>)>, ExperimentError> {
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

impl Experiment {
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
