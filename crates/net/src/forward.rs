//! The base station's forwarding core, sans-IO: Ethernet frames in, Ethernet frames out.
//!
//! [`Forwarder`] is everything `lasthop bs` does to a frame except reading and writing sockets, so the
//! same code runs under the I/O loop ([`crate::bs`]), the unit tests and the forwarding benchmark.
//!
//! The base station is a *transparent bridge that understands IPv4*: the fixed and the mobile host sit
//! in one IP subnet and see each other's MAC addresses, as they would across a WaveLAN access point.
//!
//! - Non-IPv4 frames (ARP above all, also IPv6 and VLAN-tagged frames) are bridged unchanged, so the
//!   kernels on both sides resolve each other with ordinary ARP and no configuration at the base station.
//! - IPv4 frames lose their Ethernet header; the IPv4 packet goes to the agent chain (TCP only) and to the
//!   wireless-hop emulator ([`crate::hop`]), and every packet that comes out gets a fresh Ethernet header:
//!   the destination MAC learned for its destination IP on the outgoing side, the source MAC learned for
//!   its source IP on the other side (so the receiving host sees the same neighbour as ARP told it).
//!   Agent-made packets (Snoop's regenerated ACKs) are addressed the same way.
//! - Frames from the wired side pass the agents first and the hop second (`Side::ToMobile`); frames from
//!   the wireless side cross the hop first, then the agents (`Side::ToWired`). Non-IPv4 frames cross the
//!   hop too: the hop is a link, and a link carries ARP.
//!
//! The agents learn when a packet they passed toward the mobile really leaves (`Agent::handle_transmit`, the
//! IPv4 packet exactly as they emitted it): when the hop emulator puts it on the air, at that virtual
//! instant, or, when the hop is not emulated (no rate limit), when it is handed to the socket. Each call
//! first brings the hop up to `now`, so an agent never hears of a transmission earlier than a time it has
//! already been shown.
//!
//! An emulated wide-area path between the fixed host and the base station (`HopConfig::wired_delay_ms`)
//! is two constant-delay lines on the wired port: frames from it reach the base station (agents, hop,
//! MAC learning) that much later, and frames to it leave that much later. The I/O loop learns of their
//! due times through [`Forwarder::poll_timeout`].
//!
//! Rules for bad input, each counted in [`Counters`]: frames shorter than an Ethernet header, IPv4 whose
//! header does not parse, and IPv4-claiming-TCP whose TCP header does not parse are dropped (a router
//! would drop them and an agent must never see them); well-formed non-TCP IPv4 and IP fragments bypass
//! the agents, which only read TCP, and are forwarded. Ethernet padding after the IPv4 total length is
//! cut off before a packet reaches an agent.

use crate::agents::{build_chain, AgentKind};
use crate::counters::{Counters, PortCounters};
use crate::hop::{Dir, Hop, HopConfig};
use crate::pool;
use crate::NetError;
use bytes::Bytes;
use lasthop_agents::{Action, Agent, DropReason, Side};
use lasthop_wire::ipv4::PROTO_TCP;
use lasthop_wire::{Ipv4Packet, TcpPacket, Time};
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, Hasher};
use std::net::Ipv4Addr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

pub const ETH_HEADER_LEN: usize = 14;
pub const ETHERTYPE_IPV4: u16 = 0x0800;
pub const ETHERTYPE_ARP: u16 = 0x0806;
pub type Mac = [u8; 6];
pub const BROADCAST: Mac = [0xff; 6];

/// One of the base station's two interfaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Port {
    /// Toward the fixed host and the Internet.
    Wired = 0,
    /// Toward the mobile host, over the emulated wireless hop.
    Wireless = 1,
}

impl Port {
    pub fn other(self) -> Port {
        match self {
            Port::Wired => Port::Wireless,
            Port::Wireless => Port::Wired,
        }
    }
}

/// What a frame is, decided once from its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Shorter than an Ethernet header.
    Runt,
    /// Not IPv4 (ARP, IPv6, VLAN, ...): bridged unchanged.
    NonIpv4,
    /// Ethertype IPv4 but the header does not parse.
    MalformedIpv4,
    /// IPv4 protocol 6 but the TCP header does not parse.
    MalformedTcp,
    /// A TCP segment in an unfragmented IPv4 packet of `ip_len` bytes: for the agents.
    Tcp { ip_len: usize },
    /// Well-formed IPv4 that is not a whole TCP segment (UDP, ICMP, fragments).
    OtherIpv4 { ip_len: usize },
}

/// Classifies an Ethernet frame. Never panics, whatever the bytes.
pub fn classify(frame: &[u8]) -> Class {
    if frame.len() < ETH_HEADER_LEN {
        return Class::Runt;
    }
    if u16::from_be_bytes([frame[12], frame[13]]) != ETHERTYPE_IPV4 {
        return Class::NonIpv4;
    }
    let ip = match Ipv4Packet::new_checked(&frame[ETH_HEADER_LEN..]) {
        Ok(ip) => ip,
        Err(_) => return Class::MalformedIpv4,
    };
    let ip_len = ip.total_len() as usize;
    if ip.protocol() != PROTO_TCP || ip.is_fragment() {
        return Class::OtherIpv4 { ip_len };
    }
    match TcpPacket::new_checked(ip.payload()) {
        Ok(_) => Class::Tcp { ip_len },
        Err(_) => Class::MalformedTcp,
    }
}

/// A copy of a TCP/IPv4 packet with its TCP checksum computed afresh (the caller checked the headers).
fn finish_tcp_checksum(ip: &[u8], src: Ipv4Addr) -> Bytes {
    pool::build(ip.len(), |b| {
        b.copy_from_slice(ip);
        let hl = ((b[0] & 0x0f) as usize) * 4;
        let dst = Ipv4Addr::new(b[16], b[17], b[18], b[19]);
        TcpPacket::new_unchecked(&mut b[hl..]).fill_checksum(src, dst);
    })
}

/// Keyed multiply-xorshift hashing of an IPv4 address (as a `u32`) for [`MacTable`]: the table is looked
/// up three times per forwarded frame, where SipHash cost ~50 ns of a ~330 ns frame (measured with `perf`
/// on `lasthop bench forward`). The key is drawn at random per table, so spoofed source addresses cannot be
/// chosen to collide; the table's size bound caps the damage anyway.
#[derive(Clone, Copy)]
struct IpHashState(u64);

impl Default for IpHashState {
    fn default() -> Self {
        IpHashState(rand::random())
    }
}

impl BuildHasher for IpHashState {
    type Hasher = IpHasher;
    fn build_hasher(&self) -> IpHasher {
        IpHasher(self.0)
    }
}

struct IpHasher(u64);

