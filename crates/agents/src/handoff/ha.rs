//! The home agent (Balakrishnan 1995 §4, Fig. 3): intercepts packets for a mobile's home address and tunnels them
//! (IP-in-IP) to the mobile's group (multicast scheme) or to the one BS of its binding (plain scheme).

use super::msg::{Control, Kind, PROTO_HANDOFF};
use crate::{Action, Agent, DropReason, Side, Time};
use bytes::Bytes;
use lasthop_wire::ipip;
use lasthop_wire::ipv4::Ipv4Packet;
use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;

/// The home agent. Multicast delivery is modelled by the home agent sending one tunnelled copy to every
/// member of the mobile's group (what multicast routing would replicate in the network), so the members,
/// joins and leaves are those of Balakrishnan 1995 while the routers stay unicast.
pub struct HomeAgent {
    addr: Ipv4Addr,
    /// Per mobile home address: the base stations that receive its packets (one in the plain scheme).
    groups: BTreeMap<Ipv4Addr, BTreeSet<Ipv4Addr>>,
    ident: u16,
    pub tunnelled: u64,
    pub no_member: u64,
}

impl HomeAgent {
    pub fn new(addr: Ipv4Addr) -> HomeAgent {
        HomeAgent { addr, groups: BTreeMap::new(), ident: 0, tunnelled: 0, no_member: 0 }
    }

    /// Registers `mobile` with the base stations that receive its packets at start-up.
    pub fn set_members(&mut self, mobile: Ipv4Addr, members: impl IntoIterator<Item = Ipv4Addr>) {
        self.groups.insert(mobile, members.into_iter().collect());
    }

    pub fn members(&self, mobile: Ipv4Addr) -> Vec<Ipv4Addr> {
        self.groups.get(&mobile).map(|g| g.iter().copied().collect()).unwrap_or_default()
    }
}

impl Agent for HomeAgent {
    fn handle_packet(&mut self, _now: Time, side: Side, packet: Bytes, out: &mut Vec<Action>) {
        let Ok(ip) = Ipv4Packet::new_checked(&packet[..]) else {
            out.push(Action::Drop(DropReason::Malformed));
            return;
        };
        let dst = ip.dst_addr();
        if dst == self.addr && ip.protocol() == PROTO_HANDOFF {
            out.push(Action::Drop(DropReason::Consumed));
            if let Some(c) = Control::parse(&packet) {
                let g = self.groups.entry(c.mobile).or_default();
                match c.kind {
                    Kind::Join => {
                        g.insert(c.peer);
                    }
                    Kind::Leave => {
                        g.remove(&c.peer);
                    }
                    // Plain scheme: the binding moves to the new BS.
                    Kind::Notify => {
                        g.clear();
                        g.insert(c.peer);
                    }
                    _ => {}
                }
            }
            return;
        }
        let Some(members) = self.groups.get(&dst) else {
            out.push(Action::Forward(side, packet));
            return;
        };
        out.push(Action::Drop(DropReason::Consumed));
        if members.is_empty() {
            self.no_member += 1;
        }
        for &bs in members {
            self.ident = self.ident.wrapping_add(1);
            self.tunnelled += 1;
            out.push(Action::Inject(Side::ToMobile, ipip::encapsulate(&packet, self.addr, bs, self.ident, 64)));
        }
    }

    fn handle_timeout(&mut self, _now: Time, _out: &mut Vec<Action>) {}

    fn poll_timeout(&self) -> Option<Time> {
        None
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![("tunnelled", self.tunnelled), ("tunnelled_no_member", self.no_member)]
    }
}
