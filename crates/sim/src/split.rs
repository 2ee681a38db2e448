//! I-TCP's split connection in a run (Balakrishnan 1995 §2, "The Split Connection Approach"): at every node whose
//! agent is `"split"` or `"split-sack"`, every TCP connection between a host behind the node's wireless
//! link (the mobile) and a host on its wired side is terminated by a [`SplitRelay`] (`lasthop_tcp::split`),
//! whichever end opens it ("splitting a TCP connection between a fixed and mobile host into two separate
//! connections at the base station", Balakrishnan 1995 §2):
//!
//! - opened from the wired side ([`Direction::ToMobile`]): the relay receives the fixed host's data, opens
//!   its own connection to the mobile (with SACK for `"split-sack"`, the ToN'97 SPLIT-SACK) and relays the
//!   bytes through a `[split] buffer_bytes` socket buffer;
//! - opened by the mobile ([`Direction::FromMobile`], the mobile is the sender, as in Balakrishnan 1998 §3's
//!   transfers from a mobile host): the relay acknowledges the mobile's data over the wireless hop (offering
//!   SACK for `"split-sack"`), opens its own connection to the fixed host and sends the bytes on through the
//!   same buffer, whose free space is the window the mobile sees.
//!
//! The relay answers each host as the other's address, so the flow's endpoints are unchanged and its
//! metrics (delivery, integrity, `bytes_acked_not_delivered`) are measured at the real ends. A connection
//! between two hosts on the same side (two mobiles of one cell, two wired hosts) is forwarded.
//!
//! The relay's two ends take the TCP configuration of the flow between the two hosts (the scenario's
//! `[tcp]` when no flow matches); for `"split-sack"` its sender toward the mobile runs `variant = "sack"`
//! and its receiver from the mobile offers SACK (the mobile must offer SACK too: `tcp.sack = true`).
//!
//! When the node fails (`[failure]`, [`crate::failure`]) its relays are lost with the bytes they buffered:
//! packets of those connections that reach the node afterwards are dropped (`split_orphaned_packets`), as a
//! restarted I-TCP base station would refuse them, and the data sender (the fixed host, or the mobile for a
//! connection it opened) keeps the acknowledgments it got. `split_failure_bytes_held` counts what the lost
//! relays held: bytes acknowledged to their senders and not yet acknowledged by their receivers, the bound
//! of the flows' `bytes_acked_not_delivered`, and `split_failure_bytes_received` all they had received. The
//! flows' own count is smaller by what was still in the network: acknowledgments on their way to the sender,
//! bytes on their way to the receiver.
//!
//! # At mobility base stations: handoff by state transfer (Balakrishnan 1995 §2)
//!
//! With `[mobility]` (`scheme = "plain"`, every base station splitting), the home agent tunnels the fixed
//! host's packets to the base station serving the mobile, whose relay takes them out of the tunnel (this
//! feature runs before mobility's, so the handoff agent never forwards them). I-TCP hands off by moving the
//! relay: "the I-TCP connections must be moved from the base station currently forwarding data to another
//! one. This is done by transferring the state associated with the two connections to the new base station"
//! (Balakrishnan 1995 §2). The mobile greets the new base station, which notifies the old one (Caceres 1995's messages,
//! real packets); when the old base station learns of the handoff its relays leave it and reach the new one
//! after a **modelled** transfer:
//!
//! - `[split.handoff]`'s cost, `fixed_ms` + `per_kb_ms` per KB of socket buffer
//!   ([`lasthop_tcp::split::StateTransferCost`]: 265 ms + 36.4 ms/KB from I-TCP's "265 ms for empty socket
//!   buffers to 1430 ms for 32KByte socket buffers", Balakrishnan 1995 §2, measured on 1995 hardware), plus
//! - the bytes' own time on the wired route between the two base stations: the buffered bytes at the
//!   route's slowest link plus its propagation delays (at 10 Mb/s, 26 ms for 32 KB: the measured per-KB cost
//!   already includes I-TCP's own transfer over its Ethernet, so this share is counted twice, about 2 %).
//!
//! The transfer is modelled, not sent as packets, because what dominates it is I-TCP's measured processing
//! (moving sockets between kernels), which packets on our links would not reproduce; a reliable bulk
//! protocol between base stations for a few tens of KB would add machinery and no information. While the
//! state is on its way, the connection's packets that reach the new base station (the home agent's binding
//! and the old base station's re-tunnelling point there, and the mobile's ACKs) wait there, and are handed to
//! the relay in order when it arrives; the mobile's data waits in the moving buffer. The relay then resends
//! to the mobile from its last acknowledgment at once ([`SplitRelay::resume_after_move`]). Packets of a
//! moved connection that still reach the old base station over the air are dropped and counted
//! (`split_stray_packets`); tunnelled ones go to its handoff agent, which re-tunnels them to the new one.
//! When handoffs come faster than the state moves, a relay whose destination learns that the mobile has
//! moved on leaves again as soon as it arrives, and stays when the mobile comes back to it.
//!
//! A relay of the mobile's own connection moves the same way; at the new base station it sends the mobile
//! three duplicate ACKs, so that the mobile resends at once what went into the old cell
//! ([`SplitRelay::resume_after_move`]).
//!
//! # M-TCP (Brown 1997): `agent = "mtcp"`
//!
//! An `"mtcp"` node runs M-TCP's supervisor host the same way, with [`SplitRelay::new_mtcp`]'s relay for every
//! connection a wired host opens to the mobile: SH-TCP acknowledges to the sender only what the mobile has
//! acknowledged, less the last byte, and its own connection recovers wireless losses
//! ([`lasthop_tcp::split::mtcp`]). A connection the mobile opens is forwarded unchanged (not modelled). The
//! relay notices a silent mobile itself; at a handoff, the old base station's relay freezes the sender with
//! the held byte and a zero window when it learns the mobile has gone (the Notify), before it leaves, and
//! resumes it with a window update at the new one. A base station that runs `"mtcp"` is one cell and its
//! own supervisor host, so every handoff changes supervisor host and the relay moves as I-TCP's does, at
//! I-TCP's measured cost (`[split.handoff]`): the state is of the same kind (the two connections' control
//! blocks and the bytes the mobile has not acknowledged), and we know of no measurement of M-TCP's own.
//!
//! ## A supervisor host above several cells
//!
//! In Brown 1997's architecture one supervisor host serves several cells. An `"mtcp"` node that is not a
//! mobility base station but is joined by wired links to some of them is the supervisor host of those cells
//! (`supervisor_cells`; it must lie on the home agent's route to them, and every cell must have
//! one). The home agent's tunnels to its cells pass through it: it takes them as they pass (the relay for
//! a connection from the wired side, opened at its SYN) and sends what it has for the mobile to the base
//! station of the mobile's cell, which forwards it as any packet for the mobile. It learns that cell from
//! the home agent's tunnels and from the new base station's Notify to the home agent, both passing through
//! it. A handoff between its cells moves nothing: at the Notify its relays resume through the new cell
//! ([`SplitRelay::mobile_changed_cell`]: a window update if the sender was frozen, and its connection to
//! the mobile resends from the mobile's last acknowledgment at once), and that connection recovers what the
//! handoff lost. When the mobile goes to a cell under another supervisor host, the Notify to the old base
//! station passes through the old supervisor host, whose relays then move at `[split.handoff]`'s cost to the
//! new one (which holds the connection's packets meanwhile, and sends on to the relay's new place the home
//! agent's tunnels that still reach it after the relay left).
//!
//! The mobile's own TCP is M-TCP's as well when the cells are: its sending connections are frozen while it
//! is out of every cell and resume when it is back (`crate::mobility`).

