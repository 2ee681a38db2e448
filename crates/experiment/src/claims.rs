//! Claims: a paper's statements in checkable form, evaluated on an experiment's results table.

use crate::table::{fmt_num, mean_std, Cell, Table};

/// A number per row: a column, or the ratio of two columns (`ratio:goodput_mbps/ideal_goodput_mbps`).
#[derive(Debug, Clone, PartialEq)]
pub enum Metric {
    Column(String),
    Ratio(String, String),
}

impl Metric {
    /// Parses `column` or `ratio:a/b` (no check that the columns exist).
    pub fn parse(s: &str) -> Result<Metric, String> {
        if let Some(rest) = s.strip_prefix("ratio:") {
            let (a, b) = rest.split_once('/').ok_or_else(|| {
                format!("`{s}`: expected `ratio:NUMERATOR/DENOMINATOR`, e.g. `ratio:goodput_mbps/ideal_goodput_mbps`")
            })?;
            let (a, b) = (a.trim(), b.trim());
            if a.is_empty() || b.is_empty() {
                return Err(format!("`{s}`: expected `ratio:NUMERATOR/DENOMINATOR` with two column names"));
            }
            Ok(Metric::Ratio(a.to_string(), b.to_string()))
        } else {
            Ok(Metric::Column(s.trim().to_string()))
        }
    }

    pub fn columns(&self) -> Vec<&str> {
        match self {
            Metric::Column(c) => vec![c],
            Metric::Ratio(a, b) => vec![a, b],
        }
    }

    /// The value on one row; None when a cell is empty or not a number, or the denominator is 0.
    pub fn eval(&self, table: &Table, row: &[Cell]) -> Option<f64> {
        match self {
            Metric::Column(c) => table.get(row, c).as_f64(),
            Metric::Ratio(a, b) => {
                let (x, y) = (table.get(row, a).as_f64()?, table.get(row, b).as_f64()?);
                (y != 0.0).then_some(x / y)
            }
        }
    }

    pub fn name(&self) -> String {
        match self {
            Metric::Column(c) => c.clone(),
            Metric::Ratio(a, b) => format!("{a}/{b}"),
        }
    }
}

/// A condition on one column.
#[derive(Debug, Clone, PartialEq)]
pub enum Cond {
    /// `col = value`
    Eq(Cell),
    /// `col = [v1, v2]`: any of these
    AnyOf(Vec<Cell>),
    /// `col = { min = a, max = b }`, inclusive, either bound optional
    Range { min: Option<f64>, max: Option<f64> },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Filter {
    pub column: String,
    pub cond: Cond,
}

impl Filter {
    pub fn accepts(&self, table: &Table, row: &[Cell]) -> bool {
        let c = table.get(row, &self.column);
        match &self.cond {
            Cond::Eq(v) => c.matches(v),
            Cond::AnyOf(vs) => vs.iter().any(|v| c.matches(v)),
            Cond::Range { min, max } => match c.as_f64() {
                Some(x) => min.is_none_or(|m| x >= m) && max.is_none_or(|m| x <= m),
                None => false,
            },
        }
    }
}

pub fn select<'a>(
    table: &'a Table,
    rows: impl IntoIterator<Item = &'a Vec<Cell>>,
    filters: &[Filter],
) -> Vec<&'a Vec<Cell>> {
    rows.into_iter().filter(|r| filters.iter().all(|f| f.accepts(table, r))).collect()
}

/// Comparison of our number with the claim's threshold.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Op {
    Lt(f64),
    Le(f64),
    Gt(f64),
    Ge(f64),
    /// inclusive
    Between(f64, f64),
}

