//! Link-level ARQ on a wireless link in a run (`[links.NAME.arq]`): the `lasthop-arq` state machines
//! carry every packet from the link's first end (`ends[0]`, the base station in every example) to its second
//! (the mobile) in numbered frames, and the second end answers each with a link ACK that is a real frame on
//! the shared medium, contending with data. The four schemes of the ToN'97 comparison (Eom 2002 ref. [12]):
//! LL (`selective_acks = false`), LL-SMART (`true`), each TCP-unaware or, with `tcp_aware = true`,
//! LL-TCP-AWARE: the base station drops the mobile's duplicate TCP ACKs for segments its link still holds.
//!
//! Frames travel as IPv4 packets of protocol [`PROTO_ARQ`] between the two ends' addresses, the link header
//! of `lasthop_arq::frame` in their payload: 20 bytes more per frame than a bare link header would take, so
//! the medium time these schemes pay is slightly overstated (a 1440-byte packet becomes 1465 bytes, +1.7 %).
//! The reverse direction (the mobile's TCP ACKs, its data) is sent without ARQ unless `both_directions` is
//! set: then a second pair of state machines, with the same settings, carries b→a, the mobile's own packets
//! included (taken through [`Feature::on_host_send`]); link ACKs of both directions share the medium with
//! the data. With LL-TCP-AWARE the first end judges the mobile's TCP ACKs as its link layer hands them up.
//!
//! The sender's retransmission timer runs from when a frame is handed to the link's queue, not from when
//! it goes on the air (a feature does not see transmissions), so its default is long enough for a full
//! window of frames and their link ACKs to cross the medium ahead of it.
//!
//! # With `[mobility]`
//!
//! Each cell's link runs its own pair of ends; the link layer does not hand over. What the base station
//! forwards to the mobile comes out of its handoff agent (decapsulated from the home agent's tunnel, or
//! resent from the handoff buffer) and is taken here through [`Feature::on_agent_output`]; handoff control
//! messages and beacons are management traffic and go outside the data ARQ. When the mobile leaves a cell,
//! the frames its base station still sends there are lost in the air and each is given up after the retry
//! limit (`arq_frames_abandoned`), as a real link layer that is not told the station left does; in
//! overlapping cells the old base station's frames still reach the mobile and drain. When the mobile
//! associates with a cell (a handoff to it, or back in range of its own cell under beacon motion), both ends
//! of that cell's link restart with fresh sequence state, as an 802.11 reassociation resets it
//! ([`Feature::on_reassociate`], [`ArqSender::restart`]): what the base station's end still held from the
//! last visit is discarded (`arq_frames_flushed`; TCP, or the multicast scheme's buffer, recovers it), the
//! receiver hands up what it held above a gap, and LL-TCP-AWARE's DUPACK filter forgets its connections.
//! Without the restart a receiver that missed more than two windows of given-up frames would refuse every
//! later frame (`lasthop_arq`'s tests show it). When the core purges a link direction (a base station
//! that fails, or `mobility.old_bs_drains = false` at the old base station) the sending end's frames go too
//! ([`Feature::on_link_purge`], [`ArqSender::flush`]); numbering goes on and the receiver skips them. Counters
//! `arq_restarts` and `arq_frames_flushed` (at the sending end).
//!
//! Not here: an agent at the sending end (refused: ARQ takes the packets before it would see them), and
//! `[mobile_ip]` (refused: its entities send on the cells themselves).

use crate::context::{Cx, Request, View};
use crate::feature::{Feature, HookSet};
use crate::metrics::RunResult;
use crate::registry::{Family, Together};
use crate::scenario::{Invalid, LinkKind, Scenario};
use bytes::{BufMut, Bytes, BytesMut};
use lasthop_arq::tcp_aware::{DupAckFilter, Verdict};
use lasthop_arq::{ArqConfig, ArqReceiver, ArqSender, Delivery};
use lasthop_wire::ipv4::{Ipv4Packet, Ipv4Repr, HEADER_LEN};
use lasthop_wire::Time;
use serde::Deserialize;
use std::net::Ipv4Addr;