use crate::context::{Cx, View};
use crate::feature::{Feature, HookSet};
use crate::metrics::RunResult;
use crate::mobility::{MobilityConfig, SchemeKind};
use crate::registry::{Family, Together};
use crate::scenario::{AgentKind, Invalid, LinkKind, Scenario};
use crate::{rng, SimError};
use bytes::Bytes;
use lasthop_agents::handoff::{Control, Kind, PROTO_HANDOFF};
use lasthop_tcp::split::{Direction, SplitConfig, SplitRelay, StateTransferCost, Toward};
use lasthop_tcp::{TcpConfig, Variant};
use lasthop_wire::ipip;
use lasthop_wire::ipv4::{Ipv4Packet, PROTO_IPIP, PROTO_TCP};
use lasthop_wire::{SeqNum, TcpPacket, Time};
use rand::RngCore;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::net::{Ipv4Addr, SocketAddrV4};

/// The scenario's `[split]` table.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SplitSettings {
    /// The socket buffer between the two connections at the base station, bytes (default 65536, I-TCP's
    /// 64 KB).
    pub buffer_bytes: u32,
    /// `[split.handoff]`: the cost of moving a relay to the new base station at a handoff (`fixed_ms`,
    /// default 265, and `per_kb_ms`, default 36.4; [`StateTransferCost`]).
    pub handoff: StateTransferCost,
}

impl Default for SplitSettings {
    fn default() -> Self {
        SplitSettings { buffer_bytes: 65536, handoff: StateTransferCost::default() }
    }
}

impl SplitSettings {
    pub fn validate(&self) -> Result<(), (String, String)> {
        if !(1..=1 << 30).contains(&self.buffer_bytes) {
            return Err(("buffer_bytes".into(), "expected 1 to 1073741824 bytes".into()));
        }
        self.handoff.validate().map_err(|(field, m)| (format!("handoff.{field}"), m))
    }
}

/// The family's registration: nodes with agent "split", "split-sack" or "mtcp", and `[split]`.
pub(crate) const FAMILY: Family = Family {
    name: "split",
    present: |s| s.nodes.values().any(|n| n.agent.0.iter().any(|k| k.is_split())),
    validate,
    together: &[Together::With { other: "mobility", check: validate_cells }],
    columns: None,
    row: None,
    build: |s, world| {
        if let Some(f) = Split::build(s, world.view())? {
            world.register(f);
        }
        Ok(())
    },
};

fn validate(s: &Scenario) -> Result<(), Invalid> {
    for (name, n) in &s.nodes {
        if n.agent.0.len() > 1 && n.agent.0.iter().any(|k| k.is_split()) {
            return Err((
                format!("nodes.{name}.agent"),
                "\"split\", \"split-sack\" and \"mtcp\" terminate TCP at the node and cannot be chained with other agents"
                    .into(),
            ));
        }
    }
    s.split.validate().map_err(|(f, m)| (format!("split.{f}"), m))
}