impl Hasher for IpHasher {
    fn write(&mut self, bytes: &[u8]) {
        // Not used by `u32` keys; correct for anything else.
        for &b in bytes {
            self.write_u32(u32::from(b));
        }
    }
    fn write_u32(&mut self, v: u32) {
        self.0 = (self.0 ^ u64::from(v)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    fn finish(&self) -> u64 {
        let z = self.0;
        let z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        let z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// IP → MAC for the hosts seen on one side, learned from the frames they send.
#[derive(Default)]
struct MacTable {
    by_ip: HashMap<u32, Mac, IpHashState>,
    /// The last source MAC seen on this side: the answer on a point-to-point link when the IP is unknown.
    last_peer: Option<Mac>,
}

impl MacTable {
    /// A flood of spoofed source addresses must not grow the table without bound; past this many
    /// entries it starts over (the hosts' next frames teach it again).
    const MAX_ENTRIES: usize = 4096;

    fn learn(&mut self, ip: Ipv4Addr, mac: Mac) {
        if mac[0] & 1 != 0 {
            return; // a multicast source MAC is bogus; never send to it
        }
        self.last_peer = Some(mac);
        if ip.is_unspecified() || ip.is_broadcast() || ip.is_multicast() {
            return;
        }
        let key = u32::from(ip);
        if self.by_ip.get(&key) != Some(&mac) {
            if self.by_ip.len() >= Self::MAX_ENTRIES {
                self.by_ip.clear();
            }
            self.by_ip.insert(key, mac);
        }
    }

    /// The MAC learned for `ip`, if any.
    fn get(&self, ip: Ipv4Addr) -> Option<Mac> {
        self.by_ip.get(&u32::from(ip)).copied()
    }

    fn lookup(&self, ip: Ipv4Addr) -> Option<Mac> {
        self.get(ip).or(self.last_peer)
    }
}

/// What crosses the emulated hop: an IPv4 packet (whose Ethernet header is made on the far side) or a
/// bridged non-IPv4 frame. Cloned (a reference count) only when the hop reports a transmission.
#[derive(Clone)]
enum HopItem {
    /// `agent`: the agents handed this packet on (it goes toward the mobile and they hear of its
    /// transmission); `tcp`: toward the wired side, it goes through the agents.
    Ip {
        packet: Bytes,
        tcp: bool,
        agent: bool,
    },
    Raw(Bytes),
}

/// The forwarding core. Create one per base station; feed it frames, timeouts and the time.
pub struct Forwarder {
    agents: Vec<Box<dyn Agent + Send>>,
    hop: Hop<HopItem>,
    macs: [MacTable; 2],
    /// Our own interfaces' MACs: the source address of last resort.
    own_mac: [Mac; 2],
    ports: [PortCounters; 2],
    counters: Counters,
    agent_drops: HashMap<DropReason, u64>,
    /// Reused action buffers, one per depth of the agent chain (no allocation per packet).
    pool: Vec<Vec<Action>>,
    /// Reused buffer of the hop's reported transmissions.
    transmitted: Vec<(Time, Dir, HopItem)>,
    started: Option<Time>,
    /// When each port last sent an ARP probe (they are rate-limited).
    last_probe: [Option<Time>; 2],
    /// What the chain was built from, to rebuild an agent that panicked.
    kind: Option<AgentKind>,
    /// `HopConfig::report_transmissions`.
    report_tx: bool,
    /// The hop records transmissions for the agents (so there are some to take after each step).
    hop_reports: bool,
    /// `HopConfig::wired_delay_ms`, ns (0: no wired delay lines).
    wired_delay: u64,
    /// Frames from the wired interface not yet arrived at the base station: (due, frame, checksum
    /// unfinished). A constant delay keeps both lines in due order.
    wired_in: VecDeque<(Time, Bytes, bool)>,
    /// Frames to the wired interface still on their way: (due, frame).
    wired_out: VecDeque<(Time, Bytes)>,
}

impl Forwarder {
    /// A forwarder running the agents of `kind`; a kind the real base station does not run is refused.
    pub fn new(agent: AgentKind, hop: &HopConfig, own_mac: [Mac; 2]) -> Result<Forwarder, NetError> {
        let mut f = Self::with_agents(build_chain(agent)?, hop, own_mac);
        f.kind = Some(agent);
        Ok(f)
    }

    /// A forwarder running `agents` in order (an empty chain forwards plainly).
    pub fn with_agents(agents: Vec<Box<dyn Agent + Send>>, hop: &HopConfig, own_mac: [Mac; 2]) -> Forwarder {
        let report = hop.report_transmissions;
        let wired_delay = (hop.wired_delay_ms * 1e6).round() as u64;
        let mut hop = Hop::new(hop);
        // Only an emulated hop has an on-air instant to report; without agents nobody listens.
        let hop_reports = report && hop.is_rate_limited() && !agents.is_empty();
        hop.report_transmissions(Dir::Down, hop_reports);
        Forwarder {
            agents,
            hop,
            macs: [MacTable::default(), MacTable::default()],
            own_mac,
            ports: [PortCounters::default(); 2],
            counters: Counters::default(),
            agent_drops: HashMap::new(),
            pool: Vec::new(),
            transmitted: Vec::new(),
            started: None,
            last_probe: [None, None],
            kind: None,
            report_tx: report,
            hop_reports,
            wired_delay,
            wired_in: VecDeque::new(),
            wired_out: VecDeque::new(),
        }
    }

    /// A hint before a batch of frames received on `port` is handed in one by one: the agents may ask for
    /// the state of the batch's connections together ([`Agent::prefetch`]). Only frames from the wired side
    /// reach the agents as they arrive (when no wired delay is emulated); the mobile's wait in the emulated
    /// hop first, and get no hint. Changes nothing the base station does.
    pub fn prefetch<'a>(&self, port: Port, frames: impl Iterator<Item = &'a [u8]>) {
        if port != Port::Wired || self.wired_delay > 0 || self.agents.is_empty() {
            return;
        }
        let batch: Vec<(Side, &[u8])> = frames
            .filter(|f| f.len() > ETH_HEADER_LEN && u16::from_be_bytes([f[12], f[13]]) == ETHERTYPE_IPV4)
            .map(|f| (Side::ToMobile, &f[ETH_HEADER_LEN..]))
            .collect();
        for agent in &self.agents {
            agent.prefetch(&batch);
        }
    }

    /// A frame arrived on `port`. Frames to send are appended to `out`.
    pub fn handle_frame(&mut self, now: Time, port: Port, frame: &[u8], out: &mut Vec<(Port, Bytes)>) {
        self.handle_frame_meta(now, port, frame, false, out)
    }

    /// [`handle_frame`](Self::handle_frame) for a frame whose transport checksum the kernel reports unfinished
    /// (left to an offload by a sender on this machine): a TCP checksum is completed before anything
    /// reads the packet.
    pub fn handle_frame_meta(
        &mut self,
        now: Time,
        port: Port,
        frame: &[u8],
        checksum_unfinished: bool,
        out: &mut Vec<(Port, Bytes)>,
    ) {
        self.started.get_or_insert(now);
        self.service_wired(now, out);
        if port == Port::Wired && self.wired_delay > 0 {
            // Still on the emulated wide-area path: it reaches the base station `wired_delay` later.
            self.wired_in.push_back((
                now + Duration::from_nanos(self.wired_delay),
                pool::copy(frame),
                checksum_unfinished,
            ));
            return;
        }
        self.ingest(now, port, frame, checksum_unfinished, out);
    }

    /// Moves the wired delay lines up to `now`: due outgoing frames to `out`, due incoming ones into the
    /// base station (at `now`: a late wake-up delays a frame, it never shows the agents an earlier time).
    fn service_wired(&mut self, now: Time, out: &mut Vec<(Port, Bytes)>) {
        while self.wired_out.front().is_some_and(|(due, _)| *due <= now) {
            let (_, f) = self.wired_out.pop_front().expect("front checked");
            out.push((Port::Wired, f));
        }
        while self.wired_in.front().is_some_and(|(due, _, _)| *due <= now) {
            let (_, f, csum) = self.wired_in.pop_front().expect("front checked");
            self.ingest(now, Port::Wired, &f, csum, out);
        }
    }

    /// A frame has reached the base station on `port`.
    fn ingest(&mut self, now: Time, port: Port, frame: &[u8], checksum_unfinished: bool, out: &mut Vec<(Port, Bytes)>) {
        // Whatever the hop did before `now` (transmissions, arrivals) comes before this frame.
        self.service_hop(now, out);
        let pc = &mut self.ports[port as usize];
        pc.frames_in += 1;
        pc.bytes_in += frame.len() as u64;
        match classify(frame) {
            Class::Runt => self.counters.runt_frames += 1,
            Class::MalformedIpv4 => self.counters.malformed_ipv4 += 1,
            Class::MalformedTcp => self.counters.malformed_tcp += 1,
            Class::NonIpv4 => {
                self.counters.non_ipv4 += 1;
                self.learn_arp(port, frame);
                if frame[0..6] == self.own_mac[port as usize] {
                    // The answer to one of our ARP probes: for us, not for the other side.
                    return;
                }
                let len = frame.len() - ETH_HEADER_LEN;
                let item = HopItem::Raw(pool::copy(frame));
                match port {
                    Port::Wired => self.enqueue(now, Dir::Down, item, len, false),
                    Port::Wireless => self.enqueue(now, Dir::Up, item, len, false),
                }
            }
            cls @ (Class::Tcp { ip_len } | Class::OtherIpv4 { ip_len }) => {
                let tcp = matches!(cls, Class::Tcp { .. });
                if tcp {
                    self.counters.tcp_packets += 1;
                } else {
                    self.counters.ipv4_other += 1;
                }
                let ip = &frame[ETH_HEADER_LEN..ETH_HEADER_LEN + ip_len];
                let src = Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]);
                let mut mac = [0u8; 6];
                mac.copy_from_slice(&frame[6..12]);
                self.macs[port as usize].learn(src, mac);
                let packet = if checksum_unfinished && tcp {
                    self.counters.checksums_completed += 1;
                    finish_tcp_checksum(ip, src)
                } else {
                    pool::copy(ip)
                };
                match port {
                    Port::Wired => self.deliver(now, Side::ToMobile, packet, tcp, out),
                    Port::Wireless => {
                        self.enqueue(now, Dir::Up, HopItem::Ip { packet, tcp, agent: false }, ip_len, false)
                    }
                }
            }
        }
        self.service_hop(now, out);
    }

    /// Runs agent timers and the hop up to `now`. Call at (or after) [`poll_timeout`](Self::poll_timeout).
    pub fn handle_timeout(&mut self, now: Time, out: &mut Vec<(Port, Bytes)>) {
        self.started.get_or_insert(now);
        self.service_wired(now, out);
        // The hop first: agents hear of transmissions and arrivals due by `now` before their timers fire.
        self.service_hop(now, out);
        for i in 0..self.agents.len() {
            if self.agents[i].poll_timeout().is_some_and(|t| t <= now) {
                let mut acts = self.pool.pop().unwrap_or_default();
                let agent = &mut self.agents[i];
                let ok = catch_unwind(AssertUnwindSafe(|| agent.handle_timeout(now, &mut acts))).is_ok();
                if ok {
                    self.apply(i, now, &mut acts, out);
                } else {
                    acts.clear();
                    self.agent_failed(i);
                }
                self.pool.push(acts);
                if !ok {
                    // The chain changed under the loop's indices; the rest fire at the next call.
                    break;
                }
            }
        }
        self.service_hop(now, out);
    }

    /// The earliest time anything (an agent timer, the hop) needs [`handle_timeout`](Self::handle_timeout).
    pub fn poll_timeout(&self) -> Option<Time> {
        let wired = [self.wired_in.front().map(|w| w.0), self.wired_out.front().map(|w| w.0)];
        self.agents
            .iter()
            .filter_map(|a| a.poll_timeout())
            .chain(self.hop.next_event())
            .chain(wired.into_iter().flatten())
            .min()
    }

    /// Counts a frame the I/O layer failed to send.
    pub fn count_send_error(&mut self, port: Port) {
        let pc = &mut self.ports[port as usize];
        pc.send_errors += 1;
        pc.frames_out = pc.frames_out.saturating_sub(1);
    }

    /// A snapshot of all counters, the agents' included (summed by name over the chain).
    pub fn counters(&self, now: Time) -> Counters {
        let mut c = self.counters.clone();
        c.wired = self.ports[0];
        c.wireless = self.ports[1];
        c.hop_down = self.hop.counters(Dir::Down);
        c.hop_up = self.hop.counters(Dir::Up);
        c.agent_drops = self.agent_drops.iter().map(|(r, n)| (format!("{r:?}"), *n)).collect();
        for a in &self.agents {
            for (k, v) in a.counters() {
                *c.agent.entry(k.to_string()).or_default() += v;
            }
        }
        // Snoop reports connection events, not a gauge; derive the table size the operator wants to see.
        if let Some(&created) = c.agent.get("connections_created") {
            let gone = c.agent_counter("connections_evicted") + c.agent_counter("connections_closed");
            c.agent.insert("connections_active".into(), created.saturating_sub(gone));
        }
        c.uptime_s = self.started.map_or(0.0, |s| (now - s).as_secs_f64());
        c
    }

    fn learn_arp(&mut self, port: Port, frame: &[u8]) {
        // Ethernet/IPv4 ARP: htype 1, ptype 0x0800, hlen 6, plen 4; sender MAC at 8, sender IP at 14.
        let arp = &frame[ETH_HEADER_LEN..];
        if u16::from_be_bytes([frame[12], frame[13]]) == ETHERTYPE_ARP
            && arp.len() >= 28
            && arp[0..6] == [0, 1, 0x08, 0x00, 6, 4]
        {
            let mut mac = [0u8; 6];
            mac.copy_from_slice(&arp[8..14]);
            self.macs[port as usize].learn(Ipv4Addr::new(arp[14], arp[15], arp[16], arp[17]), mac);
        }
    }

    fn enqueue(&mut self, now: Time, dir: Dir, item: HopItem, len: usize, priority: bool) {
        // A full queue drops the frame (drop-tail); the hop counts it.
        let _ = self.hop.enqueue(now, dir, item, len, priority);
        self.report_transmissions();
    }

    /// Tells the agents of the packets of theirs the hop has put on the air since the last call.
    fn report_transmissions(&mut self) {
        if !self.hop_reports {
            return;
        }
        let mut txs = std::mem::take(&mut self.transmitted);
        self.hop.take_transmissions(&mut txs);
        for (at, dir, item) in txs.drain(..) {
            if let (Dir::Down, HopItem::Ip { packet, agent: true, .. }) = (dir, item) {
                self.handle_transmit(at, &packet);
            }
        }
        self.transmitted = txs;
    }

    /// `Agent::handle_transmit` toward the mobile, through the whole chain (each agent passed the packet on).
    fn handle_transmit(&mut self, at: Time, packet: &Bytes) {
        for i in 0..self.agents.len() {
            let agent = &mut self.agents[i];
            if catch_unwind(AssertUnwindSafe(|| agent.handle_transmit(at, Side::ToMobile, packet))).is_err() {
                self.agent_failed(i);
                // The chain may have changed under the index; the rest miss this one report.
                break;
            }
        }
    }

    /// An IPv4 packet travelling toward `side` at the base station: through the agents if it is TCP.
    fn deliver(&mut self, now: Time, side: Side, packet: Bytes, tcp: bool, out: &mut Vec<(Port, Bytes)>) {
        if tcp && !self.agents.is_empty() {
            self.run_chain(0, now, side, packet, out);
        } else {
            self.dispatch(now, side, packet, false, false, out);
        }
    }

    fn run_chain(&mut self, i: usize, now: Time, side: Side, packet: Bytes, out: &mut Vec<(Port, Bytes)>) {
        let mut acts = self.pool.pop().unwrap_or_default();
        // A clone is a reference count, not a copy: it lets the packet go on if the agent panics.
        let keep = packet.clone();
        let agent = &mut self.agents[i];
        if catch_unwind(AssertUnwindSafe(|| agent.handle_packet(now, side, packet, &mut acts))).is_ok() {
            self.apply(i, now, &mut acts, out);
        } else {
            acts.clear();
            self.agent_failed(i);
            self.dispatch(now, side, keep, false, false, out);
        }
        self.pool.push(acts);
    }

    /// An agent panicked (a bug, but the base station must go on forwarding): its state may be
    /// half-updated, so it is replaced by a fresh one. Agent state is soft, so this costs performance
    /// for the connections it held, never data. A chain of unknown make loses the agent instead.
    fn agent_failed(&mut self, i: usize) {
        self.counters.agent_panics += 1;
        match self.kind.and_then(|k| build_chain(k).ok()) {
            Some(mut fresh) if fresh.len() == self.agents.len() => self.agents[i] = fresh.swap_remove(i),
            _ => {
                self.agents.remove(i);
            }
        }
    }

    /// Carries out agent `i`'s actions: plain forwards go on down the chain; priority forwards, injections
    /// and drops are final (a local retransmission must not be re-inspected as new data).
    fn apply(&mut self, i: usize, now: Time, acts: &mut Vec<Action>, out: &mut Vec<(Port, Bytes)>) {
        for a in acts.drain(..) {
            match a {
                Action::Forward(side, p) => {
                    if i + 1 < self.agents.len() {
                        self.run_chain(i + 1, now, side, p, out);
                    } else {
                        self.dispatch(now, side, p, false, true, out);
                    }
                }
                Action::ForwardPriority(side, p) => {
                    self.counters.agent_priority += 1;
                    self.dispatch(now, side, p, true, true, out);
                }
                Action::Inject(side, p) => {
                    self.counters.agent_injected += 1;
                    self.dispatch(now, side, p, false, true, out);
                }
                Action::Drop(reason) => *self.agent_drops.entry(reason).or_default() += 1,
            }
        }
    }

    /// Sends `packet` on toward `side`; `agent`: it comes from the agents (who hear of its transmission).
    fn dispatch(
        &mut self,
        now: Time,
        side: Side,
        packet: Bytes,
        priority: bool,
        agent: bool,
        out: &mut Vec<(Port, Bytes)>,
    ) {
        match side {
            Side::ToMobile => {
                let len = packet.len();
                self.enqueue(now, Dir::Down, HopItem::Ip { packet, tcp: true, agent }, len, priority);
            }
            Side::ToWired => {
                self.emit_ip(now, Port::Wired, &packet, out);
            }
        }
    }

    /// Delivers what the hop has carried to its far end by `now`. Frames reaching the base station go on
    /// through the agents, which may queue more on the hop (possibly deliverable at once), so repeat.
    fn service_hop(&mut self, now: Time, out: &mut Vec<(Port, Bytes)>) {
        // One frame at a time: the agents hear of each transmission before any frame that arrived after it
        // started, and of none before a frame that arrived earlier (the simulator's event order).
        loop {
            let next = self.hop.poll_one(now);
            self.report_transmissions();
            let Some((dir, item)) = next else { return };
            {
                match (dir, item) {
                    (Dir::Down, HopItem::Ip { packet, agent, .. }) => {
                        let sent = self.emit_ip(now, Port::Wireless, &packet, out);
                        // Not emulated: the frame leaves when it goes to the socket.
                        if sent && agent && self.report_tx && !self.hop.is_rate_limited() {
                            self.handle_transmit(now, &packet);
                        }
                    }
                    (Dir::Down, HopItem::Raw(f)) => self.emit_raw(now, Port::Wireless, f, out),
                    (Dir::Up, HopItem::Ip { packet, tcp, .. }) => self.deliver(now, Side::ToWired, packet, tcp, out),
                    (Dir::Up, HopItem::Raw(f)) => self.emit_raw(now, Port::Wired, f, out),
                }
            }
        }
    }

    fn emit_raw(&mut self, now: Time, port: Port, frame: Bytes, out: &mut Vec<(Port, Bytes)>) {
        let pc = &mut self.ports[port as usize];
        pc.frames_out += 1;
        pc.bytes_out += frame.len() as u64;
        if port == Port::Wired && self.wired_delay > 0 {
            self.wired_out.push_back((now + Duration::from_nanos(self.wired_delay), frame));
        } else {
            out.push((port, frame));
        }
    }

    /// Minimum spacing of ARP probes on one port.
    const PROBE_INTERVAL: std::time::Duration = std::time::Duration::from_millis(20);

    /// Asks who has `target` on `port`, as an RFC 5227 probe (sender IP 0.0.0.0) from our own MAC, so the
    /// host answers us alone and changes none of its neighbour entries. Needed after a restart: the
    /// mobile host may stay silent until it gets data, and it gets none until we know its MAC.
    fn arp_probe(&mut self, now: Time, port: Port, target: Ipv4Addr, out: &mut Vec<(Port, Bytes)>) {
        if self.last_probe[port as usize].is_some_and(|t| now - t < Self::PROBE_INTERVAL) {
            return;
        }
        self.last_probe[port as usize] = Some(now);
        self.counters.arp_probes += 1;
        let f = frames::arp_request(self.own_mac[port as usize], Ipv4Addr::UNSPECIFIED, target);
        self.emit_raw(now, port, Bytes::from(f), out);
    }

    /// Sends an IPv4 packet out of `port` with a fresh Ethernet header; false if it could not be addressed.
    fn emit_ip(&mut self, now: Time, port: Port, packet: &[u8], out: &mut Vec<(Port, Bytes)>) -> bool {
        if packet.len() < 20 {
            // Only an agent could hand us this; count it rather than index past the end.
            self.counters.malformed_ipv4 += 1;
            return false;
        }
        let src = Ipv4Addr::new(packet[12], packet[13], packet[14], packet[15]);
        let dst = Ipv4Addr::new(packet[16], packet[17], packet[18], packet[19]);
        let dst_mac = if dst.is_broadcast() || dst.is_multicast() {
            Some(BROADCAST)
        } else {
            self.macs[port as usize].lookup(dst)
        };
        let Some(dst_mac) = dst_mac else {
            // Dropped, not held: TCP resends it, by which time the probe has been answered.
            self.counters.no_destination_mac += 1;
            self.arp_probe(now, port, dst, out);
            return false;
        };
        let src_mac = self.macs[port.other() as usize].get(src).unwrap_or(self.own_mac[port as usize]);
        let f = pool::concat(&[&dst_mac, &src_mac, &ETHERTYPE_IPV4.to_be_bytes(), packet]);
        self.emit_raw(now, port, f, out);
        true
    }
}

/// Test and benchmark helpers: hand-built frames.
pub mod frames {
    use super::*;
    use lasthop_wire::{SeqNum, TcpFlags, TcpRepr};

