//! The `lasthop` command-line program: run one scenario (`lasthop run`) or reproduce the papers' figures and
//! claims from experiment files (`lasthop reproduce`). The scenario and experiment file formats, the CLI and
//! the results are documented in the user guide's reference (`docs/src/reference/`); [`reproduce::reproduce`]
//! says what a reproduction writes.

pub mod channel;
pub mod cli;
pub mod figure;
pub mod net;
pub mod report;
pub mod reproduce;
pub mod runner;
pub mod scale;
pub mod twin;

// Experiment parsing, claims and the results table live in `lasthop-experiment` (fuzzed without plotters).
pub use lasthop_experiment::{claims, experiment, table};