/// IP protocol number of ARQ frames (why this one: [`lasthop_wire::proto::ARQ`]).
pub use lasthop_wire::proto::ARQ as PROTO_ARQ;

/// A wireless link's `arq` table. Absent fields keep the defaults documented here.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ArqSettings {
    /// Frames in flight: 1 is stop-and-wait, more selective repeat (default 8).
    pub window: u32,
    /// Link retransmission timeout, ms. Default: 2 × (window + 1) × (the air time of a 1500-byte frame and of
    /// a link ACK) + 2 × the link's delay + 1 ms (143 ms for the default window on `examples/compare.toml`'s
    /// WaveLAN), so that a full window can cross, behind the mobile's TCP ACKs, before the timer fires.
    pub timeout_ms: Option<f64>,
    /// Retransmissions of one frame before the link gives it up (default 3).
    pub retry_limit: u32,
    /// `"in-order"` (default) or `"out-of-order"` delivery at the receiving end.
    pub delivery: Delivery,
    /// Selective link ACKs (LL-SMART; default false).
    pub selective_acks: bool,
    /// Drop the mobile's duplicate TCP ACKs for a segment the link still holds (LL-TCP-AWARE; default false).
    pub tcp_aware: bool,
    /// ARQ on b→a as well (the mobile's TCP ACKs and its data), with the same settings (default false).
    pub both_directions: bool,
}

impl Default for ArqSettings {
    fn default() -> Self {
        ArqSettings {
            window: 8,
            timeout_ms: None,
            retry_limit: 3,
            delivery: Delivery::InOrder,
            selective_acks: false,
            tcp_aware: false,
            both_directions: false,
        }
    }
}

impl ArqSettings {
    pub fn validate(&self) -> Result<(), (String, String)> {
        if let Some(t) = self.timeout_ms.filter(|t| t.is_finite() && *t > 0.0) {
            crate::floors::at_least("timeout_ms", t, crate::floors::ARQ_TIMER_MS, "ms")?;
        }
        self.config(20.0, 1).validate().map_err(|m| {
            let field = m.split(' ').next().unwrap_or("arq").trim_start_matches("arq.").to_string();
            (field, m)
        })
    }

    fn config(&self, default_timeout_ms: f64, queue_limit: usize) -> ArqConfig {
        ArqConfig {
            window: self.window,
            timeout_ms: self.timeout_ms.unwrap_or(default_timeout_ms),
            retry_limit: self.retry_limit,
            delivery: self.delivery,
            selective_acks: self.selective_acks,
            queue_limit,
        }
    }
}

/// The packet a link frame (an ARQ packet's IPv4 payload) carries: `None` for a link ACK or an unreadable
/// frame.
pub(crate) fn carried_packet(frame: Bytes) -> Option<Bytes> {
    match lasthop_arq::Frame::parse(&frame)? {
        lasthop_arq::Frame::Data { payload, .. } => Ipv4Packet::new_checked(&payload[..]).is_ok().then_some(payload),
        lasthop_arq::Frame::Ack { .. } => None,
    }
}

pub(crate) enum ArqEvent {
    /// The sender at end `from` of ARQ link `i` may have a timer due.
    Timer { i: usize, from: usize },
}

/// One direction of an ARQ link: the sender at one end, the receiver at the other.
struct Half {
    sender: ArqSender,
    receiver: ArqReceiver,
    /// The sender's timer event already scheduled, if any.
    timer: Option<Time>,
}

impl Half {
    /// The packets the receiver has ready to hand up, in its delivery order.
    fn delivered(&mut self) -> Vec<Bytes> {
        std::iter::from_fn(|| self.receiver.poll_deliver()).collect()
    }
}

