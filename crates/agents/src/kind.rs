//! The one list of what a node can run on the packets it forwards, named as scenario files, the command
//! line and JSON results spell it: the simulator runs every kind, the real base station a few.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// What a node runs on the packets it forwards: no agent, one of the agents of this crate, or a split
/// connection (which terminates TCP at the node instead of watching it, and so is not an agent in a chain).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AgentKind {
    /// Plain forwarding: no agent at all.
    #[default]
    None,
    /// Snoop (Balakrishnan 1995 §3.1): caches data toward the mobile, retransmits locally, hides DUPACKs.
    Snoop,
    /// ELN marking (Balakrishnan 1998 §3): records corruption holes in data from the mobile, marks ACKs.
    Eln,
    /// ELN filtering at A of a wireless transit link (Balakrishnan 1998 "Cellular Wireless Transit Links").
    ElnFilter,
    /// ELN for a fixed sender (E2E-ELN of the ToN'97 comparison): the last-hop BS marks the mobile's
    /// DUPACKs for segments it forwarded ([`crate::eln::ElnRole::MarkForwarded`]).
    ElnFixed,
    /// SACK-based NACKs to a mobile sender (Balakrishnan 1995 §3.2).
    Nack,
    /// M-TCP's supervisor host (Brown 1997): the split connection of [`AgentKind::Split`] with end-to-end
    /// acknowledgments, the last byte held back to freeze the sender while the mobile is cut off.
    Mtcp,
    /// I-TCP's split connection (Balakrishnan 1995 §2): the node terminates connections toward the mobile and
    /// relays them over its own TCP.
    Split,
    /// The split connection with SACK over the wireless hop (SPLIT-SACK of the ToN'97 comparison).
    SplitSack,
}

impl AgentKind {
    /// Every kind, in the order of the declaration.
    pub const ALL: [AgentKind; 9] = [
        AgentKind::None,
        AgentKind::Snoop,
        AgentKind::Eln,
        AgentKind::ElnFilter,
        AgentKind::ElnFixed,
        AgentKind::Nack,
        AgentKind::Mtcp,
        AgentKind::Split,
        AgentKind::SplitSack,
    ];

    /// The name scenario files, the command line and results use (as serde spells it).
    pub fn name(self) -> &'static str {
        match self {
            AgentKind::None => "none",
            AgentKind::Snoop => "snoop",
            AgentKind::Eln => "eln",
            AgentKind::ElnFilter => "eln-filter",
            AgentKind::ElnFixed => "eln-fixed",
            AgentKind::Nack => "nack",
            AgentKind::Mtcp => "mtcp",
            AgentKind::Split => "split",
            AgentKind::SplitSack => "split-sack",
        }
    }

    /// A split connection (I-TCP's or M-TCP's) terminates TCP at the node: it replaces forwarding and
    /// cannot be chained.
    pub fn is_split(self) -> bool {
        matches!(self, AgentKind::Split | AgentKind::SplitSack | AgentKind::Mtcp)
    }
}

impl FromStr for AgentKind {
    type Err = String;
    fn from_str(s: &str) -> Result<AgentKind, String> {
        AgentKind::ALL.into_iter().find(|k| k.name() == s).ok_or_else(|| {
            let names: Vec<String> = AgentKind::ALL.iter().map(|k| format!("\"{}\"", k.name())).collect();
            format!("unknown agent {s:?}, expected one of {}", names.join(", "))
        })
    }
}

impl fmt::Display for AgentKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::AgentKind;

    #[test]
    fn every_kind_parses_from_its_name_and_round_trips_through_serde() {
        for k in AgentKind::ALL {
            assert_eq!(k.name().parse::<AgentKind>(), Ok(k));
            assert_eq!(k.to_string(), k.name());
            let json = serde_json::to_string(&k).unwrap();
            assert_eq!(json, format!("\"{}\"", k.name()));
            assert_eq!(serde_json::from_str::<AgentKind>(&json).unwrap(), k);
        }
        let names: Vec<&str> = AgentKind::ALL.iter().map(|k| k.name()).collect();
        assert_eq!(names, ["none", "snoop", "eln", "eln-filter", "eln-fixed", "nack", "mtcp", "split", "split-sack"]);
    }

    #[test]
    fn an_unknown_name_is_refused_with_the_names_that_exist() {
        let e = "snop".parse::<AgentKind>().unwrap_err();
        assert!(e.contains("\"snop\"") && e.contains("\"snoop\"") && e.contains("\"split-sack\""), "{e}");
        assert!("Snoop".parse::<AgentKind>().is_err(), "names are exact, as in scenario files");
        assert!(serde_json::from_str::<AgentKind>("\"eln_filter\"").is_err());
    }
}
