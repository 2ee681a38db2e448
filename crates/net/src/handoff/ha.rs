//! The home agent's driver: the wired router of the handoff testbed with the home agent
//! ([`lasthop_agents::handoff::HomeAgent`]) inside it.
//!
//! One port toward the fixed host and one per base station. Packets for the mobile's home address (and
//! control messages for the home agent) go to the agent, which tunnels one copy to each base station of
//! the mobile's group; every other packet is routed by destination (the fixed host, a base station). The
//! testbed has no multicast routing, so the group is the agent's list of members and the "multicast" is
//! one tunnelled copy per member, what a multicast tree would replicate on the way. Control messages reach
//! the agent only from the base stations: any other source is dropped and counted (`control_refused`).

use super::node::{ipv4_of, Link, Node, Out};
use lasthop_agents::handoff::{HomeAgent, PROTO_HANDOFF};
use lasthop_agents::{Action, Agent, Side};
use lasthop_wire::{Ipv4Packet, Time};
use std::collections::BTreeMap;
use std::net::Ipv4Addr;

/// Counters of the home agent's driver (the agent's own are in [`HaNode::counters`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HaStats {
    /// Packets routed on unchanged (the mobile's ACKs, base station to base station control, ...).
    pub routed: u64,
    /// Packets with a destination no port leads to, or not IPv4.
    pub no_route: u64,
    /// Control messages for the home agent from a host that is not one of the base stations.
    pub control_refused: u64,
}

pub struct HaNode {
    addr: Ipv4Addr,
    mobile: Ipv4Addr,
    links: Vec<Link>,
    /// Destination address → port.
    routes: BTreeMap<Ipv4Addr, usize>,
    /// The base stations: the only hosts whose control messages the agent hears.
    base_stations: Vec<Ipv4Addr>,
    agent: HomeAgent,
    stats: HaStats,
}

impl HaNode {
    /// The home agent at `addr` for `mobile`, whose group starts as `members`; `routes` maps each host's
    /// address to the port (index into `links`) that leads to it, `base_stations` names those allowed to
    /// change the group.
    pub fn new(
        addr: Ipv4Addr,
        mobile: Ipv4Addr,
        members: &[Ipv4Addr],
        links: Vec<Link>,
        routes: BTreeMap<Ipv4Addr, usize>,
        base_stations: Vec<Ipv4Addr>,
    ) -> HaNode {
        let mut agent = HomeAgent::new(addr);
        agent.set_members(mobile, members.iter().copied());
        HaNode { addr, mobile, links, routes, base_stations, agent, stats: HaStats::default() }
    }

    pub fn stats(&self) -> HaStats {
        self.stats
    }

    pub fn members(&self) -> Vec<Ipv4Addr> {
        self.agent.members(self.mobile)
    }

    /// The driver's and the agent's counters, by name.
    pub fn counters(&self) -> Vec<(String, u64)> {
        let s = self.stats;
        let mut v: Vec<(String, u64)> =
            [("routed", s.routed), ("no_route", s.no_route), ("control_refused", s.control_refused)]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect();
        v.extend(self.agent.counters().into_iter().map(|(k, v)| (k.to_string(), v)));
        v
    }

    fn route(&mut self, packet: &[u8], out: &mut Out) {
        let dst = Ipv4Packet::new_unchecked(packet).dst_addr();
        match self.routes.get(&dst) {
            Some(&port) => {
                self.stats.routed += 1;
                out.push((port, self.links[port].frame(packet, false)));
            }
            None => self.stats.no_route += 1,
        }
    }
}

impl Node for HaNode {
    fn handle_frame(&mut self, now: Time, _port: usize, frame: &[u8], out: &mut Out) {
        let Some(packet) = ipv4_of(frame) else {
            self.stats.no_route += 1;
            return;
        };
        let ip = Ipv4Packet::new_unchecked(&packet[..]);
        let (src, dst, proto) = (ip.src_addr(), ip.dst_addr(), ip.protocol());
        if dst == self.addr && proto == PROTO_HANDOFF && !self.base_stations.contains(&src) {
            self.stats.control_refused += 1;
            return;
        }
        if dst != self.addr && dst != self.mobile {
            return self.route(&packet, out);
        }
        let mut acts = Vec::new();
        self.agent.handle_packet(now, Side::ToMobile, packet, &mut acts);
        for a in acts {
            match a {
                Action::Forward(_, p) | Action::ForwardPriority(_, p) | Action::Inject(_, p) => self.route(&p, out),
                Action::Drop(_) => {}
            }
        }
    }

    fn poll_timeout(&self) -> Option<Time> {
        None
    }

    fn handle_timeout(&mut self, _now: Time, _out: &mut Out) {}
}
