//! State-machine tests: hand-built packets in, actions out, no clocks. A small harness (`H`) decodes the
//! actions into [`Out`] so that each test reads like a packet trace: `h.data(2)` hands in data segment 2
//! (sequence `ISS + 1 + 2·MSS`), `h.ack(2)` the mobile's ACK for everything before segment 2.

use super::conn::Conn;
use super::segment::{flag, CachedSeg};
use super::*;
use lasthop_wire::ipv4::PROTO_UDP;
use lasthop_wire::{Ipv4Packet, SeqNum, TcpFlags, TcpPacket, TcpRepr};
use proptest::prelude::*;
use std::net::Ipv4Addr;

const FH: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const MH: Ipv4Addr = Ipv4Addr::new(10, 1, 0, 1);
const FP: u16 = 5001;
const MP: u16 = 40000;
const ISS: u32 = 1000;
const MH_ISS: u32 = 777;
const MSS: u32 = 100;
const WIN: u16 = 8192;

fn key() -> FlowKey {
    FlowKey { src: FH, src_port: FP, dst: MH, dst_port: MP }
}

fn seq_of(i: u32) -> u32 {
    ISS.wrapping_add(1).wrapping_add(i * MSS)
}

fn tcp(src: Ipv4Addr, dst: Ipv4Addr, repr: TcpRepr, payload_len: usize) -> Bytes {
    repr.emit_ipv4(src, dst, 1, 64, &vec![0xab; payload_len])
}

/// MH -> FH segment acknowledging exactly `ack` (any byte, not only a segment boundary), window `WIN`, with
/// `payload_len` bytes of data for the FH.
fn mh_segment_acking(ack: u32, payload_len: usize) -> Bytes {
    let repr = TcpRepr {
        src_port: MP,
        dst_port: FP,
        seq: SeqNum(MH_ISS + 1),
        ack: Some(SeqNum(ack)),
        window: WIN,
        ..TcpRepr::default()
    };
    tcp(MH, FH, repr, payload_len)
}

/// FH -> MH data segment `i` of connection `(fp, mp)`.
fn data_on(iss: u32, fp: u16, mp: u16, i: u32, flags: TcpFlags) -> Bytes {
    let repr = TcpRepr {
        src_port: fp,
        dst_port: mp,
        seq: SeqNum(iss.wrapping_add(1).wrapping_add(i * MSS)),
        ack: Some(SeqNum(MH_ISS + 1)),
        flags,
        window: 65535,
        ..TcpRepr::default()
    };
    tcp(FH, MH, repr, MSS as usize)
}

/// MH -> FH pure ACK for everything before segment `i`.
fn ack_on(iss: u32, fp: u16, mp: u16, i: u32, win: u16) -> Bytes {
    let repr = TcpRepr {
        src_port: mp,
        dst_port: fp,
        seq: SeqNum(MH_ISS + 1),
        ack: Some(SeqNum(iss.wrapping_add(1).wrapping_add(i * MSS))),
        window: win,
        timestamps: Some((4242, 99)),
        ..TcpRepr::default()
    };
    tcp(MH, FH, repr, 0)
}

/// An action, decoded: segment indices instead of bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Out {
    /// Data segment forwarded to the mobile.
    Fwd(u32),
    /// ACK forwarded to the fixed host (index of the acknowledged segment boundary).
    FwdAck(u32),
    /// Local retransmission of a segment at high priority.
    Prio(u32),
    Drop(DropReason),
    /// Regenerated ACK injected toward the fixed host.
    Regen(u32),
    /// Anything else forwarded (non-TCP, SYN, ...).
    Other(Side),
}

fn index(seq: SeqNum, iss: u32) -> u32 {
    seq.0.wrapping_sub(iss.wrapping_add(1)) / MSS
}

fn decode(iss: u32, a: &Action) -> Out {
    let tcp_of = |b: &Bytes| {
        let ip = Ipv4Packet::new_checked(&b[..]).ok()?;
        if ip.protocol() != 6 {
            return None;
        }
        let t = TcpPacket::new_checked(ip.payload().to_vec()).ok()?;
        Some(t)
    };
    match a {
        Action::Drop(r) => Out::Drop(*r),
        Action::Forward(side, b) => match tcp_of(b) {
            Some(t) if *side == Side::ToMobile && !t.payload().is_empty() => Out::Fwd(index(t.seq_number(), iss)),
            Some(t) if *side == Side::ToWired && t.ack() && !t.syn() => Out::FwdAck(index(t.ack_number(), iss)),
            _ => Out::Other(*side),
        },
        Action::ForwardPriority(Side::ToMobile, b) => Out::Prio(index(tcp_of(b).unwrap().seq_number(), iss)),
        Action::Inject(Side::ToWired, b) => Out::Regen(index(tcp_of(b).unwrap().ack_number(), iss)),
        other => panic!("unexpected action {other:?}"),
    }
}

struct H {
    s: Snoop,
    now: Time,
    out: Vec<Action>,
}

impl H {
    fn new(cfg: SnoopConfig) -> H {
        H { s: Snoop::new(cfg), now: Time::ZERO, out: Vec::new() }
    }

    /// The MH connects to the FH: its SYN passes (no state), the FH's SYN-ACK creates the state, the MH's
    /// ACK of it sets the first ACK.
    fn established(cfg: SnoopConfig) -> H {
        let mut h = H::new(cfg);
        h.handshake(ISS, FP, MP);
        h
    }

    fn handshake(&mut self, iss: u32, fp: u16, mp: u16) {
        let syn = TcpRepr {
            src_port: mp,
            dst_port: fp,
            seq: SeqNum(MH_ISS),
            flags: TcpFlags::SYN,
            window: WIN,
            ..TcpRepr::default()
        };
        assert_eq!(self.raw(Side::ToWired, tcp(MH, FH, syn, 0)), [Out::Other(Side::ToWired)]);
        let synack = TcpRepr {
            src_port: fp,
            dst_port: mp,
            seq: SeqNum(iss),
            ack: Some(SeqNum(MH_ISS + 1)),
            flags: TcpFlags::SYN,
            window: 65535,
            ..TcpRepr::default()
        };
        assert_eq!(self.raw(Side::ToMobile, tcp(FH, MH, synack, 0)), [Out::Other(Side::ToMobile)]);
        let out = self.raw(Side::ToWired, ack_on(iss, fp, mp, 0, WIN));
        assert_eq!(out.len(), 1);
    }

    fn at_ms(&mut self, ms: u64) -> &mut Self {
        self.now = Time::from_millis(ms);
        self
    }

    fn run(&mut self, iss: u32, f: impl FnOnce(&mut Snoop, Time, &mut Vec<Action>)) -> Vec<Out> {
        self.out.clear();
        f(&mut self.s, self.now, &mut self.out);
        self.out.iter().map(|a| decode(iss, a)).collect()
    }

    fn raw(&mut self, side: Side, b: Bytes) -> Vec<Out> {
        self.run(ISS, |s, now, out| s.handle_packet(now, side, b, out))
    }

    fn data(&mut self, i: u32) -> Vec<Out> {
        self.raw(Side::ToMobile, data_on(ISS, FP, MP, i, TcpFlags::PSH))
    }

    fn ack(&mut self, i: u32) -> Vec<Out> {
        self.ackw(i, WIN)
    }

    fn ackw(&mut self, i: u32, win: u16) -> Vec<Out> {
        self.raw(Side::ToWired, ack_on(ISS, FP, MP, i, win))
    }

    /// The link starts transmitting data segment `i` (a copy Snoop passed on): `Agent::handle_transmit`.
    fn tx(&mut self, i: u32) -> &mut Self {
        self.s.handle_transmit(self.now, Side::ToMobile, &data_on(ISS, FP, MP, i, TcpFlags::PSH));
        self
    }

    /// Jumps to `poll_timeout()` and fires it.
    fn fire(&mut self) -> Vec<Out> {
        self.now = self.s.poll_timeout().expect("a timer is armed");
        self.run(ISS, |s, now, out| s.handle_timeout(now, out))
    }

    fn timeout_at(&mut self, ms: u64) -> Vec<Out> {
        self.at_ms(ms);
        self.run(ISS, |s, now, out| s.handle_timeout(now, out))
    }

    fn conn(&self) -> &Conn {
        self.s.table.conn(self.s.table.lookup(&key()).expect("state"))
    }

    fn cached(&self) -> Vec<u32> {
        self.conn().cache().iter().map(|c| index(c.seq, ISS)).collect()
    }
}

use Out::*;

fn established() -> H {
    H::established(SnoopConfig::default())
}

// ---- snoop_data(): Balakrishnan 1995 §3.1.1 ---------------------------------------------------------------------

#[test]
fn case1_new_packets_are_cached_and_forwarded_without_copying() {
    let mut h = established();
    let p = data_on(ISS, FP, MP, 0, TcpFlags::PSH);
    h.out.clear();
    h.s.handle_packet(h.now, Side::ToMobile, p.clone(), &mut h.out);
    assert_eq!(h.out, [Action::Forward(Side::ToMobile, p.clone())]);
    assert_eq!(h.data(1), [Fwd(1)]);
    assert_eq!(h.cached(), [0, 1]);
    assert_eq!(h.s.cached_bytes(&key()), Some(200));
    // The cache holds the same buffer, not a copy.
    assert_eq!(h.conn().cache()[0].pkt.as_ptr(), p.as_ptr());
    assert_eq!(h.s.stats().packets_cached, 2);
}

#[test]
fn case2_cached_packet_above_last_ack_is_forwarded_marked_and_its_count_reset() {
    let mut h = established();
    for i in 0..4 {
        h.data(i);
    }
    assert_eq!(h.ack(1), [FwdAck(1)]); // segment 1 lost on the wireless hop
    assert_eq!(h.ack(1), [Drop(DropReason::DupAckSuppressed), Prio(1)]);
    assert_eq!(h.conn().cache()[0].local_rexmits, 1);
    // The sender times out and resends segment 1: forward, mark, reset the local count (§3.1.2 last para).
    assert_eq!(h.data(1), [Fwd(1)]);
    let c = &h.conn().cache()[0];
    assert!(c.has(flag::SENDER_REXMIT));
    assert_eq!(c.local_rexmits, 0);
    assert_eq!(h.s.stats().sender_retransmissions_seen, 1);
    // DUPACKs for a sender-retransmitted packet go to the sender (§3.1.2 case 3, first bullet).
    assert_eq!(h.ack(1), [FwdAck(1)]);
    assert_eq!(h.s.stats().dupacks_forwarded, 1);
}

