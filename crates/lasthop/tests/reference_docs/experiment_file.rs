//! `experiment-file.md` against the experiment parser: the keys of every table it documents are exactly the
//! ones the parser accepts (its "unknown field …, expected one of …" error lists them), and each default
//! written as a plain TOML value gives, set explicitly, the same experiment as the key left out.

use crate::markdown::{check_table, marked_tables, page, repo};
use lasthop::experiment::Experiment;

/// A small valid experiment on `examples/snoop.toml`, with one table of each kind.
const BASE: &str = r#"
id = "docs-probe"
title = "T"
paper = "Balakrishnan 1995 Fig. 7"
scenario = "../examples/snoop.toml"
[grid.ber]
path = "links.wavelan.error.ber"
values = [1e-6, 2e-6]
[figure]
kind = "line"
x = "ber"
y = "goodput_mbps"
[[claims]]
text = "t"
paper = "p"
kind = "value"
metric = "goodput_mbps"
op = ">"
value = 0.0
"#;

/// Where in [`BASE`] the keys of each documented table go.
fn at(table: &str) -> Option<&'static str> {
    Some(match table {
        "" => "",
        "quick" => "quick",
        "grid.AXIS" => "grid.ber",
        "figure" => "figure",
        "claims" => "claims.0",
        _ => return None,
    })
}

fn read(doc: &toml::Value) -> Result<String, String> {
    let text = toml::to_string(doc).map_err(|e| e.to_string())?;
    let file = repo().join("experiments/docs-probe.toml");
    Experiment::from_str(&text, &file).map(|e| format!("{e:?}")).map_err(|e| e.to_string())
}

#[test]
fn every_experiment_key_is_documented_with_its_default() {
    let base: toml::Value = toml::from_str(BASE).unwrap();
    let tables = marked_tables(&page("experiment-file.md"), "fields");
    let mut problems = Vec::new();
    for table in ["", "quick", "grid.AXIS", "figure", "claims"] {
        if !tables.iter().any(|t| t.arg == table) {
            problems.push(format!("experiment-file.md documents no table `{table}`"));
        }
    }
    for t in &tables {
        let place = format!("experiment-file.md:{} `{}`", t.line, t.arg);
        let Some(at) = at(&t.arg) else {
            problems.push(format!("{place}: not a table of the experiment file"));
            continue;
        };
        problems.extend(check_table(&place, &base, at, read, t));
    }
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
}