struct ArqLink {
    link: usize,
    ends: [usize; 2],
    addrs: [Ipv4Addr; 2],
    /// By sending end: `halves[0]` carries a→b (always), `halves[1]` b→a (`both_directions`).
    halves: [Option<Half>; 2],
    filter: Option<DupAckFilter>,
    /// DUPACKs the filters discarded at a restart had suppressed.
    suppressed_before_restart: u64,
    ident: u16,
    /// Packets refused by the link's full queue; malformed frames or packets dropped.
    refused: u64,
    malformed_tcp: u64,
}

/// The family's registration: every link's `arq` table, checked and built. Mobile IP's base stations and
/// mobile send on their cells themselves, past any link layer (`crate::mobile_ip`); its
/// `buffer_cleanup = "link-ack"` models the link's acknowledgements instead.
pub(crate) const FAMILY: Family = Family {
    name: "arq",
    present: |s| s.links.values().any(|l| l.arq.is_some()),
    validate,
    together: &[Together::Not {
        other: "mobile_ip",
        field: |s| {
            let name = s.links.iter().find(|(_, l)| l.arq.is_some()).map(|(n, _)| n.as_str()).unwrap_or_default();
            format!("links.{name}.arq")
        },
        message: "link-level ARQ does not run with `[mobile_ip]` (its base stations send to the mobile themselves; \
                  `mobile_ip.buffer_cleanup = \"link-ack\"` models the link's acknowledgements): remove it or use \
                  `[mobility]`",
    }],
    columns: None,
    row: None,
    build: |s, world| {
        if let Some(f) = Arq::build(s, world.view()) {
            world.register(f);
        }
        Ok(())
    },
};

fn validate(s: &Scenario) -> Result<(), Invalid> {
    for (name, l) in &s.links {
        let Some(a) = &l.arq else { continue };
        let p = |f: &str| format!("links.{name}.{f}");
        if l.kind != LinkKind::Wireless {
            return Err((p("arq"), "link-level ARQ runs on wireless links only".into()));
        }
        a.validate().map_err(|(f, m)| (p(&format!("arq.{f}")), m))?;
        let senders = if a.both_directions { &l.ends[..] } else { &l.ends[..1] };
        if let Some(end) = senders.iter().find(|e| !s.nodes[*e].agent.is_none()) {
            return Err((
                format!("nodes.{end}.agent"),
                format!("`{end}` sends on link `{name}` with link-level ARQ; its agent must be \"none\" (ARQ's TCP awareness is `arq.tcp_aware`)"),
            ));
        }
    }
    Ok(())
}

pub(crate) struct Arq {
    links: Vec<ArqLink>,
    /// A sending end has an agent whose output must be taken ([`Feature::on_agent_output`]): mobility's
    /// handoff agent at a base station.
    agent_output: bool,
}

/// Connections LL-TCP-AWARE's filter remembers at one base station.
const FILTER_CONNECTIONS: usize = 1024;

impl Arq {
    pub(crate) fn build(s: &Scenario, view: View<'_>) -> Option<Arq> {
        let mut links = Vec::new();
        for (name, l) in &s.links {
            let Some(a) = &l.arq else { continue };
            let link = view.link_index(name);
            let ends = view.links()[link].ends;
            let air = |bytes: usize| l.airtime_ns(bytes) as f64 / 1e6;
            // Twice the time a full window of the largest frames and their link ACKs take on the medium:
            // the timer runs from queueing, and the mobile's own TCP ACKs contend for the medium too.
            let default_timeout = 2.0
                * f64::from(a.window + 1)
                * (air(1500 + HEADER_LEN + lasthop_arq::frame::DATA_HEADER_LEN)
                    + air(HEADER_LEN + lasthop_arq::frame::ACK_LEN))
                + 2.0 * l.delay_ms
                + 1.0;
            let cfg = a.config(default_timeout, l.queue_packets);
            let half = || Half { receiver: ArqReceiver::new(&cfg), sender: ArqSender::new(cfg.clone()), timer: None };
            links.push(ArqLink {
                link,
                ends,
                addrs: [view.nodes()[ends[0]].addr, view.nodes()[ends[1]].addr],
                halves: [Some(half()), a.both_directions.then(half)],
                filter: a.tcp_aware.then(|| DupAckFilter::new(FILTER_CONNECTIONS)),
                suppressed_before_restart: 0,
                ident: 0,
                refused: 0,
                malformed_tcp: 0,
            });
        }
        if links.is_empty() {
            return None;
        }
        // Features that install agents (mobility) are built before this one.
        let agent_output = links
            .iter()
            .any(|l| l.halves.iter().zip(l.ends).any(|(h, end)| h.is_some() && view.nodes()[end].agent.is_some()));
        Some(Arq { links, agent_output })
    }