#[test]
fn case2_packet_below_last_ack_is_dropped_and_the_last_ack_regenerated() {
    let mut h = established();
    h.data(0);
    h.data(1);
    h.ackw(2, 5000);
    // The mobile's ACK was lost on the wired path; the sender resends segment 0.
    assert_eq!(h.data(0), [Drop(DropReason::AlreadyAcked), Regen(2)]);
    let Action::Inject(Side::ToWired, b) = &h.out[1] else { panic!() };
    let ip = Ipv4Packet::new_checked(&b[..]).unwrap();
    assert!(ip.verify_checksum());
    assert_eq!((ip.src_addr(), ip.dst_addr()), (MH, FH));
    let t = TcpPacket::new_checked(ip.payload()).unwrap();
    assert!(t.verify_checksum(MH, FH));
    assert_eq!((t.src_port(), t.dst_port()), (MP, FP));
    assert_eq!(t.ack_number(), SeqNum(seq_of(2)), "exactly the mobile's last ACK");
    assert_eq!(t.window_len(), 5000, "the mobile's last advertised window");
    assert_eq!(t.seq_number(), SeqNum(MH_ISS + 1));
    assert!(t.payload().is_empty());
    assert_eq!(t.flags(), TcpFlags::ACK);
    assert_eq!(TcpRepr::parse(&t).unwrap().timestamps, Some((4242, 99)), "the mobile's timestamps");
    assert_eq!(h.s.stats().acks_regenerated, 1);
    // A segment only partly acknowledged still carries bytes the mobile needs: forwarded.
    let partial = TcpRepr {
        src_port: FP,
        dst_port: MP,
        seq: SeqNum(seq_of(2) - 50),
        ack: Some(SeqNum(MH_ISS + 1)),
        window: 65535,
        ..TcpRepr::default()
    };
    assert_eq!(h.raw(Side::ToMobile, tcp(FH, MH, partial, 100)), [Fwd(1)]);
}

#[test]
fn case3_uncached_out_of_sequence_packet_is_forwarded_cached_and_marked() {
    let mut h = established();
    h.data(0);
    h.data(2); // segment 1 lost upstream (wired congestion)
    h.data(3);
    assert_eq!(h.cached(), [0, 2, 3]);
    assert_eq!(h.data(1), [Fwd(1)]);
    assert_eq!(h.cached(), [0, 1, 2, 3]);
    assert!(h.conn().cache()[1].has(flag::SENDER_REXMIT));
    assert!(!h.conn().cache()[0].has(flag::SENDER_REXMIT));
    h.ack(1);
    assert_eq!(h.ack(1), [FwdAck(1)], "DUPACK for a sender-retransmitted packet goes to the sender");
}

#[test]
fn high_water_mark_caches_only_older_out_of_order_packets() {
    let mut h = H::established(SnoopConfig { high_water_bytes: 3 * MSS as usize, ..SnoopConfig::default() });
    h.data(0);
    h.data(2); // gap: 1 lost upstream
    h.data(3);
    assert_eq!(h.data(4), [Fwd(4)], "forwarded, but past the high-water mark");
    assert_eq!(h.cached(), [0, 2, 3]);
    assert_eq!(h.s.stats().packets_uncached_high_water, 1);
    assert_eq!(h.data(1), [Fwd(1)], "older than the last seen: cached even past the mark");
    assert_eq!(h.cached(), [0, 1, 2, 3]);
    // The hard bound (twice the mark) pushes the newest out, never the oldest.
    h.data(5);
    h.data(6);
    for i in [7, 8] {
        h.data(i);
    }
    let resend_old = |h: &mut H, i| h.raw(Side::ToMobile, data_on(ISS, FP, MP, i, TcpFlags::PSH));
    // Resend 6 (uncached) and 5: out of order, cached, and the cache stays within 6 segments.
    resend_old(&mut h, 6);
    resend_old(&mut h, 5);
    resend_old(&mut h, 7);
    assert!(h.conn().cache_bytes() <= 6 * MSS as usize);
    assert_eq!(h.cached()[0], 0, "the oldest is kept");
}

#[test]
fn cache_memory_limit_is_a_hard_bound() {
    // Balakrishnan 1998 "Scaling behavior": cache memory per connection; past it packets go uncached.
    // Room for two data packets (40 bytes of headers each) and their entries.
    let limit = 2 * (MSS as usize + 40 + std::mem::size_of::<CachedSeg>());
    let mut h = H::established(SnoopConfig { max_cache_bytes: limit, ..SnoopConfig::default() });
    for i in 0..4 {
        assert_eq!(h.data(i), [Fwd(i)], "always forwarded");
    }
    assert_eq!(h.cached(), [0, 1]);
    // An older out-of-order packet may still enter, but the newest make room and the bound holds.
    h.ack(1);
    assert_eq!(h.cached(), [1]);
    h.data(4);
    assert_eq!(h.cached(), [1, 4]);
    assert!(h.conn().cache_held() <= limit);
}

#[test]
fn cache_memory_limit_counts_what_one_byte_segments_really_hold() {
    // 1-byte segments: 1 byte of sequence space each, but a whole packet and a cache entry held. The
    // limit bounds the memory held, not the sequence space, so only a few fit in 2000 bytes.
    let limit = 2000;
    let mut h = H::established(SnoopConfig { max_cache_bytes: limit, ..SnoopConfig::default() });
    let one_byte = |i: u32| {
        let repr = TcpRepr {
            src_port: FP,
            dst_port: MP,
            seq: SeqNum(ISS + 1 + i),
            ack: Some(SeqNum(MH_ISS + 1)),
            window: 65535,
            ..TcpRepr::default()
        };
        tcp(FH, MH, repr, 1)
    };
    for i in 0..2000 {
        h.raw(Side::ToMobile, one_byte(i));
        assert!(h.conn().cache_held() <= limit, "after {i}: {} held", h.conn().cache_held());
    }
    // Out-of-order resends are accepted past the high-water mark; they must respect the bound as well.
    for i in (0..50).rev() {
        h.raw(Side::ToMobile, one_byte(i));
        assert!(h.conn().cache_held() <= limit);
    }
    let held: usize = h.conn().cache().iter().map(|c| c.pkt.len() + std::mem::size_of::<CachedSeg>()).sum();
    assert_eq!(h.conn().cache_held(), held);
    assert!(!h.conn().cache().is_empty() && h.conn().cache().len() < 2000 / 41);
}

// ---- snoop_ack(): Balakrishnan 1995 §3.1.2 ---------------------------------------------------------------------

#[test]
fn case1_new_ack_frees_the_cache_and_is_forwarded() {
    let mut h = established();
    for i in 0..3 {
        h.data(i);
    }
    assert_eq!(h.ack(2), [FwdAck(2)]);
    assert_eq!(h.cached(), [2]);
    assert_eq!(h.ack(3), [FwdAck(3)]);
    assert!(h.cached().is_empty());
    assert_eq!(h.s.poll_timeout(), None, "nothing cached, no timer");
}

#[test]
fn case2_spurious_ack_is_dropped() {
    let mut h = established();
    h.data(0);
    h.data(1);
    h.ack(2);
    assert_eq!(h.ack(1), [Drop(DropReason::SpuriousAck)]);
    assert_eq!(h.s.stats().spurious_acks_dropped, 1);
}

#[test]
fn case3_first_dupack_retransmits_at_priority_and_expected_ones_are_dropped() {
    let mut h = established();
    for i in 0..6 {
        h.data(i);
    }
    assert_eq!(h.ack(1), [FwdAck(1)]); // segment 1 lost; 2..5 (4 packets) were sent after it
    assert_eq!(h.ack(1), [Drop(DropReason::DupAckSuppressed), Prio(1)]);
    // Four packets followed it; the DUPACK in hand is the first of their four DUPACKs.
    assert_eq!(h.conn().exp_dupacks(), 3);
    assert_eq!(h.conn().next_exp_ack(), SeqNum(seq_of(2)));
    for left in (0..3).rev() {
        assert_eq!(h.ack(1), [Drop(DropReason::DupAckSuppressed)]);
        assert_eq!(h.conn().exp_dupacks(), left);
    }
    // One more than expected: the retransmission was lost too. Retransmit again; nothing was sent after it.
    assert_eq!(h.ack(1), [Drop(DropReason::DupAckSuppressed), Prio(1)]);
    assert_eq!(h.conn().exp_dupacks(), 0);
    assert_eq!(h.conn().cache()[0].local_rexmits, 2);
    assert_eq!(h.ack(6), [FwdAck(6)]);
    assert_eq!(h.s.stats().local_retransmissions.dupack, 2);
    assert_eq!(h.s.stats().dupacks_suppressed, 5);
}

#[test]
fn dupack_for_an_uncached_packet_is_forwarded() {
    let mut h = H::established(SnoopConfig { high_water_bytes: 2 * MSS as usize, ..SnoopConfig::default() });
    for i in 0..5 {
        h.data(i);
    }
    h.ack(2); // 0 and 1 acknowledged; 2.. were never cached (past the mark)
    assert!(h.cached().is_empty());
    assert_eq!(h.ack(2), [FwdAck(2)]);
    assert_eq!(h.s.stats().dupacks_forwarded, 1);
}

#[test]
fn local_retransmissions_are_capped_then_dupacks_go_to_the_sender() {
    let mut h = H::established(SnoopConfig { max_local_rexmit: 2, ..SnoopConfig::default() });
    h.data(0);
    h.data(1);
    // The handshake already acknowledged up to segment 0: these are all DUPACKs.
    assert_eq!(h.ack(0), [Drop(DropReason::DupAckSuppressed), Prio(0)]);
    assert_eq!(h.ack(0), [Drop(DropReason::DupAckSuppressed), Prio(0)]);
    assert_eq!(h.ack(0), [FwdAck(0)]);
    assert_eq!(h.ack(0), [FwdAck(0)]);
    // The sender's fast retransmit resets the count; its DUPACKs keep going to it.
    assert_eq!(h.data(0), [Fwd(0)]);
    assert_eq!(h.conn().cache()[0].local_rexmits, 0);
    assert_eq!(h.ack(0), [FwdAck(0)]);
}

