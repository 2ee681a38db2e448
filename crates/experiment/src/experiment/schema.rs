//! The experiment file as written: serde's view of `experiments/*.toml`, with spans for error lines. Every
//! other module checks these raw sections and builds the typed [`super::Experiment`] from them.

use super::{RunnerKind, Scale, Ticks};
use crate::claims::{Aggregate, Require};
use serde::Deserialize;
use std::collections::BTreeMap;
use toml::Spanned;

/// `series = "agent"` or `series = ["agent", "cc"]` (one curve per combination).
#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum RawSeries {
    One(String),
    Many(Vec<String>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawExperiment {
    pub(super) id: Spanned<String>,
    pub(super) title: String,
    pub(super) paper: String,
    #[serde(default)]
    pub(super) description: Option<String>,
    #[serde(default)]
    pub(super) default: bool,
    pub(super) scenario: Spanned<String>,
    #[serde(default)]
    pub(super) seeds: Option<Spanned<u64>>,
    #[serde(default)]
    pub(super) flow: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) table: Vec<Spanned<String>>,
    #[serde(default)]
    pub(super) set: RawSet,
    #[serde(default)]
    pub(super) quick: Option<RawQuick>,
    #[serde(default)]
    pub(super) grid: BTreeMap<Spanned<String>, Spanned<RawAxis>>,
    pub(super) figure: Spanned<RawFigure>,
    #[serde(default)]
    pub(super) claims: Vec<Spanned<RawClaim>>,
    #[serde(default)]
    pub(super) runner: RunnerKind,
    #[serde(default)]
    pub(super) repeats: Option<Spanned<u64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawQuick {
    #[serde(default)]
    pub(super) seeds: Option<Spanned<u64>>,
    #[serde(default)]
    pub(super) set: RawSet,
    /// column = [values]: a subset of a grid axis's values, for `--quick`.
    #[serde(default)]
    pub(super) grid: BTreeMap<Spanned<String>, Spanned<Vec<Spanned<toml::Value>>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAxis {
    #[serde(default)]
    pub(super) path: Option<Spanned<String>>,
    pub(super) values: Spanned<Vec<Spanned<toml::Value>>>,
    /// value -> { "dotted.path" = value, ... }: several fields set together for one axis value.
    #[serde(default)]
    pub(super) variants: BTreeMap<Spanned<String>, BTreeMap<Spanned<String>, Spanned<toml::Value>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFigure {
    pub(super) kind: RawFigureKind,
    #[serde(default)]
    pub(super) x: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) y: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) series: Option<Spanned<RawSeries>>,
    #[serde(default)]
    pub(super) series_labels: BTreeMap<String, String>,
    #[serde(default)]
    pub(super) x_scale: Scale,
    #[serde(default)]
    pub(super) x_ticks: Ticks,
    #[serde(default)]
    pub(super) x_label: Option<String>,
    #[serde(default)]
    pub(super) y_label: Option<String>,
    #[serde(default, rename = "where")]
    pub(super) filter: RawFilter,
    #[serde(default)]
    pub(super) mark_erroneous_fast_retransmits: Option<Spanned<bool>>,
}

#[derive(Deserialize, PartialEq)]
#[serde(rename_all = "lowercase")]
pub(super) enum RawFigureKind {
    Line,
    Sequence,
    Cdf,
}

#[derive(Deserialize, Clone, Copy)]
pub(super) enum RawOp {
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
pub(super) enum RawClaimKind {
    Value,
    Ratio,
    All,
}

pub(super) type RawFilter = RawSet;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawClaim {
    pub(super) text: String,
    pub(super) paper: String,
    pub(super) kind: RawClaimKind,
    pub(super) metric: Spanned<String>,
    #[serde(default, rename = "where")]
    pub(super) filter: RawFilter,
    #[serde(default)]
    pub(super) numerator: Option<Spanned<RawFilter>>,
    #[serde(default)]
    pub(super) denominator: Option<Spanned<RawFilter>>,
    #[serde(default)]
    pub(super) aggregate: Option<Aggregate>,
    #[serde(default)]
    pub(super) op: Option<Spanned<RawOp>>,
    #[serde(default)]
    pub(super) value: Option<Spanned<toml::Value>>,
    #[serde(default)]
    pub(super) for_each: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) require: Option<Require>,
    #[serde(default)]
    pub(super) expect: Option<Spanned<RawExpect>>,
    #[serde(default)]
    pub(super) why: Option<Spanned<String>>,
}

#[derive(Deserialize, Clone, Copy, PartialEq)]
#[serde(rename_all = "lowercase")]
pub(super) enum RawExpect {
    Holds,
    Fails,
}

pub(super) type RawSet = BTreeMap<Spanned<String>, Spanned<toml::Value>>;
/// `(dotted path, value)` overrides of the base scenario, in order.
pub(super) type Overrides = Vec<(String, toml::Value)>;