/// Split connections at mobility base stations hand off by moving their relays: every base station must
/// split the same way, and the routing must be the plain scheme's (the multicast scheme's buffering base
/// stations would send the fixed host's segments into the relay's connection).
fn validate_cells(s: &Scenario) -> Result<(), Invalid> {
    let Some(m) = s.mobility.as_ref().filter(|m| m.scheme != SchemeKind::None) else { return Ok(()) };
    let supervisors = supervisor_cells(s, m);
    if !supervisors.is_empty() {
        return validate_supervisors(s, m, &supervisors);
    }
    let split = |b: &String| s.nodes[b].agent.0.iter().find(|k| k.is_split()).copied();
    let first = split(&m.base_stations[0]);
    if let Some(b) = m.base_stations.iter().find(|b| split(b) != first) {
        return Err((
            format!("nodes.{b}.agent"),
            "split connections hand off between base stations that all split: expected every mobility base station to run the same \"split\" / \"split-sack\" / \"mtcp\" or none".into(),
        ));
    }
    if first.is_some() && m.scheme != SchemeKind::Plain {
        return Err((
            "mobility.scheme".into(),
            "I-TCP and M-TCP hand off by moving their relays' state (`[split.handoff]`): expected scheme = \"plain\" with split base stations".into(),
        ));
    }
    Ok(())
}

/// M-TCP's supervisor hosts above mobility cells (Brown 1997): every `"mtcp"` node that is not itself a
/// mobility base station, with the base stations a wired link joins it to (its cells), in the order of
/// `mobility.base_stations`. Nodes with no such base station are left out.
fn supervisor_cells<'a>(s: &'a Scenario, m: &'a MobilityConfig) -> BTreeMap<&'a str, Vec<&'a str>> {
    s.nodes
        .iter()
        .filter(|(name, n)| n.agent.0.contains(&AgentKind::Mtcp) && !m.base_stations.contains(name))
        .map(|(name, _)| {
            let wired = |b: &&String| s.joined(name, b, LinkKind::Wired);
            (name.as_str(), m.base_stations.iter().filter(wired).map(String::as_str).collect::<Vec<_>>())
        })
        .filter(|(_, cells)| !cells.is_empty())
        .collect()
}

/// Supervisor hosts above the cells route the mobile's packets through the base station of its cell: every
/// base station is under exactly one of them and runs no split agent itself, and routing is the plain
/// scheme's.
fn validate_supervisors(
    s: &Scenario,
    m: &MobilityConfig,
    supervisors: &BTreeMap<&str, Vec<&str>>,
) -> Result<(), Invalid> {
    if m.scheme != SchemeKind::Plain {
        return Err((
            "mobility.scheme".into(),
            "M-TCP's supervisor hosts above the cells need the plain scheme's routing: expected scheme = \"plain\""
                .into(),
        ));
    }
    for b in &m.base_stations {
        if s.nodes[b].agent.0.iter().any(|k| k.is_split()) {
            return Err((
                format!("nodes.{b}.agent"),
                "a base station under an M-TCP supervisor host runs no split agent itself: expected \"none\"".into(),
            ));
        }
        let above: Vec<&str> = supervisors.iter().filter(|(_, c)| c.contains(&b.as_str())).map(|(s, _)| *s).collect();
        if above.len() != 1 {
            return Err((
                "mobility.base_stations".into(),
                format!(
                    "expected every base station joined by a wired link to exactly one \"mtcp\" supervisor host; `{b}` has {}",
                    if above.is_empty() { "none".to_string() } else { above.join(", ") }
                ),
            ));
        }
    }
    Ok(())
}

/// Split's events.
pub(crate) enum SplitEvent {
    /// Relay `relay`'s timer may be due.
    Timer { relay: usize },
    /// The node of `[failure]` fails: its relays are lost.
    NodeFails { node: usize },
    /// Relay `relay`'s state has reached the base station it was moved to.
    Moved { relay: usize },
}

struct Slot {
    /// Where the relay runs, or, while `moving`, where it is going.
    node: usize,
    /// `None` once lost in a failure of its node.
    relay: Option<SplitRelay>,
    /// Which end opened the connection (kept when the relay is lost).
    direction: Direction,
    fixed: Ipv4Addr,
    mobile: Ipv4Addr,
    timer: Option<Time>,
    /// The state is on the wired network between two base stations.
    moving: bool,
    /// The base station the mobile greeted, before the relay leaves the old one.
    expected_at: Option<usize>,
    /// While `moving`: its destination was told the mobile has moved on again (a handoff shorter than the
    /// transfer), so it leaves for this base station as soon as it arrives.
    then_to: Option<usize>,
    /// Packets of the connection that reached `node` (or `expected_at`) before the relay did, in order, with
    /// whether they came from the mobile.
    held: Vec<(bool, Bytes)>,
}

impl Slot {
    /// Whether packets for this relay that reach `node` wait there for it.
    fn awaited_at(&self, node: usize) -> bool {
        self.headed_to(node) || self.expected_at == Some(node)
    }

    /// Whether the relay is on its way to `node`.
    fn headed_to(&self, node: usize) -> bool {
        self.moving && self.node == node
    }
}

/// Connection key: (fixed host, its port, mobile, its port). A connection has one relay, wherever it is.
type Key = (Ipv4Addr, u16, Ipv4Addr, u16);

