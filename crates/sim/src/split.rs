//! I-TCP's split connection in a run (seed 000 §2, "The Split Connection Approach"): at every node whose
//! agent is `"split"` or `"split-sack"`, a TCP connection opened from the wired side toward a host behind
//! the node's wireless link is terminated by a [`SplitRelay`] (`lasthop_tcp::split`), which opens its own
//! connection to the mobile (with SACK for `"split-sack"`, the ToN'97 SPLIT-SACK) and relays the bytes
//! through a `[split] buffer_bytes` socket buffer. The relay answers as the mobile's address and sends as
//! the fixed host's, so the flow's endpoints are unchanged and its metrics (delivery, integrity) are
//! measured at the real ends.
//!
//! The relay's end of the fixed host's connection takes the TCP configuration of the flow between those two
//! hosts (the scenario's `[tcp]` when no flow matches); its connection to the mobile the same, with
//! `variant = "sack"` for `"split-sack"` (the mobile must offer SACK: `tcp.sack = true`).
//!
//! When the node fails (`[failure]`, [`crate::failure`]) its relays are lost with the bytes they buffered:
//! packets of those connections that reach the node afterwards are dropped (`split_orphaned_packets`), as a
//! restarted I-TCP base station would refuse them, and the fixed sender keeps the acknowledgments it got.
//!
//! Not here yet: handoff of relays between base stations (state transfer priced by
//! `lasthop_tcp::split::StateTransferCost`); a split node cannot be a mobility base station (refused by
//! scenario validation), and data from the mobile is forwarded, not split.

use crate::feature::{Feature, FeatureEvent, FeatureId, HookSet};
use crate::metrics::RunResult;
use crate::scenario::{LinkKind, Scenario};
use crate::world::World;
use crate::{rng, SimError};
use bytes::Bytes;
use lasthop_tcp::split::{SplitConfig, SplitRelay, Toward};
use lasthop_tcp::{TcpConfig, Variant};
use lasthop_wire::ipv4::{Ipv4Packet, PROTO_TCP};
use lasthop_wire::{SeqNum, TcpPacket, Time};
use rand::RngCore;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddrV4};

/// The scenario's `[split]` table.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SplitSettings {
    /// The socket buffer between the two connections at the base station, bytes (default 65536, I-TCP's
    /// 64 KB).
    pub buffer_bytes: u32,
}

impl Default for SplitSettings {
    fn default() -> Self {
        SplitSettings { buffer_bytes: 65536 }
    }
}

impl SplitSettings {
    pub fn validate(&self) -> Result<(), (String, String)> {
        if !(1..=1 << 30).contains(&self.buffer_bytes) {
            return Err(("buffer_bytes".into(), "expected 1 to 1073741824 bytes".into()));
        }
        Ok(())
    }
}

/// Split's events.
pub(crate) enum SplitEvent {
    /// Relay `relay`'s timer may be due.
    Timer { relay: usize },
    /// The node of `[failure]` fails: its relays are lost.
    NodeFails { node: usize },
}

struct Slot {
    node: usize,
    /// `None` once lost in a failure of its node.
    relay: Option<SplitRelay>,
    fixed: Ipv4Addr,
    mobile: Ipv4Addr,
    timer: Option<Time>,
}

/// Connection key: (node, fixed host, its port, mobile, its port).
type Key = (usize, Ipv4Addr, u16, Ipv4Addr, u16);

pub(crate) struct Split {
    id: FeatureId,
    /// Split nodes and whether they run SACK toward the mobile.
    nodes: BTreeMap<usize, bool>,
    buffer_bytes: u32,
    /// TCP configuration by (fixed host, mobile) address, from the flows.
    tcp: BTreeMap<(Ipv4Addr, Ipv4Addr), TcpConfig>,
    default_tcp: TcpConfig,
    seed: u64,
    relays: Vec<Slot>,
    by_key: BTreeMap<Key, usize>,
    orphaned: u64,
}

impl Split {
    /// `None` when no node splits connections.
    pub(crate) fn build(s: &Scenario, world: &mut World, id: FeatureId) -> Result<Option<Split>, SimError> {
        let nodes: BTreeMap<usize, bool> = s
            .nodes
            .iter()
            .filter(|(_, n)| n.agent.0.iter().any(|k| k.is_split()))
            .map(|(name, n)| (world.node_index(name), n.agent.0.contains(&crate::scenario::AgentKind::SplitSack)))
            .collect();
        if nodes.is_empty() {
            return Ok(None);
        }
        let bad = |m: String| crate::ScenarioError { origin: s.origin().to_string(), message: m };
        let mut tcp = BTreeMap::new();
        for (name, f) in &s.flows {
            let cfg = s.flow_tcp(name).map_err(|m| bad(format!("`flows.{name}.tcp`: {m}")))?;
            tcp.entry((s.nodes[&f.from].addr, s.nodes[&f.to].addr)).or_insert(cfg);
        }
        let default_tcp = s.flow_tcp("").map_err(|m| bad(format!("`tcp`: {m}")))?;
        if let Some(f) = &s.failure {
            let node = world.node_index(&f.node);
            if nodes.contains_key(&node) {
                world.schedule(f.at(), id, FeatureEvent::Split(SplitEvent::NodeFails { node }));
            }
        }
        Ok(Some(Split {
            id,
            nodes,
            buffer_bytes: s.split.buffer_bytes,
            tcp,
            default_tcp,
            seed: s.seed,
            relays: Vec::new(),
            by_key: BTreeMap::new(),
            orphaned: 0,
        }))
    }

