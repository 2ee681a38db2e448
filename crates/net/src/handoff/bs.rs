//! The base station's driver in the handoff role: `lasthop bs`'s emulated wireless hop
//! ([`crate::hop`]) in front of the handoff agent ([`lasthop_agents::handoff::BaseStation`]: the roles
//! primary, buffering and idle, the buffer of the last packets with the Snoop mirror), plus the beacon
//! the base station broadcasts on its cell once per period (Balakrishnan 1995 §6: "once per second",
//! carrying "the IP address of the base station and a timestamp"; beacons take air time like any frame).
//!
//! Port 0 is the wired link to the home agent's router, port 1 the cell (the wireless hop to the mobile).
//! Tunnelled packets and control messages from the wired side go to the agent; what it forwards to the
//! mobile crosses the hop down. Frames from the mobile cross the hop up, then its TCP and the control
//! messages addressed here go to the agent, and anything else (control for other hosts) is routed on.

use super::node::{ipv4_of, Link, Node, Out};
use crate::hop::{Dir, Hop, HopConfig};
use bytes::Bytes;
use lasthop_agents::handoff::{BaseStation, BsConfig as AgentConfig, Control, Kind, Role, PROTO_HANDOFF};
use lasthop_agents::snoop::SnoopConfig;
use lasthop_agents::{Action, Agent, Side};
use lasthop_wire::ipv4::PROTO_TCP;
use lasthop_wire::{Ipv4Packet, Time};
use std::net::Ipv4Addr;
use std::time::Duration;

pub const WIRED: usize = 0;
pub const CELL: usize = 1;

/// One base station of the handoff testbed.
#[derive(Debug, Clone)]
pub struct HandoffBsConfig {
    pub addr: Ipv4Addr,
    pub home_agent: Ipv4Addr,
    /// The other base stations (sources of Notify and of re-tunnelled packets).
    pub peers: Vec<Ipv4Addr>,
    pub mobile: Ipv4Addr,
    /// The role at start-up (the run begins with the routes in place).
    pub role: Role,
    /// Packets the handoff buffer keeps (Balakrishnan 1995 §6: 12).
    pub buffer_packets: usize,
    /// Run Snoop while primary (its mirror while buffering).
    pub snoop: bool,
    pub hop: HopConfig,
    /// Time between beacons (`None`: no beacons).
    pub beacon_every: Option<Duration>,
}

/// One promotion of this base station to primary (a `Forward` it carried out).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Promotion {
    /// The mobile's handoff number.
    pub seq: u16,
    pub at: Time,
    /// Packets sent from the buffer (Balakrishnan 1995 §6).
    pub resent: u64,
}

pub struct HandoffBsNode {
    addr: Ipv4Addr,
    mobile: Ipv4Addr,
    links: [Link; 2],
    agent: BaseStation,
    hop: Hop<Bytes>,
    beacon_every: Option<Duration>,
    next_beacon: Option<Time>,
    beacon_ident: u16,
    promotions: Vec<Promotion>,
    pub beacons_sent: u64,
    /// Frames that are not IPv4 (the testbed's links carry nothing else), ignored.
    pub not_ipv4: u64,
    /// Packets from the mobile neither TCP nor for this base station (control messages for others),
    /// routed on to the wired side.
    pub routed_up: u64,
    /// The most packets ever held for the mobile (buffer and Snoop mirror), and of them in the buffer:
    /// a mobile that never comes back must not grow them past their configured bounds.
    pub held_max: usize,
    pub buffer_max: usize,
}

impl HandoffBsNode {
    pub fn new(cfg: &HandoffBsConfig, links: [Link; 2]) -> HandoffBsNode {
        let mut a = AgentConfig::new(cfg.addr, cfg.home_agent);
        a.peers = cfg.peers.clone();
        a.buffer_packets = cfg.buffer_packets;
        a.mirror_packets = a.mirror_packets.max(cfg.buffer_packets);
        // Queue-timed Snoop (Balakrishnan 1995 §6): the driver does not report transmissions.
        a.transmit_reports = false;
        if cfg.snoop {
            // A real base station sees untrusted traffic: a random hash key (as `crate::agents::build_snoop`).
            a.snoop = Some(SnoopConfig { hash_seed: rand::random(), ..SnoopConfig::default() });
        }
        let mut agent = BaseStation::new(a);
        agent.set_role(cfg.mobile, cfg.role);
        HandoffBsNode {
            addr: cfg.addr,
            mobile: cfg.mobile,
            links,
            agent,
            hop: Hop::new(&cfg.hop),
            beacon_every: cfg.beacon_every,
            next_beacon: None,
            beacon_ident: 0,
            promotions: Vec::new(),
            beacons_sent: 0,
            not_ipv4: 0,
            routed_up: 0,
            held_max: 0,
            buffer_max: 0,
        }
    }

    pub fn agent(&self) -> &BaseStation {
        &self.agent
    }

    /// The hop's counters, down and up.
    pub fn hop_counters(&self) -> (crate::hop::HopCounters, crate::hop::HopCounters) {
        (self.hop.counters(Dir::Down), self.hop.counters(Dir::Up))
    }

    pub fn promotions(&self) -> &[Promotion] {
        &self.promotions
    }

