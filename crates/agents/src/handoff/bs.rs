//! The base-station side of handoff: the per-mobile role (idle, buffering, primary), the circular buffer of
//! the last packets tunnelled to the mobile, the Snoop mirror, and the plain scheme's forwarding pointer.

use super::msg::{seq_after, Control, Kind, PROTO_HANDOFF};
use crate::eln::{Eln, ElnConfig};
use crate::flow::FlowKey;
use crate::snoop::{ConnectionStats, Snoop, SnoopConfig};
use crate::{Action, Agent, DropReason, Side, Time};
use bytes::Bytes;
use lasthop_wire::ipip;
use lasthop_wire::ipv4::{Ipv4Packet, PROTO_IPIP};
use std::collections::{BTreeMap, VecDeque};
use std::net::Ipv4Addr;

/// A base station's role for one mobile host (Balakrishnan 1995 §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Not in the mobile's group (or, in the plain scheme, forwarding to `forward_to` if set).
    Idle,
    /// In the group: keeps the last packets, does not forward them over the air.
    Buffering,
    /// Forwards the group's packets to the mobile. At most one per mobile.
    Primary,
}

/// Knobs of [`BaseStation`].
#[derive(Debug, Clone)]
pub struct BsConfig {
    /// This base station's address (tunnel endpoint, control messages).
    pub addr: Ipv4Addr,
    /// Where Join / Leave go; tunnelled packets are accepted from it.
    pub home_agent: Ipv4Addr,
    /// The mobiles this base station may serve. Control messages about any other mobile, and tunnelled
    /// packets for one, are dropped and counted, so that spoofed traffic cannot grow the per-mobile table:
    /// it holds at most one entry per mobile named here. [`BaseStation::set_role`] names its mobile.
    pub mobiles: Vec<Ipv4Addr>,
    /// The other base stations: the only sources of Notify / NotifyAck (Caceres 1995) and, besides the home
    /// agent, of tunnelled packets (the plain scheme's re-tunnelling).
    pub peers: Vec<Ipv4Addr>,
    /// Packets the handoff buffer keeps (Balakrishnan 1995 §6: 12, "between 24 and 72 ms of transfer time").
    pub buffer_packets: usize,
    /// Packets the Snoop mirror keeps, freed first in first out since a buffering BS sees no ACKs (Balakrishnan 1995
    /// §5). At least `buffer_packets`; about one maximum window (64 KB / 1460 B ≈ 45).
    pub mirror_packets: usize,
    /// Snoop at this base station, if it runs it.
    pub snoop: Option<SnoopConfig>,
    /// E2E-ELN's notifier for a fixed sender at this base station (`crate::eln`, role
    /// [`crate::eln::ElnRole::MarkForwarded`]; not with Snoop): while primary for a mobile it records the data
    /// it forwards to it and sets the ELN bit on the mobile's duplicate ACKs for that data, lost on the
    /// wireless hop (Balakrishnan 1998, "Cellular Wireless Transit Links"). Built afresh whenever this base station
    /// becomes primary and dropped when it stops, as Snoop is: the link's state does not hand over, and what
    /// a fresh notifier has not seen it does not mark (the sender then reacts as plain TCP; no data is lost).
    pub eln: Option<ElnConfig>,
    /// The host's transmission reports (`Agent::handle_transmit`) reach Snoop, which then times recovery from
    /// transmissions (lasthop's transmit-timed rules; false: Balakrishnan 1995 §6's queue-timed Snoop). Only for the
    /// Snoop of the primary the run starts with: a Snoop that takes over at a handoff is always queue-timed,
    /// because its transmit-timed loss inference assumes that every frame the mobile receives left this BS,
    /// in order, while the old BS's queued frames (often duplicates of the re-sent buffer) still reach the
    /// mobile and their DUPACKs read as losses here: measured, a storm of local retransmissions of segments
    /// the mobile has (goodput 0.43 against 1.58 Mb/s without handoffs, every 5 s, no errors).
    pub transmit_reports: bool,
}

impl BsConfig {
    pub fn new(addr: Ipv4Addr, home_agent: Ipv4Addr) -> BsConfig {
        BsConfig {
            addr,
            home_agent,
            mobiles: Vec::new(),
            peers: Vec::new(),
            buffer_packets: 12,
            mirror_packets: 48,
            snoop: None,
            eln: None,
            transmit_reports: true,
        }
    }
}

