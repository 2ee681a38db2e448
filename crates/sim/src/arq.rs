//! Link-level ARQ on a wireless link in a run (`[links.NAME.arq]`): the `lasthop-arq` state machines
//! carry every packet from the link's first end (`ends[0]`, the base station in every example) to its second
//! (the mobile) in numbered frames, and the second end answers each with a link ACK that is a real frame on
//! the shared medium, contending with data. The four schemes of the ToN'97 comparison (seed 001 ref. [12]):
//! LL (`selective_acks = false`), LL-SMART (`true`), each TCP-unaware or, with `tcp_aware = true`,
//! LL-TCP-AWARE: the base station drops the mobile's duplicate TCP ACKs for segments its link still holds.
//!
//! Frames travel as IPv4 packets of protocol [`PROTO_ARQ`] between the two ends' addresses, the link header
//! of `lasthop_arq::frame` in their payload: 20 bytes more per frame than a bare link header would take, so
//! the medium time these schemes pay is slightly overstated (a 1440-byte packet becomes 1465 bytes, +1.7 %).
//! The reverse direction (the mobile's TCP ACKs) is sent without ARQ.
//!
//! The sender's retransmission timer runs from when a frame is handed to the link's queue, not from when
//! it goes on the air (a feature does not see transmissions), so its default is long enough for a full
//! window of frames and their link ACKs to cross the medium ahead of it.
//!
//! Not here yet: ARQ together with `[mobility]` (refused), and with an agent at the sending end (refused).

use crate::feature::{Feature, FeatureEvent, FeatureId, HookSet};
use crate::metrics::RunResult;
use crate::scenario::Scenario;
use crate::world::World;
use bytes::{BufMut, Bytes, BytesMut};
use lasthop_arq::tcp_aware::{DupAckFilter, Verdict};
use lasthop_arq::{ArqConfig, ArqReceiver, ArqSender, Delivery};
use lasthop_wire::ipv4::{Ipv4Packet, Ipv4Repr, HEADER_LEN};
use lasthop_wire::Time;
use serde::Deserialize;
use std::net::Ipv4Addr;

/// IP protocol number of ARQ frames (253 and 254 are RFC 3692's experimental numbers; 253 is taken by the
/// handoff control messages, so ARQ takes 254).
pub const PROTO_ARQ: u8 = 254;

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
        }
    }
}

