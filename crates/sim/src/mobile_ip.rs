//! Mobile IP with Eom 2002's base-station buffering, as a feature of the simulator (`[mobile_ip]`).
//!
//! What exists: the protocol entities (`lasthop_agents::mip`: home agent, foreign agent, base station with
//! the per-mobile buffer, correspondent, mobile) and their messages (`lasthop_wire::mip`); their placement on
//! a scenario's nodes, scheduled handoffs and per-handoff measurements ([`feature`], configured by
//! [`config`]), Eq. (1)–(3) evaluated per handoff; the mobile's own one-or-two-packet buffer (§4.2), which
//! sees what the mobile sends through the core's send hook (`Feature::on_host_send`); a BS node's own agent
//! (Snoop) on the segments the BS passes on; the erroneous-fast-retransmit detector ([`erroneous`]) and
//! Eq. (1)–(3) ([`analysis`]); the `mip-smooth`, `mip-seq`, `mip-buffer`, `mip-buffer-size`,
//! `mip-handoff-rate`, `mip-analysis`, `mip-variants` and `mip-snoop` experiments.

pub mod analysis;
pub mod config;
pub mod erroneous;
pub(crate) mod feature;
mod metrics;

pub(crate) use config::FAMILY;
pub use config::{CellConfig, CleanupKind, MipScheme, MobileIpConfig};
pub use metrics::{MipHandoffMetrics, MobileIpMetrics};
