//! Handoff on real packets (Balakrishnan 1995 §4–§7; Caceres 1995 for the plain baseline): drivers that run
//! the handoff agents of `lasthop_agents::handoff` (the same code the simulator drives) on Linux, and a
//! namespace testbed where a mobile moves between two base stations while kernel TCP sends to it.
//!
//! - [`node`]: the sans-IO contract of a driver (frames in on numbered ports, frames out) and its I/O loop;
//! - [`ha`]: the home agent, inside the wired router (one tunnelled copy per member of the mobile's group);
//! - [`bs`]: the base station in the handoff role, with its cell's emulated hop and beacons;
//! - [`mh`]: the mobile's radio and controller, deciding by time schedule or beacon strength (leaving a
//!   cell whose beacons stop; fast retransmit after handoff), and the per-handoff measures;
//! - [`testbed`]: FH — HA — BS1, BS2 — MH, one transfer, teardown on every exit path.

pub mod bs;
pub mod ha;
pub mod mh;
pub mod node;
pub mod testbed;
#[cfg(test)]
mod tests;

pub use mh::HandoffRecord;
pub use testbed::{run_handoff_transfer, run_handoff_transfer_with, HandoffTestbed};

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Which handoff the mobile and the network run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HandoffScheme {
    /// Balakrishnan 1995: the home agent tunnels to the group (primary and buffering base stations); the
    /// mobile's request names the IP IDs of its last three packets; the new primary sends from its buffer.
    Multicast,
    /// Caceres 1995, break-before-make: greeting, notify, the old base station re-tunnels what still
    /// reaches it; what it had sent into the old cell is lost.
    Plain,
    /// Plain, plus Caceres 1995's fast retransmit after handoff: when the new base station's greeting ACK
    /// arrives, the mobile's controller sends three copies of its kernel's last ACK through the new cell,
    /// and the fixed host's unmodified TCP fast-retransmits instead of waiting for its timeout.
    #[serde(rename = "fast-rexmit")]
    FastRexmit,
}

impl HandoffScheme {
    /// The handoff protocol the agents run (fast retransmit is the plain one plus the mobile's ACKs).
    pub fn agents(self) -> lasthop_agents::handoff::Scheme {
        match self {
            HandoffScheme::Multicast => lasthop_agents::handoff::Scheme::Multicast,
            HandoffScheme::Plain | HandoffScheme::FastRexmit => lasthop_agents::handoff::Scheme::Plain,
        }
    }
}

impl std::str::FromStr for HandoffScheme {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "multicast" => Ok(HandoffScheme::Multicast),
            "plain" => Ok(HandoffScheme::Plain),
            "fast-rexmit" => Ok(HandoffScheme::FastRexmit),
            other => {
                Err(format!("unknown handoff scheme {other:?}: expected \"multicast\", \"plain\" or \"fast-rexmit\""))
            }
        }
    }
}

impl std::fmt::Display for HandoffScheme {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            HandoffScheme::Multicast => "multicast",
            HandoffScheme::Plain => "plain",
            HandoffScheme::FastRexmit => "fast-rexmit",
        })
    }
}

/// What makes the mobile hand off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HandoffBy {
    /// Every `handoff_every_s`, to the other cell (Balakrishnan 1995 Table 1's experiment).
    #[default]
    Schedule,
    /// Beacon strength with hysteresis as the mobile walks between the cells (Balakrishnan 1995 §4, §6).
    Beacons,
}

/// What the handoff testbed adds to a run's result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HandoffSummary {
    pub scheme: HandoffScheme,
    pub handoffs: Vec<HandoffRecord>,
    /// Every driver's counters, by `host.name` (`ha.control_refused`, `bs2.resent_from_buffer`, ...).
    pub counters: BTreeMap<String, u64>,
}

impl HandoffSummary {
    /// Mean handoff latency, ms, over the handoffs that completed (`None`: none did).
    pub fn mean_latency_ms(&self) -> Option<f64> {
        let l: Vec<f64> = self.handoffs.iter().filter_map(|h| h.latency_ms).collect();
        (!l.is_empty()).then(|| l.iter().sum::<f64>() / l.len() as f64)
    }

    /// Segments lost at handoffs, all handoffs together.
    pub fn packets_lost(&self) -> u64 {
        self.handoffs.iter().filter_map(|h| h.lost).sum()
    }
}