/// The name [`BsStats::resent_from_buffer`] has among a base station's [`Agent::counters`], by which a host
/// that holds the agent as any agent finds it (the simulator's per-handoff `resent_from_buffer`).
pub const RESENT_FROM_BUFFER: &str = "resent_from_buffer";

/// Counters of a [`BaseStation`] (all mobiles together).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BsStats {
    pub tunnelled_in: u64,
    pub forwarded_to_mobile: u64,
    pub buffered: u64,
    /// Packets sent from the buffer when this BS became primary (Balakrishnan 1995 §6).
    pub resent_from_buffer: u64,
    /// Promotions where one of the mobile's IP IDs was found in the buffer.
    pub sync_found: u64,
    /// Promotions where none was, so the whole buffer was sent.
    pub sync_not_found: u64,
    /// Packets re-tunnelled to the new BS (plain scheme, after Notify).
    pub forwarded_to_new_bs: u64,
    /// Tunnelled packets for a mobile this BS neither serves nor buffers for.
    pub dropped_not_serving: u64,
    pub control_received: u64,
    /// Control messages older than one already applied (reordered or duplicated).
    pub control_stale: u64,
    /// Control messages refused: about a mobile the configuration does not name, from a source that may
    /// not send that kind (a mobile speaks only for itself; Notify comes from a named peer), or of a kind a
    /// base station does not take.
    pub control_refused: u64,
    /// Tunnelled packets refused: from neither the home agent nor a peer, or for a mobile not named.
    pub tunnel_refused: u64,
}

struct Mobile {
    role: Role,
    /// Latest handoff number applied; older requests are ignored.
    seq: Option<u16>,
    /// The last `mirror_packets` inner packets tunnelled to the mobile, oldest first, with their IP IDs.
    ring: VecDeque<(u16, Bytes)>,
    /// Snoop state for this mobile's connections while primary.
    snoop: Option<Snoop>,
    /// E2E-ELN's notifier for this mobile's connections while primary.
    eln: Option<Eln>,
    /// Transmission reports go to `snoop` (see [`BsConfig::transmit_reports`]).
    reports: bool,
    /// Plain scheme: the BS the mobile moved to.
    forward_to: Option<Ipv4Addr>,
    /// Plain scheme: the old BS whose NotifyAck completes the handoff, and the handoff number.
    awaiting_notify_ack: Option<u16>,
}

/// The handoff agent of one base station. An [`Agent`]: the host hands it every packet it forwards and
/// every packet addressed to the BS itself (tunnelled packets, control messages).
pub struct BaseStation {
    cfg: BsConfig,
    mobiles: BTreeMap<Ipv4Addr, Mobile>,
    stats: BsStats,
    /// Counters of the Snoop and ELN instances discarded when this BS stopped being primary.
    retired: BTreeMap<&'static str, u64>,
    /// Per-connection counters of the Snoop instances discarded (`Snoop::all_connection_stats`).
    retired_connections: BTreeMap<FlowKey, ConnectionStats>,
    /// The host's last report of its queue toward the mobiles (a fraction of its capacity), for ELN.
    queue_to_mobile: f64,
    ident: u16,
}

impl BaseStation {
    pub fn new(cfg: BsConfig) -> BaseStation {
        let mut cfg = cfg;
        cfg.buffer_packets = cfg.buffer_packets.max(1);
        cfg.mirror_packets = cfg.mirror_packets.max(cfg.buffer_packets);
        BaseStation {
            cfg,
            mobiles: BTreeMap::new(),
            stats: BsStats::default(),
            retired: BTreeMap::new(),
            retired_connections: BTreeMap::new(),
            queue_to_mobile: 0.0,
            ident: 0,
        }
    }

    /// Sets the role at start-up, without control messages (the run begins with the routes in place), and
    /// names `mobile` as one this base station may serve.
    pub fn set_role(&mut self, mobile: Ipv4Addr, role: Role) {
        if !self.cfg.mobiles.contains(&mobile) {
            self.cfg.mobiles.push(mobile);
        }
        let (snoop, transmit_reports) = (self.cfg.snoop.clone(), self.cfg.transmit_reports);
        let eln = self.new_eln();
        let m = self.mobile(mobile);
        m.role = role;
        m.snoop = if role == Role::Primary { snoop.map(Snoop::new) } else { None };
        m.eln = if role == Role::Primary { eln } else { None };
        m.reports = transmit_reports;
    }

    pub fn role(&self, mobile: Ipv4Addr) -> Role {
        self.mobiles.get(&mobile).map_or(Role::Idle, |m| m.role)
    }

    pub fn stats(&self) -> &BsStats {
        &self.stats
    }