    pub fn ethernet(dst: Mac, src: Mac, ethertype: u16, payload: &[u8]) -> Vec<u8> {
        let mut f = Vec::with_capacity(ETH_HEADER_LEN + payload.len());
        f.extend_from_slice(&dst);
        f.extend_from_slice(&src);
        f.extend_from_slice(&ethertype.to_be_bytes());
        f.extend_from_slice(payload);
        f
    }

    /// An Ethernet/IPv4/TCP frame.
    #[allow(clippy::too_many_arguments)]
    pub fn tcp(
        dst_mac: Mac,
        src_mac: Mac,
        src: (Ipv4Addr, u16),
        dst: (Ipv4Addr, u16),
        seq: u32,
        ack: Option<u32>,
        flags: TcpFlags,
        payload: &[u8],
    ) -> Vec<u8> {
        let repr = TcpRepr {
            src_port: src.1,
            dst_port: dst.1,
            seq: SeqNum(seq),
            ack: ack.map(SeqNum),
            flags,
            window: 65535,
            ..TcpRepr::default()
        };
        ethernet(dst_mac, src_mac, ETHERTYPE_IPV4, &repr.emit_ipv4(src.0, dst.0, 1, 64, payload))
    }

    /// An Ethernet/ARP request from (`mac`, `ip`) for `target`.
    pub fn arp_request(mac: Mac, ip: Ipv4Addr, target: Ipv4Addr) -> Vec<u8> {
        let mut a = vec![0, 1, 0x08, 0x00, 6, 4, 0, 1];
        a.extend_from_slice(&mac);
        a.extend_from_slice(&ip.octets());
        a.extend_from_slice(&[0; 6]);
        a.extend_from_slice(&target.octets());
        ethernet(BROADCAST, mac, ETHERTYPE_ARP, &a)
    }
}

#[cfg(test)]
mod tests {
    use super::frames::*;
    use super::*;
    use lasthop_wire::TcpFlags;

