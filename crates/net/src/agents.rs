//! Which agents the base station runs, and the one place that constructs them.
//!
//! Everything else holds `Box<dyn Agent + Send>`; when `lasthop_agents::snoop`'s constructor or
//! configuration changes, only [`build_snoop`] changes.

use crate::NetError;
use lasthop_agents::snoop::{Snoop, SnoopConfig};
use lasthop_agents::Agent;

pub use lasthop_agents::AgentKind;

/// What the real base station runs: plain forwarding or Snoop on every packet, and, as a proxy in its kernel
/// that the namespace testbed sets up, I-TCP's split connection. The other kinds run in the simulator only.
pub const REAL_KINDS: [AgentKind; 3] = [AgentKind::None, AgentKind::Snoop, AgentKind::Split];

/// `kind` if the real base station runs it ([`REAL_KINDS`]); otherwise an error that names it.
pub fn check_real(kind: AgentKind) -> Result<AgentKind, NetError> {
    if REAL_KINDS.contains(&kind) {
        return Ok(kind);
    }
    Err(NetError::Config(format!(
        "agent \"{kind}\" runs in the simulator only: the real base station runs \"none\" (plain forwarding) or \
         \"snoop\", and the namespace testbed also \"split\" (I-TCP's proxy in the base station's kernel)"
    )))
}

/// The agent chain for `kind`, in the order packets pass through it (empty: plain forwarding; the split
/// connection has no per-packet agent). A kind the real base station does not run is refused.
pub fn build_chain(kind: AgentKind) -> Result<Vec<Box<dyn Agent + Send>>, NetError> {
    match check_real(kind)? {
        AgentKind::Snoop => Ok(vec![build_snoop()]),
        _ => Ok(Vec::new()),
    }
}

/// The single place Snoop is constructed: adapt here when its configuration grows knobs for `lasthop bs`.
pub fn build_snoop() -> Box<dyn Agent + Send> {
    // A real base station sees untrusted traffic: key the connection table's hash randomly so a flood of
    // chosen 4-tuples cannot pile into one bucket.
    Box::new(Snoop::new(SnoopConfig { hash_seed: rand::random(), ..SnoopConfig::default() }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BsConfig, TestbedConfig};

    #[test]
    fn the_real_base_station_refuses_the_simulator_only_kinds_by_name() {
        for kind in AgentKind::ALL {
            let bs = BsConfig { agent: kind, wired_if: "a".into(), wireless_if: "b".into(), ..BsConfig::default() };
            let testbed = TestbedConfig { agent: kind, ..TestbedConfig::default() };
            if REAL_KINDS.contains(&kind) {
                assert!(build_chain(kind).is_ok(), "{kind}");
                assert!(testbed.validate().is_ok(), "{kind}");
                assert_eq!(bs.validate().is_ok(), kind != AgentKind::Split, "{kind}");
                continue;
            }
            for e in [build_chain(kind).err().unwrap(), bs.validate().unwrap_err(), testbed.validate().unwrap_err()] {
                let e = e.to_string();
                assert!(e.contains(&format!("agent \"{kind}\"")), "names the kind: {e}");
                assert!(e.contains("\"none\"") && e.contains("\"snoop\"") && e.contains("\"split\""), "{e}");
            }
        }
        assert_eq!(build_chain(AgentKind::Snoop).unwrap().len(), 1);
        assert!(build_chain(AgentKind::None).unwrap().is_empty());
    }
}
