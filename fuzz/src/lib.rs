//! Shared pieces of the fuzz targets: a plain RFC 1071 checksum to compare `lasthop_wire` against, and the
//! agent driver that turns fuzz bytes into a sequence of packets and timer firings and checks the agents'
//! invariants after every step.
//!
//! Invariants (each a panic, which libFuzzer reports as a crash):
//! - an agent hands back exactly one disposition per packet (the `Agent` contract);
//! - no TCP segment leaves with an acknowledgment number its sender did not send: no ACK toward the fixed
//!   host beyond what the mobile acknowledged (Snoop, Balakrishnan 1995 §3.1.2), no NACK beyond the fixed host's ACK;
//! - a checksum is never repaired and never broken: a segment that leaves with the sequence number and
//!   payload of one that came in has the same verdict, and a segment an agent builds itself verifies;
//! - memory stays within the configured bounds (connections, cache bytes, timer entries, handoff table);
//! - a due timer is consumed (`poll_timeout` moves past `now` after `handle_timeout(now)`), so no busy loop;
//! - replay is deterministic: the same bytes give the same actions.

use bytes::Bytes;
use lasthop_agents::eln::{Eln, ElnConfig, ElnRole};
use lasthop_agents::flow::FlowKey;
use lasthop_agents::handoff::{BaseStation, BsConfig, Control, Kind, Role};
use lasthop_agents::nack::{Nack, NackConfig};
use lasthop_agents::snoop::{Snoop, SnoopConfig};
use lasthop_agents::{Action, Agent, Chain, Side, Time};
use lasthop_wire::ipv4::PROTO_IPIP;
use lasthop_wire::{ipip, Ipv4Packet, SeqNum, TcpFlags, TcpPacket, TcpRepr};
use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;
use std::time::Duration;

/// RFC 1071 done the plain way: 16-bit words, every carry folded at once. Not inverted.
pub fn reference_sum(parts: &[&[u8]]) -> u16 {
    let mut acc: u32 = 0;
    for part in parts {
        for c in part.chunks(2) {
            acc += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
            acc = (acc & 0xffff) + (acc >> 16);
        }
    }
    acc as u16
}

/// Whether the TCP segment `seg` between `src` and `dst` has a valid checksum, by [`reference_sum`].
pub fn reference_tcp_verifies(seg: &[u8], src: Ipv4Addr, dst: Ipv4Addr) -> bool {
    let len = (seg.len() as u16).to_be_bytes();
    let pseudo = [&src.octets()[..], &dst.octets()[..], &[0, 6], &len[..]].concat();
    reference_sum(&[&pseudo, seg]) == 0xffff
}

const FH: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const MH: Ipv4Addr = Ipv4Addr::new(10, 1, 0, 1);
const BS: Ipv4Addr = Ipv4Addr::new(10, 0, 1, 1);
const BS2: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 1);
const HA: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
const STRANGER: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 9);
const FH_ISS: u32 = 1000;
const MH_ISS: u32 = 5000;
const MSS: u32 = 100;
/// Bounds the fuzzed configurations set, checked after every step.
const MAX_CONNECTIONS: usize = 4;
const MAX_CACHE_BYTES: usize = 4096;

/// The agent a target drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    Snoop,
    Eln,
    Nack,
    Handoff,
    Chain,
}