    const FH_MAC: Mac = [2, 0, 0, 0, 0, 1];
    const MH_MAC: Mac = [2, 0, 0, 0, 0, 2];
    const FH: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
    const MH: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

    fn fwd() -> Forwarder {
        Forwarder::new(AgentKind::None, &HopConfig::default(), [[2, 0, 0, 0, 1, 1], [2, 0, 0, 0, 1, 2]]).unwrap()
    }

    fn data(seq: u32) -> Vec<u8> {
        tcp(MH_MAC, FH_MAC, (FH, 5000), (MH, 6000), seq, Some(1), TcpFlags::PSH, &[7u8; 100])
    }

    /// Teaches the forwarder both hosts with an ARP exchange, as the kernels would.
    fn learned() -> Forwarder {
        let mut f = fwd();
        let mut out = Vec::new();
        f.handle_frame(Time::ZERO, Port::Wired, &arp_request(FH_MAC, FH, MH), &mut out);
        f.handle_frame(Time::ZERO, Port::Wireless, &arp_request(MH_MAC, MH, FH), &mut out);
        assert_eq!(out.len(), 2, "ARP is bridged both ways");
        assert_eq!(out[0].0, Port::Wireless);
        assert_eq!(out[1].0, Port::Wired);
        f
    }

    #[test]
    fn classification() {
        assert_eq!(classify(&[0u8; 5]), Class::Runt);
        assert_eq!(classify(&arp_request(FH_MAC, FH, MH)), Class::NonIpv4);
        assert!(matches!(classify(&data(1)), Class::Tcp { ip_len: 140 }));
        let mut udp = data(1);
        udp[ETH_HEADER_LEN + 9] = 17;
        assert!(matches!(classify(&udp), Class::OtherIpv4 { .. }));
        let mut frag = data(1);
        frag[ETH_HEADER_LEN + 7] = 8; // fragment offset 64
        assert!(matches!(classify(&frag), Class::OtherIpv4 { .. }));
        let mut bad_ver = data(1);
        bad_ver[ETH_HEADER_LEN] = 0x65;
        assert_eq!(classify(&bad_ver), Class::MalformedIpv4);
        let mut bad_tcp_off = data(1);
        bad_tcp_off[ETH_HEADER_LEN + 20 + 12] = 0xf0; // data offset 60 > segment
        bad_tcp_off.truncate(ETH_HEADER_LEN + 20 + 40);
        bad_tcp_off[ETH_HEADER_LEN + 2..ETH_HEADER_LEN + 4].copy_from_slice(&60u16.to_be_bytes());
        assert_eq!(classify(&bad_tcp_off), Class::MalformedTcp);
    }