    /// Mobiles with state here: never more than the configuration names.
    pub fn mobiles_tracked(&self) -> usize {
        self.mobiles.len()
    }

    /// Whether the configuration lets `src` send control message `c` (Balakrishnan 1995 §4, Caceres 1995): a mobile
    /// speaks only for itself, Notify and NotifyAck come from a named base station, and either way the
    /// mobile must be one this base station may serve. Kinds a base station only sends are refused.
    fn authorised(&self, src: Ipv4Addr, c: &Control) -> bool {
        let named = self.cfg.mobiles.contains(&c.mobile);
        named
            && match c.kind {
                Kind::Forward | Kind::Buffer | Kind::Stop | Kind::Greeting => src == c.mobile,
                // Either is sent by the base station it names as `peer`.
                Kind::Notify | Kind::NotifyAck => self.cfg.peers.contains(&src) && c.peer == src,
                Kind::Beacon | Kind::Ack | Kind::GreetingAck | Kind::Complete | Kind::Join | Kind::Leave => false,
            }
    }

    /// IP IDs in the handoff buffer for `mobile`, oldest first (tests, traces).
    pub fn buffered_ids(&self, mobile: Ipv4Addr) -> Vec<u16> {
        let Some(m) = self.mobiles.get(&mobile) else { return Vec::new() };
        let skip = m.ring.len().saturating_sub(self.cfg.buffer_packets);
        m.ring.iter().skip(skip).map(|(id, _)| *id).collect()
    }

    /// Packets held for `mobile`: the handoff buffer's and the Snoop mirror's together (at most
    /// `mirror_packets`), and of them the handoff buffer's (at most `buffer_packets`).
    pub fn held_packets(&self, mobile: Ipv4Addr) -> (usize, usize) {
        let held = self.mobiles.get(&mobile).map_or(0, |m| m.ring.len());
        (held, held.min(self.cfg.buffer_packets))
    }

    /// Whether the Snoop serving `mobile` gets transmission reports (transmit-timed recovery).
    pub fn reports_transmissions(&self, mobile: Ipv4Addr) -> bool {
        self.mobiles.get(&mobile).is_some_and(|m| m.reports && m.snoop.is_some())
    }

    /// The Snoop serving `mobile`, if this BS is its primary and runs Snoop.
    pub fn snoop(&self, mobile: Ipv4Addr) -> Option<&Snoop> {
        self.mobiles.get(&mobile)?.snoop.as_ref()
    }

    /// A fresh ELN notifier (if this BS runs one), told the host's last report of its queue toward the mobile.
    fn new_eln(&self) -> Option<Eln> {
        self.cfg.eln.clone().map(|c| {
            let mut e = Eln::new(c);
            e.handle_queue_occupancy(Side::ToMobile, self.queue_to_mobile);
            e
        })
    }

    /// The ELN notifier serving `mobile`, if this BS is its primary and runs one.
    pub fn eln(&self, mobile: Ipv4Addr) -> Option<&Eln> {
        self.mobiles.get(&mobile)?.eln.as_ref()
    }

    fn mobile(&mut self, addr: Ipv4Addr) -> &mut Mobile {
        self.mobiles.entry(addr).or_insert_with(|| Mobile {
            role: Role::Idle,
            seq: None,
            ring: VecDeque::new(),
            snoop: None,
            eln: None,
            reports: false,
            forward_to: None,
            awaiting_notify_ack: None,
        })
    }

    fn control(&mut self, c: &Control, dst: Ipv4Addr) -> Bytes {
        self.ident = self.ident.wrapping_add(1);
        c.emit(self.cfg.addr, dst, self.ident)
    }

    /// This BS stops being `addr`'s primary: its Snoop and ELN state go, their counters kept.
    fn retire_agents(&mut self, addr: Ipv4Addr) {
        let Some(m) = self.mobiles.get_mut(&addr) else { return };
        if let Some(s) = &m.snoop {
            for (key, stats) in s.all_connection_stats() {
                self.retired_connections.entry(key).or_default().add(&stats);
            }
        }
        let snoop = m.snoop.take().map(|s| s.counters()).unwrap_or_default();
        let eln = m.eln.take().map(|e| e.counters()).unwrap_or_default();
        for (k, v) in snoop.into_iter().chain(eln) {
            *self.retired.entry(k).or_default() += v;
        }
    }

