//! Mobile IP with seed 001's base-station buffering, as a feature of the simulator.
//!
//! What exists: the protocol entities (`lasthop_agents::mip`: home agent, foreign agent, base station with
//! the per-mobile buffer, correspondent, mobile), their message formats (`lasthop_wire::mip`), Eq. (1)–(3)
//! ([`analysis`]) and the erroneous-fast-retransmit detector ([`erroneous`]).

pub mod analysis;
pub mod config;
pub mod erroneous;
pub(crate) mod feature;

pub use config::{CellConfig, CleanupKind, MipScheme, MobileIpConfig};