    #[test]
    fn ipv4_is_readdressed_and_padding_cut() {
        let mut f = learned();
        let mut out = Vec::new();
        // A bare ACK arrives padded to the 60-byte Ethernet minimum.
        let mut ack = tcp(FH_MAC, MH_MAC, (MH, 6000), (FH, 5000), 1, Some(101), TcpFlags::default(), &[]);
        assert_eq!(ack.len(), 54);
        ack.resize(60, 0);
        f.handle_frame(Time::ZERO, Port::Wireless, &ack, &mut out);
        assert_eq!(out.len(), 1);
        let (port, frame) = &out[0];
        assert_eq!(*port, Port::Wired);
        assert_eq!(frame.len(), 54, "padding removed");
        assert_eq!(&frame[0..6], &FH_MAC);
        assert_eq!(&frame[6..12], &MH_MAC, "source MAC is the mobile's, as ARP said");
        let c = f.counters(Time::ZERO);
        assert_eq!((c.wireless.frames_in, c.wired.frames_out, c.tcp_packets), (2, 2, 1));
    }

    #[test]
    fn malformed_and_truncated_frames_are_counted_never_crash() {
        let mut f = learned();
        let mut out = Vec::new();
        let good = data(1);
        // Every prefix of a good frame, and every single-byte corruption of its headers.
        for n in 0..good.len() {
            f.handle_frame(Time::ZERO, Port::Wired, &good[..n], &mut out);
        }
        for i in 0..ETH_HEADER_LEN + 40 {
            for v in [0u8, 0xff, 0x45, 0x0f] {
                let mut g = good.clone();
                g[i] = v;
                f.handle_frame(Time::ZERO, Port::Wireless, &g, &mut out);
            }
        }
        let c = f.counters(Time::ZERO);
        assert_eq!(c.runt_frames, ETH_HEADER_LEN as u64);
        assert!(c.malformed_ipv4 > 0 && c.malformed_tcp > 0, "{c}");
        assert_eq!(
            c.wired.frames_in + c.wireless.frames_in,
            c.runt_frames + c.malformed_ipv4 + c.malformed_tcp + c.tcp_packets + c.ipv4_other + c.non_ipv4,
            "every frame is classified exactly once"
        );
    }