    /// A link frame as an IPv4 packet from end `from` to the other end.
    fn wrap(l: &mut ArqLink, from: usize, frame: &[u8]) -> Bytes {
        let repr = Ipv4Repr {
            src: l.addrs[from],
            dst: l.addrs[1 - from],
            protocol: PROTO_ARQ,
            ident: l.ident,
            ttl: 1,
            payload_len: frame.len(),
        };
        l.ident = l.ident.wrapping_add(1);
        let mut buf = BytesMut::with_capacity(HEADER_LEN + frame.len());
        buf.put_bytes(0, HEADER_LEN);
        repr.emit(&mut buf[..HEADER_LEN]);
        buf.put_slice(frame);
        buf.freeze()
    }

    /// Puts on the link every frame the sender at end `from` of link `i` will send now, and re-arms its timer.
    fn pump(&mut self, cx: &mut Cx<'_, ArqEvent>, i: usize, from: usize) {
        let now = cx.now();
        let l = &mut self.links[i];
        let mut frames = Vec::new();
        let Some(h) = l.halves[from].as_mut() else { return };
        while let Some(frame) = h.sender.poll_transmit(now) {
            frames.push(frame);
        }
        for frame in frames {
            let p = Self::wrap(l, from, &frame);
            cx.send((l.link, from), p, false);
        }
        let Some(h) = l.halves[from].as_mut() else { return };
        if let Some(t) = h.sender.poll_timeout() {
            if h.timer.is_none_or(|s| t < s) {
                h.timer = Some(t);
                cx.schedule(t, ArqEvent::Timer { i, from });
            }
        }
    }

    /// Hands a packet to the sender at end `from` of link `i` if it has one; false when it has none.
    fn take(&mut self, cx: &mut Cx<'_, ArqEvent>, i: usize, from: usize, packet: &Bytes) -> bool {
        let l = &mut self.links[i];
        let Some(h) = l.halves[from].as_mut() else { return false };
        if !h.sender.send(packet.clone()) {
            l.refused += 1;
        }
        self.pump(cx, i, from);
        true
    }

    /// A link frame reached end `at` of link `i`: data for the receiver of the other end's half, or a link
    /// ACK for this end's own sender.
    fn on_frame(&mut self, cx: &mut Cx<'_, ArqEvent>, i: usize, at: usize, frame: Bytes) {
        let now = cx.now();
        let l = &mut self.links[i];
        if frame.first() == Some(&lasthop_arq::frame::KIND_ACK) {
            match l.halves[at].as_mut() {
                Some(h) => h.sender.handle_frame(now, &frame),
                None => l.malformed_tcp += 1,
            }
            self.pump(cx, i, at);
            return;
        }
        let Some(h) = l.halves[1 - at].as_mut() else {
            l.malformed_tcp += 1;
            return;
        };
        h.receiver.handle_frame(now, &frame);
        let mut acks = Vec::new();
        while let Some(ack) = h.receiver.poll_transmit() {
            acks.push(ack);
        }
        let up = h.delivered();
        for ack in acks {
            let p = Self::wrap(l, at, &ack);
            cx.send((l.link, at), p, false);
        }
        self.hand_up(cx, i, at, up);
    }

