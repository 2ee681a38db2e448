//! Which agents the base station runs, and the one place that constructs them.
//!
//! Everything else holds `Box<dyn Agent + Send>`; when `lasthop_agents::snoop`'s constructor or
//! configuration changes, only [`build_snoop`] changes.

use lasthop_agents::snoop::{Snoop, SnoopConfig};
use lasthop_agents::Agent;
use serde::{Deserialize, Serialize};
use std::str::FromStr;

/// An agent the base station can run on every packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum AgentKind {
    /// Plain forwarding: no agent at all.
    #[default]
    None,
    /// Berkeley Snoop (Balakrishnan 1995).
    Snoop,
    /// I-TCP's split connection (Balakrishnan 1995 §2): not a per-packet agent but a transparent proxy in the base
    /// station's kernel ([`crate::split`]); the namespace testbed sets it up. Its forwarding loop carries
    /// the emulated hop with no agent.
    Split,
}

impl FromStr for AgentKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "none" | "plain" => Ok(AgentKind::None),
            "snoop" => Ok(AgentKind::Snoop),
            "split" => Ok(AgentKind::Split),
            other => Err(format!("unknown agent {other:?}: expected \"none\", \"snoop\" or \"split\"")),
        }
    }
}

impl std::fmt::Display for AgentKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            AgentKind::None => "none",
            AgentKind::Snoop => "snoop",
            AgentKind::Split => "split",
        })
    }
}

/// The agent chain for `kind`, in the order packets pass through it (empty: plain forwarding; the split
/// connection has no per-packet agent).
pub fn build_chain(kind: AgentKind) -> Vec<Box<dyn Agent + Send>> {
    match kind {
        AgentKind::None | AgentKind::Split => Vec::new(),
        AgentKind::Snoop => vec![build_snoop()],
    }
}

/// The single place Snoop is constructed: adapt here when its configuration grows knobs for `lasthop bs`.
pub fn build_snoop() -> Box<dyn Agent + Send> {
    // A real base station sees untrusted traffic: key the connection table's hash randomly so a flood of
    // chosen 4-tuples cannot pile into one bucket.
    Box::new(Snoop::new(SnoopConfig { hash_seed: rand::random(), ..SnoopConfig::default() }))
}