/// The mobility base stations whose relays hand off, and who may tunnel to them.
struct Cells {
    bss: BTreeSet<usize>,
    /// Addresses of the home agent, the base stations and the supervisor hosts (the tunnels' trusted
    /// sources).
    tunnel_sources: BTreeSet<Ipv4Addr>,
    cost: StateTransferCost,
    /// M-TCP's supervisor hosts above the cells, by node (see the module documentation).
    supervisors: BTreeMap<usize, Supervisor>,
    mobile: Ipv4Addr,
    home_agent: Ipv4Addr,
}

/// An M-TCP supervisor host above several cells: their base stations, and the one whose cell the mobile is
/// in, as far as the supervisor has learnt (the home agent's tunnels and the handoff's Notify, which pass
/// through it).
struct Supervisor {
    /// Base station address → node.
    cells: BTreeMap<Ipv4Addr, usize>,
    current: usize,
}

impl Cells {
    /// The node that runs the relays of a mobile in `bs`'s cell: the supervisor host above it, if any, else
    /// the base station itself.
    fn relay_node_for(&self, bs: Ipv4Addr, view: View<'_>) -> Option<usize> {
        let sh = self.supervisors.iter().find(|(_, s)| s.cells.contains_key(&bs)).map(|(&n, _)| n);
        sh.or_else(|| self.bss.iter().copied().find(|&b| view.nodes()[b].addr == bs))
    }
}

/// Packets held for a moving relay beyond which more are dropped (a window of 64 KB is 45 segments).
const MAX_HELD: usize = 1024;

/// What the relays' handoffs did at one base station: the moves that left it, the packets it held and the
/// strays it dropped.
#[derive(Default)]
struct HandoffStats {
    moves: u64,
    state_bytes: u64,
    transfer_max_ns: u64,
    held: u64,
    held_dropped: u64,
    stray: u64,
}

pub(crate) struct Split {
    /// When `[failure]` fails one of the split nodes, and which.
    fails: Option<(Time, usize)>,
    /// Split nodes and how they split (`split`, `split-sack` or `mtcp`).
    nodes: BTreeMap<usize, AgentKind>,
    buffer_bytes: u32,
    /// TCP configuration by (fixed host, mobile) address, from the flows.
    tcp: BTreeMap<(Ipv4Addr, Ipv4Addr), TcpConfig>,
    default_tcp: TcpConfig,
    seed: u64,
    relays: Vec<Slot>,
    by_key: BTreeMap<Key, usize>,
    orphaned: u64,
    /// Bytes the relays lost in failures held (acknowledged to the sender, not yet by the receiver).
    failure_bytes_held: u64,
    /// All the bytes those relays had received from their senders.
    failure_bytes_received: u64,
    /// `Some` when the split nodes are mobility base stations.
    cells: Option<Cells>,
    moves: BTreeMap<usize, HandoffStats>,
    /// The last IP ID of a tunnel a supervisor host sent on to a relay that moved.
    tunnel_ident: u16,
}

impl Split {
    /// `None` when no node splits connections.
    pub(crate) fn build(s: &Scenario, view: View<'_>) -> Result<Option<Split>, SimError> {
        let nodes: BTreeMap<usize, AgentKind> = s
            .nodes
            .iter()
            .filter_map(|(name, n)| Some((view.node_index(name), *n.agent.0.iter().find(|k| k.is_split())?)))
            .collect();
        if nodes.is_empty() {
            return Ok(None);
        }
        let bad = |m: String| crate::ScenarioError::new(s.origin(), m);
        let mut tcp = BTreeMap::new();
        for (name, f) in &s.flows {
            let cfg = s.flow_tcp(name).map_err(|m| bad(format!("`flows.{name}.tcp`: {m}")))?;
            tcp.entry((s.nodes[&f.from].addr, s.nodes[&f.to].addr)).or_insert(cfg);
        }
        let default_tcp = s.flow_tcp("").map_err(|m| bad(format!("`tcp`: {m}")))?;
        let fails = s.failure.as_ref().map(|f| (f.at(), view.node_index(&f.node)));
        let fails = fails.filter(|(_, node)| nodes.contains_key(node));
        let cells = match s.mobility.as_ref().filter(|m| m.scheme != crate::mobility::SchemeKind::None) {
            None => None,
            Some(m) => {
                let bss: BTreeSet<usize> = m.base_stations.iter().map(|b| view.node_index(b)).collect();
                let ha = view.node_index(&m.home_agent);
                let mut supervisors = BTreeMap::new();
                for (sh, cells) in supervisor_cells(s, m) {
                    let sh_node = view.node_index(sh);
                    let cells: Vec<usize> = cells.iter().map(|b| view.node_index(b)).collect();
                    if let Some(&b) = cells.iter().find(|&&b| view.path(ha, b).is_none_or(|p| !p.contains(&sh_node))) {
                        return Err(bad(format!(
                            "`nodes.{sh}`: an M-TCP supervisor host must be on the home agent's route to its cells, and `{}` is reached from `{}` without it",
                            view.nodes()[b].name, m.home_agent
                        ))
                        .into());
                    }
                    let current = cells[0];
                    let cells = cells.iter().map(|&b| (view.nodes()[b].addr, b)).collect();
                    supervisors.insert(sh_node, Supervisor { cells, current });
                }
                let tunnel_sources =
                    bss.iter().chain([&ha]).chain(supervisors.keys()).map(|&n| view.nodes()[n].addr).collect();
                let bss = bss.into_iter().filter(|b| nodes.contains_key(b)).collect();
                let (mobile, home_agent) = (view.nodes()[view.node_index(&m.mobile)].addr, view.nodes()[ha].addr);
                Some(Cells { bss, tunnel_sources, cost: s.split.handoff.clone(), supervisors, mobile, home_agent })
            }
        };
        Ok(Some(Split {
            fails,
            nodes,
            buffer_bytes: s.split.buffer_bytes,
            tcp,
            default_tcp,
            seed: s.seed,
            relays: Vec::new(),
            by_key: BTreeMap::new(),
            orphaned: 0,
            failure_bytes_held: 0,
            failure_bytes_received: 0,
            cells,
            moves: BTreeMap::new(),
            tunnel_ident: 0,
        }))
    }