#[test]
fn window_update_and_acks_with_data_are_not_dupacks() {
    let mut h = established();
    h.data(0);
    h.data(1);
    assert_eq!(h.ackw(0, WIN + 100), [FwdAck(0)], "a larger window must reach the sender");
    // A smaller window with the same ACK: the receiver buffered out-of-order data: a DUPACK.
    assert_eq!(h.ackw(0, WIN), [Drop(DropReason::DupAckSuppressed), Prio(0)]);
    assert_eq!(h.raw(Side::ToWired, mh_segment_acking(seq_of(0), 10)), [FwdAck(0)]);
    // Stale ACK field but data for the FH: the data is forwarded, never dropped as spurious.
    h.ack(2);
    assert_eq!(h.raw(Side::ToWired, mh_segment_acking(seq_of(0), 10)), [FwdAck(0)]);
}

// ---- RTT (Balakrishnan 1995 §6) ---------------------------------------------------------------------------------

#[test]
fn srtt_weights_the_new_sample_one_quarter() {
    let mut h = established();
    h.at_ms(0).data(0); // timestamped
    h.at_ms(10).data(1); // same window: not timestamped
    h.at_ms(100).ack(1);
    assert_eq!(h.s.srtt(&key()), Some(Duration::from_millis(100)), "first sample taken as is");
    h.at_ms(110).ack(2); // acks segment 1 (not a probe): no sample
    assert_eq!(h.s.stats().rtt_samples, 1);
    h.at_ms(200).data(2);
    h.at_ms(220).ack(3); // sample 20 ms
                         // 0.75 * 100 + 0.25 * 20 = 80 ms. ns-2's filter (0.125 * 100 + 0.875 * 20) would give 30 ms.
    assert_eq!(h.s.srtt(&key()), Some(Duration::from_millis(80)));
}

#[test]
fn no_rtt_sample_from_a_window_with_a_retransmission() {
    let mut h = established();
    h.at_ms(0).data(0); // probe
    h.data(1);
    h.at_ms(5).ack(0);
    h.ack(0); // local retransmission of 0
    h.at_ms(300).ack(2);
    assert_eq!(h.s.srtt(&key()), None, "Karn: ambiguous sample discarded");
    assert_eq!(h.s.stats().rtt_samples, 0);
}

// ---- transmit-timed rules (the host calls `handle_transmit`) ------------------------------------------------

#[test]
fn rtt_is_sampled_from_transmission_not_from_queueing() {
    let mut h = established();
    h.at_ms(0).data(0); // the probe: queued at 0 ...
    h.data(1);
    h.at_ms(50).tx(0); // ... but it only leaves at 50 ms
    h.at_ms(57).tx(1);
    h.at_ms(65).ack(2);
    // Queue-timed, the sample would be 65 ms; from the probe's transmission it is 15 ms.
    assert_eq!(h.s.srtt(&key()), Some(Duration::from_millis(15)));
    // The hop RTT (least Karn-clean transmit-to-ACK sample: segment 1, 8 ms) sets the round-trip timer:
    // twice it, from the latest transmission (not the paper's 40 ms floor, which is for queue-timed timers).
    for i in 2..5 {
        h.at_ms(70).data(i);
    }
    h.at_ms(70).tx(2).tx(3);
    h.at_ms(77).tx(4);
    assert_eq!(h.at_ms(80).ack(2), [Drop(DropReason::DupAckSuppressed), Prio(2)]);
    h.at_ms(84).tx(2);
    assert_eq!(h.s.poll_timeout(), Some(Time::from_millis(84 + 16)));
    // Segment 2 was sent twice, but its first copy is known lost (a DUPACK came after it), so the ACK
    // is a clean sample of the second (116 ms); the hop RTT keeps the least sample.
    h.at_ms(200).ack(5);
    assert_eq!(h.s.stats().rtt_samples, 3, "the probe, then one per new ACK");
    h.at_ms(200).data(5);
    h.tx(5);
    assert_eq!(h.at_ms(208).ack(6), [FwdAck(6)]);
    assert_eq!(h.s.stats().rtt_samples, 5, "segment 5: the probe and the hop sample");
    assert_eq!(h.s.poll_timeout(), None, "recovery over, nothing cached");
}

/// Hop RTT 8 ms (segment 1 transmitted at 6 ms, ACKed at 14), then a lone segment 2 transmitted at 20 ms
/// whose ACK the receiver holds for `hold_ms` (a delayed ACK).
fn with_delayed_ack(hold_ms: u64) -> H {
    let mut h = established();
    h.at_ms(0).data(0);
    h.data(1);
    h.tx(0).at_ms(6).tx(1);
    assert_eq!(h.at_ms(14).ack(2), [FwdAck(2)]);
    h.at_ms(20).data(2);
    h.tx(2);
    assert_eq!(h.at_ms(20 + hold_ms).ack(3), [FwdAck(3)]);
    h
}

/// Segments 3..7 transmitted 6 ms apart from `t0`; 3 is lost, 4's DUPACK arrives: 3 resent at t0 + 24.
/// Returns the round-trip deadline, relative to the retransmission.
fn recovery_deadline_after(h: &mut H, t0: u64) -> u64 {
    for i in 3..7 {
        h.at_ms(t0).data(i);
    }
    for i in 3..7 {
        h.at_ms(t0 + u64::from(i - 3) * 6).tx(i);
    }
    assert_eq!(h.at_ms(t0 + 20).ack(3), [Drop(DropReason::DupAckSuppressed), Prio(3)]);
    h.at_ms(t0 + 24).tx(3);
    let d = h.s.poll_timeout().expect("the round-trip timer is armed");
    (d - Time::from_millis(t0 + 24)).as_millis() as u64
}

#[test]
fn round_trip_timer_waits_out_the_receivers_delayed_ack() {
    // A receiver that ACKs at once: the ACK hold is the hop RTT, the timer twice the hop RTT.
    let mut quick = with_delayed_ack(8);
    assert_eq!(quick.s.ack_hold(&key()), Some(Duration::from_millis(8)));
    assert_eq!(recovery_deadline_after(&mut quick, 100), 16);
    // A Linux receiver holding a lone segment's ACK 48 ms: the timer allows that plus one hop RTT, so a
    // retransmission that arrived is not resent while its ACK is held.
    let mut delayed = with_delayed_ack(48);
    assert_eq!(delayed.s.ack_hold(&key()), Some(Duration::from_millis(48)));
    assert_eq!(recovery_deadline_after(&mut delayed, 100), 48 + 8);
    // The timer still fires, and resends, once the medium has been quiet that long.
    assert_eq!(delayed.fire(), [Prio(3)]);
    assert_eq!(delayed.now, Time::from_millis(124 + 56));
}

#[test]
fn ack_hold_is_the_largest_of_recent_samples_and_is_forgotten_after_ten_seconds() {
    let mut h = with_delayed_ack(48);
    // A prompt ACK afterwards does not lower it ...
    h.at_ms(100).data(3);
    h.tx(3);
    assert_eq!(h.at_ms(108).ack(4), [FwdAck(4)]);
    assert_eq!(h.s.ack_hold(&key()), Some(Duration::from_millis(48)));
    // ... until the 48 ms sample is ten seconds old.
    h.at_ms(10_100).data(4);
    h.tx(4);
    assert_eq!(h.at_ms(10_109).ack(5), [FwdAck(5)]);
    assert_eq!(h.s.ack_hold(&key()), Some(Duration::from_millis(9)));
    // Duplicate ACKs and ACKs below the last one are no samples.
    h.at_ms(10_200).data(5);
    h.tx(5);
    h.at_ms(10_400).ack(5);
    assert_eq!(h.s.ack_hold(&key()), Some(Duration::from_millis(9)));
}

#[test]
fn an_ack_freeing_a_segment_whose_earlier_copy_passed_uncached_proves_nothing() {
    // Segment 2 first passes uncached (past the high-water mark), then the sender resends it and it is
    // cached; the first copy arrives. The ACK that frees it was caused by that unseen copy, not by the
    // cached one's transmission, so a DUPACK afterwards (caused by the duplicate) must not make Snoop
    // think 3, still on its way, was lost.
    let mut h = H::established(SnoopConfig { high_water_bytes: 2 * MSS as usize, ..SnoopConfig::default() });
    h.at_ms(0).data(0);
    h.data(1);
    assert_eq!(h.data(2), [Fwd(2)]);
    assert_eq!(h.cached(), [0, 1], "2 passed uncached");
    h.tx(0).at_ms(6).tx(1).at_ms(12).tx(2); // transmissions 1, 2, 3
    assert_eq!(h.at_ms(20).ack(2), [FwdAck(2)]);
    assert_eq!(h.at_ms(25).data(2), [Fwd(2)], "the sender resends 2: cached now");
    h.data(3);
    assert_eq!(h.cached(), [2, 3]);
    h.at_ms(26).tx(2).at_ms(32).tx(3); // transmissions 4, 5
    assert_eq!(h.at_ms(30).ack(3), [FwdAck(3)], "the first copy of 2 (transmission 3) arrived");
    // The duplicate 2 (transmission 4) arrives: a DUPACK. Taking the freeing ACK for transmission 4's
    // would put the bound at 5, 3's transmission: a spurious resend of 3.
    assert_eq!(h.at_ms(34).ack(3), [Drop(DropReason::DupAckSuppressed)]);
    assert_eq!(h.s.stats().local_retransmissions.total(), 0);
    assert_eq!(h.at_ms(40).ack(4), [FwdAck(4)]);
}

#[test]
fn without_transmission_reports_no_ack_hold_is_learned() {
    let mut h = established();
    h.at_ms(0).data(0);
    assert_eq!(h.at_ms(60).ack(1), [FwdAck(1)]);
    assert_eq!(h.s.ack_hold(&key()), None);
}

/// Segments 0..6 forwarded and transmitted in order (transmissions 1..6); 0 arrives, 1 is lost.
fn tx_window() -> H {
    let mut h = established();
    for i in 0..6 {
        h.at_ms(0).data(i);
    }
    for i in 0..6 {
        h.at_ms(u64::from(i) * 7).tx(i);
    }
    assert_eq!(h.at_ms(45).ack(1), [FwdAck(1)]);
    h
}