    /// Applies request `seq` if it is not older than the last one applied for `mobile`.
    fn fresh(&mut self, mobile: Ipv4Addr, seq: u16) -> bool {
        let m = self.mobile(mobile);
        if m.seq.is_some_and(|last| seq != last && !seq_after(seq, last)) {
            self.stats.control_stale += 1;
            return false;
        }
        m.seq = Some(seq);
        true
    }

    fn on_control(&mut self, now: Time, c: Control, out: &mut Vec<Action>) {
        self.stats.control_received += 1;
        let me = self.cfg.addr;
        match c.kind {
            Kind::Forward => {
                if !self.fresh(c.mobile, c.seq) {
                    return;
                }
                let was = self.role(c.mobile);
                if was != Role::Primary {
                    self.promote(now, c.mobile, &c.ids, out);
                }
                if was == Role::Idle {
                    let join = self.control(&Control::new(Kind::Join, c.seq, c.mobile, me), self.cfg.home_agent);
                    out.push(Action::Inject(Side::ToWired, join));
                }
                let ack = self.control(&Control::new(Kind::Ack, c.seq, c.mobile, me), c.mobile);
                out.push(Action::Inject(Side::ToMobile, ack));
            }
            Kind::Buffer => {
                if !self.fresh(c.mobile, c.seq) {
                    return;
                }
                let was = self.role(c.mobile);
                self.retire_agents(c.mobile);
                self.mobile(c.mobile).role = Role::Buffering;
                if was == Role::Idle {
                    let join = self.control(&Control::new(Kind::Join, c.seq, c.mobile, me), self.cfg.home_agent);
                    out.push(Action::Inject(Side::ToWired, join));
                }
            }
            Kind::Stop => {
                if !self.fresh(c.mobile, c.seq) {
                    return;
                }
                let was = self.role(c.mobile);
                self.retire_agents(c.mobile);
                let m = self.mobile(c.mobile);
                m.role = Role::Idle;
                m.ring.clear();
                if was != Role::Idle {
                    let leave = self.control(&Control::new(Kind::Leave, c.seq, c.mobile, me), self.cfg.home_agent);
                    out.push(Action::Inject(Side::ToWired, leave));
                }
            }
            Kind::Greeting => {
                // Caceres 1995: the new MSS ACKs the greeting, adds the MH, routes its packets, informs the old MSS.
                if !self.fresh(c.mobile, c.seq) {
                    return;
                }
                let snoop = self.cfg.snoop.clone().map(Snoop::new);
                let eln = self.new_eln();
                let m = self.mobile(c.mobile);
                m.role = Role::Primary;
                m.forward_to = None;
                m.snoop = snoop;
                m.eln = eln;
                m.reports = false;
                m.awaiting_notify_ack = Some(c.seq);
                let ack = self.control(&Control::new(Kind::GreetingAck, c.seq, c.mobile, me), c.mobile);
                out.push(Action::Inject(Side::ToMobile, ack));
                let notify = Control::new(Kind::Notify, c.seq, c.mobile, me);
                // Only to a named base station: a Greeting must not make this one send to any address.
                if c.peer != me && self.cfg.peers.contains(&c.peer) {
                    let p = self.control(&notify, c.peer);
                    out.push(Action::Inject(Side::ToWired, p));
                }
                // The home agent's binding too, so that new packets stop taking the old BS's detour.
                let p = self.control(&notify, self.cfg.home_agent);
                out.push(Action::Inject(Side::ToWired, p));
            }
            Kind::Notify => {
                // Caceres 1995: the old MSS forwards the MH's packets to the new MSS and ACKs the handoff.
                if !self.fresh(c.mobile, c.seq) {
                    return;
                }
                self.retire_agents(c.mobile);
                let m = self.mobile(c.mobile);
                m.role = Role::Idle;
                m.forward_to = Some(c.peer);
                let ack = self.control(&Control::new(Kind::NotifyAck, c.seq, c.mobile, me), c.peer);
                out.push(Action::Inject(Side::ToWired, ack));
            }
            Kind::NotifyAck => {
                let Some(m) = self.mobiles.get_mut(&c.mobile) else { return };
                if m.awaiting_notify_ack == Some(c.seq) {
                    m.awaiting_notify_ack = None;
                    let done = self.control(&Control::new(Kind::Complete, c.seq, c.mobile, me), c.mobile);
                    out.push(Action::Inject(Side::ToMobile, done));
                }
            }
            Kind::Beacon | Kind::Ack | Kind::GreetingAck | Kind::Complete | Kind::Join | Kind::Leave => {}
        }
    }

