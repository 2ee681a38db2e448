//! The experiment file's parser and checks, on whole files and section by section.

use super::claims_spec::*;
use super::overrides::*;
use super::runner::*;
use super::schema::*;
use super::*;
use crate::claims::{ClaimKind, Cond, Expect, Op, Require};
use crate::table;

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
    assert_eq!((e.line, e.field.as_str()), (Some(line_of(&text, "set = {")), "quick.set.\"tcp.max_window\""), "{e}");

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
        vec![Metric::Column("goodput_mbps".into()), Metric::Ratio("goodput_mbps".into(), "ideal_goodput_mbps".into())]
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

    let missing = text.replace("variants.none = { \"nodes.bs.agent\" = \"none\", \"tcp.variant\" = \"reno\" }\n", "");
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
    assert_eq!((names.flows.as_slice(), names.web.as_slice()), (&["bulk".to_string()][..], &["pages".to_string()][..]));
    let pages = Spanned::new(0..0, "pages".to_string());
    assert!(names.rows_from_web(RunnerKind::Sim, Some(&pages)));
    assert!(!names.rows_from_web(RunnerKind::Sim, None), "flows come first");
    assert!(RowNames::of(&only_web).rows_from_web(RunnerKind::Sim, None));
    assert!(!RowNames::of(&only_web).rows_from_web(RunnerKind::Testbed, None));
}

#[test]
fn grid_axes_may_not_take_results_columns_but_testbed_grids_may_take_its_settings() {
    let plain = toml::Value::Table(toml::Table::new());
    let sim = reserved_columns(RunnerKind::Sim, false, &plain);
    for c in ["goodput_mbps", "seed", "downloads", "flow"] {
        assert!(sim.iter().any(|r| r == c), "{c}: {sim:?}");
    }
    // `tcp` reports the variant a grid sets (Eom 2002's column contract); so do Mobile IP's experiments
    let mobile_ip: toml::Value = toml::from_str("[mobile_ip]").unwrap();
    for base in [&plain, &mobile_ip] {
        assert!(!reserved_columns(RunnerKind::Sim, false, base).iter().any(|r| r == "tcp"));
    }
    let testbed = reserved_columns(RunnerKind::Testbed, false, &plain);
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
    let cols = Columns::new(RunnerKind::Sim, false, &toml::Value::Table(toml::Table::new()), &grid);
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