    /// A new relay at `node` for the connection between `fixed` and `mobile` whose data flows `direction`.
    fn open(&mut self, node: usize, direction: Direction, fixed: SocketAddrV4, mobile: SocketAddrV4) -> usize {
        let flow = match direction {
            Direction::ToMobile => (*fixed.ip(), *mobile.ip()),
            Direction::FromMobile => (*mobile.ip(), *fixed.ip()),
        };
        let wired = self.tcp.get(&flow).unwrap_or(&self.default_tcp).clone();
        let mut wireless = wired.clone();
        if self.nodes[&node] == AgentKind::SplitSack {
            // SPLIT-SACK: SACK on the wireless hop, sent by the relay's sender or offered by its receiver.
            wireless.sack = true;
            if direction == Direction::ToMobile {
                wireless.variant = Variant::Sack;
            }
        }
        let i = self.relays.len();
        let mut r = rng::stream(self.seed, &format!("split.{node}.{i}"), "iss");
        let (a, b) = (SeqNum(r.next_u32()), SeqNum(r.next_u32()));
        let cfg = SplitConfig { buffer_bytes: self.buffer_bytes, wired, wireless };
        let relay = match self.nodes[&node] {
            AgentKind::Mtcp => SplitRelay::new_mtcp(cfg, fixed, mobile, a, b),
            _ => SplitRelay::new(cfg, direction, fixed, mobile, a, b),
        };
        self.relays.push(Slot {
            node,
            relay: Some(relay),
            direction,
            fixed: *fixed.ip(),
            mobile: *mobile.ip(),
            timer: None,
            moving: false,
            expected_at: None,
            then_to: None,
            held: Vec::new(),
        });
        i
    }

    /// A handoff control message reached mobility base station `node`: a Greeting tells the new base station
    /// to expect the mobile's relays, a Notify tells the old one to send them (Caceres 1995's messages; the
    /// handoff agent checks and applies them too, after this).
    fn on_control(&mut self, cx: &mut Cx<'_, SplitEvent>, node: usize, src: Ipv4Addr, c: &Control) {
        let Some(cells) = &self.cells else { return };
        let peer = cells.bss.iter().copied().find(|&b| cx.nodes()[b].addr == c.peer);
        let mine = |s: &Slot| s.mobile == c.mobile && s.relay.is_some();
        match c.kind {
            Kind::Greeting if src == c.mobile => {
                for slot in self.relays.iter_mut().filter(|s| mine(s)) {
                    if slot.headed_to(node) {
                        // The mobile came back to where its relay is going: it stays there.
                        slot.then_to = None;
                        slot.expected_at = None;
                    } else if slot.node != node {
                        slot.expected_at = Some(node);
                    }
                }
            }
            Kind::Notify if src == c.peer => {
                let Some(to) = peer.filter(|&p| p != node) else { return };
                let here = |s: &Slot| mine(s) && s.node == node;
                let leaving: Vec<usize> = (0..self.relays.len()).filter(|&i| here(&self.relays[i])).collect();
                for i in leaving {
                    if self.relays[i].moving {
                        self.relays[i].then_to = Some(to); // still on its way here: it goes on when it arrives
                    } else {
                        self.depart(cx, i, to);
                    }
                }
            }
            _ => {}
        }
    }

    /// A handoff control message about the mobile passes supervisor host `node` (from `src` to `dst`). The
    /// new base station's Notify (Caceres 1995) goes to the home agent and to the old base station: when the
    /// new cell is one of this supervisor's, the mobile is now reached through it and nothing moves: its
    /// relays resume through the new cell ([`SplitRelay::mobile_changed_cell`]); when the old cell is one of this
    /// supervisor's and the new one is not, the relays leave for the supervisor host above the new cell.
    fn on_passing_control(
        &mut self,
        cx: &mut Cx<'_, SplitEvent>,
        node: usize,
        src: Ipv4Addr,
        dst: Ipv4Addr,
        c: &Control,
    ) {
        if c.kind != Kind::Notify || src != c.peer {
            return;
        }
        let Some(cells) = self.cells.as_mut() else { return };
        let target = cells.relay_node_for(c.peer, cx.view());
        let Some(sh) = cells.supervisors.get_mut(&node) else { return };
        let mine = |s: &Slot| s.mobile == c.mobile && s.relay.is_some();
        if let Some(&bs) = sh.cells.get(&c.peer) {
            let moved_cell = sh.current != bs;
            sh.current = bs;
            let mut here = Vec::new();
            for (i, slot) in self.relays.iter_mut().enumerate().filter(|(_, s)| mine(s)) {
                if slot.headed_to(node) {
                    slot.then_to = None; // the mobile came back under the supervisor its relay is going to
                    slot.expected_at = None;
                } else if slot.node != node {
                    slot.expected_at = Some(node);
                } else if moved_cell && !slot.moving {
                    here.push(i);
                }
            }
            for i in here {
                if let Some(r) = self.relays[i].relay.as_mut() {
                    r.mobile_changed_cell(cx.now());
                }
                self.drain(cx, i);
            }
            return;
        }
        let (Some(to), true) = (target.filter(|&t| t != node), sh.cells.contains_key(&dst)) else { return };
        let leaving: Vec<usize> =
            (0..self.relays.len()).filter(|&i| mine(&self.relays[i]) && self.relays[i].node == node).collect();
        for i in leaving {
            if self.relays[i].moving {
                self.relays[i].then_to = Some(to);
            } else {
                self.depart(cx, i, to);
            }
        }
    }