    /// Packets the receiver at end `at` of link `i` handed up: to the node itself, or on by its routes (a base
    /// station passes the mobile's packets on; LL-TCP-AWARE judges them first).
    fn hand_up(&mut self, cx: &mut Cx<'_, ArqEvent>, i: usize, at: usize, up: Vec<Bytes>) {
        let node = self.links[i].ends[at];
        for p in up {
            let Ok(inner) = Ipv4Packet::new_checked(&p[..]) else {
                self.links[i].malformed_tcp += 1;
                continue;
            };
            let dst = inner.dst_addr();
            if at == 0 && self.judge_from_mobile(i, &p) {
                continue;
            }
            if dst == cx.nodes()[node].addr {
                cx.deliver_local(node, p);
            } else {
                cx.route(node, dst, p, false);
            }
        }
    }

    /// LL-TCP-AWARE at the first end: true when the packet from the mobile is to be dropped (a duplicate ACK
    /// for a segment the link toward the mobile still holds, or an unreadable TCP header).
    fn judge_from_mobile(&mut self, i: usize, packet: &Bytes) -> bool {
        let l = &mut self.links[i];
        let (Some(filter), Some(h)) = (l.filter.as_mut(), l.halves[0].as_ref()) else { return false };
        match filter.judge(packet, h.sender.held_packets()) {
            Verdict::Pass => false,
            Verdict::Suppress => true,
            Verdict::Malformed => {
                l.malformed_tcp += 1;
                true
            }
        }
    }

    /// The ARQ half at `node` that sends toward `dst` (by the node's default gateway or routes), as (link,
    /// sending end).
    fn outgoing(&self, view: &View<'_>, node: usize, dst: Ipv4Addr) -> Option<(usize, usize)> {
        let out = view.next_hop(node, dst)?;
        self.links.iter().enumerate().find_map(|(i, l)| {
            let from = l.ends.iter().position(|&e| e == node)?;
            (out == (l.link, from) && l.halves[from].is_some()).then_some((i, from))
        })
    }
}

impl Feature for Arq {
    type Event = ArqEvent;

    fn hooks(&self) -> HookSet {
        // With ARQ both ways the mobile's own packets (its TCP ACKs and data) go in link frames. One way, the
        // first end is a base station forwarding what arrives, seen by `on_arrive`.
        let host_send = self.links.iter().any(|l| l.halves[1].is_some());
        HookSet { arrive: true, host_send, agent_output: self.agent_output, ..HookSet::default() }
    }

    fn set_up(&mut self, cx: &mut Cx<'_, ArqEvent>) {
        cx.request(Request::AddControlProtocol(PROTO_ARQ));
    }

    fn on_event(&mut self, cx: &mut Cx<'_, ArqEvent>, ArqEvent::Timer { i, from }: ArqEvent) {
        let now = cx.now();
        let Some(h) = self.links[i].halves[from].as_mut() else { return };
        if h.timer.is_some_and(|t| t <= now) {
            h.timer = None;
        }
        if h.sender.poll_timeout().is_some_and(|t| t <= now) {
            h.sender.handle_timeout(now);
        }
        self.pump(cx, i, from);
    }

    fn on_arrive(&mut self, cx: &mut Cx<'_, ArqEvent>, node: usize, link: usize, packet: &Bytes) -> bool {
        let ip = Ipv4Packet::new_unchecked(&packet[..]);
        let is_frame = ip.protocol() == PROTO_ARQ;
        for i in 0..self.links.len() {
            let l = &self.links[i];
            if link == l.link && is_frame {
                let Some(at) = l.ends.iter().position(|&e| e == node) else { continue };
                self.on_frame(cx, i, at, packet.slice(ip.payload_range()));
                return true;
            }
            if link == l.link && node == l.ends[0] && l.halves[1].is_none() {
                // From the mobile, not through ARQ: LL-TCP-AWARE judges its TCP ACKs.
                return self.judge_from_mobile(i, packet);
            }
        }
        if is_frame || ip.dst_addr() == cx.nodes()[node].addr || cx.is_control_protocol(ip.protocol()) {
            return false;
        }
        // A packet this node forwards onto a link direction that runs ARQ.
        match self.outgoing(&cx.view(), node, ip.dst_addr()) {
            Some((i, from)) => self.take(cx, i, from, packet),
            None => false,
        }
    }