    /// Becomes the mobile's primary (Balakrishnan 1995 §4–§6): find the last of the mobile's IP IDs in the buffer,
    /// free what precedes it (or send the whole buffer if none is found), forward the rest. A fresh Snoop is
    /// built from the mirror: the packets the mobile already has are cached without being sent, the rest are
    /// cached and sent; the first ACK from the mobile then synchronises it (§5).
    fn promote(&mut self, now: Time, addr: Ipv4Addr, ids: &[u16], out: &mut Vec<Action>) {
        let buffer = self.cfg.buffer_packets;
        let mut snoop = self.cfg.snoop.clone().map(Snoop::new);
        let mut eln = self.new_eln();
        let m = self.mobile(addr);
        m.role = Role::Primary;
        m.forward_to = None;
        let ring: Vec<(u16, Bytes)> = m.ring.iter().cloned().collect();
        let buf_start = ring.len().saturating_sub(buffer);
        let found = (buf_start..ring.len()).rev().find(|&i| ids.contains(&ring[i].0));
        let first_to_send = match found {
            Some(i) => i + 1,
            None => buf_start,
        };
        let mut scratch = Vec::new();
        let mut resent = 0;
        for (i, (_, p)) in ring.into_iter().enumerate() {
            if i < first_to_send {
                if let Some(s) = snoop.as_mut() {
                    // Mirror only: cache, discard the forward (the mobile has it, or the buffer no longer does).
                    s.handle_packet(now, Side::ToMobile, p, &mut scratch);
                    scratch.clear();
                }
            } else {
                resent += 1;
                match (snoop.as_mut(), eln.as_mut()) {
                    (Some(s), _) => s.handle_packet(now, Side::ToMobile, p, out),
                    (None, Some(e)) => e.handle_packet(now, Side::ToMobile, p, out),
                    (None, None) => out.push(Action::Forward(Side::ToMobile, p)),
                }
            }
        }
        let m = self.mobile(addr);
        m.snoop = snoop;
        m.eln = eln;
        m.reports = false;
        self.stats.resent_from_buffer += resent;
        if found.is_some() {
            self.stats.sync_found += 1;
        } else {
            self.stats.sync_not_found += 1;
        }
    }

    fn on_tunnelled(&mut self, now: Time, outer: Bytes, out: &mut Vec<Action>) {
        let Ok(inner) = ipip::decapsulate(&outer) else {
            out.push(Action::Drop(DropReason::Malformed));
            return;
        };
        let Ok(ip) = Ipv4Packet::new_checked(&inner[..]) else {
            out.push(Action::Drop(DropReason::Malformed));
            return;
        };
        let (mobile, id) = (ip.dst_addr(), ip.ident());
        let from = Ipv4Packet::new_unchecked(&outer[..]).src_addr();
        let trusted = from == self.cfg.home_agent || self.cfg.peers.contains(&from);
        if !trusted || !self.cfg.mobiles.contains(&mobile) {
            self.stats.tunnel_refused += 1;
            out.push(Action::Drop(DropReason::Consumed));
            return;
        }
        self.stats.tunnelled_in += 1;
        let (mirror, me) = (self.cfg.mirror_packets, self.cfg.addr);
        let m = self.mobile(mobile);
        if let Some(next) = m.forward_to {
            // Plain scheme, after Notify: re-tunnel to the new BS.
            self.ident = self.ident.wrapping_add(1);
            let p = ipip::encapsulate(&inner, me, next, self.ident, 64);
            self.stats.forwarded_to_new_bs += 1;
            out.push(Action::Forward(Side::ToWired, p));
            return;
        }
        if m.role == Role::Idle {
            self.stats.dropped_not_serving += 1;
            out.push(Action::Drop(DropReason::Consumed));
            return;
        }
        if m.ring.len() == mirror {
            m.ring.pop_front();
        }
        m.ring.push_back((id, inner.clone()));
        if m.role == Role::Buffering {
            self.stats.buffered += 1;
            out.push(Action::Drop(DropReason::Consumed));
            return;
        }
        self.stats.forwarded_to_mobile += 1;
        self.transit(now, mobile, Side::ToMobile, inner, out);
    }

    /// A packet to or from `mobile` goes through the agent serving it here (Snoop or ELN, while primary), else
    /// straight on.
    fn transit(&mut self, now: Time, mobile: Ipv4Addr, side: Side, packet: Bytes, out: &mut Vec<Action>) {
        match self.mobiles.get_mut(&mobile) {
            Some(Mobile { snoop: Some(s), .. }) => s.handle_packet(now, side, packet, out),
            Some(Mobile { eln: Some(e), .. }) => {
                e.handle_queue_occupancy(Side::ToMobile, self.queue_to_mobile);
                e.handle_packet(now, side, packet, out)
            }
            _ => out.push(Action::Forward(side, packet)),
        }
    }
}