#[test]
fn expected_dupacks_are_the_transmissions_between_the_lost_one_and_its_retransmission() {
    let mut h = tx_window();
    // 2 arrived: the first DUPACK shows a transmission after 1's reached the mobile.
    assert_eq!(h.ack(1), [Drop(DropReason::DupAckSuppressed), Prio(1)]);
    // New data 6 is queued before the retransmission leaves; it leaves after it.
    h.data(6);
    h.at_ms(46).tx(1).at_ms(53).tx(6);
    // Transmitted after 1's first copy and before its retransmission: 2, 3, 4, 5; one DUPACK is in.
    assert_eq!(h.conn().exp_dupacks(), 3);
    for left in (0..3).rev() {
        assert_eq!(h.ack(1), [Drop(DropReason::DupAckSuppressed)]);
        assert_eq!(h.conn().exp_dupacks(), left);
    }
}

#[test]
fn a_dupack_beyond_the_expected_ones_means_the_retransmission_was_lost() {
    let mut h = tx_window();
    h.ack(1);
    h.data(6);
    h.at_ms(46).tx(1).at_ms(53).tx(6);
    for _ in 0..3 {
        h.ack(1);
    }
    // A fifth DUPACK can only come from a transmission after the retransmission (6): it was lost.
    assert_eq!(h.at_ms(62).ack(1), [Drop(DropReason::DupAckSuppressed), Prio(1)]);
    assert_eq!(h.conn().cache()[0].local_rexmits, 2);
    // Until the new copy leaves, further DUPACKs prove nothing about it.
    assert_eq!(h.ack(1), [Drop(DropReason::DupAckSuppressed)]);
}

#[test]
fn partial_ack_resends_at_once_a_segment_transmitted_before_the_retransmission_it_covers() {
    let mut h = established();
    for i in 0..4 {
        h.at_ms(0).data(i).len();
        h.tx(i);
    }
    // 1 and 2 lost, 3 arrives (one DUPACK): retransmit 1, which arrives.
    assert_eq!(h.at_ms(30).ack(1), [FwdAck(1)]);
    assert_eq!(h.ack(1), [Drop(DropReason::DupAckSuppressed), Prio(1)]);
    h.at_ms(31).tx(1);
    // The ACK for the retransmission stops at 2, transmitted before it: 2 is lost, and no DUPACK will
    // say so (3 already spent its DUPACK). Resend now.
    assert_eq!(h.at_ms(39).ack(2), [FwdAck(2), Prio(2)]);
}

#[test]
fn partial_ack_leaves_alone_a_segment_still_queued() {
    let mut h = established();
    for i in 0..4 {
        h.at_ms(0).data(i);
    }
    h.tx(0).tx(1).tx(2); // 3 is still in the interface queue
                         // 1 lost, 2 arrives: retransmit 1, which overtakes 3 (priority queue) and arrives.
    assert_eq!(h.at_ms(30).ack(1), [FwdAck(1)]);
    assert_eq!(h.ack(1), [Drop(DropReason::DupAckSuppressed), Prio(1)]);
    h.at_ms(31).tx(1);
    assert_eq!(h.at_ms(39).ack(3), [FwdAck(3)], "3 was never transmitted: not lost");
    // It leaves now; had it left before the retransmission, it would have been resent (test above).
    h.at_ms(40).tx(3);
    assert_eq!(h.at_ms(48).ack(4), [FwdAck(4)]);
    assert_eq!(h.s.stats().local_retransmissions.total(), 1);
}

#[test]
fn without_on_transmit_the_queue_timed_rules_hold() {
    // The same trace as `partial_ack_resends_at_once_...`, but the host never reports transmissions: the
    // queue-timed rules decide (`partial_ack_with_surplus_dupacks_...`): one DUPACK more than the packets
    // up to the new ACK, so 2 is resent; the round-trip timer counts 2·srtt from now, srtt being the probe's
    // sample timed from queueing (30 ms).
    let mut h = established();
    for i in 0..4 {
        h.at_ms(0).data(i);
    }
    assert_eq!(h.at_ms(30).ack(1), [FwdAck(1)]);
    assert_eq!(h.ack(1), [Drop(DropReason::DupAckSuppressed), Prio(1)]);
    assert_eq!(h.conn().exp_dupacks(), 1, "forwarded after 1 (2, 3), less the DUPACK in hand");
    assert_eq!(h.at_ms(39).ack(2), [FwdAck(2), Prio(2)]);
    assert_eq!(h.s.srtt(&key()), Some(Duration::from_millis(30)));
    assert_eq!(h.conn().rtx_deadline(), Some(Time::from_millis(39 + 60)));
}

// ---- timers (Balakrishnan 1995 §6) ------------------------------------------------------------------------------

fn with_srtt(ms: u64) -> H {
    with_srtt_cfg(ms, SnoopConfig::default())
}

fn with_srtt_cfg(ms: u64, cfg: SnoopConfig) -> H {
    let mut h = H::established(cfg);
    h.at_ms(0).data(0);
    h.at_ms(ms).ack(1);
    assert_eq!(h.s.srtt(&key()), Some(Duration::from_millis(ms)));
    h
}

#[test]
fn round_trip_timer_is_armed_only_by_a_dupack_retransmission_and_fires_at_twice_srtt() {
    let mut h = with_srtt(50);
    h.at_ms(100).data(1);
    h.data(2);
    assert_eq!(h.conn().rtx_deadline(), None, "not armed by plain data");
    assert_eq!(h.s.poll_timeout(), Some(Time::from_millis(300)), "only the persist timer");
    assert_eq!(h.at_ms(110).ack(1), [Drop(DropReason::DupAckSuppressed), Prio(1)]);
    assert_eq!(h.s.poll_timeout(), Some(Time::from_millis(210)), "2 * srtt after the retransmission");
}

#[test]
fn round_trip_timer_backs_off_to_a_ceiling_and_never_touches_srtt() {
    // Persist timer out of the way (it would fire 200 ms after each timer retransmission).
    let mut h = with_srtt_cfg(50, SnoopConfig { persist_timeout: Duration::from_secs(100), ..SnoopConfig::default() });
    h.at_ms(100).data(1);
    h.data(2);
    h.data(3);
    // Segment 1 is lost; the ACK for segment 0 (at 50 ms) already said so, this is the first DUPACK.
    assert_eq!(h.at_ms(110).ack(1), [Drop(DropReason::DupAckSuppressed), Prio(1)]);
    assert_eq!(h.s.poll_timeout(), Some(Time::from_millis(210)), "2 * srtt after the retransmission");
    assert_eq!(h.fire(), [Prio(1)]);
    assert_eq!(h.s.stats().local_retransmissions.rtx_timer, 1);
    // Backed off: 200 ms, then 400 ms (the ceiling), and it stays there.
    assert_eq!(h.s.poll_timeout(), Some(Time::from_millis(410)));
    assert_eq!(h.fire(), [Prio(1)]);
    assert_eq!(h.s.poll_timeout(), Some(Time::from_millis(810)));
    assert_eq!(h.fire(), [Prio(1)]);
    assert_eq!(h.s.poll_timeout(), Some(Time::from_millis(1210)));
    assert_eq!(h.s.srtt(&key()), Some(Duration::from_millis(50)), "backoff never feeds the estimate");
    // A new ACK resets the backoff. Segment 2 was forwarded before the local retransmission, so the
    // recovery is not over: the timer stays armed at the base timeout.
    h.at_ms(900).ack(2);
    assert_eq!(h.conn().rtx_deadline(), Some(Time::from_millis(1000)));
    h.at_ms(905).ack(4);
    assert_eq!(h.conn().rtx_deadline(), None, "recovery over, nothing cached");
}

#[test]
fn round_trip_timer_never_fires_sooner_than_40ms() {
    let mut h = with_srtt(5);
    h.at_ms(100).data(1);
    h.data(2);
    h.ack(1);
    h.ack(1);
    assert_eq!(h.conn().rtx_deadline(), Some(Time::from_millis(140)));
}

#[test]
fn round_trip_timer_stays_armed_through_a_local_recovery() {
    let mut h = with_srtt(20);
    for i in 1..5 {
        h.at_ms(100).data(i);
    }
    assert_eq!(h.ack(1), [Drop(DropReason::DupAckSuppressed), Prio(1)]);
    assert_eq!(h.conn().rtx_deadline(), Some(Time::from_millis(140)));
    // A partial ACK inside segment 1: the packet still needed is the one resent locally; keep the timer.
    h.at_ms(120).raw(Side::ToWired, mh_segment_acking(seq_of(1) + 50, 0));
    assert_eq!(h.conn().rtx_deadline(), Some(Time::from_millis(160)));
    // Segment 1 fully acknowledged; segment 2 was forwarded before the retransmission: still recovering.
    h.at_ms(125).ack(2);
    assert_eq!(h.conn().rtx_deadline(), Some(Time::from_millis(165)));
    // Everything forwarded before the retransmission acknowledged: recovery over, timer disarmed.
    h.at_ms(130).data(5);
    h.at_ms(135).ack(5);
    assert_eq!(h.conn().rtx_deadline(), None);
}

#[test]
fn partial_ack_with_surplus_dupacks_retransmits_the_next_hole_at_once() {
    let mut h = established();
    for i in 0..6 {
        h.data(i);
    }
    // Segments 1 and 3 are lost. 0 arrives, then 2, 4, 5 (three DUPACKs), then the retransmitted 1.
    assert_eq!(h.ack(1), [FwdAck(1)]);
    assert_eq!(h.ack(1), [Drop(DropReason::DupAckSuppressed), Prio(1)]);
    assert_eq!(h.ack(1), [Drop(DropReason::DupAckSuppressed)]);
    assert_eq!(h.ack(1), [Drop(DropReason::DupAckSuppressed)]);
    // Three packets after 1 arrived but only one (2) lies below the new ACK: something beyond 3 arrived,
    // so 3 is lost, and no DUPACK will say so (4 and 5 already spent theirs). Retransmit now.
    assert_eq!(h.ack(3), [FwdAck(3), Prio(3)]);
    // After 3: 4, 5 and the retransmitted 1 were sent; 4 and 5 already arrived.
    assert_eq!(h.conn().exp_dupacks(), 1);
    assert_eq!(h.ack(6), [FwdAck(6)]);
}

#[test]
fn partial_ack_without_surplus_dupacks_waits() {
    let mut h = established();
    for i in 0..4 {
        h.data(i);
    }
    // Segment 1 lost; 2 arrives (one DUPACK), the retransmitted 1 overtakes 3 in the link's queue.
    h.ack(1);
    assert_eq!(h.ack(1), [Drop(DropReason::DupAckSuppressed), Prio(1)]);
    assert_eq!(h.ack(3), [FwdAck(3)], "3 may just be queued: no retransmission yet");
    assert!(h.conn().rtx_deadline().is_some(), "but the round-trip timer watches it");
}

