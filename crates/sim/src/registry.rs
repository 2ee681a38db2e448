//! The one place that names the simulator's protocol families and workloads. Each family declares itself
//! once, as a [`Family`] in its own module (its scenario table, its validation, the rules it sets on other
//! families, its build, its result columns); this file lists them in the order that breaks same-instant
//! ties and decides which feature sees a packet first (see [`crate::feature`]), runs their validation for
//! `Scenario::validate`, and holds their typed metrics sections ([`FamilyMetrics`]).

use crate::metrics::Value;
use crate::scenario::Invalid;
use crate::world::World;
use crate::{HandoffMetrics, MobileIpMetrics, RunResult, Scenario, SimError, WebMetrics};
use serde::{Deserialize, Serialize};

/// A protocol family or workload as the simulator knows it: everything of it the core and the other
/// families reach, declared in the family's module.
pub(crate) struct Family {
    /// The scenario table that switches it on (`"mobile_ip"`), as other families' rules name it.
    pub name: &'static str,
    /// Whether the scenario switches it on.
    pub present: fn(&Scenario) -> bool,
    /// Its own rules, run whether it is on or not (a table with defaults is checked even when unused).
    /// Errors name the field from the scenario's top (`failure.at_s`).
    pub validate: fn(&Scenario) -> Result<(), Invalid>,
    /// Its rules on other families, checked once every family's own rules hold.
    pub together: &'static [Together],
    /// Builds it, if the scenario asks for it, and registers it with the world.
    pub build: fn(&Scenario, &mut World) -> Result<(), SimError>,
    /// The columns it adds to an experiment's `results.csv`, if any.
    pub columns: Option<ResultColumns>,
    /// For a workload, the columns of the row it gives an experiment's run ([`RowColumns`]).
    pub row: Option<RowColumns>,
}

/// The columns a workload gives each run's row in a simulator experiment's results table: those of one of
/// its items (a bulk flow, a Web workload), chosen by name or the first, before the run's own
/// (`lasthop_experiment::table::RUN_COLUMNS`).
#[derive(Debug)]
pub struct RowColumns {
    /// The columns, in CSV order; the first is the item's name.
    pub names: &'static [&'static str],
    /// The cells of the item named (the first when `None`), one per name; an error says what the run has.
    pub cells: fn(&RunResult, Option<&str>) -> Result<Vec<Value>, String>,
}

/// The columns a family adds to a simulator experiment's results table, after the core's
/// (`lasthop_experiment::table::RUN_COLUMNS`), in registration order.
#[derive(Debug)]
pub struct ResultColumns {
    /// Every simulator experiment's table has them (empty cells when the family is off); else only an
    /// experiment whose scenario has the family's table.
    pub always: bool,
    /// The columns, in CSV order.
    pub names: &'static [&'static str],
    /// A run's cells, one per name, from the family's section of the result.
    pub cells: fn(&RunResult) -> Vec<Value>,
}

/// The families' sections of a run's metrics, each typed in its family's module; flattened into
/// `metrics.json`'s top level, where an absent family leaves no key.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct FamilyMetrics {
    /// Per web workload (`crate::web`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub web: Vec<WebMetrics>,
    /// One entry per handoff, in order (`crate::mobility`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub handoffs: Vec<HandoffMetrics>,
    /// What Mobile IP did (`crate::mobile_ip`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mobile_ip: Option<MobileIpMetrics>,
}

impl FamilyMetrics {
    /// The metrics of web workload `name` (or the first).
    pub fn web_workload(&self, name: Option<&str>) -> Result<&WebMetrics, String> {
        crate::metrics::named(&self.web, name, |w| &w.name, "web workload")
    }
}

/// The result columns families add, in registration order, each with its family's scenario table.
pub fn result_columns() -> impl Iterator<Item = (&'static str, &'static ResultColumns)> {
    every_family().filter_map(|f| Some((f.name, f.columns.as_ref()?)))
}

/// The row columns of the workloads, in registration order, each with its workload's scenario table
/// (`"flows"`, `"web"`).
pub fn row_columns() -> impl Iterator<Item = (&'static str, &'static RowColumns)> {
    every_family().filter_map(|f| Some((f.name, f.row.as_ref()?)))
}

/// A family's rule on another family (named by its [`Family::name`]), checked when both are on.
pub(crate) enum Together {
    /// The two do not run together: the error names `field` (from the scenario) with `message`.
    Not { other: &'static str, field: fn(&Scenario) -> String, message: &'static str },
    /// Rules that hold only when the other family is on too.
    With { other: &'static str, check: fn(&Scenario) -> Result<(), Invalid> },
}

impl Together {
    fn other(&self) -> &'static str {
        match self {
            Together::Not { other, .. } | Together::With { other, .. } => other,
        }
    }
}

/// The protocol families and the Web workload, in registration order:
/// - failure before the split relays, so that a failed node drops packets before a relay could take them;
/// - split before mobility, so that a split base station takes its connections' packets out of the home
///   agent's tunnel before the handoff agent would forward them (`crate::split`).
const FAMILIES: &[Family] = &[
    crate::failure::FAMILY,
    crate::split::FAMILY,
    crate::mobility::FAMILY,
    crate::web::FAMILY,
    crate::mobile_ip::FAMILY,
    crate::arq::FAMILY,
];