impl Agent for BaseStation {
    fn handle_packet(&mut self, now: Time, side: Side, packet: Bytes, out: &mut Vec<Action>) {
        let Ok(ip) = Ipv4Packet::new_checked(&packet[..]) else {
            out.push(Action::Drop(DropReason::Malformed));
            return;
        };
        if ip.dst_addr() == self.cfg.addr {
            match ip.protocol() {
                PROTO_IPIP => return self.on_tunnelled(now, packet, out),
                PROTO_HANDOFF => {
                    match Control::parse(&packet) {
                        Some(c) if !self.authorised(ip.src_addr(), &c) => {
                            self.stats.control_refused += 1;
                            out.push(Action::Drop(DropReason::Consumed));
                        }
                        Some(c) => {
                            out.push(Action::Drop(DropReason::Consumed));
                            self.on_control(now, c, out);
                        }
                        None => out.push(Action::Drop(DropReason::Malformed)),
                    }
                    return;
                }
                _ => {}
            }
        }
        // A transit packet belongs to the mobile it goes to or comes from.
        let mobile = if side == Side::ToMobile { ip.dst_addr() } else { ip.src_addr() };
        self.transit(now, mobile, side, packet, out);
    }

    /// The host's queue toward the mobiles is ELN's "input queue" (see `crate::eln`): a segment forwarded
    /// while it is over the congestion threshold may yet be dropped there, so it is not vouched for. Kept
    /// here and handed to the notifier of the mobile a packet is for (`transit`, `new_eln`), not to every
    /// mobile's notifier on every packet.
    fn handle_queue_occupancy(&mut self, side: Side, fraction: f64) {
        if side == Side::ToMobile {
            self.queue_to_mobile = fraction;
        }
    }

    fn handle_timeout(&mut self, now: Time, out: &mut Vec<Action>) {
        for m in self.mobiles.values_mut() {
            if let Some(s) = m.snoop.as_mut() {
                if s.poll_timeout().is_some_and(|t| t <= now) {
                    s.handle_timeout(now, out);
                }
            }
        }
    }

    fn handle_transmit(&mut self, now: Time, side: Side, packet: &Bytes) {
        let Ok(ip) = Ipv4Packet::new_checked(&packet[..]) else { return };
        let mobile = if side == Side::ToMobile { ip.dst_addr() } else { ip.src_addr() };
        if let Some(m) = self.mobiles.get_mut(&mobile).filter(|m| m.reports) {
            if let Some(s) = m.snoop.as_mut() {
                s.handle_transmit(now, side, packet);
            }
        }
    }

    fn poll_timeout(&self) -> Option<Time> {
        self.mobiles.values().filter_map(|m| m.snoop.as_ref()?.poll_timeout()).min()
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let s = &self.stats;
        let mut snoop = self.retired.clone();
        for m in self.mobiles.values() {
            let live = m.snoop.iter().flat_map(|s| s.counters()).chain(m.eln.iter().flat_map(|e| e.counters()));
            for (k, v) in live {
                *snoop.entry(k).or_default() += v;
            }
        }
        let mut v = vec![
            ("tunnelled_in", s.tunnelled_in),
            ("forwarded_to_mobile", s.forwarded_to_mobile),
            ("buffered", s.buffered),
            (RESENT_FROM_BUFFER, s.resent_from_buffer),
            ("sync_found", s.sync_found),
            ("sync_not_found", s.sync_not_found),
            ("forwarded_to_new_bs", s.forwarded_to_new_bs),
            ("dropped_not_serving", s.dropped_not_serving),
            ("control_received", s.control_received),
            ("control_stale", s.control_stale),
            ("control_refused", s.control_refused),
            ("tunnel_refused", s.tunnel_refused),
        ];
        v.extend(snoop);
        v
    }

    /// Snoop's counts for connection `key`, from this BS's current Snoop instances and those retired.
    fn connection_counters(&self, key: &FlowKey) -> Vec<(&'static str, u64)> {
        let mut stats = self.retired_connections.get(key).copied().unwrap_or_default();
        for s in self.mobiles.values().filter_map(|m| m.snoop.as_ref()) {
            stats.add(&s.connection_stats(key));
        }
        stats.named()
    }
}