    /// A supervisor host took a tunnel from `src` to `dst` as it passed: one from the home agent says where
    /// the home agent believes the mobile is.
    fn note_tunnel(&mut self, node: usize, src: Ipv4Addr, dst: Ipv4Addr) {
        let Some(cells) = self.cells.as_mut() else { return };
        let ha = cells.home_agent;
        if let Some(sh) = cells.supervisors.get_mut(&node).filter(|_| src == ha) {
            if let Some(&bs) = sh.cells.get(&dst) {
                sh.current = bs;
            }
        }
    }

    /// Relay `i` leaves its base station for `to`: it arrives after the state transfer's cost plus the bytes'
    /// time on the wired route (see the module documentation).
    fn depart(&mut self, cx: &mut Cx<'_, SplitEvent>, i: usize, to: usize) {
        let now = cx.now();
        if let Some(r) = self.relays[i].relay.as_mut().filter(|r| r.mtcp_stats().is_some()) {
            // M-TCP: the mobile has gone; the sender is frozen from here before the state leaves.
            r.mobile_unreachable(now);
            self.drain(cx, i);
        }
        let Some(cells) = &self.cells else { return };
        let slot = &mut self.relays[i];
        let Some(relay) = slot.relay.as_ref() else { return };
        let bytes = relay.state_bytes();
        let wire_ns = route_time_ns(cx.view(), slot.node, to, bytes);
        let took = cells.cost.latency(bytes).as_nanos() as u64 + wire_ns;
        let stats = self.moves.entry(slot.node).or_default();
        stats.moves += 1;
        stats.state_bytes += bytes;
        stats.transfer_max_ns = stats.transfer_max_ns.max(took);
        slot.node = to;
        slot.moving = true;
        slot.expected_at = slot.expected_at.filter(|&e| e != to);
        slot.timer = None;
        cx.schedule(Time(now.0 + took), SplitEvent::Moved { relay: i });
    }

    /// Relay `i` has reached its new base station: it takes what waited for it and resumes, or, when the
    /// mobile has already moved on, leaves again.
    fn arrive(&mut self, cx: &mut Cx<'_, SplitEvent>, i: usize) {
        let now = cx.now();
        let slot = &mut self.relays[i];
        slot.moving = false;
        let Some(relay) = slot.relay.as_mut() else { return };
        let onward = slot.then_to.take();
        if onward.is_none() {
            relay.resume_after_move(now);
        }
        for (from_mobile, p) in std::mem::take(&mut slot.held) {
            relay.handle_packet(now, from_mobile, &p);
        }
        match onward {
            Some(to) => self.depart(cx, i, to),
            None => self.drain(cx, i),
        }
    }

    /// Keeps a packet of relay `i` that reached `node` until the relay arrives.
    fn hold(&mut self, node: usize, i: usize, from_mobile: bool, packet: Bytes) {
        let slot = &mut self.relays[i];
        let stats = self.moves.entry(node).or_default();
        if slot.held.len() < MAX_HELD {
            slot.held.push((from_mobile, packet));
            stats.held += 1;
        } else {
            stats.held_dropped += 1;
        }
    }

    /// A packet tunnelled to mobility base station `node`: the inner TCP packet of a connection toward the
    /// mobile, for the relay here (or one on its way here), or a new connection's SYN. `None`: not the
    /// relay's, the handoff agent takes it.
    fn untunnel(&self, view: View<'_>, node: usize, packet: &Bytes) -> Option<Bytes> {
        let cells = self.cells.as_ref()?;
        let outer = Ipv4Packet::new_unchecked(&packet[..]);
        let to_me = outer.dst_addr() == view.nodes()[node].addr;
        // A supervisor host takes the tunnels to its cells' base stations as they pass, and those to itself.
        let mine = match cells.supervisors.get(&node) {
            Some(sh) => to_me || sh.cells.contains_key(&outer.dst_addr()),
            None => to_me && cells.bss.contains(&node),
        };
        if outer.protocol() != PROTO_IPIP || !mine || !cells.tunnel_sources.contains(&outer.src_addr()) {
            return None;
        }
        let inner = ipip::decapsulate(packet).ok()?;
        let ip = Ipv4Packet::new_checked(&inner[..]).ok()?;
        (ip.protocol() == PROTO_TCP && !ip.is_fragment()).then_some(inner)
    }

