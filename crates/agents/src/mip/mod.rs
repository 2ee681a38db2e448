//! Mobile IP (IPv4, FA care-of addresses) with Eom 2002's base-station buffering, as sans-IO entities:
//!
//! - [`HomeAgent`]: binding table, IP-in-IP tunnelling to the care-of address, registration, and (route
//!   optimisation) a binding update to the correspondent on a binding warning (§2.1).
//! - [`ForeignAgent`]: the subnetwork's router. Visitor list; agent advertisements, broadcast at most once a
//!   second and sent at once on a BS's notification (Fig. 2); registration relay; with route optimisation
//!   a binding update to the previous FA, a binding cache by which it re-tunnels what still reaches it for a
//!   departed mobile (smooth handoff), and binding warnings to the HA (§2.1). With buffering it sends the old
//!   BS the *forward* message and re-tunnels what comes back (§2.2); with the re-ordering rule it sends later
//!   arrivals down through the old BS too (§4.2, Fig. 17).
//! - [`BaseStation`]: a link-layer bridge with the local handoff protocol (beacons every 50 ms, handoff
//!   request → notification) and the per-mobile FIFO [`HandoffBuffer`] (head drop; optional ACK cleanup by
//!   the mobile's TCP ACKs or by link-layer ACKs, §4.1).
//! - [`Correspondent`]: the correspondent's binding cache (route optimisation): tunnels straight to the
//!   care-of address once the HA's binding update arrives.
//! - [`MobileNode`]: the mobile's side: handoff request on a new BS's beacon, registration on a new FA's
//!   advertisement, and the small buffer of its own last one or two data packets (§4.2).
//!
//! The messages are real packets ([`lasthop_wire::mip`]): registration and binding messages on UDP 434, the
//! agent advertisement as ICMP, the local messages as IPv4 protocol 254 ([`lasthop_wire::proto::MIP_LOCAL`]).
//! Nothing here reads a clock or draws a number; every entity is an [`Agent`](crate::Agent).
//!
//! Beyond this module: the message formats (`lasthop_wire::mip`), and the simulator's Mobile IP
//! (`lasthop_sim::mobile_ip`), which places these entities on a scenario's nodes (CH, HA, FAs, BSs, delay
//! stations), schedules the handoffs and drives them in the Eom 2002 experiments (`experiments/mip-*.toml`).

mod bs;
mod buffer;
mod cn;
mod fa;
mod ha;
mod mh;
#[cfg(test)]
pub(crate) mod tests;

pub use bs::{BaseStation, BsConfig, BsStats};
pub use buffer::{Cleanup, HandoffBuffer};
pub use cn::{CnStats, Correspondent};
pub use fa::{FaConfig, FaStats, ForeignAgent};
pub use ha::{HaConfig, HaStats, HomeAgent};
pub use mh::{MnConfig, MnEvent, MnStats, MobileNode};

use crate::flow::FlowKey;
use bytes::Bytes;
use lasthop_wire::ipip;
use lasthop_wire::ipv4::{Ipv4Packet, PROTO_TCP, PROTO_UDP};
use lasthop_wire::mip::{PORT, PROTO_ICMP, PROTO_MIP_LOCAL};
use lasthop_wire::{SeqNum, TcpPacket};
use std::net::Ipv4Addr;

/// What every entity does with a packet it cannot parse: drop it and count it.
fn drop_malformed(count: &mut u64, out: &mut Vec<crate::Action>) {
    *count += 1;
    out.push(crate::Action::Drop(crate::DropReason::Malformed));
}

/// IPv4 identification numbers of the packets an entity makes (tunnels, messages).
#[derive(Debug, Default)]
struct Ident(u16);

impl Ident {
    fn next(&mut self) -> u16 {
        self.0 = self.0.wrapping_add(1);
        self.0
    }
}

fn encapsulate(inner: &[u8], src: Ipv4Addr, dst: Ipv4Addr, ident: &mut Ident) -> Bytes {
    ipip::encapsulate(inner, src, dst, ident.next(), 64)
}

/// The TCP fields the buffers read: the connection in the packet's own direction, its sequence number,
/// its cumulative ACK (when the ACK flag is set) and its payload length. `None` for anything but a whole,
/// readable TCP segment.
#[derive(Debug, Clone, Copy)]
struct TcpFields {
    flow: FlowKey,
    seq: SeqNum,
    ack: Option<SeqNum>,
    payload_len: u32,
}

impl TcpFields {
    fn read(packet: &[u8]) -> Option<TcpFields> {
        let ip = Ipv4Packet::new_checked(packet).ok()?;
        if ip.protocol() != PROTO_TCP || ip.is_fragment() {
            return None;
        }
        let tcp = TcpPacket::new_checked(ip.payload()).ok()?;
        Some(TcpFields {
            flow: FlowKey {
                src: ip.src_addr(),
                src_port: tcp.src_port(),
                dst: ip.dst_addr(),
                dst_port: tcp.dst_port(),
            },
            seq: tcp.seq_number(),
            ack: tcp.ack().then(|| tcp.ack_number()),
            payload_len: tcp.payload().len() as u32,
        })
    }
}

/// Mobile IP's own packets (advertisements, registration traffic, local messages), which a BS passes to
/// the mobile but does not buffer as data.
fn is_mip_control(packet: &[u8]) -> bool {
    let Ok(ip) = Ipv4Packet::new_checked(packet) else { return false };
    match ip.protocol() {
        PROTO_ICMP | PROTO_MIP_LOCAL => true,
        PROTO_UDP => ip.payload().get(2..4).is_some_and(|p| u16::from_be_bytes([p[0], p[1]]) == PORT),
        _ => false,
    }
}
