//! Experiment files (`experiments/*.toml`) without plotting or running: parsing and validation against the
//! base scenario ([`experiment`]), claims ([`claims`]) and the results table they read ([`table`]). A crate of
//! its own so that the fuzz targets can load experiment files; `lasthop` re-exports all three modules.

pub mod claims;
pub mod experiment;
pub mod table;
