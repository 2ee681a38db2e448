//! A base station in Eom 2002's Mobile IP network: a link-layer bridge between its wireless cell and its
//! subnetwork's FA (§3.1: "We assume that BSs perform as a link-layer bridge between the wireless and wired
//! links"), with the local handoff protocol of Fig. 2 (beacons, handoff request → notification) and the
//! per-mobile buffer of §2.2 and §4 that the *forward* message empties toward the old FA.

use super::buffer::{Cleanup, HandoffBuffer};
use super::{drop_malformed, is_mip_control, TcpFields};
use crate::{Action, Agent, DropReason, Side, Time};
use bytes::Bytes;
use lasthop_wire::ipv4::Ipv4Packet;
use lasthop_wire::mip::{LinkAddr, LocalKind, LocalMessage};
use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::time::Duration;

/// Knobs of a [`BaseStation`].
#[derive(Debug, Clone)]
pub struct BsConfig {
    pub addr: Ipv4Addr,
    /// The FA of this BS's subnetwork (notifications go there).
    pub foreign_agent: Ipv4Addr,
    /// Beacon period (Eom 2002 §3.1: "we always set the period of beacon message to 50 ms"); `None`: none.
    pub beacon_interval: Option<Duration>,
    /// Time of the first beacon (BSs of one network beacon out of phase).
    pub first_beacon: Time,
    /// Per-mobile buffer size in packets (§3.3: 32, "corresponding to the maximum window size"); `None`:
    /// no buffering (the BS is a plain bridge, as in §3.2).
    pub buffer_packets: Option<usize>,
    pub cleanup: Cleanup,
    /// How long the BS keeps a mobile that has left (after *forward*) to pass on, through its buffer, what
    /// the old FA still sends down (the re-ordering rule of §4.2, Fig. 17). The paper leaves it open; it need
    /// only outlast the old FA's binding cache entry.
    pub departed_hold: Duration,
    /// At most this many mobiles in the table; the oldest departed, then the oldest attached, go first.
    pub max_mobiles: usize,
}

impl BsConfig {
    pub fn new(addr: Ipv4Addr, foreign_agent: Ipv4Addr) -> BsConfig {
        BsConfig {
            addr,
            foreign_agent,
            beacon_interval: Some(Duration::from_millis(50)),
            first_beacon: Time::ZERO,
            buffer_packets: None,
            cleanup: Cleanup::None,
            departed_hold: Duration::from_secs(10),
            max_mobiles: 256,
        }
    }
}

/// Counters of a [`BaseStation`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BsStats {
    pub beacons_sent: u64,
    pub handoff_requests: u64,
    pub notifications_sent: u64,
    pub forward_messages: u64,
    /// Packets sent up to the old FA from the buffer on *forward*.
    pub forwarded_from_buffer: u64,
    /// Packets for a departed mobile that came down from the FA and went straight back up behind the buffer
    /// (Fig. 17).
    pub passed_through_after_forward: u64,
    pub buffer_head_drops: u64,
    pub buffer_freed_by_ack: u64,
    /// Frames for a mobile not in the table (no handoff request heard from it).
    pub unknown_mobile_dropped: u64,
    pub malformed_dropped: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Attached,
    /// Left, after *forward*; kept until `until`.
    Departed {
        until: Time,
    },
}

struct Mobile {
    link: LinkAddr,
    state: State,
    buffer: Option<HandoffBuffer>,
    since: Time,
}

/// The base station agent. Side `ToMobile` is into the cell, `ToWired` up to the FA.
pub struct BaseStation {
    cfg: BsConfig,
    mobiles: BTreeMap<Ipv4Addr, Mobile>,
    next_beacon: Option<Time>,
    ident: u16,
    stats: BsStats,
}

impl BaseStation {
    pub fn new(cfg: BsConfig) -> BaseStation {
        let next_beacon = cfg.beacon_interval.map(|_| cfg.first_beacon);
        BaseStation { cfg, mobiles: BTreeMap::new(), next_beacon, ident: 0, stats: BsStats::default() }
    }

    pub fn stats(&self) -> BsStats {
        let mut s = self.stats.clone();
        for b in self.mobiles.values().filter_map(|m| m.buffer.as_ref()) {
            s.buffer_head_drops += b.head_drops;
            s.buffer_freed_by_ack += b.freed_by_ack;
        }
        s
    }