    /// Sends what relay `i` has to send and re-arms its timer.
    fn drain(&mut self, cx: &mut Cx<'_, SplitEvent>, i: usize) {
        let now = cx.now();
        let slot = &mut self.relays[i];
        // A supervisor host hands what it sends the mobile to the base station of the mobile's cell.
        let cell = self.cells.as_ref().and_then(|c| c.supervisors.get(&slot.node)).map(|s| s.current);
        let Some(relay) = slot.relay.as_mut().filter(|_| !slot.moving) else { return };
        while let Some((toward, p)) = relay.poll_transmit(now) {
            match (toward, cell.and_then(|bs| cx.nodes()[slot.node].routes[bs])) {
                (Toward::Mobile, Some(hop)) => cx.send(hop, p, false),
                (Toward::Mobile, None) => cx.route(slot.node, slot.mobile, p, false),
                (Toward::Wired, _) => cx.route(slot.node, slot.fixed, p, false),
            }
        }
        if let Some(t) = relay.poll_timeout() {
            if slot.timer.is_none_or(|s| t < s) {
                slot.timer = Some(t);
                cx.schedule(t, SplitEvent::Timer { relay: i });
            }
        }
    }
}

impl Feature for Split {
    type Event = SplitEvent;

    fn hooks(&self) -> HookSet {
        HookSet { arrive: true, ..HookSet::default() }
    }

    fn set_up(&mut self, cx: &mut Cx<'_, SplitEvent>) {
        if let Some((at, node)) = self.fails {
            cx.schedule(at, SplitEvent::NodeFails { node });
        }
    }

    fn on_event(&mut self, cx: &mut Cx<'_, SplitEvent>, event: SplitEvent) {
        let now = cx.now();
        match event {
            SplitEvent::Timer { relay: i } => {
                let slot = &mut self.relays[i];
                if slot.timer.is_some_and(|t| t <= now) {
                    slot.timer = None;
                }
                if slot.moving {
                    return; // frozen on the wire; it resumes on arrival
                }
                if let Some(r) = slot.relay.as_mut() {
                    if r.poll_timeout().is_some_and(|t| t <= now) {
                        r.handle_timeout(now);
                    }
                }
                self.drain(cx, i);
            }
            SplitEvent::NodeFails { node } => {
                for slot in self.relays.iter_mut().filter(|s| s.node == node && !s.moving) {
                    if let Some(relay) = slot.relay.take() {
                        self.failure_bytes_held += relay.buffered_bytes();
                        self.failure_bytes_received += relay.stats().bytes_relayed;
                    }
                }
            }
            SplitEvent::Moved { relay } => self.arrive(cx, relay),
        }
    }