impl Op {
    pub fn holds(&self, x: f64) -> bool {
        match *self {
            Op::Lt(t) => x < t,
            Op::Le(t) => x <= t,
            Op::Gt(t) => x > t,
            Op::Ge(t) => x >= t,
            Op::Between(lo, hi) => lo <= x && x <= hi,
        }
    }
    /// How far inside the condition `x` is (negative: outside); used to pick the worst or best group.
    pub fn margin(&self, x: f64) -> f64 {
        match *self {
            Op::Lt(t) | Op::Le(t) => t - x,
            Op::Gt(t) | Op::Ge(t) => x - t,
            Op::Between(lo, hi) => (x - lo).min(hi - x),
        }
    }
    pub fn describe(&self) -> String {
        match *self {
            Op::Lt(t) => format!("< {}", fmt_num(t)),
            Op::Le(t) => format!("≤ {}", fmt_num(t)),
            Op::Gt(t) => format!("> {}", fmt_num(t)),
            Op::Ge(t) => format!("≥ {}", fmt_num(t)),
            Op::Between(lo, hi) => format!("in [{}, {}]", fmt_num(lo), fmt_num(hi)),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Aggregate {
    Mean,
    Min,
    Max,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Require {
    /// every `for_each` group must hold; the worst is reported
    #[default]
    All,
    /// at least one group must hold; the best is reported
    Any,
    /// the largest of the groups' numbers must satisfy the condition ("up to 20×": the maximum over BERs is
    /// near 20, not merely some BER reaching it); that group is reported
    Max,
    /// the smallest of the groups' numbers must satisfy the condition; that group is reported
    Min,
}

/// What a claim is recorded to do in our runs. A claim written from a paper's words that our model does
/// not reproduce stays as the paper states it and is recorded as an expected divergence, with the
/// mechanism traced in the runs; `lasthop reproduce --check` fails when any outcome differs from the
/// record, in either direction, so a divergence that starts to hold is noticed too.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Expect {
    #[default]
    Holds,
    /// An expected divergence and why (the traced mechanism).
    Fails { why: String },
}

impl Expect {
    pub fn holds(&self) -> bool {
        matches!(self, Expect::Holds)
    }
    pub fn why(&self) -> Option<&str> {
        match self {
            Expect::Holds => None,
            Expect::Fails { why } => Some(why),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum ClaimKind {
    /// aggregate(metric over the selected rows) op value
    Value { aggregate: Aggregate, op: Op },
    /// mean(metric | where & numerator) / mean(metric | where & denominator) op value
    Ratio { numerator: Vec<Filter>, denominator: Vec<Filter>, op: Op },
    /// the (boolean) metric is true on every selected row
    All,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    pub text: String,
    /// The paper's number, shown beside ours.
    pub paper: String,
    pub kind: ClaimKind,
    pub metric: Metric,
    pub filter: Vec<Filter>,
    pub for_each: Option<String>,
    pub require: Require,
    /// Whether the claim is recorded to hold in our runs, or to diverge and why.
    pub expect: Expect,
}

/// The result of checking one claim.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub holds: bool,
    /// What the claim is recorded to do (an expected divergence carries its mechanism).
    pub expect: Expect,
    /// Every group came to a number (no "no runs match", no x/0): a recorded divergence must fail on its
    /// numbers, not because the claim cannot be evaluated.
    pub measured: bool,
    /// Our number (the worst group for `require = "all"`, the best for `any`), e.g. `4.2 at ber=3.81e-6`.
    pub ours: String,
    /// What was required, e.g. `snoop/none goodput_mbps ≥ 3`.
    pub required: String,
    /// Every group's number, for the report.
    pub detail: Vec<String>,
}

impl Outcome {
    /// The outcome is the recorded one: holds where it should, fails where a divergence is recorded.
    pub fn as_expected(&self) -> bool {
        match self.expect {
            Expect::Holds => self.holds,
            Expect::Fails { .. } => !self.holds && self.measured,
        }
    }
}

struct Group {
    label: String,
    holds: bool,
    margin: f64,
    /// The group's number (aggregate, quotient, or share of runs), None when it has none.
    value: Option<f64>,
    shown: String,
}

impl Claim {
    pub fn evaluate(&self, table: &Table) -> Outcome {
        let rows = select(table, &table.rows, &self.filter);
        let groups: Vec<(String, Vec<&Vec<Cell>>)> = match &self.for_each {
            None => vec![(String::new(), rows)],
            Some(col) => {
                let mut keys: Vec<Cell> = Vec::new();
                for r in &rows {
                    let c = table.get(r, col);
                    if !keys.iter().any(|k| k.matches(c)) {
                        keys.push(c.clone());
                    }
                }
                keys.sort_by(|a, b| a.sort_cmp(b));
                keys.into_iter()
                    .map(|k| {
                        let g = rows.iter().copied().filter(|r| table.get(r, col).matches(&k)).collect();
                        (format!("{col}={k}"), g)
                    })
                    .collect()
            }
        };
        let mut evaluated: Vec<Group> =
            groups.into_iter().map(|(label, rows)| self.eval_group(table, label, &rows)).collect();
        if evaluated.is_empty() {
            evaluated.push(Group {
                label: String::new(),
                holds: false,
                margin: f64::NEG_INFINITY,
                value: None,
                shown: "no runs match".into(),
            });
        }
        // max/min: the extreme group decides; a group without a number cannot be ranked, so it is the pick
        // (and the claim fails with its reason)
        let extreme = |largest: bool| {
            evaluated.iter().find(|g| g.value.is_none()).or_else(|| {
                let key = |g: &&Group| g.value.unwrap_or(f64::NAN);
                if largest {
                    evaluated.iter().max_by(|a, b| key(a).total_cmp(&key(b)))
                } else {
                    evaluated.iter().min_by(|a, b| key(a).total_cmp(&key(b)))
                }
            })
        };
        let pick = match self.require {
            Require::All => evaluated.iter().min_by(|a, b| a.margin.total_cmp(&b.margin)),
            Require::Any => evaluated.iter().max_by(|a, b| a.margin.total_cmp(&b.margin)),
            Require::Max => extreme(true),
            Require::Min => extreme(false),
        }
        .expect("at least one group");
        let holds = match self.require {
            Require::All => evaluated.iter().all(|g| g.holds),
            Require::Any => evaluated.iter().any(|g| g.holds),
            Require::Max | Require::Min => pick.holds,
        };
        let at = |g: &Group| if g.label.is_empty() { g.shown.clone() } else { format!("{} at {}", g.shown, g.label) };
        let ours = if self.for_each.is_some() {
            let which = match self.require {
                Require::All => "worst",
                Require::Any => "best",
                Require::Max => "largest",
                Require::Min => "smallest",
            };
            format!("{} ({which} of {})", at(pick), evaluated.len())
        } else {
            at(pick)
        };
        let detail = evaluated.iter().map(at).collect();
        let measured = evaluated.iter().all(|g| g.value.is_some());
        Outcome { holds, expect: self.expect.clone(), measured, ours, required: self.required(), detail }
    }

    fn required(&self) -> String {
        let m = self.metric.name();
        let each = match (&self.for_each, self.require) {
            (Some(c), Require::All) => format!(" for every {c}"),
            (Some(c), Require::Any) => format!(" for some {c}"),
            (Some(c), Require::Max) => format!(" for the largest over {c}"),
            (Some(c), Require::Min) => format!(" for the smallest over {c}"),
            (None, _) => String::new(),
        };
        match &self.kind {
            ClaimKind::Value { aggregate, op } => {
                format!("{aggregate:?}({m}) {}{each}", op.describe()).to_lowercase_first()
            }
            ClaimKind::Ratio { numerator, denominator, op } => {
                format!(
                    "{m}[{}] / {m}[{}] {}{each}",
                    describe_filters(numerator),
                    describe_filters(denominator),
                    op.describe()
                )
            }
            ClaimKind::All => format!("{m} on every run{each}"),
        }
    }

    fn eval_group(&self, table: &Table, label: String, rows: &[&Vec<Cell>]) -> Group {
        let fail = |label: String, why: String| Group {
            label,
            shown: why,
            holds: false,
            margin: f64::NEG_INFINITY,
            value: None,
        };
        let values = |rows: &[&Vec<Cell>]| -> Result<Vec<f64>, String> {
            if rows.is_empty() {
                return Err("no runs match".into());
            }
            let vs: Vec<f64> = rows.iter().filter_map(|r| self.metric.eval(table, r)).collect();
            if vs.len() < rows.len() {
                return Err(format!(
                    "{} has no value in {} of {} runs",
                    self.metric.name(),
                    rows.len() - vs.len(),
                    rows.len()
                ));
            }
            Ok(vs)
        };
        match &self.kind {
            ClaimKind::Value { aggregate, op } => {
                let vs = match values(rows) {
                    Ok(v) => v,
                    Err(e) => return fail(label, e),
                };
                let x = match aggregate {
                    Aggregate::Mean => mean_std(&vs).0,
                    Aggregate::Min => vs.iter().copied().fold(f64::INFINITY, f64::min),
                    Aggregate::Max => vs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                };
                Group { label, holds: op.holds(x), margin: op.margin(x), value: Some(x), shown: fmt_num(x) }
            }
            ClaimKind::Ratio { numerator, denominator, op } => {
                let num = select(table, rows.iter().copied(), numerator);
                let den = select(table, rows.iter().copied(), denominator);
                let (n, d) = match (values(&num), values(&den)) {
                    (Ok(n), Ok(d)) => (mean_std(&n).0, mean_std(&d).0),
                    (Err(e), _) => return fail(label, format!("numerator: {e}")),
                    (_, Err(e)) => return fail(label, format!("denominator: {e}")),
                };
                if d == 0.0 {
                    // x/0 is no number: refused, so that no `>` claim holds by a denominator of 0
                    return fail(label, format!("{}/0: undefined (the denominator's mean is 0)", fmt_num(n)));
                }
                let x = n / d;
                let shown = format!("{} ({} / {})", fmt_num(x), fmt_num(n), fmt_num(d));
                Group { label, holds: op.holds(x), margin: op.margin(x), value: Some(x), shown }
            }
            ClaimKind::All => {
                if rows.is_empty() {
                    return fail(label, "no runs match".into());
                }
                let mut yes = 0;
                for r in rows {
                    let cells: Vec<&Cell> = self.metric.columns().into_iter().map(|c| table.get(r, c)).collect();
                    match (&self.metric, cells.as_slice()) {
                        (Metric::Column(_), [Cell::Bool(b)]) => yes += usize::from(*b),
                        _ => return fail(label, format!("{} is not true/false", self.metric.name())),
                    }
                }
                let n = rows.len();
                Group {
                    label,
                    holds: yes == n,
                    margin: yes as f64 - n as f64,
                    value: Some(yes as f64 / n as f64),
                    shown: format!("{yes}/{n} runs"),
                }
            }
        }
    }
}

trait LowerFirst {
    fn to_lowercase_first(self) -> String;
}
impl LowerFirst for String {
    fn to_lowercase_first(self) -> String {
        let mut c = self.chars();
        match c.next() {
            Some(f) => f.to_lowercase().collect::<String>() + c.as_str(),
            None => self,
        }
    }
}

fn describe_filters(fs: &[Filter]) -> String {
    fs.iter()
        .map(|f| match &f.cond {
            Cond::Eq(v) => format!("{}={v}", f.column),
            Cond::AnyOf(vs) => {
                format!("{} in [{}]", f.column, vs.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(", "))
            }
            Cond::Range { min, max } => match (min, max) {
                (Some(a), Some(b)) => format!("{} in [{}, {}]", f.column, fmt_num(*a), fmt_num(*b)),
                (Some(a), None) => format!("{} ≥ {}", f.column, fmt_num(*a)),
                (None, Some(b)) => format!("{} ≤ {}", f.column, fmt_num(*b)),
                (None, None) => format!("any {}", f.column),
            },
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// agent × ber × 2 seeds; goodput: none 1.0/0.2, snoop 1.0/0.9; snoop completes, none does not at high ber.
    fn table() -> Table {
        let mut t = Table::new(vec![
            "agent".into(),
            "ber".into(),
            "seed".into(),
            "goodput_mbps".into(),
            "ideal".into(),
            "completed".into(),
        ]);
        for (agent, ber, seed, g, done) in [
            ("none", 1e-7, 1, 1.0, true),
            ("none", 1e-7, 2, 1.2, true),
            ("none", 1e-5, 1, 0.2, false),
            ("none", 1e-5, 2, 0.2, true),
            ("snoop", 1e-7, 1, 1.1, true),
            ("snoop", 1e-7, 2, 1.1, true),
            ("snoop", 1e-5, 1, 0.9, true),
            ("snoop", 1e-5, 2, 0.9, true),
        ] {
            t.rows.push(vec![
                Cell::Str(agent.into()),
                Cell::Float(ber),
                Cell::Int(seed),
                Cell::Float(g),
                Cell::Float(1.0),
                Cell::Bool(done),
            ]);
        }
        t
    }
    fn eq(c: &str, v: Cell) -> Filter {
        Filter { column: c.into(), cond: Cond::Eq(v) }
    }
    fn agent(a: &str) -> Vec<Filter> {
        vec![eq("agent", Cell::Str(a.into()))]
    }
    fn claim(kind: ClaimKind, metric: &str, filter: Vec<Filter>, for_each: Option<&str>, require: Require) -> Claim {
        Claim {
            text: "t".into(),
            paper: "p".into(),
            kind,
            metric: Metric::parse(metric).unwrap(),
            filter,
            for_each: for_each.map(String::from),
            require,
            expect: Expect::Holds,
        }
    }
    fn ratio(op: Op, filter: Vec<Filter>, for_each: Option<&str>, require: Require) -> Claim {
        claim(
            ClaimKind::Ratio { numerator: agent("snoop"), denominator: agent("none"), op },
            "goodput_mbps",
            filter,
            for_each,
            require,
        )
    }

    #[test]
    fn ratio_at_a_point() {
        let t = table();
        let c = ratio(Op::Ge(3.0), vec![eq("ber", Cell::Float(1e-5))], None, Require::All);
        let o = c.evaluate(&t);
        assert!(o.holds, "{o:?}");
        assert!(o.ours.starts_with("4.5"), "{}", o.ours);
        let c = ratio(Op::Ge(5.0), vec![eq("ber", Cell::Float(1e-5))], None, Require::All);
        assert!(!c.evaluate(&t).holds);
    }

    #[test]
    fn ratio_for_each_all_reports_worst_and_any_reports_best() {
        let t = table();
        // 1e-7: 1.1 / 1.1 = 1.0; 1e-5: 0.9 / 0.2 = 4.5
        assert!(ratio(Op::Ge(1.0), vec![], Some("ber"), Require::All).evaluate(&t).holds);
        let all = ratio(Op::Gt(1.0), vec![], Some("ber"), Require::All).evaluate(&t);
        assert!(!all.holds);
        assert!(all.ours.contains("ber=1e-7") && all.ours.contains("worst of 2"), "{}", all.ours);
        let any = ratio(Op::Ge(10.0), vec![], Some("ber"), Require::Any).evaluate(&t);
        assert!(!any.holds);
        assert!(any.ours.contains("ber=1e-5") && any.ours.contains("best"), "{}", any.ours);
        let any = ratio(Op::Ge(4.0), vec![], Some("ber"), Require::Any).evaluate(&t);
        assert!(any.holds);
        assert_eq!(any.detail.len(), 2);
    }

    #[test]
    fn between_op() {
        let t = table();
        let low = vec![Filter { column: "ber".into(), cond: Cond::Range { min: None, max: Some(5e-7) } }];
        assert!(ratio(Op::Between(0.9, 1.1), low.clone(), Some("ber"), Require::All).evaluate(&t).holds);
        assert!(!ratio(Op::Between(1.05, 1.1), low, Some("ber"), Require::All).evaluate(&t).holds);
    }

    #[test]
    fn value_claims_every_aggregate_and_op() {
        let t = table();
        let v = |aggregate, op, a: &str| {
            claim(ClaimKind::Value { aggregate, op }, "goodput_mbps", agent(a), None, Require::All).evaluate(&t)
        };
        assert!(v(Aggregate::Mean, Op::Lt(0.7), "none").holds); // mean 0.65
        assert!(!v(Aggregate::Mean, Op::Lt(0.6), "none").holds);
        assert!(v(Aggregate::Min, Op::Le(0.2), "none").holds);
        assert!(!v(Aggregate::Min, Op::Lt(0.2), "none").holds);
        assert!(v(Aggregate::Max, Op::Gt(1.1), "none").holds);
        assert!(!v(Aggregate::Max, Op::Gt(1.2), "none").holds);
        assert!(v(Aggregate::Max, Op::Ge(1.2), "none").holds);
        assert!(!v(Aggregate::Min, Op::Ge(1.0), "snoop").holds);
        // ratio metric: goodput / ideal
        let c = claim(
            ClaimKind::Value { aggregate: Aggregate::Min, op: Op::Ge(0.9) },
            "ratio:goodput_mbps/ideal",
            agent("snoop"),
            Some("ber"),
            Require::All,
        );
        assert!(c.evaluate(&t).holds);
    }

    #[test]
    fn all_claims() {
        let t = table();
        let c = |a: &str| claim(ClaimKind::All, "completed", agent(a), None, Require::All).evaluate(&t);
        let o = c("snoop");
        assert!(o.holds);
        assert_eq!(o.ours, "4/4 runs");
        assert!(!c("none").holds);
        // a non-boolean metric fails with a reason
        let o = claim(ClaimKind::All, "goodput_mbps", vec![], None, Require::All).evaluate(&t);
        assert!(!o.holds && o.ours.contains("not true/false"));
    }

    #[test]
    fn max_and_min_take_the_extreme_group() {
        let t = table();
        // ratios by ber: 1e-7: 1.0, 1e-5: 4.5
        let max = ratio(Op::Between(4.0, 5.0), vec![], Some("ber"), Require::Max).evaluate(&t);
        assert!(max.holds, "{max:?}");
        assert!(max.ours.contains("ber=1e-5") && max.ours.contains("largest of 2"), "{}", max.ours);
        // some group reaches 1.0, but the largest is 4.5: "up to about 1" does not hold
        assert!(ratio(Op::Between(0.9, 1.1), vec![], Some("ber"), Require::Any).evaluate(&t).holds);
        assert!(!ratio(Op::Between(0.9, 1.1), vec![], Some("ber"), Require::Max).evaluate(&t).holds);
        let min = ratio(Op::Between(0.9, 1.1), vec![], Some("ber"), Require::Min).evaluate(&t);
        assert!(min.holds && min.ours.contains("ber=1e-7"), "{}", min.ours);
        // a group without a number is the pick and fails the claim
        let mut t2 = table();
        t2.rows.retain(|r| !(r[0] == Cell::Str("none".into()) && r[1] == Cell::Float(1e-7)));
        let o = ratio(Op::Ge(0.0), vec![], Some("ber"), Require::Max).evaluate(&t2);
        assert!(!o.holds && o.ours.contains("no runs match"), "{}", o.ours);
    }

    #[test]
    fn a_zero_denominator_is_refused() {
        let mut t = table();
        let g = t.columns.iter().position(|c| c == "goodput_mbps").unwrap();
        for r in t.rows.iter_mut().filter(|r| r[0] == Cell::Str("none".into())) {
            r[g] = Cell::Float(0.0);
        }
        // snoop / none = x/0: no `>` or `>=` claim may hold by it
        let o = ratio(Op::Gt(1.0), vec![eq("ber", Cell::Float(1e-5))], None, Require::All).evaluate(&t);
        assert!(!o.holds);
        assert!(o.ours.contains("/0: undefined"), "{}", o.ours);
        assert!(!ratio(Op::Ge(0.0), vec![], Some("ber"), Require::Any).evaluate(&t).holds);
    }

    #[test]
    fn outcomes_compare_with_the_record() {
        let t = table();
        let mut c = ratio(Op::Ge(3.0), vec![eq("ber", Cell::Float(1e-5))], None, Require::All);
        assert!(c.evaluate(&t).as_expected());
        c.expect = Expect::Fails { why: "traced".into() };
        let o = c.evaluate(&t);
        assert!(o.holds && !o.as_expected(), "a recorded divergence that holds is noticed");
        assert_eq!(o.expect.why(), Some("traced"));
        c.kind = ClaimKind::Ratio { numerator: agent("snoop"), denominator: agent("none"), op: Op::Ge(5.0) };
        assert!(c.evaluate(&t).as_expected());
        // a recorded divergence that fails only because nothing can be measured is not as recorded
        c.filter = vec![eq("ber", Cell::Float(0.5))];
        let o = c.evaluate(&t);
        assert!(!o.holds && !o.measured && !o.as_expected(), "{o:?}");
    }

    #[test]
    fn no_matching_rows_fail() {
        let t = table();
        let o = ratio(Op::Ge(1.0), vec![eq("ber", Cell::Float(0.5))], None, Require::All).evaluate(&t);
        assert!(!o.holds);
        assert!(o.ours.contains("no runs match"), "{}", o.ours);
    }
}