#[test]
fn an_acknowledged_local_retransmission_says_nothing_of_the_packets_it_overtook() {
    let mut h = established();
    for i in 0..10 {
        h.data(i);
    }
    // Segments 1 and 4 are lost. 0 arrives, then 2 (the first DUPACK: 1 is resent at priority) and 3; the
    // resent 1 overtakes 5..9, still in the link's queue, and its ACK names the next hole.
    assert_eq!(h.ack(1), [FwdAck(1)]);
    assert_eq!(h.ack(1), [Drop(DropReason::DupAckSuppressed), Prio(1)]);
    assert_eq!(h.ack(1), [Drop(DropReason::DupAckSuppressed)]);
    assert_eq!(h.ack(4), [FwdAck(4)]);
    // 5 arrives: the first DUPACK for 4, which is resent. 6..9 were forwarded after 4 and have not arrived
    // (the retransmission of 1 reached the mobile before them, not after): their DUPACKs are still to come.
    // Expected, as Balakrishnan 1995 §3.1.2 counts them: the packets forwarded after 4 (5..9 and the
    // resent 1), less the DUPACK in hand.
    assert_eq!(h.ack(4), [Drop(DropReason::DupAckSuppressed), Prio(4)]);
    assert_eq!(h.conn().exp_dupacks(), 5);
    for _ in 6..10 {
        assert_eq!(h.ack(4), [Drop(DropReason::DupAckSuppressed)], "6..9 arriving is no news: 4 is resent");
    }
    assert_eq!(h.ack(10), [FwdAck(10)]);
    assert_eq!(h.s.stats().local_retransmissions.dupack, 2);
}

#[test]
fn persist_timer_resends_after_200ms_idle_and_resets_expected_dupacks() {
    // Activity from the receiver postpones the persist timer.
    let mut h = established();
    for i in 0..3 {
        h.at_ms(0).data(i);
    }
    assert_eq!(h.s.poll_timeout(), Some(Time::from_millis(200)));
    h.at_ms(150).ack(1);
    assert_eq!(h.s.poll_timeout(), Some(Time::from_millis(350)));
    assert_eq!(h.timeout_at(300), []);
    let mut h2 = established();
    for i in 0..3 {
        h2.at_ms(0).data(i);
    }
    // No ACK at all for 200 ms: persist.
    assert_eq!(h2.s.poll_timeout(), Some(Time::from_millis(200)));
    assert_eq!(h2.fire(), [Prio(0)]);
    assert_eq!(h2.s.stats().local_retransmissions.persist_timer, 1);
    assert_eq!(h2.s.poll_timeout(), Some(Time::from_millis(400)), "re-armed, not back to back");
    // Persist after a DUPACK episode: expected DUPACKs go to zero, next expected ACK to last ACK + 1.
    let mut h3 = H::established(SnoopConfig {
        max_rtx_timeout: Duration::from_secs(10),
        min_rtx_timeout: Duration::from_secs(5),
        ..SnoopConfig::default()
    });
    for i in 0..5 {
        h3.at_ms(0).data(i);
    }
    h3.at_ms(10).ack(1);
    h3.ack(1);
    assert_eq!(h3.conn().exp_dupacks(), 2);
    assert_eq!(h3.fire(), [Prio(1)]);
    assert_eq!(h3.now, Time::from_millis(210), "the persist timer, not the (5 s) round-trip timer");
    assert_eq!(h3.conn().exp_dupacks(), 0);
    assert_eq!(h3.conn().next_exp_ack(), SeqNum(seq_of(1) + 1));
    // So the very next DUPACK is unexpected and triggers an immediate retransmission.
    assert_eq!(h3.ack(1), [Drop(DropReason::DupAckSuppressed), Prio(1)]);
}

#[test]
fn timer_retransmission_clears_only_the_sender_rexmit_flag() {
    let mut h = established();
    let fin = data_on(ISS, FP, MP, 0, TcpFlags::FIN);
    h.raw(Side::ToMobile, fin.clone());
    h.at_ms(1).ack(0); // a DUPACK: local retransmission, LOCAL_REXMIT set
    h.raw(Side::ToMobile, fin); // and now the sender resent it
    let c = &h.conn().cache()[0];
    assert_eq!(c.flags, flag::SENDER_REXMIT | flag::LOCAL_REXMIT | flag::FIN);
    assert_eq!(c.len, MSS + 1, "the FIN is cached as data of length payload + 1");
    assert_eq!(h.fire(), [Prio(0)]);
    assert_eq!(h.conn().cache()[0].flags, flag::LOCAL_REXMIT | flag::FIN);
}

#[test]
fn clearing_sender_rexmit_clears_only_that_flag() {
    // ns-2's `x |= ~FLAG` would set every other bit instead.
    let mut s = CachedSeg {
        seq: SeqNum(0),
        len: 1,
        pkt: Bytes::new(),
        local_rexmits: 0,
        flags: 0,
        sent_at: Time::ZERO,
        tx_idx: 0,
        tx: Default::default(),
    };
    s.set(flag::SENDER_REXMIT | flag::FIN | flag::LOCAL_REXMIT);
    s.clear(flag::SENDER_REXMIT);
    assert_eq!(s.flags, flag::FIN | flag::LOCAL_REXMIT);
    s.clear(flag::SENDER_REXMIT);
    assert_eq!(s.flags, flag::FIN | flag::LOCAL_REXMIT, "idempotent");
    s.flags = 0;
    s.clear(flag::SENDER_REXMIT);
    assert_eq!(s.flags, 0);
}

#[test]
fn poll_timeout_is_the_earliest_over_connections() {
    let mut h = established();
    h.handshake(ISS, FP + 1, MP);
    h.at_ms(10);
    h.raw(Side::ToMobile, data_on(ISS, FP + 1, MP, 0, TcpFlags::PSH));
    h.at_ms(20).data(0);
    assert_eq!(h.s.poll_timeout(), Some(Time::from_millis(210)));
    h.at_ms(30).ack(1); // the second connection's cache empties
    assert_eq!(h.s.poll_timeout(), Some(Time::from_millis(210)));
    h.at_ms(40);
    h.raw(Side::ToWired, ack_on(ISS, FP + 1, MP, 1, WIN));
    assert_eq!(h.timeout_at(300), []);
    assert_eq!(h.s.poll_timeout(), None);
    assert!(h.s.table.heap_len() <= 1);
}

#[test]
fn a_sliding_persist_deadline_moves_in_place() {
    // The persist deadline moves later on every packet; the heap entry follows it without piling up.
    let mut h = established();
    for i in 0..50 {
        h.at_ms(u64::from(i)).data(i);
        assert_eq!(h.s.poll_timeout(), Some(Time::from_millis(u64::from(i) + 200)));
        assert_eq!(h.s.table.heap_len(), 1);
    }
    // A second connection's deadline becomes the earliest once the first one's slides past it.
    h.handshake(ISS, FP + 1, MP);
    h.at_ms(60);
    h.raw(Side::ToMobile, data_on(ISS, FP + 1, MP, 0, TcpFlags::PSH));
    assert_eq!(h.s.poll_timeout(), Some(Time::from_millis(49 + 200)));
    h.at_ms(70).ack(1);
    assert_eq!(h.s.poll_timeout(), Some(Time::from_millis(60 + 200)));
    assert_eq!(h.s.table.heap_len(), 2);
}

#[test]
fn a_transmission_report_finds_any_cached_segment() {
    let mut h = established();
    for i in 0..4 {
        h.data(i);
    }
    h.tx(3); // the newest: where a report usually lands
    h.tx(0);
    h.tx(2);
    let counts: Vec<u8> = h.conn().cache().iter().map(|c| c.tx.count).collect();
    assert_eq!(counts, [1, 0, 1, 1]);
    assert_eq!(h.conn().cache()[3].tx.last, 1, "the first transmission reported");
    assert_eq!(h.conn().cache()[0].tx.last, 2);
    // The newest segment's sequence number with another length is not that segment.
    let mut other = data_on(ISS, FP, MP, 3, TcpFlags::PSH).to_vec();
    other.truncate(other.len() - 1);
    let total = u16::try_from(other.len()).unwrap().to_be_bytes();
    other[2..4].copy_from_slice(&total);
    h.s.handle_transmit(h.now, Side::ToMobile, &Bytes::from(other));
    assert_eq!(h.conn().cache()[3].tx.count, 1);
}

// ---- connection state ----------------------------------------------------------------------------------

#[test]
fn two_interleaved_connections_keep_separate_state() {
    // ns-2 kept some of this in a function-level static shared by all connections.
    let mut h = established();
    let iss2 = 500_000;
    h.handshake(iss2, FP, MP + 1);
    let d2 = |i| data_on(iss2, FP, MP + 1, i, TcpFlags::PSH);
    let a2 = |i| ack_on(iss2, FP, MP + 1, i, WIN);
    for i in 0..4 {
        h.data(i);
        h.raw(Side::ToMobile, d2(i));
    }
    h.ack(1);
    h.raw(Side::ToWired, a2(3));
    // A DUPACK on connection 1 retransmits connection 1's packet ...
    assert_eq!(h.ack(1), [Drop(DropReason::DupAckSuppressed), Prio(1)]);
    // ... and the first DUPACK on connection 2 is unexpected there (connection 1's expected count is not
    // shared): it retransmits connection 2's segment 3.
    let out = h.run(iss2, |s, now, out| s.handle_packet(now, Side::ToWired, a2(3), out));
    assert_eq!(out, [Drop(DropReason::DupAckSuppressed), Prio(3)]);
    assert_eq!(h.conn().exp_dupacks(), 1);
    assert_eq!(h.s.connections(), 2);
}