    fn on_agent_output(&mut self, cx: &mut Cx<'_, ArqEvent>, node: usize, packet: &Bytes) -> bool {
        let Ok(ip) = Ipv4Packet::new_checked(&packet[..]) else { return false };
        if cx.is_control_protocol(ip.protocol()) {
            return false;
        }
        match self.outgoing(&cx.view(), node, ip.dst_addr()) {
            Some((i, from)) => self.take(cx, i, from, packet),
            None => false,
        }
    }

    fn on_reassociate(&mut self, cx: &mut Cx<'_, ArqEvent>, link: usize) {
        let Some(i) = self.links.iter().position(|l| l.link == link) else { return };
        for from in 0..2 {
            let l = &mut self.links[i];
            let Some(h) = l.halves[from].as_mut() else { continue };
            h.sender.restart();
            h.receiver.restart();
            // A timer event already scheduled finds nothing due and re-arms for the fresh sender.
            h.timer = None;
            let up = h.delivered();
            self.hand_up(cx, i, 1 - from, up);
        }
        let l = &mut self.links[i];
        if let Some(f) = l.filter.as_mut() {
            l.suppressed_before_restart += f.stats().dupacks_suppressed;
            *f = DupAckFilter::new(FILTER_CONNECTIONS);
        }
    }

    fn on_link_purge(&mut self, link: usize, dir: usize) {
        // The world's direction `dir` sends from `ends[dir]`, as the half of that index does.
        for l in self.links.iter_mut().filter(|l| l.link == link) {
            if let Some(h) = l.halves[dir].as_mut() {
                h.sender.flush();
            }
        }
    }

    fn on_host_send(&mut self, cx: &mut Cx<'_, ArqEvent>, node: usize, packet: &Bytes) -> bool {
        let Ok(ip) = Ipv4Packet::new_checked(&packet[..]) else { return false };
        match self.outgoing(&cx.view(), node, ip.dst_addr()) {
            Some((i, from)) => self.take(cx, i, from, packet),
            None => false,
        }
    }

    fn finish(self, view: View<'_>, result: &mut RunResult) {
        for l in self.links {
            for (from, h) in l.halves.iter().enumerate() {
                let Some(h) = h else { continue };
                let s = h.sender.stats();
                let c = result.agents.entry(view.nodes()[l.ends[from]].name.clone()).or_default();
                for (k, v) in [
                    ("arq_frames_sent", s.frames_sent),
                    ("arq_retransmissions", s.retransmissions),
                    ("arq_gap_retransmissions", s.gap_retransmissions),
                    ("arq_frames_abandoned", s.frames_abandoned),
                    ("arq_queue_drops", s.queue_drops),
                    ("arq_restarts", s.restarts),
                    ("arq_frames_flushed", s.frames_flushed),
                ] {
                    *c.entry(k.into()).or_default() += v;
                }
                let r = h.receiver.stats();
                let c = result.agents.entry(view.nodes()[l.ends[1 - from]].name.clone()).or_default();
                for (k, v) in [
                    ("arq_duplicates", r.duplicates),
                    ("arq_acks_sent", r.acks_sent),
                    ("arq_frames_skipped", r.frames_skipped),
                    ("arq_malformed", r.malformed),
                ] {
                    *c.entry(k.into()).or_default() += v;
                }
            }
            let c = result.agents.entry(view.nodes()[l.ends[0]].name.clone()).or_default();
            *c.entry("arq_dupacks_suppressed".into()).or_default() +=
                l.suppressed_before_restart + l.filter.as_ref().map_or(0, |f| f.stats().dupacks_suppressed);
            let c = result.agents.entry(view.nodes()[l.ends[1]].name.clone()).or_default();
            *c.entry("arq_malformed".into()).or_default() += l.malformed_tcp;
        }
    }
}