impl ArqSettings {
    pub fn validate(&self) -> Result<(), (String, String)> {
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

pub(crate) enum ArqEvent {
    /// The sender of ARQ link `i` may have a timer due.
    Timer { i: usize },
}

struct ArqLink {
    link: usize,
    ends: [usize; 2],
    addrs: [Ipv4Addr; 2],
    sender: ArqSender,
    receiver: ArqReceiver,
    filter: Option<DupAckFilter>,
    timer: Option<Time>,
    ident: u16,
    /// Packets refused by the link's full queue; malformed frames or packets dropped.
    refused: u64,
    malformed_tcp: u64,
}

pub(crate) struct Arq {
    id: FeatureId,
    links: Vec<ArqLink>,
}

impl Arq {
    pub(crate) fn build(s: &Scenario, world: &mut World, id: FeatureId) -> Option<Arq> {
        let mut links = Vec::new();
        for (name, l) in &s.links {
            let Some(a) = &l.arq else { continue };
            let link = world.links.iter().position(|x| &x.name == name).expect("validated");
            let ends = world.links[link].ends;
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
            links.push(ArqLink {
                link,
                ends,
                addrs: [world.nodes[ends[0]].addr, world.nodes[ends[1]].addr],
                receiver: ArqReceiver::new(&cfg),
                sender: ArqSender::new(cfg),
                filter: a.tcp_aware.then(|| DupAckFilter::new(1024)),
                timer: None,
                ident: 0,
                refused: 0,
                malformed_tcp: 0,
            });
        }
        if links.is_empty() {
            return None;
        }
        world.add_control_protocol(PROTO_ARQ);
        Some(Arq { id, links })
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

    /// Puts on the link every frame the sender of link `i` will send now, and re-arms its timer.
    fn pump(&mut self, world: &mut World, now: Time, i: usize) {
        let l = &mut self.links[i];
        while let Some(frame) = l.sender.poll_transmit(now) {
            let p = Self::wrap(l, 0, &frame);
            world.send(now, (l.link, 0), p, false);
        }
        if let Some(t) = l.sender.poll_timeout() {
            if l.timer.is_none_or(|s| t < s) {
                l.timer = Some(t);
                world.schedule(t, self.id, FeatureEvent::Arq(ArqEvent::Timer { i }));
            }
        }
    }
}

impl Feature for Arq {
    fn hooks(&self) -> HookSet {
        HookSet { arrive: true, ..HookSet::default() }
    }

    fn on_event(&mut self, world: &mut World, now: Time, event: FeatureEvent) {
        let FeatureEvent::Arq(ArqEvent::Timer { i }) = event else { return };
        let l = &mut self.links[i];
        if l.timer.is_some_and(|t| t <= now) {
            l.timer = None;
        }
        if l.sender.poll_timeout().is_some_and(|t| t <= now) {
            l.sender.handle_timeout(now);
        }
        self.pump(world, now, i);
    }

    fn on_arrive(&mut self, world: &mut World, now: Time, node: usize, link: usize, packet: &Bytes) -> bool {
        let ip = Ipv4Packet::new_unchecked(&packet[..]);
        let is_frame = ip.protocol() == PROTO_ARQ;
        for i in 0..self.links.len() {
            let l = &mut self.links[i];
            if node == l.ends[1] && link == l.link && is_frame {
                // A data frame reaches the receiving end: ACK it, hand up what it releases.
                let frame = packet.slice(ip.payload_range());
                l.receiver.handle_frame(now, &frame);
                while let Some(ack) = l.receiver.poll_transmit() {
                    let p = Self::wrap(l, 1, &ack);
                    world.send(now, (l.link, 1), p, false);
                }
                let mut up = Vec::new();
                while let Some(p) = l.receiver.poll_deliver() {
                    up.push(p);
                }
                for p in up {
                    let Ok(inner) = Ipv4Packet::new_checked(&p[..]) else {
                        l.malformed_tcp += 1;
                        continue;
                    };
                    if inner.dst_addr() == world.nodes[node].addr {
                        world.deliver_local(now, node, p);
                    } else {
                        let dst = inner.dst_addr();
                        world.route(now, node, dst, p, false);
                    }
                }
                return true;
            }
            if node == l.ends[0] && link == l.link && is_frame {
                let frame = packet.slice(ip.payload_range());
                l.sender.handle_frame(now, &frame);
                self.pump(world, now, i);
                return true;
            }
            if node == l.ends[0] && link == l.link {
                // From the mobile, not through ARQ: LL-TCP-AWARE judges its TCP ACKs.
                let Some(filter) = l.filter.as_mut() else { return false };
                return match filter.judge(packet, l.sender.held_packets()) {
                    Verdict::Pass => false,
                    Verdict::Suppress => true,
                    Verdict::Malformed => {
                        l.malformed_tcp += 1;
                        true
                    }
                };
            }
            if node == l.ends[0] && !is_frame && ip.dst_addr() != world.nodes[node].addr {
                let to = world.nodes.iter().position(|n| n.addr == ip.dst_addr());
                let out = to.and_then(|to| world.nodes[node].routes[to]);
                if out == Some((l.link, 0)) {
                    if !l.sender.send(packet.clone()) {
                        l.refused += 1;
                    }
                    self.pump(world, now, i);
                    return true;
                }
            }
        }
        false
    }

    fn finish(self: Box<Self>, world: &World, result: &mut RunResult) {
        for l in self.links {
            let s = l.sender.stats();
            let c = result.agents.entry(world.nodes[l.ends[0]].name.clone()).or_default();
            c.insert("arq_frames_sent".into(), s.frames_sent);
            c.insert("arq_retransmissions".into(), s.retransmissions);
            c.insert("arq_gap_retransmissions".into(), s.gap_retransmissions);
            c.insert("arq_frames_abandoned".into(), s.frames_abandoned);
            c.insert("arq_queue_drops".into(), s.queue_drops);
            c.insert("arq_dupacks_suppressed".into(), l.filter.as_ref().map_or(0, |f| f.stats().dupacks_suppressed));
            let r = l.receiver.stats();
            let c = result.agents.entry(world.nodes[l.ends[1]].name.clone()).or_default();
            c.insert("arq_duplicates".into(), r.duplicates);
            c.insert("arq_acks_sent".into(), r.acks_sent);
            c.insert("arq_frames_skipped".into(), r.frames_skipped);
            c.insert("arq_malformed".into(), r.malformed + l.malformed_tcp);
        }
    }
}
