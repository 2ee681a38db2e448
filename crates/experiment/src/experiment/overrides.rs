//! Overrides of the base scenario (`[set]`, `[quick.set]`, grid values): applying a dotted path to a scenario
//! document, and blaming a value the simulator's scenario checks refuse on the line that set it.

use super::schema::{Overrides, RawExperiment, RawQuick, RawSet};
use super::{parse_seeds, Ctx, ExperimentError, Quick};
use std::path::Path;

/// `[set]` or `[quick.set]`: overrides, each applied to `doc` (which checks it against the base scenario).
pub(super) fn parse_set(
    cx: &Ctx,
    set: &RawSet,
    prefix: &str,
    doc: &mut toml::Value,
) -> Result<Overrides, ExperimentError> {
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
pub(super) fn parse_quick(
    cx: &Ctx,
    quick: Option<&RawQuick>,
    doc: &toml::Value,
) -> Result<(Quick, toml::Value), ExperimentError> {
    let mut quick_doc = doc.clone();
    let Some(q) = quick else { return Ok((Quick::default(), quick_doc)) };
    let seeds = parse_seeds(cx, q.seeds.as_ref(), "quick.seeds")?;
    let set = parse_set(cx, &q.set, "quick.set", &mut quick_doc)?;
    Ok((Quick { seeds, set, grid: Vec::new() }, quick_doc))
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
pub(super) fn check_sim_overrides(
    cx: &Ctx,
    raw: &RawExperiment,
    scenario_file: &Path,
    doc: &toml::Value,
) -> Result<(), ExperimentError> {
    let base_dir = scenario_file.parent().unwrap_or(Path::new(""));
    let origin = scenario_file.display().to_string();
    let refused = |d: toml::Value| {
        let e = lasthop_sim::Scenario::from_toml_in(d, &origin, base_dir).err()?;
        Some((e.field?, e.message))
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

pub(super) fn table_keys(v: Option<&toml::Value>) -> String {
    match v.and_then(|v| v.as_table()) {
        Some(t) if !t.is_empty() => t.keys().cloned().collect::<Vec<_>>().join(", "),
        _ => "nothing".into(),
    }
}

pub(super) fn type_name(v: &toml::Value) -> &'static str {
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
