//! The experiment loader (`lasthop_experiment::experiment::Experiment::from_str`) on arbitrary text, as if read
//! from `experiments/fuzz.toml` (base scenarios resolve to the repository's `examples/`, as for the real
//! experiment files the corpus is seeded from).
//!
//! Invariants, not only "no panic":
//! - an error names the file and a line within the text, and says what is wrong;
//! - an experiment that loads expands: every grid point (full and `--quick`) gets its scenario from the
//!   overrides the loader accepted, one point per combination of axis values, each with one value per axis;
//! - loading is deterministic: the same text gives the same grid points.
#![no_main]

use lasthop_experiment::experiment::Experiment;
use std::path::Path;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let file = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../experiments/fuzz.toml"));
    match Experiment::from_str(text, file) {
        Err(e) => {
            let shown = e.to_string();
            assert!(shown.starts_with(&file.display().to_string()), "{shown}");
            let line = e.line.unwrap_or_else(|| panic!("no line: {shown}"));
            assert!((1..=text.lines().count().max(1) + 1).contains(&line), "line {line} of {}: {shown}", text.len());
            assert!(!e.message.trim().is_empty(), "{shown}");
        }
        Ok(exp) => {
            // One second load serves the determinism check of both grids.
            let again = Experiment::from_str(text, file).expect("loads the second time");
            for quick in [false, true] {
                let points = exp.points(quick).unwrap_or_else(|m| panic!("accepted overrides fail: {m}"));
                let expected: usize = exp.grid.iter().map(|a| exp.axis_values(a, quick).len()).product();
                assert_eq!(points.len(), expected, "grid points (quick: {quick})");
                assert!(points.iter().all(|p| p.values.len() == exp.grid.len()));
                let again = again.points(quick).unwrap();
                assert!(again.iter().map(|p| &p.scenario).eq(points.iter().map(|p| &p.scenario)), "not deterministic");
            }
            let columns = exp.columns();
            assert!(exp.grid_columns().iter().all(|c| columns.contains(c)), "{columns:?}");
        }
    }
});