    #[test]
    fn non_tcp_ipv4_bypasses_the_agents_but_is_forwarded() {
        let mut f = Forwarder::new(AgentKind::Snoop, &HopConfig::default(), [[2; 6], [3; 6]]).unwrap();
        let mut out = Vec::new();
        f.handle_frame(Time::ZERO, Port::Wired, &arp_request(FH_MAC, FH, MH), &mut out);
        f.handle_frame(Time::ZERO, Port::Wireless, &arp_request(MH_MAC, MH, FH), &mut out);
        out.clear();
        let mut udp = data(1);
        udp[ETH_HEADER_LEN + 9] = 17;
        f.handle_frame(Time::ZERO, Port::Wired, &udp, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(f.counters(Time::ZERO).ipv4_other, 1);
    }

    #[test]
    fn unknown_destination_is_probed_and_learned_from_the_answer() {
        let mut f = fwd();
        let mut out = Vec::new();
        f.handle_frame(Time::ZERO, Port::Wired, &data(1), &mut out);
        f.handle_frame(Time::from_millis(1), Port::Wired, &data(101), &mut out);
        assert_eq!(f.counters(Time::ZERO).no_destination_mac, 2);
        assert_eq!(out.len(), 1, "one probe, rate-limited");
        let (port, probe) = out.pop().unwrap();
        assert_eq!(port, Port::Wireless);
        assert_eq!(&probe[6..12], &f.own_mac[1]);
        assert_eq!(&probe[ETH_HEADER_LEN + 14..ETH_HEADER_LEN + 18], &[0, 0, 0, 0], "sender IP 0.0.0.0");
        assert_eq!(&probe[ETH_HEADER_LEN + 24..ETH_HEADER_LEN + 28], &MH.octets());
        // The mobile answers to our MAC: learned, and not bridged to the wired side.
        let mut reply = arp_request(MH_MAC, MH, FH);
        reply[0..6].copy_from_slice(&f.own_mac[1]);
        reply[ETH_HEADER_LEN + 7] = 2;
        f.handle_frame(Time::from_millis(2), Port::Wireless, &reply, &mut out);
        assert!(out.is_empty());
        f.handle_frame(Time::from_millis(3), Port::Wired, &data(201), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(&out[0].1[0..6], &MH_MAC);
    }

    #[test]
    fn wireless_side_is_emulated_in_both_directions() {
        let hop = HopConfig { rate_mbps: 1.0, delay_ms: 2.0, report_transmissions: false, ..HopConfig::default() };
        let mut f = Forwarder::new(AgentKind::None, &hop, [[2; 6], [3; 6]]).unwrap();
        let mut out = Vec::new();
        // ARP crosses the hop too: 28 bytes at 1 Mb/s = 224 µs, plus 2 ms.
        f.handle_frame(Time::ZERO, Port::Wired, &arp_request(FH_MAC, FH, MH), &mut out);
        assert!(out.is_empty());
        assert_eq!(f.poll_timeout(), Some(Time::from_micros(2_224)));
        f.handle_timeout(Time::from_micros(2_223), &mut out);
        assert!(out.is_empty());
        f.handle_timeout(Time::from_micros(2_224), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].0, Port::Wireless);
    }

    #[test]
    fn unfinished_checksums_are_completed() {
        let mut f = learned();
        let mut out = Vec::new();
        let good = data(1);
        let mut partial = good.clone();
        // What a CHECKSUM_PARTIAL frame carries: some other value (the pseudo-header sum) in the field.
        partial[ETH_HEADER_LEN + 20 + 16] ^= 0x5a;
        f.handle_frame_meta(Time::ZERO, Port::Wired, &partial, true, &mut out);
        assert_eq!(&out[0].1[..], &good[..]);
        assert_eq!(f.counters(Time::ZERO).checksums_completed, 1);
    }

    /// Panics on every packet whose first byte after the IPv4 header is odd (a stand-in for an agent bug).
    struct Fragile(u64);
    impl Agent for Fragile {
        fn handle_packet(&mut self, _now: Time, side: Side, packet: Bytes, out: &mut Vec<Action>) {
            self.0 += 1;
            if packet[20] % 2 == 1 {
                panic!("fragile agent: test panic");
            }
            out.push(Action::Forward(side, packet));
        }
        fn handle_timeout(&mut self, _now: Time, _out: &mut Vec<Action>) {}
        fn poll_timeout(&self) -> Option<Time> {
            None
        }
        fn counters(&self) -> Vec<(&'static str, u64)> {
            vec![("fragile_seen", self.0)]
        }
    }

    #[test]
    fn a_panicking_agent_costs_its_state_never_the_packet() {
        let mut f = Forwarder::with_agents(vec![Box::new(Fragile(0))], &HopConfig::default(), [[2; 6], [3; 6]]);
        let mut out = Vec::new();
        f.handle_frame(Time::ZERO, Port::Wired, &arp_request(FH_MAC, FH, MH), &mut out);
        f.handle_frame(Time::ZERO, Port::Wireless, &arp_request(MH_MAC, MH, FH), &mut out);
        out.clear();
        // Source port 5000 = 0x1388: first TCP byte 0x13 is odd, so the agent panics.
        let d = data(1);
        f.handle_frame(Time::ZERO, Port::Wired, &d, &mut out);
        assert_eq!(out.len(), 1, "the packet went on without the agent");
        assert_eq!(&out[0].1[ETH_HEADER_LEN..], &d[ETH_HEADER_LEN..], "byte for byte");
        let c = f.counters(Time::ZERO);
        assert_eq!(c.agent_panics, 1);
        assert!(c.agent.is_empty(), "a chain of unknown make loses the agent");

        // The other way the packet reaches the agents from the hop, not from a frame at hand.
        let mut f = Forwarder::with_agents(vec![Box::new(Fragile(0))], &HopConfig::default(), [[2; 6], [3; 6]]);
        f.handle_frame(Time::ZERO, Port::Wired, &arp_request(FH_MAC, FH, MH), &mut out);
        f.handle_frame(Time::ZERO, Port::Wireless, &arp_request(MH_MAC, MH, FH), &mut out);
        out.clear();
        let up = tcp(FH_MAC, MH_MAC, (MH, 5000), (FH, 6000), 9, Some(1), TcpFlags::default(), &[]);
        f.handle_frame(Time::ZERO, Port::Wireless, &up, &mut out);
        assert_eq!(out.len(), 1, "the ACK went on without the agent");
        assert_eq!(out[0].0, Port::Wired);
        assert_eq!(&out[0].1[ETH_HEADER_LEN..], &up[ETH_HEADER_LEN..]);
        assert_eq!(f.counters(Time::ZERO).agent_panics, 1);
    }

    /// Random bytes, and random mutations of real TCP frames, through Snoop: nothing panics, and every
    /// frame is classified exactly once.
    #[test]
    fn random_frames_through_snoop_never_crash() {
        let mut f = Forwarder::new(AgentKind::Snoop, &HopConfig::default(), [[2; 6], [3; 6]]).unwrap();
        let mut out = Vec::new();
        f.handle_frame(Time::ZERO, Port::Wired, &arp_request(FH_MAC, FH, MH), &mut out);
        f.handle_frame(Time::ZERO, Port::Wireless, &arp_request(MH_MAC, MH, FH), &mut out);
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for k in 0..50_000u32 {
            let now = Time::from_micros(k as u64 * 10);
            let port = if rnd() % 2 == 0 { Port::Wired } else { Port::Wireless };
            let mut fr = if port == Port::Wired {
                tcp(MH_MAC, FH_MAC, (FH, 5000), (MH, 6000), k * 100, Some(1), TcpFlags::PSH, &[1u8; 100])
            } else {
                tcp(FH_MAC, MH_MAC, (MH, 6000), (FH, 5000), 1, Some(k * 100), TcpFlags::default(), &[])
            };
            match rnd() % 4 {
                0 => {} // intact
                1 => {
                    let i = ETH_HEADER_LEN + (rnd() as usize % (fr.len() - ETH_HEADER_LEN));
                    fr[i] = rnd() as u8;
                }
                2 => fr.truncate(rnd() as usize % fr.len()),
                _ => fr = (0..rnd() % 200).map(|_| rnd() as u8).collect(),
            }
            f.handle_frame(now, port, &fr, &mut out);
            if f.poll_timeout().is_some_and(|t| t <= now) {
                f.handle_timeout(now, &mut out);
            }
            out.clear();
        }
        let c = f.counters(Time::ZERO);
        assert_eq!(c.agent_panics, 0, "{c}");
        assert_eq!(
            c.wired.frames_in + c.wireless.frames_in,
            c.runt_frames + c.malformed_ipv4 + c.malformed_tcp + c.tcp_packets + c.ipv4_other + c.non_ipv4
        );
    }

    type Log = std::sync::Arc<std::sync::Mutex<Vec<(Time, Side, Bytes)>>>;
    type Hints = std::sync::Arc<std::sync::Mutex<Vec<(Side, Vec<u8>)>>>;

    /// Forwards everything and logs the transmissions the host reports and the prefetch hints it gives.
    #[derive(Default, Clone)]
    struct Recorder {
        transmissions: Log,
        hints: Hints,
    }
    impl Agent for Recorder {
        fn handle_packet(&mut self, _now: Time, side: Side, packet: Bytes, out: &mut Vec<Action>) {
            out.push(Action::Forward(side, packet));
        }
        fn handle_timeout(&mut self, _now: Time, _out: &mut Vec<Action>) {}
        fn poll_timeout(&self) -> Option<Time> {
            None
        }
        fn counters(&self) -> Vec<(&'static str, u64)> {
            Vec::new()
        }
        fn handle_transmit(&mut self, now: Time, side: Side, packet: &Bytes) {
            self.transmissions.lock().unwrap().push((now, side, packet.clone()));
        }
        fn prefetch(&self, packets: &[(Side, &[u8])]) {
            self.hints.lock().unwrap().extend(packets.iter().map(|(s, p)| (*s, p.to_vec())));
        }
    }

    fn recorder(hop: HopConfig) -> (Forwarder, Recorder) {
        let r = Recorder::default();
        let f = Forwarder::with_agents(vec![Box::new(r.clone())], &hop, [[2; 6], [3; 6]]);
        (f, r)
    }

    fn recorded(hop: HopConfig) -> (Forwarder, Log) {
        let (f, r) = recorder(hop);
        (f, r.transmissions)
    }

    /// A wired batch's IPv4 packets are announced to the agents toward the mobile, without their Ethernet
    /// headers; ARP, runts, the wireless side's frames (they wait in the hop) and, with a wired delay, every
    /// frame (it waits on the emulated path) are not.
    #[test]
    fn agents_are_told_of_a_wired_batch_before_it_is_handed_in() {
        for (delay, announced) in [(0.0, true), (5.0, false)] {
            let (f, Recorder { hints, .. }) = recorder(HopConfig { wired_delay_ms: delay, ..HopConfig::default() });
            let batch = [data(1), arp_request(FH_MAC, FH, MH), vec![0u8; 9], data(101)];
            f.prefetch(Port::Wired, batch.iter().map(|b| &b[..]));
            f.prefetch(Port::Wireless, batch.iter().map(|b| &b[..]));
            let want: Vec<(Side, Vec<u8>)> = match announced {
                true => [&batch[0], &batch[3]].iter().map(|b| (Side::ToMobile, b[ETH_HEADER_LEN..].to_vec())).collect(),
                false => Vec::new(),
            };
            assert_eq!(*hints.lock().unwrap(), want, "wired delay {delay} ms");
        }
    }

    #[test]
    fn agents_hear_when_the_emulated_hop_puts_their_packets_on_the_air() {
        let access = crate::hop::Access::Fifo; // the ACK below waits for the second packet
        let hop =
            HopConfig { rate_mbps: 1.0, delay_ms: 2.0, report_transmissions: true, access, ..HopConfig::default() };
        let (mut f, log) = recorded(hop);
        let mut out = Vec::new();
        f.handle_frame(Time::ZERO, Port::Wired, &arp_request(FH_MAC, FH, MH), &mut out);
        f.handle_frame(Time::ZERO, Port::Wireless, &arp_request(MH_MAC, MH, FH), &mut out);
        // Two 140-byte packets at 10 ms: 1.12 ms on the air each, back to back.
        let (d1, d2) = (data(1), data(101));
        f.handle_frame(Time::from_millis(10), Port::Wired, &d1, &mut out);
        f.handle_frame(Time::from_millis(10), Port::Wired, &d2, &mut out);
        assert_eq!(log.lock().unwrap().len(), 1, "the second one is still queued");
        // The mobile's ACK crosses the hop upward: not a transmission toward the mobile.
        let ack = tcp(FH_MAC, MH_MAC, (MH, 6000), (FH, 5000), 1, Some(101), TcpFlags::default(), &[]);
        f.handle_frame(Time::from_millis(10), Port::Wireless, &ack, &mut out);
        // A late wake-up: the second packet left when the medium freed, not at the poll.
        f.handle_timeout(Time::from_millis(30), &mut out);
        let log = log.lock().unwrap();
        let want = [
            (Time::from_millis(10), Side::ToMobile, Bytes::copy_from_slice(&d1[ETH_HEADER_LEN..])),
            (Time::from_micros(11_120), Side::ToMobile, Bytes::copy_from_slice(&d2[ETH_HEADER_LEN..])),
        ];
        assert_eq!(log[..], want[..], "ARP, the ACK and the uplink are not reported");
    }

    #[test]
    fn the_wired_delay_holds_frames_both_ways_and_only_on_the_wired_side() {
        let hop = HopConfig { wired_delay_ms: 20.0, report_transmissions: false, ..HopConfig::default() };
        let (mut f, log) = recorded(hop);
        let mut out = Vec::new();
        // FH's ARP request reaches the base station (and the mobile) only 20 ms later.
        f.handle_frame(Time::ZERO, Port::Wired, &arp_request(FH_MAC, FH, MH), &mut out);
        assert!(out.is_empty());
        assert_eq!(f.poll_timeout(), Some(Time::from_millis(20)));
        f.handle_timeout(Time::from_millis(20), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].0, Port::Wireless);
        out.clear();
        // The mobile's answer leaves the base station at once and the wired side 20 ms later.
        f.handle_frame(Time::from_millis(21), Port::Wireless, &arp_request(MH_MAC, MH, FH), &mut out);
        assert!(out.is_empty());
        assert_eq!(f.poll_timeout(), Some(Time::from_millis(41)));
        f.handle_timeout(Time::from_millis(40), &mut out);
        assert!(out.is_empty(), "not before it is due");
        f.handle_timeout(Time::from_millis(41), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].0, Port::Wired);
        out.clear();
        // Data from the fixed host reaches the agents (and goes on) at 50 + 20 ms.
        f.handle_frame(Time::from_millis(50), Port::Wired, &data(1), &mut out);
        assert!(out.is_empty());
        f.handle_timeout(Time::from_millis(70), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].0, Port::Wireless);
        assert!(log.lock().unwrap().is_empty(), "reports were not asked for");
        assert_eq!(f.poll_timeout(), None, "both lines empty");
    }

    #[test]
    fn transmissions_are_not_reported_unless_asked() {
        let hop = HopConfig { rate_mbps: 1.0, delay_ms: 2.0, report_transmissions: false, ..HopConfig::default() };
        let (mut f, log) = recorded(hop);
        let mut out = Vec::new();
        f.handle_frame(Time::ZERO, Port::Wired, &arp_request(FH_MAC, FH, MH), &mut out);
        f.handle_frame(Time::ZERO, Port::Wireless, &arp_request(MH_MAC, MH, FH), &mut out);
        f.handle_frame(Time::from_millis(10), Port::Wired, &data(1), &mut out);
        f.handle_timeout(Time::from_millis(100), &mut out);
        assert!(log.lock().unwrap().is_empty());
    }

    #[test]
    fn without_emulation_agents_hear_when_the_frame_goes_to_the_socket() {
        let (mut f, log) = recorded(HopConfig { report_transmissions: true, ..HopConfig::default() });
        let mut out = Vec::new();
        // No MAC for the mobile yet: the packet never leaves, so it is not reported.
        f.handle_frame(Time::from_millis(1), Port::Wired, &data(1), &mut out);
        assert!(log.lock().unwrap().is_empty());
        f.handle_frame(Time::from_millis(2), Port::Wired, &arp_request(FH_MAC, FH, MH), &mut out);
        f.handle_frame(Time::from_millis(2), Port::Wireless, &arp_request(MH_MAC, MH, FH), &mut out);
        out.clear();
        let d = data(101);
        f.handle_frame(Time::from_millis(5), Port::Wired, &d, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(
            log.lock().unwrap()[..],
            [(Time::from_millis(5), Side::ToMobile, Bytes::copy_from_slice(&d[ETH_HEADER_LEN..]))]
        );
    }

    #[test]
    fn mac_table_finds_every_learned_address_and_relearns_a_moved_one() {
        let mut t = MacTable::default();
        for i in 0..MacTable::MAX_ENTRIES as u32 {
            t.learn(Ipv4Addr::from(0x0a00_0001 + i), [2, 0, 0, (i >> 16) as u8, (i >> 8) as u8, i as u8]);
        }
        for i in 0..MacTable::MAX_ENTRIES as u32 {
            let want = [2, 0, 0, (i >> 16) as u8, (i >> 8) as u8, i as u8];
            assert_eq!(t.get(Ipv4Addr::from(0x0a00_0001 + i)), Some(want), "address {i}");
        }
        assert_eq!(t.get(Ipv4Addr::new(192, 168, 0, 1)), None);
        assert_eq!(t.lookup(Ipv4Addr::new(192, 168, 0, 1)), t.last_peer, "unknown: the last peer");
        t.learn(Ipv4Addr::new(10, 0, 0, 1), [2, 9, 9, 9, 9, 9]);
        assert_eq!(t.get(Ipv4Addr::new(10, 0, 0, 1)), Some([2, 9, 9, 9, 9, 9]));
    }

    #[test]
    fn mac_table_is_bounded_under_spoofed_sources() {
        let mut t = MacTable::default();
        for i in 0..100_000u32 {
            t.learn(Ipv4Addr::from(i + 1), [2, 0, 0, 0, 0, 1]);
        }
        assert!(t.by_ip.len() <= MacTable::MAX_ENTRIES);
    }
}