/// Each connection counts its own local retransmissions and suppressed DUPACKs (keyed by its 4-tuple), the
/// station's totals are their sums, and with `keep_closed_connection_stats` a connection's counts outlive
/// its state (its FIN acknowledged, or evicted).
#[test]
fn each_connection_counts_its_own_recovery() {
    let mut h = H::established(SnoopConfig { keep_closed_connection_stats: true, ..SnoopConfig::default() });
    let iss2 = 500_000;
    let k2 = FlowKey { dst_port: MP + 1, ..key() };
    h.handshake(iss2, FP, MP + 1);
    let a2 = |i| ack_on(iss2, FP, MP + 1, i, WIN);
    for i in 0..4 {
        h.data(i);
        h.raw(Side::ToMobile, data_on(iss2, FP, MP + 1, i, TcpFlags::PSH));
    }
    // Connection 1: segment 0 lost, three DUPACKs (one retransmission, two expected DUPACKs).
    for _ in 0..3 {
        h.ack(0);
    }
    // Connection 2: segment 2 lost, one DUPACK.
    h.raw(Side::ToWired, a2(2));
    h.raw(Side::ToWired, a2(2));
    let one = h.s.connection_stats(&key());
    let two = h.s.connection_stats(&k2);
    assert_eq!((one.local_retransmissions, one.dupacks_suppressed), (1, 3));
    assert_eq!((two.local_retransmissions, two.dupacks_suppressed), (1, 1));
    let st = h.s.stats();
    assert_eq!(st.local_retransmissions.total(), one.local_retransmissions + two.local_retransmissions);
    assert_eq!(st.dupacks_suppressed, one.dupacks_suppressed + two.dupacks_suppressed);
    let named: std::collections::HashMap<_, _> = h.s.connection_counters(&k2).into_iter().collect();
    assert_eq!((named["local_retransmissions"], named["dupacks_suppressed"]), (1, 1));
    // Connection 2 ends (its FIN acknowledged): its counts stay, and a connection never seen has none.
    h.raw(Side::ToMobile, data_on(iss2, FP, MP + 1, 4, TcpFlags::FIN));
    let fin_acked = TcpRepr {
        src_port: MP + 1,
        dst_port: FP,
        seq: SeqNum(MH_ISS + 1),
        ack: Some(SeqNum(iss2.wrapping_add(1 + 5 * MSS + 1))),
        window: WIN,
        ..TcpRepr::default()
    };
    h.raw(Side::ToWired, tcp(MH, FH, fin_acked, 0));
    assert_eq!(h.s.connections(), 1);
    assert_eq!(h.s.connection_stats(&k2), two);
    assert_eq!(h.s.connection_stats(&FlowKey { dst_port: 9, ..key() }), ConnectionStats::default());
    // Without `keep_closed_connection_stats` a closed connection's record goes with its state.
    let mut plain = established();
    plain.data(0);
    plain.data(1);
    plain.ack(0);
    assert_eq!(plain.s.connection_stats(&key()).dupacks_suppressed, 1);
    let rst =
        TcpRepr { src_port: MP, dst_port: FP, seq: SeqNum(MH_ISS + 1), flags: TcpFlags::RST, ..TcpRepr::default() };
    plain.raw(Side::ToWired, tcp(MH, FH, rst, 0));
    assert_eq!(plain.s.connection_stats(&key()), ConnectionStats::default());
}

#[test]
fn table_is_bounded_and_evicts_the_least_recently_active() {
    let mut h = H::new(SnoopConfig { max_connections: 2, ..SnoopConfig::default() });
    let d = |port, i| data_on(ISS, FP, port, i, TcpFlags::PSH);
    h.raw(Side::ToMobile, d(1, 0));
    h.raw(Side::ToMobile, d(2, 0));
    h.raw(Side::ToMobile, d(1, 1)); // port 1 active again: port 2 is now the least recent
    h.raw(Side::ToMobile, d(3, 0));
    assert_eq!(h.s.connections(), 2);
    assert_eq!(h.s.stats().pass.connections_evicted, 1);
    let k = |port| FlowKey { src: FH, src_port: FP, dst: MH, dst_port: port };
    assert!(h.s.cached_bytes(&k(2)).is_none());
    assert_eq!(h.s.cached_bytes(&k(1)), Some(200));
    assert_eq!(h.s.cached_bytes(&k(3)), Some(100));
    // The evicted connection's timer is gone too; the survivors' are intact.
    h.timeout_at(10_000);
    assert_eq!(h.s.stats().local_retransmissions.persist_timer, 2);
    // The evicted connection keeps working (soft state): its next packet rebuilds state.
    assert_eq!(h.raw(Side::ToMobile, d(2, 1)), [Fwd(1)]);
    assert_eq!(h.s.connections(), 2);
    // Zero connections: a plain forwarder.
    let mut z = H::new(SnoopConfig { max_connections: 0, ..SnoopConfig::default() });
    assert_eq!(z.data(0), [Fwd(0)]);
    assert_eq!(z.s.connections(), 0);
}

#[test]
fn state_is_picked_up_mid_connection() {
    let mut h = H::new(SnoopConfig::default());
    for i in 10..14 {
        assert_eq!(h.data(i), [Fwd(i)]);
    }
    assert_eq!(h.ack(11), [FwdAck(11)]);
    assert_eq!(h.ack(11), [Drop(DropReason::DupAckSuppressed), Prio(11)]);
    // An ACK from a mobile whose connection Snoop has no state for: untouched.
    let other = ack_on(ISS, FP, MP + 9, 3, WIN);
    assert_eq!(h.raw(Side::ToWired, other), [FwdAck(3)]);
    assert_eq!(h.s.stats().pass.unknown_forwarded, 1);
}

#[test]
fn syn_reinitialises_rst_drops_and_acked_fin_ends_state() {
    let mut h = established();
    h.data(0);
    h.data(1);
    // New incarnation: SYN from the FH again.
    let synack = TcpRepr {
        src_port: FP,
        dst_port: MP,
        seq: SeqNum(ISS),
        ack: Some(SeqNum(MH_ISS + 1)),
        flags: TcpFlags::SYN,
        ..TcpRepr::default()
    };
    h.raw(Side::ToMobile, tcp(FH, MH, synack, 0));
    assert!(h.cached().is_empty());
    assert_eq!(h.conn().last_ack(), None);
    h.ack(0);
    h.data(0);
    let rst =
        TcpRepr { src_port: MP, dst_port: FP, seq: SeqNum(MH_ISS + 1), flags: TcpFlags::RST, ..TcpRepr::default() };
    assert_eq!(h.raw(Side::ToWired, tcp(MH, FH, rst, 0)), [Other(Side::ToWired)]);
    assert_eq!(h.s.connections(), 0);
    assert_eq!(h.s.poll_timeout(), None);
    // FIN: cached, resent locally on a DUPACK like data, and the state ends once it is acknowledged.
    h.handshake(ISS, FP, MP);
    h.data(0);
    h.raw(Side::ToMobile, data_on(ISS, FP, MP, 1, TcpFlags::FIN));
    assert_eq!(h.cached(), [0, 1]);
    h.ack(1);
    assert_eq!(h.ack(1), [Drop(DropReason::DupAckSuppressed), Prio(1)]);
    assert_eq!(h.raw(Side::ToWired, mh_segment_acking(seq_of(2) + 1, 0)).len(), 1);
    assert_eq!(h.s.connections(), 0);
    assert_eq!(h.s.stats().pass.connections_closed, 2);
}

#[test]
fn sequence_numbers_wrap() {
    let iss = u32::MAX - 250;
    let mut h = H::new(SnoopConfig::default());
    h.handshake(iss, FP, MP);
    let d = |i| data_on(iss, FP, MP, i, TcpFlags::PSH);
    for i in 0..5 {
        let out = h.run(iss, |s, now, out| s.handle_packet(now, Side::ToMobile, d(i), out));
        assert_eq!(out, [Fwd(i)]);
    }
    let a = |i| ack_on(iss, FP, MP, i, WIN);
    assert_eq!(h.run(iss, |s, now, out| s.handle_packet(now, Side::ToWired, a(3), out)), [FwdAck(3)]);
    assert_eq!(
        h.run(iss, |s, now, out| s.handle_packet(now, Side::ToWired, a(3), out)),
        [Drop(DropReason::DupAckSuppressed), Prio(3)]
    );
    assert_eq!(
        h.run(iss, |s, now, out| s.handle_packet(now, Side::ToMobile, d(1), out)),
        [Drop(DropReason::AlreadyAcked), Regen(3)]
    );
}

// ---- malformed and foreign input ---------------------------------------------------------------------

#[test]
fn malformed_packets_are_dropped_and_counted() {
    let mut h = established();
    let good = data_on(ISS, FP, MP, 0, TcpFlags::PSH);
    let mut cases: Vec<Vec<u8>> = vec![
        vec![],
        good[..10].to_vec(), // truncated IPv4 header
        good[..30].to_vec(), // total length says more than present
    ];
    let mut bad_ihl = good.to_vec();
    bad_ihl[0] = 0x44; // IHL 4 words < 5
    cases.push(bad_ihl);
    let mut v6 = good.to_vec();
    v6[0] = 0x65;
    cases.push(v6);
    let mut bad_off = good.to_vec();
    bad_off[20 + 12] = 0x40; // TCP data offset 4 words
    cases.push(bad_off);
    let mut too_long_off = good.to_vec();
    too_long_off[2..4].copy_from_slice(&44u16.to_be_bytes()); // IP total 44: TCP segment of 24 bytes
    too_long_off[20 + 12] = 0xf0; // but a 60-byte TCP header
    cases.push(too_long_off[..44].to_vec());
    // A bad option: MSS with length 3.
    let with_opts =
        TcpRepr { src_port: FP, dst_port: MP, seq: SeqNum(seq_of(0)), mss: Some(1460), ..TcpRepr::default() };
    let mut bad_opt = with_opts.emit_ipv4(FH, MH, 1, 64, b"x").to_vec();
    bad_opt[40 + 1] = 3;
    cases.push(bad_opt);
    let n = cases.len() as u64;
    for (i, c) in cases.into_iter().enumerate() {
        for side in [Side::ToMobile, Side::ToWired] {
            assert_eq!(h.raw(side, Bytes::from(c.clone())), [Drop(DropReason::Malformed)], "case {i}");
        }
    }
    assert_eq!(h.s.stats().pass.malformed_dropped, 2 * n);
    assert!(h.cached().is_empty());
}