    /// A new relay at `node` for the connection `fixed` → `mobile`.
    fn open(&mut self, node: usize, fixed: SocketAddrV4, mobile: SocketAddrV4) -> usize {
        let wired = self.tcp.get(&(*fixed.ip(), *mobile.ip())).unwrap_or(&self.default_tcp).clone();
        let mut wireless = wired.clone();
        if self.nodes[&node] {
            wireless.variant = Variant::Sack;
            wireless.sack = true;
        }
        let i = self.relays.len();
        let mut r = rng::stream(self.seed, &format!("split.{node}.{i}"), "iss");
        let (a, b) = (SeqNum(r.next_u32()), SeqNum(r.next_u32()));
        let cfg = SplitConfig { buffer_bytes: self.buffer_bytes, wired, wireless };
        self.relays.push(Slot {
            node,
            relay: Some(SplitRelay::new(cfg, fixed, mobile, a, b)),
            fixed: *fixed.ip(),
            mobile: *mobile.ip(),
            timer: None,
        });
        i
    }

    /// Sends what relay `i` has to send and re-arms its timer.
    fn drain(&mut self, world: &mut World, now: Time, i: usize) {
        let slot = &mut self.relays[i];
        let Some(relay) = slot.relay.as_mut() else { return };
        while let Some((toward, p)) = relay.poll_transmit(now) {
            let dst = if toward == Toward::Wired { slot.fixed } else { slot.mobile };
            world.route(now, slot.node, dst, p, false);
        }
        if let Some(t) = relay.poll_timeout() {
            if slot.timer.is_none_or(|s| t < s) {
                slot.timer = Some(t);
                world.schedule(t, self.id, FeatureEvent::Split(SplitEvent::Timer { relay: i }));
            }
        }
    }
}

impl Feature for Split {
    fn hooks(&self) -> HookSet {
        HookSet { arrive: true, ..HookSet::default() }
    }

    fn on_event(&mut self, world: &mut World, now: Time, event: FeatureEvent) {
        let FeatureEvent::Split(event) = event else { return };
        match event {
            SplitEvent::Timer { relay: i } => {
                let slot = &mut self.relays[i];
                if slot.timer.is_some_and(|t| t <= now) {
                    slot.timer = None;
                }
                if let Some(r) = slot.relay.as_mut() {
                    if r.poll_timeout().is_some_and(|t| t <= now) {
                        r.handle_timeout(now);
                    }
                }
                self.drain(world, now, i);
            }
            SplitEvent::NodeFails { node } => {
                for slot in self.relays.iter_mut().filter(|s| s.node == node) {
                    slot.relay = None;
                }
            }
        }
    }

    fn on_arrive(&mut self, world: &mut World, now: Time, node: usize, link: usize, packet: &Bytes) -> bool {
        if !self.nodes.contains_key(&node) {
            return false;
        }
        let ip = Ipv4Packet::new_unchecked(&packet[..]);
        if ip.protocol() != PROTO_TCP || ip.is_fragment() || ip.dst_addr() == world.nodes[node].addr {
            return false;
        }
        let Ok(tcp) = TcpPacket::new_checked(ip.payload()) else { return false };
        let from_mobile = world.links[link].kind == LinkKind::Wireless;
        let (src, dst) =
            (SocketAddrV4::new(ip.src_addr(), tcp.src_port()), SocketAddrV4::new(ip.dst_addr(), tcp.dst_port()));
        let (fixed, mobile) = if from_mobile { (dst, src) } else { (src, dst) };
        let key = (node, *fixed.ip(), fixed.port(), *mobile.ip(), mobile.port());
        let i = match self.by_key.get(&key) {
            Some(&i) => i,
            None => {
                // A new connection from the wired side toward a host behind this node's wireless link.
                let to = world.nodes.iter().position(|n| n.addr == *mobile.ip());
                let toward_wireless = to
                    .and_then(|to| world.nodes[node].routes[to])
                    .is_some_and(|(l, _)| world.links[l].kind == LinkKind::Wireless);
                if from_mobile || !tcp.syn() || tcp.ack() || !toward_wireless {
                    return false;
                }
                let i = self.open(node, fixed, mobile);
                self.by_key.insert(key, i);
                i
            }
        };
        match self.relays[i].relay.as_mut() {
            Some(r) => r.handle_packet(now, from_mobile, packet),
            None => {
                self.orphaned += 1;
                return true;
            }
        }
        self.drain(world, now, i);
        true
    }

    fn finish(self: Box<Self>, world: &World, result: &mut RunResult) {
        for &node in self.nodes.keys() {
            let mine = || self.relays.iter().filter(move |s| s.node == node);
            let sum = |f: &dyn Fn(&SplitRelay) -> u64| mine().filter_map(|s| s.relay.as_ref()).map(f).sum::<u64>();
            let c = result.agents.entry(world.nodes[node].name.clone()).or_default();
            c.insert("split_relays_opened".into(), mine().count() as u64);
            c.insert("split_relays_lost".into(), mine().filter(|s| s.relay.is_none()).count() as u64);
            c.insert("split_orphaned_packets".into(), self.orphaned);
            c.insert("split_bytes_relayed".into(), sum(&|r| r.stats().bytes_relayed));
            c.insert("split_corrupt_bytes".into(), sum(&|r| r.stats().corrupt_bytes));
            c.insert(
                "split_max_buffered".into(),
                mine().filter_map(|s| s.relay.as_ref()).map(|r| r.stats().max_buffered).max().unwrap_or(0),
            );
            c.insert("split_wireless_retransmitted".into(), sum(&|r| r.wireless().stats().segments_retransmitted));
            c.insert("split_wireless_timeouts".into(), sum(&|r| r.wireless().stats().timeouts));
        }
    }
}