    fn on_arrive(&mut self, cx: &mut Cx<'_, SplitEvent>, node: usize, link: usize, packet: &Bytes) -> bool {
        let now = cx.now();
        if !self.nodes.contains_key(&node) {
            return false;
        }
        let outer = Ipv4Packet::new_unchecked(&packet[..]);
        let to_me = outer.dst_addr() == cx.nodes()[node].addr;
        if to_me && outer.protocol() == PROTO_HANDOFF {
            if let Some(c) = Control::parse(packet) {
                self.on_control(cx, node, outer.src_addr(), &c);
            }
            return false;
        }
        let mobile_addr = self.cells.as_ref().map(|c| c.mobile);
        let supervisor = self.cells.as_ref().is_some_and(|c| c.supervisors.contains_key(&node));
        if supervisor && !to_me && outer.protocol() == PROTO_HANDOFF {
            if let Some(c) = Control::parse(packet).filter(|c| Some(c.mobile) == mobile_addr) {
                self.on_passing_control(cx, node, outer.src_addr(), outer.dst_addr(), &c);
            }
            return false;
        }
        let untunnelled = if to_me || supervisor { self.untunnel(cx.view(), node, packet) } else { None };
        if untunnelled.is_some() {
            self.note_tunnel(node, outer.src_addr(), outer.dst_addr());
        }
        let packet = untunnelled.as_ref().unwrap_or(packet);
        let ip = Ipv4Packet::new_unchecked(&packet[..]);
        if ip.protocol() != PROTO_TCP || ip.is_fragment() || ip.dst_addr() == cx.nodes()[node].addr {
            return false;
        }
        let Ok(tcp) = TcpPacket::new_checked(ip.payload()) else { return false };
        // A supervisor host hears the mobile over the wired link from its cell's base station.
        let from_mobile = untunnelled.is_none()
            && if supervisor {
                Some(ip.src_addr()) == mobile_addr
            } else {
                cx.links()[link].kind == LinkKind::Wireless
            };
        let (src, dst) =
            (SocketAddrV4::new(ip.src_addr(), tcp.src_port()), SocketAddrV4::new(ip.dst_addr(), tcp.dst_port()));
        let (fixed, mobile) = if from_mobile { (dst, src) } else { (src, dst) };
        let key = (*fixed.ip(), fixed.port(), *mobile.ip(), mobile.port());
        let i = match self.by_key.get(&key) {
            Some(&i) if self.relays[i].node == node && !self.relays[i].moving => i,
            Some(&i) if self.relays[i].awaited_at(node) => {
                self.hold(node, i, from_mobile, packet.clone());
                return true;
            }
            // Moved elsewhere: a tunnelled packet goes to the handoff agent (re-tunnelled to the new base
            // station), or, at a supervisor host, on to the relay's; one that reached the old cell over the air
            // has no connection here.
            Some(&i) if untunnelled.is_some() => {
                if !supervisor {
                    return false;
                }
                let to = cx.nodes()[self.relays[i].node].addr;
                self.tunnel_ident = self.tunnel_ident.wrapping_add(1);
                let p = ipip::encapsulate(packet, cx.nodes()[node].addr, to, self.tunnel_ident, 64);
                cx.route(node, to, p, false);
                return true;
            }
            Some(_) => {
                self.moves.entry(node).or_default().stray += 1;
                return true;
            }
            None => {
                // A new connection between a host behind this node's wireless link and one on its wired side,
                // opened by either: its SYN came in over one side and leaves over the other.
                if !tcp.syn() || tcp.ack() {
                    return false;
                }
                let to = cx.nodes().iter().position(|n| n.addr == *dst.ip());
                let leaves_wireless = if supervisor {
                    Some(Some(*dst.ip()) == mobile_addr)
                } else {
                    to.and_then(|to| cx.nodes()[node].routes[to]).map(|(l, _)| cx.links()[l].kind == LinkKind::Wireless)
                };
                let Some(leaves_wireless) = leaves_wireless else {
                    return false;
                };
                let direction = match (from_mobile, leaves_wireless) {
                    (false, true) => Direction::ToMobile,
                    (true, false) if self.nodes[&node] != AgentKind::Mtcp => Direction::FromMobile,
                    _ => return false,
                };
                let i = self.open(node, direction, fixed, mobile);
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
        self.drain(cx, i);
        true
    }

    fn finish(self, view: View<'_>, result: &mut RunResult) {
        for &node in self.nodes.keys() {
            let mine = || self.relays.iter().filter(move |s| s.node == node);
            let sum = |f: &dyn Fn(&SplitRelay) -> u64| mine().filter_map(|s| s.relay.as_ref()).map(f).sum::<u64>();
            let c = result.agents.entry(view.nodes()[node].name.clone()).or_default();
            c.insert("split_relays_opened".into(), mine().count() as u64);
            c.insert("split_relays_lost".into(), mine().filter(|s| s.relay.is_none()).count() as u64);
            c.insert("split_orphaned_packets".into(), self.orphaned);
            c.insert("split_failure_bytes_held".into(), self.failure_bytes_held);
            c.insert("split_failure_bytes_received".into(), self.failure_bytes_received);
            c.insert("split_bytes_relayed".into(), sum(&|r| r.stats().bytes_relayed));
            c.insert("split_corrupt_bytes".into(), sum(&|r| r.stats().corrupt_bytes));
            c.insert(
                "split_max_buffered".into(),
                mine().filter_map(|s| s.relay.as_ref()).map(|r| r.stats().max_buffered).max().unwrap_or(0),
            );
            c.insert(
                "split_relays_from_mobile".into(),
                mine().filter(|s| s.direction == Direction::FromMobile).count() as u64,
            );
            // The relay's own sender is on the wireless hop toward the mobile, on the wired side from it.
            let sent = |direction: Direction, f: &dyn Fn(&lasthop_tcp::SenderStats) -> u64| {
                sum(&|r| if r.direction() == direction { f(r.sending().stats()) } else { 0 })
            };
            c.insert("split_wireless_retransmitted".into(), sent(Direction::ToMobile, &|s| s.segments_retransmitted));
            c.insert("split_wireless_timeouts".into(), sent(Direction::ToMobile, &|s| s.timeouts));
            c.insert("split_wired_retransmitted".into(), sent(Direction::FromMobile, &|s| s.segments_retransmitted));
            c.insert("split_wired_timeouts".into(), sent(Direction::FromMobile, &|s| s.timeouts));
            if self.nodes[&node] == AgentKind::Mtcp {
                let m = |f: &dyn Fn(&lasthop_tcp::split::mtcp::MtcpStats) -> u64| sum(&|r| r.mtcp_stats().map_or(0, f));
                c.insert("mtcp_acks".into(), m(&|s| s.acks));
                c.insert("mtcp_held_acks".into(), m(&|s| s.held_acks));
                c.insert("mtcp_freezes_cut_off".into(), m(&|s| s.freezes_cut_off));
                c.insert("mtcp_freezes_silent".into(), m(&|s| s.freezes_silent));
                c.insert("mtcp_resumes".into(), m(&|s| s.resumes));
                c.insert("mtcp_probes_answered".into(), m(&|s| s.probes_answered));
                c.insert("mtcp_hole_dupacks".into(), m(&|s| s.hole_dupacks));
            }
            if self.cells.is_some() {
                let none = HandoffStats::default();
                let m = self.moves.get(&node).unwrap_or(&none);
                c.insert("split_handoffs".into(), m.moves);
                c.insert("split_handoff_state_bytes".into(), m.state_bytes);
                c.insert("split_handoff_transfer_max_us".into(), m.transfer_max_ns / 1000);
                c.insert("split_held_packets".into(), m.held);
                c.insert("split_held_dropped".into(), m.held_dropped);
                c.insert("split_stray_packets".into(), m.stray);
            }
        }
    }
}

/// The state's time on the wired route from `from` to `to`: `bytes` at the route's slowest link, plus its
/// propagation delays.
fn route_time_ns(view: View<'_>, from: usize, to: usize, bytes: u64) -> u64 {
    let Some(path) = view.path(from, to) else { return 0 };
    let (mut slowest, mut delay) = (0, 0);
    for w in path.windows(2) {
        if let Some((link, _)) = view.nodes()[w[0]].routes[w[1]] {
            let l = &view.links()[link];
            slowest = slowest.max(l.airtime_ns(bytes.min(usize::MAX as u64) as usize));
            delay += l.delay_ns();
        }
    }
    slowest + delay
}