#[test]
fn udp_fragments_and_mobile_data_pass_untouched() {
    let mut h = established();
    let mut udp = data_on(ISS, FP, MP, 0, TcpFlags::PSH).to_vec();
    udp[9] = PROTO_UDP;
    let mut ip = Ipv4Packet::new_unchecked(&mut udp[..]);
    ip.fill_checksum();
    let udp = Bytes::from(udp);
    h.out.clear();
    h.s.handle_packet(h.now, Side::ToMobile, udp.clone(), &mut h.out);
    assert_eq!(h.out, [Action::Forward(Side::ToMobile, udp)]);
    let mut frag = data_on(ISS, FP, MP, 0, TcpFlags::PSH).to_vec();
    frag[6] = 0x20; // MF
    let frag = Bytes::from(frag);
    h.out.clear();
    h.s.handle_packet(h.now, Side::ToWired, frag.clone(), &mut h.out);
    assert_eq!(h.out, [Action::Forward(Side::ToWired, frag)]);
    // Data from a mobile with no FH->MH state (an upload): forwarded, creates nothing.
    let up = TcpRepr {
        src_port: 6000,
        dst_port: 80,
        seq: SeqNum(1),
        ack: Some(SeqNum(1)),
        window: WIN,
        ..TcpRepr::default()
    };
    assert_eq!(h.raw(Side::ToWired, tcp(MH, FH, up, 500)), [FwdAck(index(SeqNum(1), ISS))]);
    assert_eq!(h.s.connections(), 1);
    let st = h.s.stats();
    assert_eq!((st.pass.not_tcp_forwarded, st.pass.fragments_forwarded, st.pass.unknown_forwarded), (1, 1, 2));
    assert!(h.cached().is_empty());
}

#[test]
fn counters_export_the_totals_the_simulator_sums() {
    let mut h = established();
    h.data(0);
    h.data(1);
    h.ack(0); // a DUPACK (the handshake acknowledged up to segment 0): local retransmission
    h.fire(); // round-trip timer
    let c: std::collections::HashMap<_, _> = h.s.counters().into_iter().collect();
    assert_eq!(c["local_retransmissions"], 2);
    assert_eq!(c["local_retransmissions_dupack"], 1);
    assert_eq!(c["local_retransmissions_rtx_timer"], 1);
    assert_eq!(c["dupacks_suppressed"], 1);
    for (name, _) in h.s.counters() {
        assert!(name.chars().all(|ch| ch.is_ascii_lowercase() || ch == '_'), "{name}");
    }
}

// ---- properties ----------------------------------------------------------------------------------------

/// One input event for the property tests.
#[derive(Debug, Clone)]
enum Ev {
    Data(u32),
    Ack(u32, u16),
    Tick(u64),
}

fn ev() -> impl Strategy<Value = Ev> {
    prop_oneof![
        4 => (0u32..12).prop_map(Ev::Data),
        4 => (0u32..12, prop_oneof![Just(WIN), Just(WIN - 100), Just(WIN + 100)]).prop_map(|(a, w)| Ev::Ack(a, w)),
        1 => (0u64..500).prop_map(Ev::Tick),
    ]
}

fn disposition_count(out: &[Action]) -> usize {
    out.iter().filter(|a| matches!(a, Action::Forward(..) | Action::Drop(_))).count()
}

proptest! {
    /// End-to-end semantics (DESIGN.md): no ACK Snoop forwards or makes ever acknowledges more than the
    /// mobile has acknowledged. Also: one disposition per packet, timers never in the past, deterministic.
    #[test]
    fn never_acknowledges_more_than_the_mobile(events in proptest::collection::vec(ev(), 1..200)) {
        let run = |events: &[Ev]| {
            // A small high-water mark so that uncached packets and cache evictions happen too.
            let mut h = H::established(SnoopConfig { high_water_bytes: 6 * MSS as usize, ..SnoopConfig::default() });
            let mut max_acked = SeqNum(seq_of(0));
            let mut trace = Vec::new();
            for e in events {
                h.out.clear();
                match *e {
                    Ev::Data(i) => {
                        h.s.handle_packet(h.now, Side::ToMobile, data_on(ISS, FP, MP, i, TcpFlags::PSH), &mut h.out);
                        prop_assert_eq!(disposition_count(&h.out), 1);
                    }
                    Ev::Ack(i, w) => {
                        let a = SeqNum(seq_of(i));
                        max_acked = max_acked.max(a);
                        h.s.handle_packet(h.now, Side::ToWired, ack_on(ISS, FP, MP, i, w), &mut h.out);
                        prop_assert_eq!(disposition_count(&h.out), 1);
                    }
                    Ev::Tick(ms) => {
                        h.now = Time(h.now.0 + ms * 1_000_000);
                        h.s.handle_timeout(h.now, &mut h.out);
                    }
                }
                for a in &h.out {
                    if let Action::Forward(Side::ToWired, b) | Action::Inject(Side::ToWired, b) = a {
                        let ip = Ipv4Packet::new_checked(&b[..]).unwrap();
                        let t = TcpPacket::new_checked(ip.payload()).unwrap();
                        prop_assert!(t.ack_number() <= max_acked, "acked {} > mobile's {}", t.ack_number(), max_acked);
                    }
                    prop_assert!(!matches!(a, Action::ForwardPriority(Side::ToWired, _) | Action::Inject(Side::ToMobile, _)));
                }
                if let Some(t) = h.s.poll_timeout() {
                    prop_assert!(t > h.now, "a deadline in the past would make the host spin");
                }
                prop_assert_eq!(h.s.poll_timeout(), h.s.table.earliest_deadline_by_scan(&h.s.cfg));
                trace.append(&mut h.out);
            }
            Ok(trace)
        };
        let a = run(&events)?;
        let b = run(&events)?;
        prop_assert_eq!(a, b);
    }

    /// Snoop's own parse gives the answer the checked views of `lasthop_wire` give, for any bytes: random
    /// ones, and valid segments (options included) with a few bytes changed.
    #[test]
    fn classify_agrees_with_the_checked_views(
        data in proptest::collection::vec(any::<u8>(), 0..120),
        opts in proptest::collection::vec(any::<u8>(), 0..40),
        payload in 0usize..40,
        edits in proptest::collection::vec((0usize..60, any::<u8>()), 0..4),
        cut in 0usize..120,
    ) {
        let same = |b: &[u8]| format!("{:?}", parse::classify(b)) == format!("{:?}", parse::classify_by_views(b));
        prop_assert!(same(&data));
        let mut p = data_on(ISS, FP, MP, 0, TcpFlags::PSH).to_vec();
        p.truncate(40 + payload.min(MSS as usize));
        let olen = opts.len() / 4 * 4;
        p.splice(40..40, opts[..olen].iter().copied());
        p[32] = (((20 + olen) / 4) << 4) as u8;
        let total = u16::try_from(p.len()).unwrap().to_be_bytes();
        p[2..4].copy_from_slice(&total);
        for &(i, v) in &edits {
            let n = p.len();
            p[i % n] = v;
        }
        prop_assert!(same(&p));
        prop_assert!(same(&p[..cut.min(p.len())]));
        for b in [&data[..], &p[..], &p[..cut.min(p.len())]] {
            prop_assert_eq!(parse::peek_data(b), parse::peek_data_reference(b));
        }
        let with_ts = TcpRepr { timestamps: Some((7, 9)), ..TcpRepr::default() }.emit_ipv4(FH, MH, 1, 64, b"xy");
        prop_assert!(same(&with_ts));
    }

    #[test]
    fn random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..120), to_mobile in any::<bool>()) {
        let mut s = Snoop::new(SnoopConfig::default());
        let mut out = Vec::new();
        let side = if to_mobile { Side::ToMobile } else { Side::ToWired };
        s.handle_packet(Time::ZERO, side, Bytes::from(data), &mut out);
        prop_assert_eq!(disposition_count(&out), 1);
    }

    /// Random bytes behind a valid IPv4 header (so the TCP parser and state machine see them).
    #[test]
    /// `Agent::prefetch` is only a hint: a run that gives it (a batch of the next packets, sometimes with
    /// garbage among them) acts, reports and times out exactly as one that does not, across connections
    /// created, evicted (a table of 8 for 24 connections) and closed by RST.
    fn prefetch_hints_change_nothing(
        steps in proptest::collection::vec((0u16..24, 0u32..6, 0u8..4, any::<bool>()), 1..150),
        garbage in proptest::collection::vec(any::<u8>(), 0..60),
    ) {
        let packet = |&(c, i, kind, _): &(u16, u32, u8, bool)| -> (Side, Bytes) {
            let mp = MP + c;
            match kind {
                0 | 1 => (Side::ToMobile, data_on(ISS, FP, mp, i, TcpFlags::PSH)),
                2 => (Side::ToWired, ack_on(ISS, FP, mp, i, WIN)),
                _ => (Side::ToWired, tcp(MH, FH, TcpRepr { src_port: mp, dst_port: FP, flags: TcpFlags::RST, ..TcpRepr::default() }, 0)),
            }
        };
        let run = |hints: bool| {
            let mut s = Snoop::new(SnoopConfig { max_connections: 8, ..SnoopConfig::default() });
            let (mut trace, mut out) = (Vec::new(), Vec::new());
            let packets: Vec<(Side, Bytes)> = steps.iter().map(packet).collect();
            for (n, (side, p)) in packets.iter().enumerate() {
                let now = Time::from_millis(n as u64 * 30);
                if hints && steps[n].3 {
                    let mut batch: Vec<(Side, &[u8])> = packets[n..].iter().take(20).map(|(s, p)| (*s, &p[..])).collect();
                    batch.insert(batch.len() / 2, (Side::ToWired, &garbage[..]));
                    s.prefetch(&batch);
                }
                s.handle_packet(now, *side, p.clone(), &mut out);
                s.handle_timeout(now, &mut out);
                trace.append(&mut out);
            }
            (trace, s.stats().clone(), s.poll_timeout(), s.connections())
        };
        prop_assert_eq!(run(true), run(false));
    }

    /// The key a prefetch reads is the key the packet is looked up by, in both directions; any bytes at all
    /// are read without panicking.
    #[test]
    fn peek_key_reads_the_table_key(c in 0u16..100, i in 0u32..10, junk in proptest::collection::vec(any::<u8>(), 0..60)) {
        let k = FlowKey { dst_port: MP + c, ..key() };
        let want = parse::pack_key(u32::from(k.src), k.src_port, u32::from(k.dst), k.dst_port);
        prop_assert_eq!(parse::peek_key(Side::ToMobile, &data_on(ISS, FP, MP + c, i, TcpFlags::PSH)), Some(want));
        prop_assert_eq!(parse::peek_key(Side::ToWired, &ack_on(ISS, FP, MP + c, i, WIN)), Some(want));
        let _ = parse::peek_key(Side::ToWired, &junk);
    }

    #[test]
    fn random_tcp_segments_never_panic(segs in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..60), 1..20)) {
        let mut s = Snoop::new(SnoopConfig::default());
        let mut out = Vec::new();
        for (n, seg) in segs.into_iter().enumerate() {
            let mut p = vec![0u8; 20 + seg.len()];
            lasthop_wire::ipv4::Ipv4Repr { src: FH, dst: MH, protocol: 6, ident: 0, ttl: 64, payload_len: seg.len() }.emit(&mut p[..20]);
            p[20..].copy_from_slice(&seg);
            let side = if n % 2 == 0 { Side::ToMobile } else { Side::ToWired };
            out.clear();
            s.handle_packet(Time::from_millis(n as u64 * 50), side, Bytes::from(p), &mut out);
            prop_assert_eq!(disposition_count(&out), 1);
            s.handle_timeout(Time::from_millis(n as u64 * 50), &mut out);
        }
    }
}