/// Fuzz bytes read front to back; zeros once they run out.
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn u8(&mut self) -> u8 {
        let (b, rest) = self.0.split_first().map_or((0, &[][..]), |(b, r)| (*b, r));
        self.0 = rest;
        b
    }
    fn u16(&mut self) -> u16 {
        u16::from_be_bytes([self.u8(), self.u8()])
    }
    fn u32(&mut self) -> u32 {
        u32::from_be_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
    fn bytes(&mut self, n: usize) -> &[u8] {
        let n = n.min(self.0.len());
        let (b, rest) = self.0.split_at(n);
        self.0 = rest;
        b
    }
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A TCP segment as the invariants see it, through an IP-in-IP tunnel if there is one. The payload is a
/// slice of the packet (no copy: this runs for every packet in and out).
struct View {
    key: FlowKey,
    seq: u32,
    ack: Option<u32>,
    payload: Bytes,
    verifies: bool,
}

fn view(packet: &Bytes) -> Option<View> {
    let ip = Ipv4Packet::new_checked(&packet[..]).ok()?;
    if ip.protocol() == PROTO_IPIP {
        return view(&ipip::decapsulate(packet).ok()?);
    }
    if ip.protocol() != 6 || ip.is_fragment() {
        return None;
    }
    let (src, dst) = (ip.src_addr(), ip.dst_addr());
    let tcp_range = ip.payload_range();
    let tcp = TcpPacket::new_checked(ip.payload()).ok()?;
    let payload_at = tcp_range.start + tcp.header_len();
    Some(View {
        key: FlowKey { src, src_port: tcp.src_port(), dst, dst_port: tcp.dst_port() },
        seq: tcp.seq_number().0,
        ack: tcp.ack().then(|| tcp.ack_number().0),
        payload: packet.slice(payload_at..tcp_range.end),
        verifies: reference_tcp_verifies(ip.payload(), src, dst),
    })
}

fn snoop_config(i: &mut Input) -> SnoopConfig {
    SnoopConfig {
        max_connections: MAX_CONNECTIONS,
        high_water_bytes: usize::from(i.u8()) * 64,
        max_cache_bytes: MAX_CACHE_BYTES,
        max_local_rexmit: i.u8() % 8,
        persist_timeout: Duration::from_millis(u64::from(i.u8()) + 1),
        ..SnoopConfig::default()
    }
}

fn nack_config() -> NackConfig {
    NackConfig { max_connections: MAX_CONNECTIONS, ..NackConfig::default() }
}

fn eln_config(role: ElnRole) -> ElnConfig {
    ElnConfig { role, max_connections: MAX_CONNECTIONS, max_blocks: 8, ..ElnConfig::default() }
}

/// The agent under test, with what the invariants need to look inside it.
enum Under {
    Snoop(Snoop),
    Eln(Eln),
    Nack(Nack),
    Handoff(BaseStation),
    Chain(Chain),
}

impl Under {
    fn agent(&mut self) -> &mut dyn Agent {
        match self {
            Under::Snoop(a) => a,
            Under::Eln(a) => a,
            Under::Nack(a) => a,
            Under::Handoff(a) => a,
            Under::Chain(a) => a,
        }
    }

    fn check_bounds(&self, keys: &BTreeSet<FlowKey>) {
        match self {
            Under::Snoop(s) => {
                assert!(s.connections() <= MAX_CONNECTIONS, "Snoop holds {} connections", s.connections());
                for k in keys {
                    let held = s.cached_memory(k).unwrap_or(0);
                    assert!(held <= MAX_CACHE_BYTES, "Snoop cache holds {held} bytes for {k:?}");
                }
            }
            Under::Eln(e) => assert!(e.connections() <= MAX_CONNECTIONS),
            Under::Nack(n) => {
                assert!(n.connections() <= MAX_CONNECTIONS);
                assert!(n.timers_pending() <= n.connections(), "{} timer entries", n.timers_pending());
            }
            Under::Handoff(b) => assert!(b.mobiles_tracked() <= 1, "{} mobiles tracked", b.mobiles_tracked()),
            Under::Chain(_) => {}
        }
    }
}

fn build(subject: Subject, i: &mut Input) -> Under {
    match subject {
        Subject::Snoop => Under::Snoop(Snoop::new(snoop_config(i))),
        Subject::Eln => Under::Eln(Eln::new(eln_config(if i.u8() % 2 == 0 { ElnRole::Mark } else { ElnRole::Filter }))),
        Subject::Nack => Under::Nack(Nack::new(nack_config())),
        Subject::Handoff => {
            let mut cfg = BsConfig::new(BS, HA);
            cfg.peers = vec![BS2];
            cfg.buffer_packets = usize::from(i.u8() % 16);
            cfg.mirror_packets = usize::from(i.u8() % 64);
            cfg.snoop = (i.u8() % 2 == 0).then(|| snoop_config(i));
            let mut b = BaseStation::new(cfg);
            let role = [Role::Idle, Role::Buffering, Role::Primary][usize::from(i.u8() % 3)];
            b.set_role(MH, role);
            Under::Handoff(b)
        }
        Subject::Chain => {
            let snoop: Box<dyn Agent + Send> = Box::new(Snoop::new(snoop_config(i)));
            let eln: Box<dyn Agent + Send> = Box::new(Eln::new(eln_config(ElnRole::Mark)));
            let nack: Box<dyn Agent + Send> = Box::new(Nack::new(nack_config()));
            Under::Chain(Chain::new(match i.u8() % 3 {
                0 => vec![snoop, eln],
                1 => vec![eln, nack],
                _ => vec![snoop, eln, nack],
            }))
        }
    }
}

/// A well-formed segment with fuzzed fields: which way (FH→MH or MH→FH), sequence and acknowledgment near
/// the connection's, flags, window, options and payload; sometimes with a byte flipped after the checksum.
fn segment(i: &mut Input) -> (Side, Bytes) {
    let sel = i.u8();
    let from_fh = sel & 1 == 0;
    let (src, dst, sport, dport, iss, peer_iss) =
        if from_fh { (FH, MH, 5001, 40000, FH_ISS, MH_ISS) } else { (MH, FH, 40000, 5001, MH_ISS, FH_ISS) };
    // A few other connections too, so tables fill and evict.
    let sport = if sel & 0x40 != 0 { sport + u16::from(i.u8() % 8) } else { sport };
    let flags =
        [TcpFlags::default(), TcpFlags::PSH, TcpFlags::SYN, TcpFlags::FIN, TcpFlags::RST][usize::from(i.u8() % 5)];
    let seq = iss.wrapping_add(1).wrapping_add(u32::from(i.u8()) * MSS).wrapping_add(u32::from(i.u8() % 4));
    let ack = (sel & 2 != 0).then(|| SeqNum(peer_iss.wrapping_add(1).wrapping_add(u32::from(i.u8()) * MSS)));
    let payload_len = if sel & 4 != 0 { usize::from(i.u8() % 200) } else { 0 };
    let mut repr = TcpRepr {
        src_port: sport,
        dst_port: dport,
        seq: SeqNum(seq),
        ack,
        flags,
        window: i.u16(),
        sack_permitted: sel & 8 != 0,
        timestamps: (sel & 16 != 0).then(|| (i.u32(), i.u32())),
        ..TcpRepr::default()
    };
    if sel & 32 != 0 {
        repr.sack.push(SeqNum(seq.wrapping_sub(u32::from(i.u8()) * MSS)), SeqNum(seq));
    }
    let fill = i.u8();
    let mut p = repr.emit_ipv4(src, dst, i.u16(), 64, &vec![fill; payload_len]).to_vec();
    if sel & 0x80 != 0 {
        let at = usize::from(i.u16()) % p.len();
        p[at] ^= i.u8() | 1;
    }
    (if from_fh { Side::ToMobile } else { Side::ToWired }, Bytes::from(p))
}

/// A control message or a tunnelled packet for the handoff base station, from a named party or not.
fn handoff_packet(i: &mut Input) -> (Side, Bytes) {
    let sel = i.u8();
    let from = [MH, BS2, HA, STRANGER][usize::from(sel % 4)];
    if sel & 4 != 0 {
        let (_, inner) = segment(i);
        return (Side::ToMobile, ipip::encapsulate(&inner, from, BS, i.u16(), 64));
    }
    let kinds = [Kind::Forward, Kind::Buffer, Kind::Stop, Kind::Greeting, Kind::Notify, Kind::NotifyAck, Kind::Join];
    let kind = kinds[usize::from(i.u8()) % kinds.len()];
    let mobile = if sel & 8 != 0 { STRANGER } else { MH };
    let peer = [BS2, BS, STRANGER, Ipv4Addr::UNSPECIFIED][usize::from(i.u8() % 4)];
    let mut c = Control::new(kind, i.u16() % 8, mobile, peer);
    c.ids = (0..i.u8() % 4).map(|_| i.u16()).collect();
    (Side::ToWired, c.emit(from, BS, i.u16()))
}

/// Acknowledgment numbers handed in, per 4-tuple, and the checksum verdicts of segments handed in, per
/// (4-tuple, sequence number, acknowledgment number, payload).
#[derive(Default)]
struct Seen {
    acks: BTreeMap<FlowKey, BTreeSet<u32>>,
    verdicts: BTreeMap<(FlowKey, u32, Option<u32>, Bytes), BTreeSet<bool>>,
}

impl Seen {
    fn record(&mut self, packet: &Bytes) {
        if let Some(v) = view(packet) {
            if let Some(a) = v.ack {
                self.acks.entry(v.key).or_default().insert(a);
            }
            self.verdicts.entry((v.key, v.seq, v.ack, v.payload)).or_default().insert(v.verifies);
        }
    }

    fn check(&self, action: &Action) {
        let (packet, built_here) = match action {
            Action::Forward(_, p) | Action::ForwardPriority(_, p) => (p, false),
            Action::Inject(_, p) => (p, true),
            Action::Drop(_) => return,
        };
        let Some(v) = view(packet) else { return };
        if let Some(a) = v.ack {
            let sent = self.acks.get(&v.key).is_some_and(|s| s.contains(&a));
            assert!(sent, "{action:?}: acknowledgment {a} for {:?} was never sent by that host", v.key);
        }
        if built_here {
            // A regenerated ACK or a NACK: the agent's own packet, with a checksum of its own making.
            assert!(v.verifies, "{action:?}: a segment built by the agent does not verify");
            return;
        }
        if let Some(verdicts) = self.verdicts.get(&(v.key, v.seq, v.ack, v.payload)) {
            if verdicts.len() == 1 {
                let came_in = *verdicts.first().unwrap();
                assert_eq!(v.verifies, came_in, "{action:?}: checksum verdict changed on the way through");
            }
        }
    }
}

/// Two instances of the agent built from the same bytes and driven in lockstep: every call goes to both and
/// their actions must be equal, step by step. This is the replay check ("the same bytes give the same
/// actions") at the cost of the agent's own work only, not the harness's a second time, and it names the
/// first step that differs. Only the first is told of each packet ahead (`Agent::prefetch`), so the check also
/// holds the hint to changing nothing.
struct Twin {
    first: Under,
    second: Under,
    out_second: Vec<Action>,
}

impl Twin {
    fn new(subject: Subject, i: &mut Input) -> Twin {
        let mut again = Input(i.0);
        let second = build(subject, &mut again);
        Twin { first: build(subject, i), second, out_second: Vec::new() }
    }

    /// Runs `call` on the second agent and then on the first, and checks they acted alike; the first's
    /// actions are appended to `out`.
    fn both(&mut self, out: &mut Vec<Action>, mut call: impl FnMut(&mut dyn Agent, &mut Vec<Action>)) {
        self.out_second.clear();
        call(self.second.agent(), &mut self.out_second);
        let before = out.len();
        call(self.first.agent(), out);
        assert!(out[before..] == self.out_second[..], "replay of the same input gave different actions");
    }

    fn handle_packet(&mut self, now: Time, side: Side, p: Bytes, out: &mut Vec<Action>) {
        // Only the first is told of the packet ahead: the hint must change nothing.
        self.first.agent().prefetch(&[(side, &p[..])]);
        self.both(out, |agent, out| agent.handle_packet(now, side, p.clone(), out));
    }

    fn handle_transmit(&mut self, now: Time, side: Side, p: &Bytes) {
        self.first.agent().handle_transmit(now, side, p);
        self.second.agent().handle_transmit(now, side, p);
    }

    fn poll_timeout(&mut self) -> Option<Time> {
        let t = self.first.agent().poll_timeout();
        assert_eq!(t, self.second.agent().poll_timeout(), "replay of the same input asked for another timer");
        t
    }

    fn handle_timeout(&mut self, now: Time, out: &mut Vec<Action>) {
        self.both(out, |agent, out| agent.handle_timeout(now, out));
    }
}

/// Drives `subject` with `data`, checking the invariants of the module docs after every step; panics on a
/// violation.
pub fn drive(subject: Subject, data: &[u8]) {
    let mut i = Input(data);
    let mut under = Twin::new(subject, &mut i);
    let mut seen = Seen::default();
    let mut keys = BTreeSet::new();
    // The last packet sent toward the mobile, for transmission reports.
    let mut last_to_mobile: Option<Bytes> = None;
    let mut now = Time::ZERO;
    let mut out = Vec::new();
    let mut step = 0;
    while !i.is_empty() && step < 2000 {
        step += 1;
        let op = i.u8();
        let packet = match op % 8 {
            0..=3 => Some(segment(&mut i)),
            4 if subject == Subject::Handoff => Some(handoff_packet(&mut i)),
            4 | 5 => {
                let side = if op & 0x80 != 0 { Side::ToMobile } else { Side::ToWired };
                // Up to a jumbo frame's worth, so whole captured packets can be replayed (seed corpora).
                let n = usize::from(i.u16() % 9000);
                Some((side, Bytes::copy_from_slice(i.bytes(n))))
            }
            6 => {
                now = Time(now.0 + u64::from(i.u16()) * 1_000_000);
                None
            }
            _ => {
                // A transmission report for the last packet sent toward the mobile (transmit-timed Snoop).
                if let Some(p) = &last_to_mobile {
                    under.handle_transmit(now, Side::ToMobile, p);
                }
                None
            }
        };
        out.clear();
        if let Some((side, p)) = packet {
            seen.record(&p);
            if let Some(v) = view(&p) {
                keys.insert(v.key);
            }
            under.handle_packet(now, side, p, &mut out);
            if subject != Subject::Handoff {
                // Handoff hands back one disposition for a control message and, on promotion, resends its
                // buffer: the contract holds per agent inside it, checked through Snoop here.
                let dispositions = out.iter().filter(|a| matches!(a, Action::Forward(..) | Action::Drop(_))).count();
                assert!(dispositions <= 1, "{dispositions} dispositions for one packet: {out:?}");
                assert!(dispositions == 1 || out.iter().any(|a| matches!(a, Action::ForwardPriority(..))), "{out:?}");
            }
        }
        // Timers, as `poll_timeout` asks: each due one is consumed.
        let mut fired = 0;
        while let Some(t) = under.poll_timeout().filter(|&t| t <= now) {
            under.handle_timeout(now, &mut out);
            fired += 1;
            assert!(fired < 1000, "a timer due at {t:?} stays due at {now:?}");
        }
        for a in &out {
            seen.check(a);
            if let Action::Forward(Side::ToMobile, p) | Action::ForwardPriority(Side::ToMobile, p) = a {
                last_to_mobile = Some(p.clone());
            }
        }
        under.first.check_bounds(&keys);
        under.second.check_bounds(&keys);
    }
}
