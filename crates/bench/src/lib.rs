//! lasthop's criterion benchmarks live in `benches/` (`cargo bench -p lasthop-bench`; the user guide's
//! performance page has the figures). Kept out of the other crates so that building their tests does not
//! build criterion.