// ---- timestamps on local retransmissions (RFC 7323 PAWS) -----------------------------------------------

/// FH -> MH data segment `i` carrying the timestamps option (TSval `tsval`, TSecr 7).
fn data_ts(i: u32, tsval: u32) -> Bytes {
    data_ts_payload(i, tsval, &[0xab; MSS as usize])
}

/// The TSval and TSecr of a forwarded packet, after checking its TCP checksum.
fn ts_of(pkt: &Bytes) -> (u32, u32) {
    let ip = Ipv4Packet::new_checked(&pkt[..]).unwrap();
    let t = TcpPacket::new_checked(ip.payload()).unwrap();
    assert!(t.verify_checksum(ip.src_addr(), ip.dst_addr()), "TCP checksum");
    assert_eq!(t.payload(), &[0xab; MSS as usize][..], "payload unchanged");
    TcpRepr::parse(&t).unwrap().timestamps.unwrap()
}

fn local_rexmit(out: &[Action]) -> Bytes {
    match out.iter().find(|a| matches!(a, Action::ForwardPriority(..))) {
        Some(Action::ForwardPriority(Side::ToMobile, b)) => b.clone(),
        other => panic!("no local retransmission in {out:?} ({other:?})"),
    }
}

/// MH -> FH pure ACK for everything before segment `i`, echoing TSecr `ecr`.
fn ack_ts(i: u32, ecr: u32) -> Bytes {
    let repr = TcpRepr {
        src_port: MP,
        dst_port: FP,
        seq: SeqNum(MH_ISS + 1),
        ack: Some(SeqNum(seq_of(i))),
        window: WIN,
        timestamps: Some((4242, ecr)),
        ..TcpRepr::default()
    };
    tcp(MH, FH, repr, 0)
}

#[test]
fn local_retransmission_carries_the_receivers_echoed_timestamp_when_newer() {
    // Segments 0–3 leave with TSval 100–103; 1 is lost. The mobile's ACK of 0 echoes 250 (a sender
    // retransmission with that TSval filled an earlier hole): the receiver would drop a copy of 1 with
    // TSval 101 (PAWS), so the copy goes out with TSval 250, a correct checksum, the same TSecr and
    // payload. The cached packet itself is not touched.
    let mut h = established();
    for (i, ts) in [(0, 100), (1, 101), (2, 102), (3, 103)] {
        h.raw(Side::ToMobile, data_ts(i, ts));
    }
    assert_eq!(h.raw(Side::ToWired, ack_ts(1, 250)), [FwdAck(1)]);
    assert_eq!(h.raw(Side::ToWired, ack_ts(1, 250)), [Drop(DropReason::DupAckSuppressed), Prio(1)]);
    assert_eq!(ts_of(&local_rexmit(&h.out)), (250, 7));
    assert_eq!(ts_of(&h.conn().cache()[0].pkt), (101, 7), "the cache keeps the sender's packet");
    // The echo follows the mobile's latest packet; a timer resend uses it too.
    assert_eq!(h.raw(Side::ToWired, ack_ts(1, 260)), [Drop(DropReason::DupAckSuppressed)]);
    let out = h.timeout_at(1_000);
    assert_eq!(ts_of(&local_rexmit(&h.out)), (260, 7), "{out:?}");
}

#[test]
fn local_retransmission_is_the_cached_buffer_when_its_timestamp_is_acceptable() {
    // The usual case: the echo is older than the copy's own TSval (it is the TSval of a segment before
    // it): the cached packet itself goes out, no copy.
    let mut h = established();
    h.raw(Side::ToMobile, data_ts(0, 100));
    h.raw(Side::ToMobile, data_ts(1, 101));
    h.raw(Side::ToWired, ack_ts(0, 99));
    let _ = h.raw(Side::ToWired, ack_ts(0, 99));
    assert_eq!(local_rexmit(&h.out).as_ptr(), h.conn().cache()[0].pkt.as_ptr());
    // TSval wraps modulo 2^32 (RFC 7323): an echo of 5 is newer than a TSval of u32::MAX - 5.
    let mut h = established();
    h.raw(Side::ToMobile, data_ts(0, u32::MAX - 5));
    h.raw(Side::ToMobile, data_ts(1, u32::MAX - 4));
    let _ = h.raw(Side::ToWired, ack_ts(0, 5));
    assert_eq!(ts_of(&local_rexmit(&h.out)), (5, 7));
    // Without timestamps on the data: the cached packet itself.
    let mut h = established();
    h.data(0);
    h.data(1);
    let _ = h.raw(Side::ToWired, ack_ts(0, 500));
    assert_eq!(local_rexmit(&h.out).as_ptr(), h.conn().cache()[0].pkt.as_ptr());
    // Malformed or option-less input to the patcher: no copy, no panic.
    assert!(segment::with_tsval(&Bytes::from_static(&[0x45, 0, 0]), 9).is_none());
    assert!(segment::with_tsval(&data_on(ISS, FP, MP, 0, TcpFlags::PSH), 9).is_none());
    assert!(segment::with_tsval(&data_ts(0, 100), 100).is_none(), "already carries it");
}

// ---- checksums across the timestamp rewrite (RFC 1624) ---------------------------------------------------

/// RFC 1071 verification of the TCP segment in an IPv4 packet, done the plain way (16 bits at a time,
/// carries folded at every step), independent of `lasthop_wire`'s wide sum.
fn tcp_checksum_verifies(pkt: &[u8]) -> bool {
    let ip = Ipv4Packet::new_checked(pkt).unwrap();
    let seg = ip.payload();
    let (s, d) = (ip.src_addr().octets(), ip.dst_addr().octets());
    let pseudo = [[s[0], s[1]], [s[2], s[3]], [d[0], d[1]], [d[2], d[3]], [0, 6], (seg.len() as u16).to_be_bytes()];
    let words = seg.chunks(2).map(|c| [c[0], *c.get(1).unwrap_or(&0)]).chain(pseudo);
    let mut acc: u32 = 0;
    for w in words {
        acc += u32::from(u16::from_be_bytes(w));
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc == 0xffff
}

/// FH -> MH segment `i` with TSval `tsval` and `payload`.
fn data_ts_payload(i: u32, tsval: u32, payload: &[u8]) -> Bytes {
    let repr = TcpRepr {
        src_port: FP,
        dst_port: MP,
        seq: SeqNum(seq_of(i)),
        ack: Some(SeqNum(MH_ISS + 1)),
        flags: TcpFlags::PSH,
        window: 65535,
        timestamps: Some((tsval, 7)),
        ..TcpRepr::default()
    };
    repr.emit_ipv4(FH, MH, 1, 64, payload)
}

#[test]
fn a_segment_corrupted_on_the_wired_path_keeps_its_bad_checksum_when_resent() {
    // Segment 1 (TSval 5) arrives with its last payload byte flipped after the checksum was computed. The
    // mobile acknowledges segment 0 echoing TSval 9, and the timer resends segment 1 with TSval 9: the copy
    // must still fail its checksum, so that the mobile discards it rather than accept the corrupted byte.
    let mut h = established();
    h.raw(Side::ToMobile, data_ts(0, 4));
    let mut bad = data_ts(1, 5).to_vec();
    *bad.last_mut().unwrap() ^= 0x01;
    assert!(!tcp_checksum_verifies(&bad));
    h.raw(Side::ToMobile, Bytes::from(bad.clone()));
    assert_eq!(h.raw(Side::ToWired, ack_ts(1, 9)), [FwdAck(1)]);
    let out = h.timeout_at(1_000);
    let copy = local_rexmit(&h.out);
    assert_eq!(out, [Prio(1)]);
    let ip = Ipv4Packet::new_checked(&copy[..]).unwrap();
    let t = TcpPacket::new_checked(ip.payload()).unwrap();
    assert_eq!(TcpRepr::parse(&t).unwrap().timestamps, Some((9, 7)), "the TSval was rewritten");
    assert_eq!(t.payload(), &bad[bad.len() - MSS as usize..], "the corrupted payload is resent as it came");
    assert!(!tcp_checksum_verifies(&copy), "a corrupted segment must not be made valid");
    assert!(!t.verify_checksum(ip.src_addr(), ip.dst_addr()));
}

#[test]
fn a_large_segment_keeps_its_good_checksum_when_its_timestamp_is_rewritten() {
    // 4458-byte IPv4 packets whose wide sum is all ones or near it, and packets whose buffer runs past
    // the IPv4 total length (link padding, or bytes a hostile sender appends): every input copy verifies
    // over the bytes the total length covers, and so must every rewritten copy.
    for (payload_len, trailer) in [(4406usize, 0usize), (4400, 6), (4000, 406), (101, 1)] {
        for fill in [0xffu8, 0x00, 0xab, 0xfe] {
            for (old, new) in [(5u32, 9u32), (0, u32::MAX / 2), (u32::MAX, 3), (0xffff_0000, 0xffff_ffff)] {
                let mut payload = vec![fill; payload_len];
                payload[..4].copy_from_slice(&old.to_be_bytes());
                let mut pkt = data_ts_payload(0, old, &payload).to_vec();
                pkt.extend(std::iter::repeat_n(0x5a, trailer));
                let pkt = Bytes::from(pkt);
                assert!(tcp_checksum_verifies(&pkt));
                let copy = segment::with_tsval(&pkt, new).expect("a newer TSval is written");
                let what = format!("{} bytes, trailer {trailer}, fill {fill:#x}, TSval {old} -> {new}", pkt.len());
                assert!(tcp_checksum_verifies(&copy), "{what}");
                assert_eq!(copy.len(), pkt.len(), "{what}");
            }
        }
    }
}
