//! Handoff agents (Balakrishnan 1995 §4–§6; Caceres 1995): the home agent, the base station's handoff role and buffer,
//! and the mobile host's controller, each a sans-IO state machine like Snoop.
//!
//! # Multicast handoff with buffering (Balakrishnan 1995)
//!
//! The [`HomeAgent`] intercepts packets for a mobile's home address and tunnels them (IP-in-IP) to the
//! mobile's group: the primary BS, which forwards to the mobile, and buffering BSs (likely handoff
//! targets), which keep the last `buffer_packets` (12, §6) in a circular buffer and mirror Snoop's cache
//! without ACKs, freeing it first in first out (§5). Handoffs are mobile-initiated ([`MobileHost::handoff`]):
//! the mobile sends a `Forward` request to the new primary carrying the IP IDs of the last three packets it
//! received, and `Buffer` / `Stop` to the others. The new primary frees what precedes the last ID it finds
//! (or sends the whole buffer when none is found), forwards the rest, and answers `Ack`; its Snoop state is
//! rebuilt from the mirror and synchronised by the mobile's first ACK. The mobile's table holds exactly one
//! primary at any time; base stations ignore requests older than the last they applied, so reordered
//! messages cannot make a second one.
//!
//! # Plain handoff (Caceres 1995, the baseline)
//!
//! Break-before-make: the mobile greets the new BS naming the old one; the new BS answers `GreetingAck`,
//! serves the mobile, and notifies the old BS and the home agent; the old BS re-tunnels what still reaches
//! it to the new BS and answers `NotifyAck`; the new BS then tells the mobile `Complete`. What the old BS
//! sent over the air after the mobile left is lost.
//!
//! # Fast retransmit after handoff (Caceres 1995)
//!
//! [`MobileHost::handle_received`] reports [`MhEvent::Accepted`] when the new BS accepts the handoff; the host
//! then makes its TCP send three duplicate ACKs (receiving) or retransmit at once (sending).
//!
//! # Beacon-driven handoff (Balakrishnan 1995 §4, §6)
//!
//! [`BeaconMonitor`] keeps the recent beacon strengths per base station and decides, with hysteresis, the
//! primary and the likely targets; [`MobileHost::handoff`] and [`MobileHost::set_buffering`] turn a decision
//! into control messages.
//!
//! Control messages are real IPv4 packets ([`msg`]), so they queue and take link delays like data.

pub mod beacon;
mod bs;
mod ha;
mod mh;
pub mod msg;
#[cfg(test)]
mod tests;

pub use beacon::{BeaconConfig, BeaconMonitor, Decision};
pub use bs::{BaseStation, BsConfig, BsStats, Role, RESENT_FROM_BUFFER};
pub use ha::HomeAgent;
pub use mh::{MhEvent, MobileHost, Scheme, IDS_SENT};
pub use msg::{Control, Kind, PROTO_HANDOFF};