/// The bulk flows, registered last: they find their paths once every feature has shaped the routes, and
/// their starts take their places at time zero after every other feature's set-up events (see "Same-instant
/// order" in [`crate::feature`]).
const FLOWS: Family = crate::bulk::FAMILY;

fn every_family() -> impl Iterator<Item = &'static Family> {
    FAMILIES.iter().chain(std::iter::once(&FLOWS))
}

/// Every family's own rules in registration order, then every rule a family sets on another that is on
/// too (so such a rule may rely on both families' own tables being sound).
pub(crate) fn validate(s: &Scenario) -> Result<(), Invalid> {
    for f in every_family() {
        (f.validate)(s)?;
    }
    for f in every_family().filter(|f| (f.present)(s)) {
        for rule in f.together {
            if !every_family().any(|o| o.name == rule.other() && (o.present)(s)) {
                continue;
            }
            match rule {
                Together::Not { field, message, .. } => return Err((field(s), (*message).to_string())),
                Together::With { check, .. } => check(s)?,
            }
        }
    }
    Ok(())
}

/// Builds and registers every feature the scenario asks for, in the order that fixes same-instant ties.
pub(crate) fn build_all(s: &Scenario, world: &mut World) -> Result<(), SimError> {
    build_features(s, world)?;
    build_flows(s, world)
}

/// The protocol families and the Web workload, registered before the bulk flows.
pub(crate) fn build_features(s: &Scenario, world: &mut World) -> Result<(), SimError> {
    FAMILIES.iter().try_for_each(|f| (f.build)(s, world))
}

/// The bulk flows, registered last ([`FLOWS`]).
pub(crate) fn build_flows(s: &Scenario, world: &mut World) -> Result<(), SimError> {
    (FLOWS.build)(s, world)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_have_distinct_names_a_cell_per_column_and_rules_on_registered_families() {
        let names: Vec<&str> = every_family().map(|f| f.name).collect();
        for (i, n) in names.iter().enumerate() {
            assert!(!names[..i].contains(n), "`{n}` is registered twice");
        }
        for f in every_family() {
            if let Some(c) = &f.columns {
                let cells = (c.cells)(&RunResult::default());
                assert_eq!(cells.len(), c.names.len(), "`{}` gives a cell per column", f.name);
            }
            if let Some(r) = &f.row {
                let mut result = RunResult::default();
                result.flows.push(crate::FlowMetrics { name: "one".into(), ..Default::default() });
                result.families.web.push(WebMetrics { name: "one".into(), ..Default::default() });
                let cells = (r.cells)(&result, Some("one")).unwrap();
                assert_eq!(cells.len(), r.names.len(), "`{}` gives a cell per row column", f.name);
                assert_eq!(cells[0], Value::Str("one".into()), "`{}`'s row starts with the item's name", f.name);
                let none = (r.cells)(&result, Some("two")).unwrap_err();
                assert!(none.contains("`two`") && none.contains("\"one\""), "`{}`: {none}", f.name);
            }
            for rule in f.together {
                assert!(names.contains(&rule.other()), "`{}` sets a rule on `{}`, no family", f.name, rule.other());
                assert_ne!(rule.other(), f.name, "`{}` sets a rule on itself", f.name);
            }
        }
    }

    fn example(name: &str) -> toml::Value {
        let path = format!("{}/../../examples/{name}", env!("CARGO_MANIFEST_DIR"));
        toml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    /// Link-level ARQ declares that it does not run with Mobile IP (`crate::arq::FAMILY`): the rule is the
    /// family's, not the core's, and fires with the field and words it declares once both are on.
    #[test]
    fn a_rule_a_family_declares_on_another_fires_when_both_are_on() {
        let mut v = example("mobile-ip.toml");
        assert!(Scenario::from_toml(v.clone(), "mip").is_ok(), "the example alone is valid");
        let air2 = v["links"]["air2"].as_table_mut().unwrap();
        air2.insert("arq".into(), toml::Value::Table(toml::Table::new()));
        let e = Scenario::from_toml(v.clone(), "mip").unwrap_err();
        assert_eq!(e.field.as_deref(), Some("links.air2.arq"));
        let Some(Together::Not { other, message, .. }) = crate::arq::FAMILY.together.first() else {
            panic!("ARQ declares its rule on Mobile IP")
        };
        assert_eq!((*other, e.message.as_str()), ("mobile_ip", *message));
        assert!(e.message.starts_with("link-level ARQ does not run with `[mobile_ip]`"), "{e}");
        // Without Mobile IP, the same link's ARQ is valid: the rule is about the pair, not about ARQ.
        v.as_table_mut().unwrap().remove("mobile_ip");
        assert!(Scenario::from_toml(v, "arq").is_ok());
    }

    /// Mobile IP declares that it does not run with `[mobility]` (`crate::mobile_ip::FAMILY`).
    #[test]
    fn mobile_ip_refuses_mobility_by_its_own_declaration() {
        let mut v = example("mobile-ip.toml");
        let mobility = example("handoff.toml")["mobility"].clone();
        v.as_table_mut().unwrap().insert("mobility".into(), mobility);
        let e = Scenario::from_toml(v, "both").unwrap_err();
        assert_eq!(e.field.as_deref(), Some("mobile_ip"));
        assert_eq!(e.message, "a scenario has `[mobility]` or `[mobile_ip]`, not both");
    }
}