    /// Puts a mobile in the cell at start-up, without the handoff exchange (the run begins attached).
    pub fn attach(&mut self, now: Time, home: Ipv4Addr, link: LinkAddr) {
        self.insert(now, home, link);
    }

    pub fn is_attached(&self, home: Ipv4Addr) -> bool {
        self.mobiles.get(&home).is_some_and(|m| m.state == State::Attached)
    }

    /// The packets buffered for `home`, oldest first.
    pub fn buffered(&self, home: Ipv4Addr) -> Vec<Bytes> {
        self.mobiles
            .get(&home)
            .and_then(|m| m.buffer.as_ref())
            .map(|b| b.packets().cloned().collect())
            .unwrap_or_default()
    }

    /// The wireless link acknowledged `packet` (a frame this BS sent toward `home`): with
    /// [`Cleanup::LinkAck`] the buffered copy is freed.
    pub fn handle_link_ack(&mut self, home: Ipv4Addr, packet: &Bytes) {
        if self.cfg.cleanup != Cleanup::LinkAck {
            return;
        }
        if let Some(b) = self.mobiles.get_mut(&home).and_then(|m| m.buffer.as_mut()) {
            b.handle_link_ack(packet);
        }
    }

    fn next_ident(&mut self) -> u16 {
        self.ident = self.ident.wrapping_add(1);
        self.ident
    }

    fn insert(&mut self, now: Time, home: Ipv4Addr, link: LinkAddr) {
        if !self.mobiles.contains_key(&home) && self.mobiles.len() >= self.cfg.max_mobiles.max(1) {
            // Evict the departed first, then the longest attached (soft state: costs only performance).
            let victim = self
                .mobiles
                .iter()
                .min_by_key(|(_, m)| (m.state == State::Attached, m.since))
                .map(|(a, _)| *a)
                .expect("table is full, so not empty");
            self.absorb(victim);
        }
        let buffer = self.cfg.buffer_packets.map(HandoffBuffer::new);
        if let Some(old) = self.mobiles.insert(home, Mobile { link, state: State::Attached, buffer, since: now }) {
            self.count_buffer(old.buffer.as_ref());
        }
    }

    fn absorb(&mut self, home: Ipv4Addr) {
        if let Some(m) = self.mobiles.remove(&home) {
            self.count_buffer(m.buffer.as_ref());
        }
    }

    fn count_buffer(&mut self, b: Option<&HandoffBuffer>) {
        if let Some(b) = b {
            self.stats.buffer_head_drops += b.head_drops;
            self.stats.buffer_freed_by_ack += b.freed_by_ack;
        }
    }

    fn on_local(&mut self, now: Time, m: LocalMessage, out: &mut Vec<Action>) {
        match m.kind {
            // Fig. 2: handoff request → notification to the FA.
            LocalKind::HandoffRequest => {
                self.stats.handoff_requests += 1;
                self.insert(now, m.home_addr, m.mobile);
                let n = LocalMessage {
                    kind: LocalKind::Notification,
                    mobile: m.mobile,
                    home_addr: m.home_addr,
                    sender: self.cfg.addr,
                };
                let ident = self.next_ident();
                out.push(Action::Inject(Side::ToWired, n.emit_ipv4(self.cfg.addr, self.cfg.foreign_agent, ident)));
                self.stats.notifications_sent += 1;
            }
            // §2.2: send the buffered packets of this mobile to the old FA; §4.1: then forget the mobile
            // (kept a while as departed for the re-ordering rule of §4.2).
            LocalKind::Forward => {
                self.stats.forward_messages += 1;
                let until = now + self.cfg.departed_hold;
                if let Some(mob) = self.mobiles.get_mut(&m.home_addr).filter(|x| x.link == m.mobile) {
                    mob.state = State::Departed { until };
                    if let Some(b) = mob.buffer.as_mut() {
                        for p in b.drain() {
                            self.stats.forwarded_from_buffer += 1;
                            out.push(Action::Inject(Side::ToWired, p));
                        }
                    }
                }
            }
            _ => {}
        }
    }