    /// The driver's, the hop's and the agent's counters, by name.
    pub fn counters(&self) -> Vec<(String, u64)> {
        let (down, up) = (self.hop.counters(Dir::Down), self.hop.counters(Dir::Up));
        let mut v: Vec<(String, u64)> = [
            ("beacons_sent", self.beacons_sent),
            ("not_ipv4", self.not_ipv4),
            ("routed_up", self.routed_up),
            ("held_max_packets", self.held_max as u64),
            ("buffer_max_packets", self.buffer_max as u64),
            ("hop_frames_lost", down.frames_lost + up.frames_lost),
            ("hop_queue_drops", down.queue_drops + up.queue_drops),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        v.extend(self.agent.counters().into_iter().map(|(k, v)| (k.to_string(), v)));
        v
    }

    /// Hands a packet to the agent and carries out what it says.
    fn agent_packet(&mut self, now: Time, side: Side, packet: Bytes, out: &mut Out) {
        let forward = Control::parse(&packet)
            .filter(|c| c.kind == Kind::Forward && Ipv4Packet::new_unchecked(&packet[..]).dst_addr() == self.addr);
        let before = self.agent.stats().resent_from_buffer;
        let was = forward.as_ref().map(|c| self.agent.role(c.mobile));
        let mut acts = Vec::new();
        self.agent.handle_packet(now, side, packet, &mut acts);
        let (held, buffer) = self.agent.held_packets(self.mobile);
        self.held_max = self.held_max.max(held);
        self.buffer_max = self.buffer_max.max(buffer);
        if let Some(c) = forward {
            if was != Some(Role::Primary) && self.agent.role(c.mobile) == Role::Primary {
                let resent = self.agent.stats().resent_from_buffer - before;
                self.promotions.push(Promotion { seq: c.seq, at: now, resent });
            }
        }
        self.apply(now, acts, out);
    }

    fn apply(&mut self, now: Time, acts: Vec<Action>, out: &mut Out) {
        for a in acts {
            match a {
                Action::Forward(Side::ToMobile, p) | Action::Inject(Side::ToMobile, p) => self.down(now, p, false),
                Action::ForwardPriority(Side::ToMobile, p) => self.down(now, p, true),
                Action::Forward(Side::ToWired, p)
                | Action::ForwardPriority(Side::ToWired, p)
                | Action::Inject(Side::ToWired, p) => out.push((WIRED, self.links[WIRED].frame(&p, false))),
                Action::Drop(_) => {}
            }
        }
    }

    fn down(&mut self, now: Time, packet: Bytes, priority: bool) {
        let len = packet.len();
        // A full queue drops the frame (drop-tail); the hop counts it.
        let _ = self.hop.enqueue(now, Dir::Down, packet, len, priority);
    }

    /// Delivers what the hop has carried by `now`: down to the mobile, up to the agent or the wired side.
    fn service_hop(&mut self, now: Time, out: &mut Out) {
        while let Some((dir, p)) = self.hop.poll_one(now) {
            match dir {
                Dir::Down => {
                    let broadcast = Ipv4Packet::new_unchecked(&p[..]).dst_addr().is_broadcast();
                    out.push((CELL, self.links[CELL].frame(&p, broadcast)));
                }
                Dir::Up => {
                    let ip = Ipv4Packet::new_unchecked(&p[..]);
                    let for_agent =
                        ip.protocol() == PROTO_TCP || (ip.dst_addr() == self.addr && ip.protocol() == PROTO_HANDOFF);
                    if for_agent {
                        self.agent_packet(now, Side::ToWired, p, out);
                    } else {
                        self.routed_up += 1;
                        out.push((WIRED, self.links[WIRED].frame(&p, false)));
                    }
                }
            }
        }
    }

    fn beacon(&mut self, now: Time) {
        let Some(every) = self.beacon_every else { return };
        match self.next_beacon {
            None => self.next_beacon = Some(now + every),
            Some(t) if t <= now => {
                self.beacon_ident = self.beacon_ident.wrapping_add(1);
                // The timestamp rides in the handoff-number field (ms, wrapping): the mobile only needs the sender.
                let stamp = (now.0 / 1_000_000) as u16;
                let b = Control::new(Kind::Beacon, stamp, Ipv4Addr::UNSPECIFIED, self.addr);
                let p = b.emit(self.addr, Ipv4Addr::BROADCAST, self.beacon_ident);
                self.down(now, p, false);
                self.beacons_sent += 1;
                self.next_beacon = Some(t + every);
            }
            Some(_) => {}
        }
    }
}

impl Node for HandoffBsNode {
    fn handle_frame(&mut self, now: Time, port: usize, frame: &[u8], out: &mut Out) {
        self.service_hop(now, out);
        let Some(packet) = ipv4_of(frame) else {
            self.not_ipv4 += 1;
            return;
        };
        if port == WIRED {
            self.agent_packet(now, Side::ToMobile, packet, out);
        } else {
            let len = packet.len();
            let _ = self.hop.enqueue(now, Dir::Up, packet, len, false);
        }
        self.service_hop(now, out);
    }

    fn poll_timeout(&self) -> Option<Time> {
        [self.agent.poll_timeout(), self.hop.next_event(), self.next_beacon.or(self.beacon_every.map(|_| Time(0)))]
            .into_iter()
            .flatten()
            .min()
    }

    fn handle_timeout(&mut self, now: Time, out: &mut Out) {
        self.service_hop(now, out);
        if self.agent.poll_timeout().is_some_and(|t| t <= now) {
            let mut acts = Vec::new();
            self.agent.handle_timeout(now, &mut acts);
            self.apply(now, acts, out);
        }
        self.beacon(now);
        self.service_hop(now, out);
    }
}
