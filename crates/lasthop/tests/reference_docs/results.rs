//! `results.md` lists every column of `results.csv` the code writes, in the code's lists, and no other.

use crate::markdown::{compare, marked_tables, page};
use lasthop::table;

#[test]
fn every_results_column_is_documented() {
    // The core's lists, then each workload's row columns and each protocol family's columns under its
    // family's name.
    let core: [(&str, &[&str]); 7] = [
        ("RUN_COLUMNS", table::RUN_COLUMNS),
        ("TESTBED_CONFIG_COLUMNS", table::TESTBED_CONFIG_COLUMNS),
        ("TESTBED_COLUMNS", table::TESTBED_COLUMNS),
        ("TESTBED_HANDOFF_COLUMNS", table::TESTBED_HANDOFF_COLUMNS),
        ("SCALE_COLUMNS", table::SCALE_COLUMNS),
        ("TWIN_CONFIG_COLUMNS", table::TWIN_CONFIG_COLUMNS),
        ("TWIN_COLUMNS", table::TWIN_COLUMNS),
    ];
    let lists: Vec<(&str, &[&str])> = core
        .into_iter()
        .chain(lasthop_sim::row_columns().map(|(workload, r)| (workload, r.names)))
        .chain(lasthop_sim::result_columns().map(|(family, c)| (family, c.names)))
        .collect();
    let tables = marked_tables(&page("results.md"), "columns");
    let mut problems = Vec::new();
    for &(name, columns) in &lists {
        let in_code: Vec<String> = columns.iter().map(|c| c.to_string()).collect();
        match tables.iter().find(|t| t.arg == name) {
            Some(t) => problems.extend(compare(name, &t.names(), &in_code)),
            None => problems.push(format!("results.md has no table marked `<!-- columns: {name} -->`")),
        }
    }
    for t in tables.iter().filter(|t| !lists.iter().any(|(name, _)| *name == t.arg)) {
        problems.push(format!("results.md:{}: `{}` is no list of columns in the code", t.line, t.arg));
    }
    // The lists make up every table a run can have: a sim run's columns are these, in this order (with
    // every family's table in the scenario).
    let grid = vec!["agent".to_string()];
    let expected: Vec<String> = ["agent", "seed"]
        .into_iter()
        .chain(table::FLOW_COLUMNS.iter().copied())
        .chain(table::RUN_COLUMNS.iter().copied())
        .chain(lasthop_sim::result_columns().flat_map(|(_, c)| c.names.iter().copied()))
        .map(String::from)
        .collect();
    assert_eq!(
        table::sim_columns(&grid, false, &|_| true),
        expected,
        "results.csv's columns are no longer grid, seed, flow, run, families"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