    fn expire(&mut self, now: Time) {
        let gone: Vec<Ipv4Addr> = self
            .mobiles
            .iter()
            .filter(|(_, m)| matches!(m.state, State::Departed { until } if until <= now))
            .map(|(a, _)| *a)
            .collect();
        for a in gone {
            self.absorb(a);
        }
    }
}

impl Agent for BaseStation {
    fn handle_packet(&mut self, now: Time, side: Side, packet: Bytes, out: &mut Vec<Action>) {
        let Ok(ip) = Ipv4Packet::new_checked(&packet[..]) else {
            drop_malformed(&mut self.stats.malformed_dropped, out);
            return;
        };
        let (src, dst) = (ip.src_addr(), ip.dst_addr());
        match LocalMessage::parse_ipv4(&packet) {
            Ok(Some(m)) => {
                out.push(Action::Drop(DropReason::Consumed));
                if dst == self.cfg.addr {
                    self.on_local(now, m, out);
                }
                return;
            }
            Err(_) => {
                drop_malformed(&mut self.stats.malformed_dropped, out);
                return;
            }
            Ok(None) => {}
        }
        match side {
            Side::ToWired => {
                if self.cfg.cleanup == Cleanup::TcpAck {
                    if let Some(t) = TcpFields::read(&packet) {
                        if let (Some(ack), Some(b)) =
                            (t.ack, self.mobiles.get_mut(&src).and_then(|m| m.buffer.as_mut()))
                        {
                            b.handle_tcp_ack(t.flow.reversed(), ack);
                        }
                    }
                }
                out.push(Action::Forward(Side::ToWired, packet));
            }
            Side::ToMobile => {
                if dst.is_broadcast() {
                    out.push(Action::Forward(Side::ToMobile, packet));
                    return;
                }
                let control = is_mip_control(&packet);
                match self.mobiles.get_mut(&dst) {
                    Some(m) if m.state == State::Attached => {
                        if let (false, Some(b)) = (control, m.buffer.as_mut()) {
                            b.push(packet.clone());
                        }
                        out.push(Action::Forward(Side::ToMobile, packet));
                    }
                    // Fig. 17: what the old FA sends down after *forward* goes behind the buffer, i.e. straight
                    // back up, in order.
                    Some(_) => {
                        self.stats.passed_through_after_forward += 1;
                        out.push(Action::Drop(DropReason::Consumed));
                        out.push(Action::Inject(Side::ToWired, packet));
                    }
                    None => {
                        self.stats.unknown_mobile_dropped += 1;
                        out.push(Action::Drop(DropReason::NotDeliverable));
                    }
                }
            }
        }
    }

    fn handle_timeout(&mut self, now: Time, out: &mut Vec<Action>) {
        self.expire(now);
        let (Some(at), Some(every)) = (self.next_beacon, self.cfg.beacon_interval) else { return };
        if at > now {
            return;
        }
        let b = LocalMessage {
            kind: LocalKind::Beacon,
            mobile: LinkAddr::BROADCAST,
            home_addr: Ipv4Addr::UNSPECIFIED,
            sender: self.cfg.addr,
        };
        let ident = self.next_ident();
        out.push(Action::Inject(Side::ToMobile, b.emit_ipv4(self.cfg.addr, Ipv4Addr::BROADCAST, ident)));
        self.stats.beacons_sent += 1;
        self.next_beacon = Some(at + every);
    }

    fn poll_timeout(&self) -> Option<Time> {
        let expiry = self
            .mobiles
            .values()
            .filter_map(|m| match m.state {
                State::Departed { until } => Some(until),
                State::Attached => None,
            })
            .min();
        match (self.next_beacon, expiry) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let s = self.stats();
        vec![
            ("beacons_sent", s.beacons_sent),
            ("handoff_requests", s.handoff_requests),
            ("notifications_sent", s.notifications_sent),
            ("forward_messages", s.forward_messages),
            ("forwarded_from_buffer", s.forwarded_from_buffer),
            ("passed_through_after_forward", s.passed_through_after_forward),
            ("buffer_head_drops", s.buffer_head_drops),
            ("buffer_freed_by_ack", s.buffer_freed_by_ack),
            ("unknown_mobile_dropped", s.unknown_mobile_dropped),
            ("malformed_dropped", s.malformed_dropped),
        ]
    }
}
