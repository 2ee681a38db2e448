//! State-machine tests with hand-built packets (one endpoint at a time, the peer played by the test),
//! then whole transfers through the [`Pair`](crate::harness::Pair) harness, including a proptest over
//! random loss patterns for every variant.

use crate::harness::{Dir, Pair, RECEIVER_ADDR, SENDER_ADDR};
use crate::{payload, Receiver, Sender, TcpConfig, Variant};
use bytes::Bytes;
use lasthop_wire::{Ipv4Packet, SeqNum, TcpFlags, TcpPacket, TcpRepr, Time};
use std::time::Duration;

pub(crate) const ISS: SeqNum = SeqNum(u32::MAX - 3000); // the transfer wraps sequence space
pub(crate) const IRS: SeqNum = SeqNum(5000);
pub(crate) const MSS: u32 = 1000;

/// A segment as the test sees it: offsets relative to the ISN (the SYN is 0, data byte i is 1 + i).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Seg {
    pub(crate) off: u64,
    pub(crate) len: u32,
    syn: bool,
    fin: bool,
    ack: Option<SeqNum>,
    sack: Vec<(SeqNum, SeqNum)>,
    mss: Option<u16>,
    sack_permitted: bool,
    pub(crate) rexmit: Option<bool>,
    payload: Bytes,
    handoff_mark: bool,
}

fn decode(p: &Bytes, base: SeqNum) -> Seg {
    let ip = Ipv4Packet::new_checked(&p[..]).unwrap();
    assert!(ip.verify_checksum());
    let tcp = TcpPacket::new_checked(ip.payload()).unwrap();
    assert!(tcp.verify_checksum(ip.src_addr(), ip.dst_addr()));
    let r = TcpRepr::parse(&tcp).unwrap();
    Seg {
        off: u64::from(r.seq.0.wrapping_sub(base.0)),
        len: tcp.payload().len() as u32,
        syn: r.flags.contains(TcpFlags::SYN),
        fin: r.flags.contains(TcpFlags::FIN),
        ack: r.ack,
        sack: r.sack.as_slice().to_vec(),
        mss: r.mss,
        sack_permitted: r.sack_permitted,
        rexmit: None,
        payload: Bytes::copy_from_slice(tcp.payload()),
        handoff_mark: r.handoff_mark,
    }
}

pub(crate) fn drain_sender(s: &mut Sender, now: Time) -> Vec<Seg> {
    let mut out = Vec::new();
    while let Some(p) = s.poll_transmit(now) {
        let mut seg = decode(&p, ISS);
        seg.rexmit = s.last_sent().map(|l| l.1);
        if seg.len > 0 {
            assert!(payload::matches(seg.off - 1, &seg.payload));
            assert_eq!(s.last_sent().unwrap().0, seg.off - 1);
        }
        out.push(seg);
    }
    out
}

fn drain_receiver(r: &mut Receiver, now: Time) -> Vec<Seg> {
    std::iter::from_fn(|| r.poll_transmit(now)).map(|p| decode(&p, IRS)).collect()
}

/// A packet from the receiver's address to the sender's.
fn to_sender(repr: TcpRepr) -> Bytes {
    let repr = TcpRepr { src_port: RECEIVER_ADDR.port(), dst_port: SENDER_ADDR.port(), window: 65535, ..repr };
    repr.emit_ipv4(*RECEIVER_ADDR.ip(), *SENDER_ADDR.ip(), 0, 64, &[])
}

/// A packet from the sender's address to the receiver's.
fn to_receiver(repr: TcpRepr, payload: &[u8]) -> Bytes {
    let repr = TcpRepr { src_port: SENDER_ADDR.port(), dst_port: RECEIVER_ADDR.port(), window: 65535, ..repr };
    repr.emit_ipv4(*SENDER_ADDR.ip(), *RECEIVER_ADDR.ip(), 0, 64, payload)
}

fn seq(off: u64) -> SeqNum {
    ISS + off as u32
}

/// A cumulative ACK up to sender offset `off`, with SACK blocks in sender offsets.
pub(crate) fn ack(off: u64, sack: &[(u64, u64)]) -> Bytes {
    let mut repr = TcpRepr { seq: IRS + 1, ack: Some(seq(off)), ..TcpRepr::default() };
    for &(l, r) in sack {
        repr.sack.push(seq(l), seq(r));
    }
    to_sender(repr)
}

pub(crate) fn cfg(variant: Variant) -> TcpConfig {
    TcpConfig { variant, sack: variant == Variant::Sack, ..TcpConfig::default() }
}

/// A sender past the handshake (peer MSS 1000, SACK-permitted as configured), its first segment drained.
pub(crate) fn established(cfg: TcpConfig, total: u64) -> (Sender, Vec<Seg>) {
    let sack = cfg.sack || cfg.variant == Variant::Sack;
    let mut s = Sender::new(cfg, SENDER_ADDR, RECEIVER_ADDR, ISS, total);
    s.connect(Time::ZERO);
    let syn = drain_sender(&mut s, Time::ZERO);
    assert_eq!(syn.len(), 1);
    let synack = TcpRepr {
        seq: IRS,
        ack: Some(ISS + 1),
        flags: TcpFlags::SYN,
        mss: Some(MSS as u16),
        sack_permitted: sack,
        ..TcpRepr::default()
    };
    s.handle_packet(Time::from_millis(100), &to_sender(synack));
    let first = drain_sender(&mut s, Time::from_millis(100));
    (s, first)
}

/// Grows the window by ACKing every segment at once, until `segs` segments are in flight unacked.
pub(crate) fn open_window(s: &mut Sender, first: Vec<Seg>, segs: usize, mut now: Time) -> (Vec<Seg>, Time) {
    let mut flight = first;
    loop {
        if flight.len() >= segs {
            return (flight, now);
        }
        now += Duration::from_millis(100);
        let last = flight.last().unwrap();
        let to = last.off + u64::from(last.len);
        s.handle_packet(now, &ack(to, &[]));
        flight = drain_sender(s, now);
    }
}

// ---- sender ----------------------------------------------------------------------------------------

#[test]
fn handshake_negotiates_mss_and_sack() {
    let mut s = Sender::new(cfg(Variant::Sack), SENDER_ADDR, RECEIVER_ADDR, ISS, 10_000);
    assert!(s.poll_transmit(Time::ZERO).is_none(), "nothing before connect");
    s.connect(Time::ZERO);
    let syn = drain_sender(&mut s, Time::ZERO);
    assert_eq!(syn.len(), 1);
    assert!(syn[0].syn && syn[0].ack.is_none() && syn[0].off == 0);
    assert_eq!(syn[0].mss, Some(1460));
    assert!(syn[0].sack_permitted);
    assert_eq!(s.last_sent(), None, "last_sent describes the last poll, which returned None");

    let (s, first) = established(cfg(Variant::Reno), 10_000);
    assert!(!s.sack_ok, "SACK only when both offer it");
    assert_eq!(first.len(), 1, "initial cwnd of one segment");
    assert_eq!((first[0].off, first[0].len), (1, MSS), "effective MSS is the smaller offer");
    assert_eq!(first[0].ack, Some(IRS + 1), "data carries the ACK of the SYN-ACK");
    assert!(s.srtt().is_some(), "the SYN was timed");
    let (s, _) = established(cfg(Variant::Sack), 10_000);
    assert!(s.sack_ok);
}

#[test]
fn syn_is_retransmitted_on_tick_rounded_backed_off_timeout() {
    let mut s = Sender::new(TcpConfig::default(), SENDER_ADDR, RECEIVER_ADDR, ISS, 100);
    s.connect(Time::from_millis(100));
    drain_sender(&mut s, Time::from_millis(100));
    // The 3 s initial RTO is 6 ticks of the 500 ms slow timer: the 6th tick after 100 ms is at 3 s.
    assert_eq!(s.poll_timeout(), Some(Time::from_millis(3000)));
    s.handle_timeout(Time::from_millis(2900));
    assert!(drain_sender(&mut s, Time::from_millis(2900)).is_empty(), "early call does nothing");
    s.handle_timeout(Time::from_millis(3000));
    let syn = drain_sender(&mut s, Time::from_millis(3000));
    assert!(syn[0].syn && syn[0].rexmit == Some(true));
    assert_eq!(s.poll_timeout(), Some(Time::from_millis(3000 + 6000)), "backoff doubles the RTO");
    // Karn: the SYN-ACK answering a retransmitted SYN gives no RTT sample.
    let synack = TcpRepr { seq: IRS, ack: Some(ISS + 1), flags: TcpFlags::SYN, mss: Some(1000), ..Default::default() };
    s.handle_packet(Time::from_millis(3600), &to_sender(synack));
    assert_eq!(s.srtt(), None);
    assert_eq!(s.stats().timeouts, 1);
}

#[test]
fn slow_start_then_congestion_avoidance() {
    let cfg = TcpConfig { initial_ssthresh: 4 * MSS, ..cfg(Variant::Reno) };
    let (mut s, first) = established(cfg, 1_000_000);
    assert_eq!(s.cwnd(), MSS);
    let mut now = Time::from_millis(200);
    let mut next = first[0].off + u64::from(first[0].len);
    // Slow start: each ACK of one segment adds one segment, and two go out.
    s.handle_packet(now, &ack(next, &[]));
    assert_eq!(s.cwnd(), 2 * MSS);
    let out = drain_sender(&mut s, now);
    assert_eq!(out.len(), 2);
    for _ in 0..2 {
        now += Duration::from_millis(1);
        next += u64::from(MSS);
        s.handle_packet(now, &ack(next, &[]));
        drain_sender(&mut s, now);
    }
    assert_eq!(s.cwnd(), 4 * MSS);
    // At ssthresh, congestion avoidance: mss*mss/cwnd per ACK.
    next += u64::from(MSS);
    s.handle_packet(now, &ack(next, &[]));
    assert_eq!(s.cwnd(), 4 * MSS + MSS / 4);
    assert_eq!(s.snd_una_offset(), next - 1);
}

/// ACKs that each cover two segments (a delayed ACK's), from an initial window of 2 and ssthresh 5
/// segments: `(cwnd after each, bytes)` of `variant`, counting acknowledged segments or not.
fn cwnd_after_two_segment_acks(variant: Variant, count_acked_segments: Option<bool>, acks: usize) -> Vec<u32> {
    let cfg = TcpConfig {
        initial_cwnd: 2,
        initial_ssthresh: 5 * MSS,
        count_acked_segments,
        max_window: 1 << 20,
        ..cfg(variant)
    };
    let (mut s, first) = established(cfg, 10_000_000);
    assert_eq!(first.len(), 2);
    let mut next = first[0].off;
    let mut now = Time::from_millis(200);
    (0..acks)
        .map(|_| {
            next += 2 * u64::from(MSS);
            now += Duration::from_millis(10);
            s.handle_packet(now, &ack(next, &[]));
            drain_sender(&mut s, now);
            s.cwnd()
        })
        .collect()
}

/// RFC 3465's byte counting as Linux does it in packets (`tcp_slow_start(tp, acked)`,
/// `tcp_cong_avoid_ai(tp, tp->snd_cwnd, acked)`): an ACK of two segments adds two below ssthresh; above
/// it, one segment per window of segments acknowledged, `snd_cwnd_cnt` carrying the count. 2 → 4, then
/// 5 (the ACK's second segment meets ssthresh: one is left over, cnt 1 of 5), cnt 3, cnt 5: 6 (cnt 0),
/// cnt 2, 4, 6: 7 (cnt 0). 4.4BSD's counting, one segment per ACK and MSS²/cwnd above ssthresh, grows
/// half as fast: 3, 4, 5 (4 < 5), then 5000 + 1000²/5000 = 5200, + 1000²/5200 = 5392.
#[test]
fn counting_acknowledged_segments_grows_per_segment_not_per_ack() {
    let counted = cwnd_after_two_segment_acks(Variant::NewReno, Some(true), 8);
    assert_eq!(counted, [4, 5, 5, 6, 6, 6, 7, 7].map(|n| n * MSS));
    let bsd = cwnd_after_two_segment_acks(Variant::NewReno, None, 5);
    assert_eq!(bsd, vec![3000, 4000, 5000, 5200, 5392]);
    let linux = TcpConfig::with_profile(crate::Profile::Linux);
    assert!(linux.behaviours().count_acked_segments, "on with the linux profile");
    // Today's senders count as their Linux modules do (`tcp_reno_cong_avoid` for Westwood+; CUBIC's
    // `bictcp_cong_avoid` slow-starts with `acked` too).
    assert_eq!(cwnd_after_two_segment_acks(Variant::Westwood, None, 8), counted);
    assert_eq!(cwnd_after_two_segment_acks(Variant::Cubic, None, 1), vec![4 * MSS]);
    let mut wrong = cfg(Variant::Cubic);
    wrong.count_acked_segments = Some(false);
    assert_eq!(wrong.check_behaviours().map_err(|e| e.0), Err("count_acked_segments"));
}

#[test]
fn tahoe_fast_retransmit_then_one_segment() {
    let (mut s, first) = established(cfg(Variant::Tahoe), 1_000_000);
    let (flight, mut now) = open_window(&mut s, first, 8, Time::from_millis(100));
    let una = flight[0].off;
    assert_eq!(s.cwnd(), 8 * MSS);
    for i in 0..3 {
        now += Duration::from_millis(1);
        s.handle_packet(now, &ack(una, &[]));
        let out = drain_sender(&mut s, now);
        if i < 2 {
            assert!(out.is_empty(), "no retransmission before the third dupack");
        } else {
            assert_eq!(out.len(), 1);
            assert_eq!((out[0].off, out[0].rexmit), (una, Some(true)));
        }
    }
    assert_eq!(s.cwnd(), MSS, "Tahoe: back to one segment");
    assert_eq!(s.ssthresh(), 4 * MSS, "half the flight");
    assert_eq!(s.stats().fast_retransmits, 1);
    assert_eq!(s.stats().dupacks_received, 3);
    // The retransmission fills the hole: slow start resumes from the highest segment sent.
    s.handle_packet(now, &ack(una + 8 * u64::from(MSS), &[]));
    assert_eq!(s.cwnd(), 2 * MSS);
    let out = drain_sender(&mut s, now);
    assert_eq!(out.len(), 2);
    assert_eq!(out[0].off, una + 8 * u64::from(MSS));
}

/// Eom 2002 Fig. 11's Tahoe (`tahoe_go_back`): after the fast retransmit, slow start resends from SND.UNA
/// what followed the retransmitted segment, although it was sent before.
#[test]
fn tahoe_go_back_resends_from_una_after_the_fast_retransmit() {
    let (mut s, first) = established(TcpConfig { tahoe_go_back: true, ..cfg(Variant::Tahoe) }, 1_000_000);
    let (flight, mut now) = open_window(&mut s, first, 8, Time::from_millis(100));
    let una = flight[0].off;
    let m = u64::from(MSS);
    for _ in 0..3 {
        now += Duration::from_millis(1);
        s.handle_packet(now, &ack(una, &[]));
    }
    let out = drain_sender(&mut s, now);
    assert_eq!(out.iter().map(|g| (g.off, g.rexmit)).collect::<Vec<_>>(), vec![(una, Some(true))]);
    assert_eq!((s.cwnd(), s.stats().fast_retransmits), (MSS, 1));
    // The ACK of the retransmission (segments 2 and 3 of the window were lost too): cwnd 2, and the two
    // segments sent are the next ones after SND.UNA, retransmissions, not new data from the window's end.
    now += Duration::from_millis(1);
    s.handle_packet(now, &ack(una + m, &[]));
    let out = drain_sender(&mut s, now);
    assert_eq!(s.cwnd(), 2 * MSS);
    assert_eq!(
        out.iter().map(|g| (g.off, g.rexmit)).collect::<Vec<_>>(),
        vec![(una + m, Some(true)), (una + 2 * m, Some(true))]
    );
    // Without the option the same ACK sends nothing: the flight up to the window's end exceeds cwnd.
    let (mut b, first) = established(cfg(Variant::Tahoe), 1_000_000);
    let (flight, mut now) = open_window(&mut b, first, 8, Time::from_millis(100));
    for _ in 0..3 {
        now += Duration::from_millis(1);
        b.handle_packet(now, &ack(flight[0].off, &[]));
    }
    drain_sender(&mut b, now);
    b.handle_packet(now, &ack(flight[0].off + m, &[]));
    assert!(drain_sender(&mut b, now).is_empty());
}

#[test]
fn reno_fast_recovery_inflates_and_deflates() {
    let (mut s, first) = established(cfg(Variant::Reno), 1_000_000);
    let (flight, mut now) = open_window(&mut s, first, 8, Time::from_millis(100));
    let una = flight[0].off;
    let high = flight.last().unwrap().off + u64::from(MSS);
    for _ in 0..3 {
        s.handle_packet(now, &ack(una, &[]));
    }
    let out = drain_sender(&mut s, now);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].off, una);
    assert_eq!(s.ssthresh(), 4 * MSS);
    assert_eq!(s.cwnd(), 7 * MSS, "ssthresh + 3 segments");
    // Inflation: each further dupack adds a segment; once cwnd exceeds the flight, new data flows.
    s.handle_packet(now, &ack(una, &[]));
    assert_eq!(s.cwnd(), 8 * MSS);
    assert!(drain_sender(&mut s, now).is_empty());
    s.handle_packet(now, &ack(una, &[]));
    assert_eq!(s.cwnd(), 9 * MSS);
    let out = drain_sender(&mut s, now);
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].off, out[0].rexmit), (high, Some(false)));
    // The first new ACK deflates to ssthresh and ends recovery.
    now += Duration::from_millis(100);
    s.handle_packet(now, &ack(high, &[]));
    assert_eq!(s.cwnd(), s.ssthresh());
    assert!(!s.in_recovery());
    assert_eq!(s.stats().timeouts, 0);
}

#[test]
fn reno_leaves_recovery_on_partial_ack_but_newreno_stays() {
    for variant in [Variant::Reno, Variant::NewReno] {
        let (mut s, first) = established(cfg(variant), 1_000_000);
        let (flight, now) = open_window(&mut s, first, 8, Time::from_millis(100));
        // Segments 0 and 3 of the window are lost.
        let una = flight[0].off;
        let hole2 = flight[3].off;
        for _ in 0..3 {
            s.handle_packet(now, &ack(una, &[]));
        }
        assert_eq!(drain_sender(&mut s, now)[0].off, una);
        // The retransmission arrives: the ACK now stops at the second hole (a partial ACK).
        s.handle_packet(now, &ack(hole2, &[]));
        let out = drain_sender(&mut s, now);
        match variant {
            Variant::NewReno => {
                assert!(s.in_recovery(), "NewReno stays in recovery on a partial ACK");
                assert_eq!((out[0].off, out[0].rexmit), (hole2, Some(true)), "and retransmits the next hole");
                // cwnd deflated by the 3 segments acked, plus one back: 7 - 3 + 1 = 5 segments.
                assert_eq!(s.cwnd(), 5 * MSS);
                s.handle_packet(now, &ack(flight.last().unwrap().off + u64::from(MSS), &[]));
                assert!(!s.in_recovery(), "an ACK beyond `recover` ends it");
                assert_eq!(s.cwnd(), s.ssthresh());
            }
            _ => {
                assert!(!s.in_recovery(), "Reno leaves on the first new ACK");
                assert!(out.iter().all(|seg| seg.rexmit == Some(false)), "and does not retransmit the hole");
                assert_eq!(s.cwnd(), 4 * MSS);
            }
        }
        assert_eq!(s.stats().fast_retransmits, 1);
    }
}

#[test]
fn sack_recovers_several_losses_in_one_window() {
    let (mut s, first) = established(cfg(Variant::Sack), 1_000_000);
    let (flight, mut now) = open_window(&mut s, first, 10, Time::from_millis(100));
    let m = u64::from(MSS);
    let o = |i: usize| flight[i].off;
    // Segments 0, 3 and 6 of ten lost; the receiver SACKs the rest as they arrive.
    let mut rexmits = Vec::new();
    let arrivals: [(u64, u64); 7] = [
        (o(1), o(1) + m),
        (o(1), o(2) + m),
        (o(4), o(4) + m),
        (o(4), o(5) + m),
        (o(7), o(7) + m),
        (o(7), o(8) + m),
        (o(7), o(9) + m),
    ];
    let mut blocks: Vec<(u64, u64)> = Vec::new();
    for (l, r) in arrivals {
        blocks.retain(|b| b.0 != l);
        blocks.insert(0, (l, r));
        now += Duration::from_millis(1);
        s.handle_packet(now, &ack(o(0), &blocks));
        rexmits.extend(drain_sender(&mut s, now).into_iter().filter(|x| x.rexmit == Some(true)).map(|x| x.off));
    }
    assert_eq!(rexmits, vec![o(0), o(3), o(6)], "each hole retransmitted once, in order");
    assert!(s.in_recovery());
    assert_eq!(s.ssthresh(), 5 * MSS);
    // Retransmissions arrive: partial ACKs, then everything.
    s.handle_packet(now, &ack(o(3), &[(o(4), o(9) + m)]));
    s.handle_packet(now, &ack(o(6), &[(o(7), o(9) + m)]));
    assert!(s.in_recovery());
    let high = s.max;
    s.handle_packet(now, &ack(high, &[]));
    assert!(!s.in_recovery());
    drain_sender(&mut s, now);
    assert_eq!(s.stats().timeouts, 0);
    assert_eq!(s.stats().fast_retransmits, 1);
    assert_eq!(s.stats().segments_retransmitted, 3);
}

#[test]
fn sack_is_advisory_and_forgotten_after_timeout() {
    let (mut s, first) = established(cfg(Variant::Sack), 1_000_000);
    let (flight, now) = open_window(&mut s, first, 4, Time::from_millis(100));
    let m = u64::from(MSS);
    s.handle_packet(now, &ack(flight[0].off, &[(flight[1].off, flight[3].off + m)]));
    assert!(!s.scoreboard.is_empty());
    let deadline = s.poll_timeout().unwrap();
    s.handle_timeout(deadline);
    assert!(s.scoreboard.is_empty(), "RFC 2018: after a timeout SACK information is not trusted");
    let out = drain_sender(&mut s, deadline);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].off, flight[0].off);
    // A receiver that reneged: the SACKed data is resent by go-back-N as cumulative ACKs come.
    s.handle_packet(deadline, &ack(flight[1].off, &[]));
    let out = drain_sender(&mut s, deadline);
    assert_eq!(out[0].off, flight[1].off);
    assert_eq!(out[0].rexmit, Some(true));
}

#[test]
fn timeout_goes_back_n_with_backoff_and_karn() {
    let cfg = TcpConfig { tick_ms: 0.0, ..cfg(Variant::Reno) };
    let (mut s, first) = established(cfg, 1_000_000);
    let (flight, now) = open_window(&mut s, first, 4, Time::from_millis(100));
    let srtt = s.srtt().unwrap();
    let deadline = s.poll_timeout().unwrap();
    assert_eq!(deadline, now + Duration::from_millis(1000), "min RTO: 100 ms RTTs give a 1 s timer");
    s.handle_timeout(deadline);
    assert_eq!(s.cwnd(), MSS);
    assert_eq!(s.ssthresh(), 2 * MSS, "max(flight/2, 2 segments)");
    let out = drain_sender(&mut s, deadline);
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].off, out[0].rexmit), (flight[0].off, Some(true)));
    assert_eq!(s.poll_timeout(), Some(deadline + Duration::from_millis(2000)), "backed off");
    let t2 = deadline + Duration::from_millis(2000);
    s.handle_timeout(t2);
    drain_sender(&mut s, t2);
    assert_eq!(s.poll_timeout(), Some(t2 + Duration::from_millis(4000)), "doubles again");
    // Karn: the ACK of a retransmitted segment yields no sample; backoff resets on new data acked.
    let t3 = t2 + Duration::from_millis(30);
    s.handle_packet(t3, &ack(flight[1].off, &[]));
    assert_eq!(s.srtt(), Some(srtt));
    assert_eq!(s.poll_timeout(), Some(t3 + Duration::from_millis(1000)));
    // Go-back-N: the rest of the window is resent from SND.UNA, as slow start allows.
    let out = drain_sender(&mut s, t3);
    assert_eq!(
        out.iter().map(|x| (x.off, x.rexmit)).collect::<Vec<_>>(),
        vec![(flight[1].off, Some(true)), (flight[2].off, Some(true))]
    );
    assert_eq!(s.stats().timeouts, 2);
}

#[test]
fn fast_retransmit_cancels_rtt_timing_and_bogus_acks_are_ignored() {
    let (mut s, first) = established(cfg(Variant::NewReno), 1_000_000);
    let (flight, now) = open_window(&mut s, first, 4, Time::from_millis(100));
    let una = flight[0].off;
    assert!(s.timing.is_some());
    s.handle_packet(now, &ack(s.max + 1000, &[]));
    assert_eq!(s.snd_una_offset(), una - 1, "an ACK of data never sent is ignored");
    s.handle_packet(now, &ack(una - 500, &[]));
    assert_eq!(s.stats().dupacks_received, 0, "an old ACK is not a duplicate");
    for _ in 0..3 {
        s.handle_packet(now, &ack(una, &[]));
    }
    assert!(s.timing.is_none(), "Karn: a retransmission voids the measurement in progress");
    assert!(s.in_recovery());
    // A fourth dupack in recovery is not a new fast retransmit.
    s.handle_packet(now, &ack(una, &[]));
    assert_eq!(s.stats().fast_retransmits, 1);
    let out = drain_sender(&mut s, now);
    assert_eq!(out.iter().filter(|x| x.rexmit == Some(true)).count(), 1);
}

#[test]
fn fin_after_data_and_finished_when_acked() {
    let (mut s, first) = established(cfg(Variant::Reno), 1500);
    assert_eq!((first[0].len, first[0].fin), (1000, false));
    s.handle_packet(Time::from_millis(200), &ack(1001, &[]));
    let out = drain_sender(&mut s, Time::from_millis(200));
    assert_eq!((out[0].off, out[0].len, out[0].fin), (1001, 500, true), "FIN rides on the last data");
    assert!(!s.is_finished());
    s.handle_packet(Time::from_millis(300), &ack(1501, &[]));
    assert!(!s.is_finished(), "FIN not yet acknowledged");
    s.handle_packet(Time::from_millis(300), &ack(1502, &[]));
    assert!(s.is_finished());
    assert_eq!(s.snd_una_offset(), 1500);
    assert_eq!(s.poll_timeout(), None);
}

/// Broken variants of `good`: empty, truncated IP header, truncated TCP, bad data offset, not TCP, bad
/// TCP checksum, not IPv4.
fn malformed_packets(good: Bytes) -> Vec<Bytes> {
    let mut out = vec![Bytes::new(), good.slice(..19), good.slice(..30)];
    let mut bad_off = good.to_vec();
    bad_off[20 + 12] = 0x30; // TCP data offset 3 words
    out.push(Bytes::from(bad_off));
    let mut udp = good.to_vec();
    udp[9] = 17;
    out.push(Bytes::from(udp)); // not TCP (IP checksum now wrong too)
    let mut bad_sum = good.to_vec();
    bad_sum[20 + 16] ^= 0xff;
    out.push(Bytes::from(bad_sum));
    let mut v6 = good.to_vec();
    v6[0] = 0x60;
    out.push(Bytes::from(v6));
    out
}

#[test]
fn malformed_packets_are_counted_and_ignored() {
    let (mut s, _) = established(cfg(Variant::Sack), 10_000);
    let before = s.cwnd();
    let pkts = malformed_packets(ack(1, &[]));
    for (i, p) in pkts.iter().enumerate() {
        s.handle_packet(Time::from_millis(200), p);
        assert_eq!(s.stats().malformed, i as u64 + 1, "packet {i}");
    }
    assert_eq!(s.stats().malformed, pkts.len() as u64);
    assert_eq!(s.cwnd(), before);
    assert!(drain_sender(&mut s, Time::from_millis(200)).is_empty());
    // Another connection's packet is not malformed, just not ours.
    let other =
        TcpRepr { src_port: 9, dst_port: SENDER_ADDR.port(), seq: IRS, ack: Some(seq(1001)), ..Default::default() };
    s.handle_packet(Time::from_millis(200), &other.emit_ipv4(*RECEIVER_ADDR.ip(), *SENDER_ADDR.ip(), 0, 64, &[]));
    assert_eq!(s.stats().malformed, pkts.len() as u64);
    assert_eq!(s.snd_una_offset(), 0);

    let mut r = receiver(TcpConfig::default());
    let pkts = malformed_packets(data(1, 100, false));
    for p in &pkts {
        r.handle_packet(Time::ZERO, p);
    }
    assert_eq!(r.stats().malformed, pkts.len() as u64);
    assert!(r.poll_transmit(Time::ZERO).is_none());
}

// ---- receiver --------------------------------------------------------------------------------------

/// Offsets on the receiver side are relative to the sender's ISN, as above.
fn data(off: u64, len: usize, fin: bool) -> Bytes {
    let mut buf = vec![0u8; len];
    payload::fill(off - 1, &mut buf);
    let flags = if fin { TcpFlags::FIN } else { TcpFlags::NONE };
    to_receiver(TcpRepr { seq: seq(off), ack: Some(IRS + 1), flags, ..Default::default() }, &buf)
}

fn receiver(cfg: TcpConfig) -> Receiver {
    let mut r = Receiver::new(cfg, RECEIVER_ADDR, SENDER_ADDR, IRS);
    let syn =
        TcpRepr { seq: ISS, flags: TcpFlags::SYN, mss: Some(MSS as u16), sack_permitted: true, ..Default::default() };
    r.handle_packet(Time::ZERO, &to_receiver(syn, &[]));
    let synack = drain_receiver(&mut r, Time::ZERO);
    assert_eq!(synack.len(), 1);
    assert!(synack[0].syn && synack[0].ack == Some(ISS + 1));
    r
}

/// The acknowledgment numbers (as sender offsets) and SACK blocks the receiver sends now.
fn acks(r: &mut Receiver, now: Time) -> Vec<(u64, Vec<(u64, u64)>)> {
    let back = |s: SeqNum| u64::from(s.0.wrapping_sub(ISS.0));
    drain_receiver(r, now)
        .into_iter()
        .map(|a| (back(a.ack.unwrap()), a.sack.iter().map(|&(l, r)| (back(l), back(r))).collect()))
        .collect()
}

#[test]
fn receiver_handshake_offers_sack_only_if_configured_and_offered() {
    for (configured, expect) in [(true, true), (false, false)] {
        let mut r =
            Receiver::new(TcpConfig { sack: configured, ..Default::default() }, RECEIVER_ADDR, SENDER_ADDR, IRS);
        let syn =
            TcpRepr { seq: ISS, flags: TcpFlags::SYN, mss: Some(1200), sack_permitted: true, ..Default::default() };
        r.handle_packet(Time::ZERO, &to_receiver(syn, &[]));
        let out = drain_receiver(&mut r, Time::ZERO);
        assert_eq!(out[0].sack_permitted, expect);
        assert_eq!(out[0].mss, Some(1460));
        // A retransmitted SYN gets the SYN-ACK again.
        r.handle_packet(Time::ZERO, &to_receiver(syn, &[]));
        assert!(drain_receiver(&mut r, Time::ZERO)[0].syn);
    }
}

#[test]
fn delayed_ack_timer_and_every_second_segment() {
    let mut r = receiver(TcpConfig::default());
    let t = Time::from_millis(10);
    r.handle_packet(t, &data(1, 1000, false));
    assert!(acks(&mut r, t).is_empty(), "one segment: ACK delayed");
    assert_eq!(r.poll_timeout(), Some(t + Duration::from_millis(200)));
    r.handle_timeout(t + Duration::from_millis(199));
    assert!(acks(&mut r, t).is_empty());
    r.handle_timeout(t + Duration::from_millis(200));
    assert_eq!(acks(&mut r, t), vec![(1001, vec![])]);
    assert_eq!(r.poll_timeout(), None);
    // Two full segments: ACK at once.
    r.handle_packet(t, &data(1001, 1000, false));
    assert!(acks(&mut r, t).is_empty());
    r.handle_packet(t, &data(2001, 1000, false));
    assert_eq!(acks(&mut r, t), vec![(3001, vec![])]);
    assert_eq!(r.poll_timeout(), None, "the ACK cancelled the timer");
    // Delayed ACKs off: every segment is acknowledged.
    let mut r = receiver(TcpConfig { delayed_ack_ms: 0.0, ..Default::default() });
    r.handle_packet(t, &data(1, 1000, false));
    assert_eq!(acks(&mut r, t), vec![(1001, vec![])]);
}

#[test]
fn delayed_ack_on_bsds_fast_timer_waits_for_the_next_tick() {
    let mut r = receiver(TcpConfig { delayed_ack_tick: true, ..Default::default() });
    // A segment 10 ms after a tick is acknowledged on the next one, 190 ms later.
    let t = Time::from_millis(410);
    r.handle_packet(t, &data(1, 1000, false));
    assert!(acks(&mut r, t).is_empty());
    assert_eq!(r.poll_timeout(), Some(Time::from_millis(600)));
    r.handle_timeout(Time::from_millis(599));
    assert!(acks(&mut r, t).is_empty());
    r.handle_timeout(Time::from_millis(600));
    assert_eq!(acks(&mut r, t), vec![(1001, vec![])]);
    // One arriving exactly on a tick waits a whole tick (the timer has just run).
    let t = Time::from_millis(800);
    r.handle_packet(t, &data(1001, 1000, false));
    assert_eq!(r.poll_timeout(), Some(Time::from_millis(1000)));
    // A second segment still acknowledges at once, cancelling the timer.
    r.handle_packet(t, &data(2001, 1000, false));
    assert_eq!(acks(&mut r, t), vec![(3001, vec![])]);
    assert_eq!(r.poll_timeout(), None);
}

#[test]
fn out_of_order_gets_immediate_dupacks_with_sack_blocks_and_reassembles() {
    let mut r = receiver(TcpConfig { sack: true, ..Default::default() });
    let t = Time::ZERO;
    r.handle_packet(t, &data(1, 1000, false));
    acks(&mut r, t);
    r.handle_timeout(Time::from_secs(1));
    assert_eq!(acks(&mut r, t), vec![(1001, vec![])]);
    // 1001 lost; 2001 and 4001 arrive (3001 lost too), then 5001.
    r.handle_packet(t, &data(2001, 1000, false));
    assert_eq!(acks(&mut r, t), vec![(1001, vec![(2001, 3001)])], "immediate dupack with a SACK block");
    r.handle_packet(t, &data(4001, 1000, false));
    assert_eq!(acks(&mut r, t), vec![(1001, vec![(4001, 5001), (2001, 3001)])], "most recent block first");
    r.handle_packet(t, &data(5001, 1000, false));
    assert_eq!(acks(&mut r, t), vec![(1001, vec![(4001, 6001), (2001, 3001)])]);
    assert_eq!(r.stats().out_of_order_segments, 3);
    assert_eq!(r.stats().dupacks_sent, 3);
    assert_eq!(r.delivered_bytes(), 1000);
    // The first hole fills: immediate ACK up to the next hole.
    r.handle_packet(t, &data(1001, 1000, false));
    assert_eq!(acks(&mut r, t), vec![(3001, vec![(4001, 6001)])]);
    // A duplicate is counted and re-acknowledged.
    r.handle_packet(t, &data(2001, 1000, false));
    assert_eq!(acks(&mut r, t), vec![(3001, vec![(4001, 6001)])]);
    assert_eq!(r.stats().duplicate_segments, 1);
    // An overlapping retransmission of a different size fills the last hole, the FIN comes last.
    r.handle_packet(t, &data(2501, 2000, false));
    assert_eq!(acks(&mut r, t), vec![(6001, vec![])]);
    r.handle_packet(t, &data(6001, 10, true));
    assert_eq!(acks(&mut r, t), vec![(6012, vec![])], "the FIN takes one sequence number");
    assert!(r.fin_received());
    let mut off = 0;
    while let Some(b) = r.read() {
        assert!(payload::matches(off, &b));
        off += b.len() as u64;
    }
    assert_eq!(off, 6010);
    assert_eq!(r.delivered_bytes(), 6010);
}

#[test]
fn out_of_order_fin_and_no_sack_without_negotiation() {
    let mut r = receiver(TcpConfig::default());
    let t = Time::ZERO;
    r.handle_packet(t, &data(1001, 500, true));
    assert_eq!(acks(&mut r, t), vec![(1, vec![])], "no SACK blocks unless negotiated");
    assert!(!r.fin_received());
    r.handle_packet(t, &data(1, 1000, false));
    assert_eq!(acks(&mut r, t), vec![(1502, vec![])]);
    assert!(r.fin_received());
    assert_eq!(r.delivered_bytes(), 1500);
}

#[test]
fn sack_blocks_limited_by_option_space() {
    let mut r = receiver(TcpConfig { sack: true, ..Default::default() });
    let t = Time::ZERO;
    for i in 0..6u64 {
        r.handle_packet(t, &data(1001 + 2000 * i, 1000, false));
    }
    let all = acks(&mut r, t);
    let last = &all.last().unwrap().1;
    assert_eq!(last.len(), 4, "four blocks fit without timestamps");
    assert_eq!(last[0], (11001, 12001));
    assert_eq!(last[3], (5001, 6001));
}

// ---- whole transfers ---------------------------------------------------------------------------------

fn pair(variant: Variant, total: u64) -> Pair {
    let c = TcpConfig { variant, sack: variant == Variant::Sack, ..TcpConfig::default() };
    Pair::new(c.clone(), c, total)
}

#[test]
fn lossless_transfer_every_variant() {
    for v in Variant::ALL {
        let mut p = pair(v, 200_000);
        assert!(p.run(100_000), "{v} did not finish");
        assert_eq!(p.read, 200_000);
        assert_eq!(p.sender.stats().segments_retransmitted, 0);
        if v == Variant::Bbr {
            // BBR counts its window in whole segments up to Linux's clamp (`snd_cwnd_clamp`): 44 of 1460.
            assert_eq!(p.sender.cwnd(), 65535 / 1460 * 1460, "window opened to the clamp");
        } else {
            assert_eq!(p.sender.cwnd(), 65535, "window opened fully");
        }
    }
}

#[test]
fn zero_byte_transfer_and_lost_handshake() {
    let mut p = pair(Variant::Reno, 0);
    assert!(p.run(1000));
    let mut p = pair(Variant::Reno, 5000);
    // SYN, SYN-ACK and the first data segment are each lost once.
    p.drop = Box::new(|d, i, _| (d == Dir::ToReceiver && (i == 0 || i == 2)) || (d == Dir::ToSender && i == 0));
    assert!(p.run(1000));
    assert_eq!(p.read, 5000);
}

/// Drops three data packets of one window (at full window) and nothing else.
fn three_losses(v: Variant) -> Pair {
    let mut p = pair(v, 300_000);
    p.rate = Some(250_000);
    p.drop = Box::new(|d, i, _| d == Dir::ToReceiver && [60, 63, 66].contains(&i));
    assert!(p.run(100_000));
    assert_eq!(p.read, 300_000);
    p
}

#[test]
fn sack_recovers_multiple_losses_without_timeout_but_reno_times_out() {
    let sack = three_losses(Variant::Sack);
    assert_eq!(sack.sender.stats().timeouts, 0);
    assert_eq!(sack.sender.stats().fast_retransmits, 1);
    let newreno = three_losses(Variant::NewReno);
    assert_eq!(newreno.sender.stats().timeouts, 0, "NewReno: one hole per RTT, no timeout");
    let reno = three_losses(Variant::Reno);
    assert!(reno.sender.stats().timeouts >= 1, "classic Reno: several losses in a window end in a timeout");
    assert!(sack.now < reno.now, "SACK finishes sooner: {} vs {}", sack.now, reno.now);
    let tahoe = three_losses(Variant::Tahoe);
    assert!(tahoe.sender.stats().fast_retransmits >= 1);
}

#[test]
fn runs_are_deterministic() {
    let trace = || {
        let mut p = pair(Variant::Sack, 100_000);
        p.drop = Box::new(|_, i, _| i % 7 == 3);
        assert!(p.run(100_000));
        (p.now, p.sender.stats().clone(), p.receiver.stats().clone())
    };
    assert_eq!(trace(), trace());
}

mod prop {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    /// (seq offset, ack offset, flags, payload length, SACK blocks as offsets), offsets relative to the
    /// ISNs and allowed to fall before them or far ahead.
    type Wild = (i64, i64, u8, usize, Vec<(i64, i64)>);

    fn wild() -> impl Strategy<Value = Wild> {
        (
            -3000i64..80_000,
            -3000i64..80_000,
            any::<u8>(),
            0usize..1600,
            proptest::collection::vec((-3000i64..80_000, -3000i64..80_000), 0..4),
        )
    }

    fn wild_repr(base: SeqNum, other: SeqNum, w: &Wild) -> TcpRepr {
        let at = |b: SeqNum, o: i64| SeqNum(b.0.wrapping_add(o as u32));
        let mut repr = TcpRepr {
            seq: at(base, w.0),
            ack: Some(at(other, w.1)),
            flags: TcpFlags(w.2 & !0x10),
            ..TcpRepr::default()
        };
        for &(l, r) in &w.4 {
            repr.sack.push(at(other, l), at(other, r));
        }
        repr
    }

    #[test]
    fn no_data_is_accepted_beyond_a_fin() {
        // A FIN whose data all lies before the stream ends it at offset 0; a later segment claiming bytes
        // after that FIN must not be delivered (found by `wild_segments_never_panic`).
        let mut r = receiver(TcpConfig { sack: true, ..TcpConfig::default() });
        r.handle_packet(
            Time::ZERO,
            &to_receiver(TcpRepr { seq: ISS + 1, ack: Some(IRS + 1), ..TcpRepr::default() }, &[]),
        );
        let w1: Wild = (-121, 0, 0xa9, 122, vec![]);
        let w2: Wild = (0, 0, 0x18, 3, vec![]);
        for (i, w) in [w1, w2].iter().enumerate() {
            let mut buf = vec![0u8; w.3];
            let skip = (1 - w.0).clamp(0, w.3 as i64) as usize;
            payload::fill((w.0 - 1).max(0) as u64, &mut buf[skip..]);
            let now = Time::from_millis(10 * (i as u64 + 1));
            r.handle_packet(now, &to_receiver(wild_repr(ISS, IRS, w), &buf));
        }
        assert!(r.fin_received());
        assert_eq!(r.delivered_bytes(), 0);
        assert!(r.read().is_none());
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
        /// Strange but well-formed segments (any flags, sequence and acknowledgment numbers anywhere
        /// around the window, nonsense SACK blocks) and raw garbage never make an endpoint panic, and
        /// the receiver never hands out bytes that are not the stream's.
        #[test]
        fn wild_segments_never_panic(segs in proptest::collection::vec(wild(), 1..24), raw in proptest::collection::vec(any::<u8>(), 0..80)) {
            let (mut s, _) = established(cfg(Variant::Sack), 50_000);
            let mut r = receiver(TcpConfig { sack: true, ..TcpConfig::default() });
            r.handle_packet(Time::ZERO, &to_receiver(TcpRepr { seq: ISS + 1, ack: Some(IRS + 1), ..TcpRepr::default() }, &[]));
            let mut now = Time::from_millis(200);
            for w in &segs {
                now += Duration::from_millis(7);
                let mut buf = vec![0u8; w.3];
                // Byte k sits at stream offset w.0 - 1 + k; those before the stream stay zero.
                let skip = (1 - w.0).clamp(0, w.3 as i64) as usize;
                payload::fill((w.0 - 1).max(0) as u64, &mut buf[skip..]);
                s.handle_packet(now, &to_sender(wild_repr(IRS, ISS, w)));
                r.handle_packet(now, &to_receiver(wild_repr(ISS, IRS, w), &buf));
                s.handle_packet(now, &Bytes::from(raw.clone()));
                r.handle_packet(now, &Bytes::from(raw.clone()));
                drain_sender(&mut s, now);
                drain_receiver(&mut r, now);
                if let Some(t) = s.poll_timeout() { s.handle_timeout(t); }
                if let Some(t) = r.poll_timeout() { r.handle_timeout(t); }
            }
            let mut off = 0;
            while let Some(b) = r.read() {
                prop_assert!(payload::matches(off, &b));
                off += b.len() as u64;
            }
            prop_assert_eq!(off, r.delivered_bytes());
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
        /// Whatever is lost (a bounded number of packets, so the transfer can finish), every variant
        /// delivers exactly the bytes sent and the sender finishes.
        #[test]
        fn delivers_everything_despite_loss(
            data_drops in proptest::collection::btree_set(0u64..250, 0..30),
            ack_drops in proptest::collection::btree_set(0u64..150, 0..30),
            total in 1u64..300_000,
            delay_ms in 1u64..400,
            timestamps: bool,
            delayed_ack: bool,
            bottleneck: bool,
        ) {
            for v in Variant::ALL {
                let delayed_ack_ms = if delayed_ack { 200.0 } else { 0.0 };
                let c = TcpConfig { variant: v, sack: v == Variant::Sack, timestamps, delayed_ack_ms, ..TcpConfig::default() };
                let mut p = Pair::new(c.clone(), c, total);
                p.rate = bottleneck.then_some(250_000); // WaveLAN's 2 Mbit/s
                p.delay = Duration::from_millis(delay_ms);
                let (dd, ad): (BTreeSet<u64>, BTreeSet<u64>) = (data_drops.clone(), ack_drops.clone());
                p.drop = Box::new(move |d, i, _| match d {
                    Dir::ToReceiver => dd.contains(&i),
                    Dir::ToSender => ad.contains(&i),
                });
                prop_assert!(p.run(200_000), "{} did not finish", v);
                prop_assert_eq!(p.read, total);
                prop_assert_eq!(p.receiver.delivered_bytes(), total);
                prop_assert_eq!(p.sender.snd_una_offset(), total);
            }
        }
    }
}

// ---- ELN-aware sender (Balakrishnan 1998 §3, "ELN Implementation") -------------------------------------------

/// A cumulative ACK up to sender offset `off` with the ELN bit set.
fn eln_ack(off: u64, sack: &[(u64, u64)]) -> Bytes {
    let mut repr = TcpRepr { seq: IRS + 1, ack: Some(seq(off)), eln: true, ..TcpRepr::default() };
    for &(l, r) in sack {
        repr.sack.push(seq(l), seq(r));
    }
    to_sender(repr)
}

fn eln_cfg(variant: Variant) -> TcpConfig {
    TcpConfig { eln: true, ..cfg(variant) }
}

#[test]
fn eln_retransmits_after_threshold_without_congestion_response() {
    let (mut s, first) = established(eln_cfg(Variant::Reno), 1_000_000);
    let (flight, now) = open_window(&mut s, first, 8, Time::from_millis(100));
    let una = flight[0].off;
    let (cwnd, ssthresh) = (s.cwnd(), s.ssthresh());
    s.handle_packet(now, &eln_ack(una, &[]));
    assert!(drain_sender(&mut s, now).is_empty(), "one ELN ACK is below eln_rexmt_thresh = 2");
    s.handle_packet(now, &eln_ack(una, &[]));
    let out = drain_sender(&mut s, now);
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].off, out[0].rexmit), (una, Some(true)), "the missing segment is retransmitted");
    assert_eq!((s.cwnd(), s.ssthresh()), (cwnd, ssthresh), "no congestion response");
    assert!(!s.in_recovery(), "no fast recovery");
    assert_eq!(s.stats().fast_retransmits, 0);
    assert_eq!(s.stats().eln_retransmits, 1);
    // Further ELN DUPACKs within the round trip: no resend and no fast-recovery inflation.
    for _ in 0..5 {
        s.handle_packet(now, &eln_ack(una, &[]));
    }
    assert!(drain_sender(&mut s, now).is_empty(), "at most once per round trip");
    assert_eq!(s.cwnd(), cwnd, "ELN DUPACKs do not inflate the window");
    assert_eq!(s.stats().dupacks_received, 7);
    assert_eq!(s.stats().eln_acks_received, 7);
    // One smoothed RTT later the segment may go again (the retransmission itself was lost).
    let srtt = s.srtt().unwrap();
    let later = Time(now.as_nanos() + srtt - 1);
    s.handle_packet(later, &eln_ack(una, &[]));
    assert!(drain_sender(&mut s, later).is_empty());
    let later = Time(now.as_nanos() + srtt);
    s.handle_packet(later, &eln_ack(una, &[]));
    let out = drain_sender(&mut s, later);
    assert_eq!((out.len(), out[0].off), (1, una));
    assert_eq!(s.stats().eln_retransmits, 2);
    assert_eq!((s.cwnd(), s.ssthresh()), (cwnd, ssthresh));
    // The hole is filled: new data acknowledged, the window grows as usual.
    let high = flight.last().unwrap().off + u64::from(MSS);
    s.handle_packet(later, &ack(high, &[]));
    assert!(s.cwnd() > cwnd);
    assert_eq!(s.stats().timeouts, 0);
}

#[test]
fn plain_dupacks_after_eln_for_the_same_hole_are_not_congestion() {
    let (mut s, first) = established(eln_cfg(Variant::Reno), 1_000_000);
    let (flight, now) = open_window(&mut s, first, 8, Time::from_millis(100));
    let una = flight[0].off;
    let (cwnd, ssthresh) = (s.cwnd(), s.ssthresh());
    s.handle_packet(now, &eln_ack(una, &[]));
    s.handle_packet(now, &eln_ack(una, &[]));
    assert_eq!(drain_sender(&mut s, now).len(), 1, "the ELN retransmission");
    // The base station has seen the retransmission and cleaned the hole: the DUPACKs still on their way
    // back arrive unmarked, for the same segment. They must not start a fast retransmit.
    for _ in 0..4 {
        s.handle_packet(now, &ack(una, &[]));
    }
    assert!(drain_sender(&mut s, now).is_empty());
    assert_eq!(s.stats().fast_retransmits, 0);
    assert_eq!((s.cwnd(), s.ssthresh()), (cwnd, ssthresh));
    assert!(!s.in_recovery());
    // Once the hole is acknowledged, plain DUPACKs for a new hole are congestion signals again.
    let next = flight[1].off;
    s.handle_packet(now, &ack(next, &[]));
    for _ in 0..3 {
        s.handle_packet(now, &ack(next, &[]));
    }
    assert_eq!(s.stats().fast_retransmits, 1, "an unexplained loss gets the ordinary response");
}

#[test]
fn eln_on_a_new_ack_counts_as_the_first_and_threshold_is_configurable() {
    let (mut s, first) = established(eln_cfg(Variant::NewReno), 1_000_000);
    let (flight, now) = open_window(&mut s, first, 8, Time::from_millis(100));
    // The FH acknowledges segment 0 and the BS marks the new ACK: segment 1 was corrupted.
    let hole = flight[1].off;
    s.handle_packet(now, &eln_ack(hole, &[]));
    let out = drain_sender(&mut s, now);
    assert!(out.iter().all(|x| x.rexmit == Some(false)), "new data only after the first ELN ACK");
    s.handle_packet(now, &eln_ack(hole, &[]));
    let out = drain_sender(&mut s, now);
    assert_eq!((out[0].off, out[0].rexmit), (hole, Some(true)), "the second ELN ACK for the number triggers");

    let (mut s, first) = established(TcpConfig { eln_rexmt_thresh: 3, ..eln_cfg(Variant::Reno) }, 1_000_000);
    let (flight, now) = open_window(&mut s, first, 8, Time::from_millis(100));
    for i in 0..3 {
        s.handle_packet(now, &eln_ack(flight[0].off, &[]));
        assert_eq!(drain_sender(&mut s, now).len(), usize::from(i == 2), "ELN ACK {}", i + 1);
    }
}

#[test]
fn ordinary_dupacks_keep_congestion_control_and_eln_off_ignores_the_bit() {
    // ELN on, DUPACKs without the bit: Reno's fast retransmit and halving, unchanged.
    // ELN off, DUPACKs with the bit: an unmodified sender, which ignores it.
    for (cfg, marked) in [(eln_cfg(Variant::Reno), false), (cfg(Variant::Reno), true)] {
        let (mut s, first) = established(cfg, 1_000_000);
        let (flight, now) = open_window(&mut s, first, 8, Time::from_millis(100));
        let una = flight[0].off;
        for _ in 0..3 {
            s.handle_packet(now, &if marked { eln_ack(una, &[]) } else { ack(una, &[]) });
        }
        assert_eq!(drain_sender(&mut s, now)[0].off, una);
        assert_eq!(s.ssthresh(), 4 * MSS);
        assert_eq!(s.cwnd(), 7 * MSS);
        assert!(s.in_recovery());
        assert_eq!((s.stats().fast_retransmits, s.stats().eln_retransmits, s.stats().eln_acks_received), (1, 0, 0));
    }
}

#[test]
fn eln_sender_piggybacks_its_output_queue() {
    use lasthop_wire::queue_option::QueueOccupancy;
    let occupancy = |p: &Bytes| {
        let ip = Ipv4Packet::new_checked(&p[..]).unwrap();
        let tcp = TcpPacket::new_checked(ip.payload()).unwrap();
        assert!(tcp.verify_checksum(ip.src_addr(), ip.dst_addr()));
        QueueOccupancy::find(&tcp).unwrap()
    };
    for (eln, set, want) in [(true, true, Some(QueueOccupancy(204))), (true, false, None), (false, true, None)] {
        let mut s = Sender::new(TcpConfig { eln, ..TcpConfig::default() }, SENDER_ADDR, RECEIVER_ADDR, ISS, 5000);
        if set {
            s.set_output_queue(0.8);
        }
        s.connect(Time::ZERO);
        let syn = s.poll_transmit(Time::ZERO).unwrap();
        assert_eq!(occupancy(&syn), want, "eln {eln}, set {set}");
        let synack =
            TcpRepr { seq: IRS, ack: Some(ISS + 1), flags: TcpFlags::SYN, mss: Some(1000), ..Default::default() };
        s.handle_packet(Time::from_millis(1), &to_sender(synack));
        let d = s.poll_transmit(Time::from_millis(1)).unwrap();
        assert_eq!(occupancy(&d), want);
        let seg = decode(&d, ISS);
        assert!(payload::matches(0, &seg.payload), "the payload is untouched by the option");
    }
}

#[test]
fn sack_dupacks_count_only_with_new_sack_information() {
    // The base station's NACK (or a FH DUPACK repeating it) SACKs nothing new: not a further dupack.
    let (mut s, first) = established(cfg(Variant::Sack), 1_000_000);
    let (flight, now) = open_window(&mut s, first, 8, Time::from_millis(100));
    let (m, o) = (u64::from(MSS), |i: usize| flight[i].off);
    s.handle_packet(now, &ack(o(0), &[(o(2), o(2) + m)]));
    s.handle_packet(now, &ack(o(0), &[(o(2), o(2) + m)]));
    s.handle_packet(now, &ack(o(0), &[(o(2), o(2) + m)]));
    assert!(!s.in_recovery(), "three ACKs, one piece of news: no fast retransmit");
    assert!(drain_sender(&mut s, now).iter().all(|x| x.rexmit == Some(false)));
    s.handle_packet(now, &ack(o(0), &[(o(2), o(3) + m)]));
    assert!(!s.in_recovery());
    s.handle_packet(now, &ack(o(0), &[(o(2), o(4) + m)]));
    assert!(s.in_recovery(), "the third new report starts recovery");
    // One NACK SACKing three segments above a hole starts recovery at once (RFC 6675 IsLost).
    let (mut s, first) = established(cfg(Variant::Sack), 1_000_000);
    let (flight, now) = open_window(&mut s, first, 8, Time::from_millis(100));
    s.handle_packet(now, &ack(flight[0].off, &[(flight[1].off, flight[3].off + u64::from(MSS))]));
    assert!(s.in_recovery());
    assert_eq!(drain_sender(&mut s, now)[0].off, flight[0].off);
}

#[test]
fn eln_with_sack_retransmits_without_entering_recovery() {
    let (mut s, first) = established(eln_cfg(Variant::Sack), 1_000_000);
    let (flight, now) = open_window(&mut s, first, 8, Time::from_millis(100));
    let (m, o) = (u64::from(MSS), |i: usize| flight[i].off);
    let ssthresh = s.ssthresh();
    for k in 1..4 {
        s.handle_packet(now, &eln_ack(o(0), &[(o(1), o(k) + m)]));
    }
    let out = drain_sender(&mut s, now);
    assert_eq!(out.iter().filter(|x| x.rexmit == Some(true)).map(|x| x.off).collect::<Vec<_>>(), vec![o(0)]);
    assert!(!s.in_recovery(), "ELN DUPACKs with SACK blocks do not start SACK recovery");
    assert_eq!(s.ssthresh(), ssthresh);
}

#[test]
fn eln_transfer_over_a_lossy_path_completes_without_halving() {
    // Every 7th data packet is "corrupted"; the harness has no BS, so the test marks the receiver's ACKs
    // itself whenever they ask for a dropped segment, as the ELN agent would.
    use std::cell::RefCell;
    use std::rc::Rc;
    let dropped: Rc<RefCell<std::collections::BTreeSet<u32>>> = Rc::default();
    let c = eln_cfg(Variant::Reno);
    let mut p = Pair::new(c.clone(), TcpConfig::default(), 200_000);
    let d2 = dropped.clone();
    p.drop = Box::new(move |d, i, pkt| {
        if d == Dir::ToReceiver && i % 7 == 3 {
            let ip = Ipv4Packet::new_checked(&pkt[..]).unwrap();
            let tcp = TcpPacket::new_checked(ip.payload()).unwrap();
            if !tcp.payload().is_empty() {
                d2.borrow_mut().insert(tcp.seq_number().0);
                return true;
            }
        }
        false
    });
    // Mark by rewriting ACKs on their way: run the pair by hand.
    p.sender.connect(p.now);
    let mut steps = 0;
    while !(p.sender.is_finished() && p.receiver.fin_received()) && steps < 200_000 {
        steps += 1;
        // Mark pending ACKs to the sender that point at a dropped segment.
        let holes = dropped.borrow().clone();
        p.mark_acks(|ack| holes.contains(&ack));
        if !p.step() {
            break;
        }
    }
    assert!(p.sender.is_finished());
    assert_eq!(p.read, 200_000);
    let st = p.sender.stats();
    assert!(st.eln_retransmits > 0);
    assert_eq!(st.fast_retransmits, 0, "every loss was flagged as corruption: no congestion response");
}

// ---- open streams: Sender::push (persistent HTTP, Balakrishnan 1998 §5) --------------------------------------

/// An open sender sends nothing but the handshake until bytes are pushed, then exactly those bytes, no FIN.
#[test]
fn open_sender_sends_only_pushed_bytes_and_no_fin() {
    let mut s = Sender::new_open(cfg(Variant::Reno), SENDER_ADDR, RECEIVER_ADDR, ISS);
    s.connect(Time::ZERO);
    assert_eq!(drain_sender(&mut s, Time::ZERO).len(), 1);
    let synack =
        TcpRepr { seq: IRS, ack: Some(ISS + 1), flags: TcpFlags::SYN, mss: Some(MSS as u16), ..TcpRepr::default() };
    let t = Time::from_millis(100);
    s.handle_packet(t, &to_sender(synack));
    let segs = drain_sender(&mut s, t);
    assert!(segs.iter().all(|g| g.len == 0 && !g.fin), "{segs:?}"); // only the ACK of the SYN-ACK
    assert!(s.all_acked() && !s.is_finished() && s.poll_timeout().is_none());
    s.push(1500);
    let segs = drain_sender(&mut s, t);
    // initial cwnd 1: one full segment; the 500-byte tail waits for the ACK
    assert_eq!(segs.iter().map(|g| (g.off, g.len, g.fin)).collect::<Vec<_>>(), vec![(1, 1000, false)]);
    let t = Time::from_millis(200);
    s.handle_packet(t, &ack(1001, &[]));
    let segs = drain_sender(&mut s, t);
    assert_eq!(segs.iter().map(|g| (g.off, g.len, g.fin)).collect::<Vec<_>>(), vec![(1001, 500, false)]);
    s.handle_packet(t, &ack(1501, &[]));
    assert!(drain_sender(&mut s, t).is_empty());
    assert!(s.all_acked() && !s.is_finished() && s.poll_timeout().is_none());
    s.close();
    s.push(10); // ignored after close
    let segs = drain_sender(&mut s, t);
    assert_eq!(segs.iter().map(|g| (g.off, g.len, g.fin)).collect::<Vec<_>>(), vec![(1501, 0, true)]);
    s.handle_packet(t, &ack(1502, &[]));
    assert!(s.is_finished());
    assert_eq!(s.bytes_total(), 1500);
}

/// Objects pushed one after another over a lossy path arrive intact and in order, with the receiver's
/// integrity check (`payload::matches` in the harness) running across object boundaries, for every variant.
#[test]
fn pushed_objects_arrive_intact_across_losses() {
    for variant in Variant::ALL {
        let c = cfg(variant);
        let mut p = Pair::new(c.clone(), c.clone(), 0);
        p.sender = Sender::new_open(c, SENDER_ADDR, RECEIVER_ADDR, SeqNum(u32::MAX - 20_000));
        p.drop = Box::new(|dir, i, _| dir == Dir::ToReceiver && i % 7 == 3);
        p.sender.connect(p.now);
        let mut expected = 0;
        for object in [5_000u64, 1, 30_000, 2_920, 100_000] {
            p.sender.push(object);
            expected += object;
            let mut steps = 0;
            while p.read < expected {
                assert!(p.step(), "{variant}: stalled at {} of {expected}", p.read);
                steps += 1;
                assert!(steps < 100_000);
            }
            assert_eq!(p.read, expected, "{variant}");
            assert!(!p.receiver.fin_received());
        }
        p.sender.close();
        while !(p.sender.is_finished() && p.receiver.fin_received()) {
            assert!(p.step(), "{variant}: FIN not delivered");
        }
        assert_eq!(p.read, 137_921);
        assert!(p.sender.stats().segments_retransmitted > 0, "{variant}: the drop filter should have bitten");
    }
}

// ---- fast retransmit after handoff (Caceres 1995) ------------------------------------------------------

#[test]
fn handoff_retransmit_goes_back_to_una_at_once_without_backoff() {
    let cfg = TcpConfig { tick_ms: 0.0, ..cfg(Variant::Tahoe) };
    let (mut s, first) = established(cfg, 1_000_000);
    let (flight, now) = open_window(&mut s, first, 8, Time::from_millis(100));
    let una = flight[0].off;
    // The whole window vanished with the old cell; the new MSS has just ACKed the greeting.
    let t = now + Duration::from_millis(300);
    s.retransmit_now(t);
    let out = drain_sender(&mut s, t);
    assert_eq!(out.iter().map(|x| (x.off, x.len, x.rexmit)).collect::<Vec<_>>(), vec![(una, MSS, Some(true))]);
    assert_eq!(s.cwnd(), MSS, "slow start from one segment");
    assert_eq!(s.ssthresh(), 4 * MSS, "half the flight");
    assert_eq!((s.stats().fast_retransmits, s.stats().timeouts), (1, 0));
    assert_eq!(s.poll_timeout(), Some(t + Duration::from_millis(1000)), "timer restarted, not backed off");
    // Go-back-N: the ACK of the retransmission opens two segments, both resends of the lost window.
    let t2 = t + Duration::from_millis(20);
    s.handle_packet(t2, &ack(una + u64::from(MSS), &[]));
    let out = drain_sender(&mut s, t2);
    assert_eq!(
        out.iter().map(|x| (x.off, x.rexmit)).collect::<Vec<_>>(),
        vec![(una + u64::from(MSS), Some(true)), (una + 2 * u64::from(MSS), Some(true))]
    );
}

#[test]
fn handoff_retransmit_after_a_timeout_in_the_gap_keeps_the_backoff() {
    // 1 s rendezvous: the timer fired while the mobile heard no MSS and its retransmission was lost.
    let cfg = TcpConfig { tick_ms: 0.0, ..cfg(Variant::Tahoe) };
    let (mut s, first) = established(cfg, 1_000_000);
    let (flight, _) = open_window(&mut s, first, 4, Time::from_millis(100));
    let una = flight[0].off;
    let deadline = s.poll_timeout().unwrap();
    s.handle_timeout(deadline);
    assert_eq!(drain_sender(&mut s, deadline).len(), 1);
    assert_eq!(s.poll_timeout(), Some(deadline + Duration::from_millis(2000)));
    // Rendezvous: the greeting ACK arrives 300 ms later; the same segment goes again at once.
    let t = deadline + Duration::from_millis(300);
    s.retransmit_now(t);
    let out = drain_sender(&mut s, t);
    assert_eq!(out.iter().map(|x| (x.off, x.rexmit)).collect::<Vec<_>>(), vec![(una, Some(true))]);
    assert_eq!(s.poll_timeout(), Some(t + Duration::from_millis(2000)), "the backoff stays until new data is ACKed");
    assert_eq!((s.stats().timeouts, s.stats().fast_retransmits), (1, 1));
}

#[test]
fn handoff_retransmit_leaves_reno_recovery_and_does_nothing_when_idle() {
    // In fast recovery when the handoff completes: recovery ends, go-back-N from SND.UNA.
    let (mut s, first) = established(cfg(Variant::Reno), 1_000_000);
    let (flight, mut now) = open_window(&mut s, first, 8, Time::from_millis(100));
    let una = flight[0].off;
    for _ in 0..3 {
        now += Duration::from_millis(1);
        s.handle_packet(now, &ack(una, &[]));
    }
    drain_sender(&mut s, now);
    assert!(s.in_recovery());
    s.retransmit_now(now);
    assert!(!s.in_recovery());
    assert_eq!(s.cwnd(), MSS);
    let out = drain_sender(&mut s, now);
    assert_eq!(out.iter().map(|x| (x.off, x.rexmit)).collect::<Vec<_>>(), vec![(una, Some(true))]);
    // Nothing outstanding: no packet, no state change.
    let (mut s, first) = established(cfg(Variant::Tahoe), 1000);
    let end = first[0].off + u64::from(first[0].len) + 1; // data and FIN
    s.handle_packet(Time::from_millis(200), &ack(end, &[]));
    assert!(s.is_finished());
    let cwnd = s.cwnd();
    s.retransmit_now(Time::from_millis(300));
    assert!(drain_sender(&mut s, Time::from_millis(300)).is_empty());
    assert_eq!((s.cwnd(), s.stats().fast_retransmits), (cwnd, 0));
    // Before the connection exists: nothing.
    let mut s = Sender::new(cfg(Variant::Tahoe), SENDER_ADDR, RECEIVER_ADDR, ISS, 1000);
    s.retransmit_now(Time::ZERO);
    assert!(s.poll_transmit(Time::ZERO).is_none());
}

#[test]
fn handoff_dupacks_are_three_true_duplicates_even_with_a_delayed_ack_owed() {
    let t = Time::from_millis(10);
    // Nothing acknowledged yet (no connection): no ACK can be repeated.
    let mut idle = Receiver::new(TcpConfig::default(), RECEIVER_ADDR, SENDER_ADDR, IRS);
    idle.send_dupacks(3);
    assert!(drain_receiver(&mut idle, t).is_empty());
    let mut r = receiver(TcpConfig::default());
    r.handle_packet(t, &data(1, 1000, false));
    r.handle_packet(t, &data(1001, 1000, false));
    assert_eq!(acks(&mut r, t), vec![(2001, vec![])]);
    r.send_dupacks(3);
    assert_eq!(acks(&mut r, t), vec![(2001, vec![]); 3], "three ACKs repeating the last one");
    assert_eq!(r.stats().dupacks_sent, 3);
    assert!(acks(&mut r, t).is_empty(), "exactly three");
    // One segment waits for its delayed ACK: that ACK goes first, then three duplicates of it.
    r.handle_packet(t, &data(2001, 1000, false));
    assert!(acks(&mut r, t).is_empty());
    r.send_dupacks(3);
    assert_eq!(acks(&mut r, t), vec![(3001, vec![]); 4]);
    assert_eq!(r.stats().dupacks_sent, 6);
    assert_eq!(r.poll_timeout(), None, "the owed ACK went; no delayed ACK left");
}

#[test]
fn handoff_dupacks_trigger_the_fixed_senders_fast_retransmit() {
    // End to end through the two state machines: the receiver's three DUPACKs reach a Reno sender whose
    // window was lost, which retransmits SND.UNA without waiting for its timer.
    let (mut s, first) = established(cfg(Variant::Reno), 1_000_000);
    let (flight, now) = open_window(&mut s, first, 4, Time::from_millis(100));
    let mut r = receiver(TcpConfig::default());
    // The receiver has everything before the lost window and has acknowledged it.
    let una = flight[0].off;
    r.handle_packet(now, &data(1, (una - 1) as usize, false));
    r.handle_timeout(now + Duration::from_millis(200));
    let t = now + Duration::from_millis(200);
    assert_eq!(acks(&mut r, t), vec![(una, vec![])]);
    r.send_dupacks(3);
    let dupacks: Vec<Bytes> = std::iter::from_fn(|| r.poll_transmit(t)).collect();
    assert_eq!(dupacks.len(), 3);
    for d in &dupacks {
        // The receiver's packets are addressed to the sender's address and port: hand them over as they are.
        s.handle_packet(t, d);
    }
    let out = drain_sender(&mut s, t);
    assert_eq!((out[0].off, out[0].rexmit), (una, Some(true)));
    assert_eq!(s.stats().fast_retransmits, 1);
    assert_eq!(s.stats().timeouts, 0);
}

/// A cumulative ACK up to sender offset `off` carrying the handoff mark (Caceres 1995's "specially marked TCP ACK").
fn marked_ack(off: u64) -> Bytes {
    to_sender(TcpRepr { seq: IRS + 1, ack: Some(seq(off)), handoff_mark: true, ..TcpRepr::default() })
}

fn aware(variant: Variant) -> TcpConfig {
    TcpConfig { handoff_aware: true, ..cfg(variant) }
}

#[test]
fn marked_ack_sends_a_handoff_aware_sender_back_to_snd_una_in_slow_start() {
    let (mut s, first) = established(aware(Variant::Tahoe), 1_000_000);
    let (flight, now) = open_window(&mut s, first, 4, Time::from_millis(100));
    let una = flight[0].off;
    let max = s.snd_max_offset();
    let cwnd_before = s.cwnd();
    let deadline_before = s.poll_timeout().unwrap();
    // Two ordinary DUPACKs (a Tahoe sender waits for the third), then the mark: the go-back, not a third DUPACK.
    let t = now + Duration::from_millis(50);
    s.handle_packet(t, &ack(una, &[]));
    s.handle_packet(t, &ack(una, &[]));
    assert!(drain_sender(&mut s, t).is_empty());
    s.handle_packet(t, &marked_ack(una));
    let out = drain_sender(&mut s, t);
    assert_eq!(out.iter().map(|x| (x.off, x.rexmit)).collect::<Vec<_>>(), vec![(una, Some(true))]);
    assert_eq!(s.cwnd(), MSS, "slow start from one segment");
    assert_eq!(s.ssthresh(), (cwnd_before / 2).max(2 * MSS));
    assert_eq!((s.stats().handoff_marks_received, s.stats().fast_retransmits, s.stats().timeouts), (1, 1, 0));
    assert_eq!(s.stats().dupacks_received, 3, "the marked ACK is still an ACK");
    assert!(s.poll_timeout().unwrap() >= deadline_before, "the timer restarts from the mark");
    // Go-back-N: each ACK of a retransmission releases the next segments of the lost window, in order.
    let t2 = t + Duration::from_millis(100);
    s.handle_packet(t2, &ack(una + u64::from(MSS), &[]));
    let out = drain_sender(&mut s, t2);
    assert_eq!(
        out.iter().map(|x| (x.off, x.rexmit)).collect::<Vec<_>>(),
        vec![(una + u64::from(MSS), Some(true)), (una + 2 * u64::from(MSS), Some(true))]
    );
    assert!(out.iter().all(|x| x.off < max));
}

#[test]
fn marked_ack_of_new_data_goes_back_to_the_new_snd_una() {
    let (mut s, first) = established(aware(Variant::Reno), 1_000_000);
    let (flight, now) = open_window(&mut s, first, 4, Time::from_millis(100));
    let una = flight[0].off + u64::from(MSS); // the first segment got through before the handoff
    s.handle_packet(now, &marked_ack(una));
    let out = drain_sender(&mut s, now);
    assert_eq!(out.iter().map(|x| (x.off, x.rexmit)).collect::<Vec<_>>(), vec![(una, Some(true))]);
    assert_eq!((s.snd_una_offset() + 1, s.cwnd()), (una, MSS));
}

#[test]
fn unmarked_ack_or_an_unaware_sender_leaves_the_window_alone() {
    for (cfg, mark) in [(aware(Variant::Tahoe), false), (cfg(Variant::Tahoe), true)] {
        let (mut s, first) = established(cfg, 1_000_000);
        let (flight, now) = open_window(&mut s, first, 4, Time::from_millis(100));
        let una = flight[0].off;
        let (cwnd, ssthresh, deadline) = (s.cwnd(), s.ssthresh(), s.poll_timeout());
        let pkt = if mark { marked_ack(una) } else { ack(una, &[]) };
        s.handle_packet(now, &pkt);
        assert!(drain_sender(&mut s, now).is_empty(), "mark {mark}: one DUPACK, nothing sent");
        assert_eq!((s.cwnd(), s.ssthresh(), s.poll_timeout()), (cwnd, ssthresh, deadline));
        assert_eq!((s.stats().handoff_marks_received, s.stats().fast_retransmits), (0, 0));
        assert_eq!(s.stats().dupacks_received, 1, "an unmodified sender counts the marked ACK as a DUPACK");
        // Two more plain DUPACKs: the ordinary fast retransmit, the marked one counted among the three.
        s.handle_packet(now, &ack(una, &[]));
        s.handle_packet(now, &ack(una, &[]));
        assert_eq!(s.stats().fast_retransmits, 1);
    }
}

#[test]
fn marked_ack_with_nothing_outstanding_or_beyond_snd_max_changes_nothing() {
    let (mut s, first) = established(aware(Variant::Tahoe), 1000);
    let end = first[0].off + u64::from(first[0].len) + 1;
    s.handle_packet(Time::from_millis(200), &marked_ack(end));
    assert!(s.is_finished());
    assert!(drain_sender(&mut s, Time::from_millis(200)).is_empty());
    assert_eq!(s.stats().handoff_marks_received, 0);
    let (mut s, first) = established(aware(Variant::Tahoe), 1_000_000);
    let (_, now) = open_window(&mut s, first, 4, Time::from_millis(100));
    let cwnd = s.cwnd();
    s.handle_packet(now, &marked_ack(s.snd_max_offset() + 5000));
    assert!(drain_sender(&mut s, now).is_empty());
    assert_eq!((s.cwnd(), s.stats().handoff_marks_received), (cwnd, 0));
}

/// The mobile receiver's handoff signal at `t` (Caceres 1995 Fig. 9 (b)): the marked ACK or three DUPACKs,
/// delivered to the sender at once.
fn signal_handoff(r: &mut Receiver, s: &mut Sender, t: Time, marked: bool) {
    if marked {
        r.send_handoff_mark();
    } else {
        r.send_dupacks(3);
    }
    for p in std::iter::from_fn(|| r.poll_transmit(t)).collect::<Vec<_>>() {
        s.handle_packet(t, &p);
    }
}

#[test]
fn receiver_marks_exactly_one_ack_after_the_handoff() {
    let t = Time::from_millis(10);
    let mut idle = Receiver::new(TcpConfig::default(), RECEIVER_ADDR, SENDER_ADDR, IRS);
    idle.send_handoff_mark();
    assert!(drain_receiver(&mut idle, t).is_empty(), "no connection, no ACK to mark");
    let mut r = receiver(TcpConfig::default());
    r.handle_packet(t, &data(1, 1000, false));
    r.handle_packet(t, &data(1001, 1000, false));
    let plain = drain_receiver(&mut r, t);
    assert_eq!(plain.len(), 1);
    assert!(!plain[0].handoff_mark);
    r.send_handoff_mark();
    let out = drain_receiver(&mut r, t);
    assert_eq!(out.len(), 1);
    assert!(out[0].handoff_mark && out[0].ack == plain[0].ack, "a repeat of the last ACK, marked");
    assert_eq!((r.stats().handoff_marks_sent, r.stats().dupacks_sent), (1, 1));
    // A delayed ACK owed: that ACK (of new data) carries the mark; one packet, not two.
    r.handle_packet(t, &data(2001, 1000, false));
    r.send_handoff_mark();
    let out = drain_receiver(&mut r, t);
    assert_eq!(out.len(), 1);
    assert!(out[0].handoff_mark && out[0].ack == Some(seq(3001)));
    assert!(drain_receiver(&mut r, t).is_empty());
    assert_eq!(r.poll_timeout(), None);
}

#[test]
fn handoff_mark_takes_the_fixed_tahoe_sender_back_where_three_dupacks_resend_one_segment() {
    // End to end through the two state machines: the window of 4 is lost; the receiver holds everything
    // before it. Three DUPACKs make Tahoe resend one segment (then it waits for its timer as the others
    // are gone); the marked ACK makes the aware sender go back and resend the whole window as ACKs return.
    let run = |marked: bool| {
        let cfg = if marked { aware(Variant::Tahoe) } else { cfg(Variant::Tahoe) };
        let (mut s, first) = established(cfg, 1_000_000);
        let (flight, now) = open_window(&mut s, first, 4, Time::from_millis(100));
        let mut r = receiver(TcpConfig::default());
        let una = flight[0].off;
        r.handle_packet(now, &data(1, (una - 1) as usize, false));
        let t = now + Duration::from_millis(200);
        r.handle_timeout(t);
        assert_eq!(acks(&mut r, t), vec![(una, vec![])]);
        signal_handoff(&mut r, &mut s, t, marked);
        // Shuttle packets both ways, no loss, 10 ms apart, for 300 ms (well before any timer).
        let mut now = t;
        for _ in 0..30 {
            for p in std::iter::from_fn(|| s.poll_transmit(now)).collect::<Vec<_>>() {
                r.handle_packet(now, &p);
            }
            now += Duration::from_millis(10);
            r.handle_timeout(now);
            for p in std::iter::from_fn(|| r.poll_transmit(now)).collect::<Vec<_>>() {
                s.handle_packet(now, &p);
            }
        }
        assert_eq!(s.stats().timeouts, 0);
        (s.stats().segments_retransmitted, s.snd_una_offset() + 1 >= flight.last().unwrap().off + u64::from(MSS))
    };
    assert_eq!(run(false), (1, false), "three DUPACKs: one segment, the rest wait for the timer");
    let (resent, recovered) = run(true);
    assert!(recovered && resent >= 4, "the marked ACK: the whole lost window again, {resent} resent");
}

/// A Tahoe sender with eight segments in flight whose timer fired while the mobile was between cells (a
/// 1 s rendezvous): the timeout went back to SND.UNA (cwnd one segment, ssthresh four) and its
/// retransmission was lost in the gap. Returns the sender, the window's first offset and the time.
fn timed_out_in_the_gap(cfg: TcpConfig) -> (Sender, u64, Time) {
    let cfg = TcpConfig { tick_ms: 0.0, ..cfg };
    let (mut s, first) = established(cfg, 1_000_000);
    let (flight, _) = open_window(&mut s, first, 8, Time::from_millis(100));
    let deadline = s.poll_timeout().unwrap();
    s.handle_timeout(deadline);
    let lost = drain_sender(&mut s, deadline);
    assert_eq!(lost.iter().map(|x| (x.off, x.rexmit)).collect::<Vec<_>>(), vec![(flight[0].off, Some(true))]);
    assert_eq!((s.cwnd(), s.ssthresh(), s.stats().timeouts), (MSS, 4 * MSS, 1));
    (s, flight[0].off, deadline)
}

#[test]
fn marked_ack_of_new_data_after_a_timeout_in_the_gap_keeps_the_window_the_ack_opened() {
    // The traced case (fast-rexmit-sh, 1 s rendezvous): the mobile held three segments of the window and
    // owed their ACK when it left; that ACK was lost, so the mark rides the repeat of it. The timeout's
    // go-back already stands at the new SND.UNA: the mark resends nothing else and cuts nothing again.
    let (mut s, una, timed_out) = timed_out_in_the_gap(aware(Variant::Tahoe));
    let t = timed_out + Duration::from_millis(300);
    let acked = una + 3 * u64::from(MSS);
    s.handle_packet(t, &marked_ack(acked));
    let out = drain_sender(&mut s, t);
    assert_eq!(
        out.iter().map(|x| (x.off, x.rexmit)).collect::<Vec<_>>(),
        vec![(acked, Some(true)), (acked + u64::from(MSS), Some(true))],
        "two segments, as the same ACK unmarked would release: an ACK at once from a receiver that ACKs every other"
    );
    assert_eq!((s.cwnd(), s.ssthresh()), (2 * MSS, 4 * MSS), "slow start from the timeout, ssthresh of the timeout");
    assert_eq!(s.stats().handoff_marks_received, 1);
    assert_eq!((s.stats().fast_retransmits, s.stats().timeouts), (0, 1), "nothing rewound");
    assert_eq!(
        s.poll_timeout(),
        Some(t + Duration::from_millis(1000)),
        "new data ACKed: timer restarted, backoff gone"
    );
    // Without the mark the sender does exactly the same.
    let (mut plain, _, _) = timed_out_in_the_gap(aware(Variant::Tahoe));
    plain.handle_packet(t, &ack(acked, &[]));
    assert_eq!(drain_sender(&mut plain, t), out);
    assert_eq!((plain.cwnd(), plain.ssthresh()), (s.cwnd(), s.ssthresh()));
}

#[test]
fn marked_ack_after_a_timeout_in_the_gap_resends_from_snd_una_without_a_second_cut() {
    // The timeout's retransmission was lost; the owed ACK arrived first (unmarked) and released two more
    // segments, lost as well; then the marked repeat of that ACK. Go back to SND.UNA at once, with the
    // two-segment window and the timeout's ssthresh (a fresh go-back would take cwnd to one segment and
    // ssthresh to half of what is left in flight, 2.5 segments).
    let (mut s, una, timed_out) = timed_out_in_the_gap(aware(Variant::Tahoe));
    let t = timed_out + Duration::from_millis(300);
    let acked = una + 3 * u64::from(MSS);
    s.handle_packet(t, &ack(acked, &[]));
    assert_eq!(drain_sender(&mut s, t).len(), 2);
    let t2 = t + Duration::from_millis(5);
    s.handle_packet(t2, &marked_ack(acked));
    let out = drain_sender(&mut s, t2);
    assert_eq!(
        out.iter().map(|x| (x.off, x.rexmit)).collect::<Vec<_>>(),
        vec![(acked, Some(true)), (acked + u64::from(MSS), Some(true))]
    );
    assert_eq!((s.cwnd(), s.ssthresh()), (2 * MSS, 4 * MSS));
    assert_eq!((s.stats().handoff_marks_received, s.stats().fast_retransmits, s.stats().timeouts), (1, 1, 1));
    assert_eq!(s.stats().dupacks_received, 1, "the marked repeat is still a DUPACK, not counted toward three");
    assert_eq!(s.poll_timeout(), Some(t2 + Duration::from_millis(1000)), "timer restarted from the mark");
    // A marked DUPACK with nothing new since the timeout: the lost retransmission goes again at once,
    // cwnd and ssthresh stay the timeout's, the backed-off timer restarts.
    let (mut s, una, timed_out) = timed_out_in_the_gap(aware(Variant::Tahoe));
    let t = timed_out + Duration::from_millis(300);
    s.handle_packet(t, &marked_ack(una));
    let out = drain_sender(&mut s, t);
    assert_eq!(out.iter().map(|x| (x.off, x.rexmit)).collect::<Vec<_>>(), vec![(una, Some(true))]);
    assert_eq!((s.cwnd(), s.ssthresh(), s.stats().fast_retransmits), (MSS, 4 * MSS, 1));
    assert_eq!(s.poll_timeout(), Some(t + Duration::from_millis(2000)));
    // Once the go-back's window is all acknowledged, a later handoff's mark goes back afresh.
    let (mut s, una, timed_out) = timed_out_in_the_gap(aware(Variant::Tahoe));
    let mut now = timed_out;
    let mut to = una + u64::from(MSS); // this time the timeout's retransmission arrives
    while s.snd_una_offset() + 1 < una + 8 * u64::from(MSS) {
        now += Duration::from_millis(10);
        s.handle_packet(now, &ack(to, &[]));
        for seg in drain_sender(&mut s, now) {
            to = to.max(seg.off + u64::from(seg.len));
        }
    }
    assert!(s.cwnd() > 2 * MSS);
    s.handle_packet(now, &marked_ack(s.snd_una_offset() + 1));
    assert_eq!((s.cwnd(), s.stats().fast_retransmits), (MSS, 1), "past the window: a full go-back");
    assert_eq!(drain_sender(&mut s, now).len(), 1);
}

#[test]
fn marked_ack_after_a_timeout_resumes_as_soon_as_three_dupacks() {
    // End to end through the two state machines, the traced 1 s rendezvous: eight segments in flight, the
    // mobile got three of them and its ACKs of them were lost in the gap, the sender's timeout fired
    // there and its retransmission was lost too. Then the handoff completes and the mobile signals.
    // Measured: when the mobile first holds a byte the sender had not sent before the handoff.
    let resume = |marked: bool| {
        let (mut s, una, timed_out) = timed_out_in_the_gap(aware(Variant::Tahoe));
        let max_before = s.snd_max_offset();
        let mut r = receiver(TcpConfig::default());
        r.handle_packet(timed_out, &data(1, (una - 1) as usize + 3 * MSS as usize, false));
        r.handle_timeout(timed_out + Duration::from_millis(200));
        drain_receiver(&mut r, timed_out + Duration::from_millis(200)); // lost in the gap
        let t = timed_out + Duration::from_millis(300);
        signal_handoff(&mut r, &mut s, t, marked);
        let mut now = t;
        for _ in 0..50 {
            for p in std::iter::from_fn(|| s.poll_transmit(now)).collect::<Vec<_>>() {
                r.handle_packet(now, &p);
            }
            if r.delivered_bytes() > max_before {
                return now - t;
            }
            now += Duration::from_millis(10);
            r.handle_timeout(now);
            for p in std::iter::from_fn(|| r.poll_transmit(now)).collect::<Vec<_>>() {
                s.handle_packet(now, &p);
            }
        }
        panic!("no new data within 500 ms (marked {marked})");
    };
    let (dupacks, marked) = (resume(false), resume(true));
    assert_eq!(marked, dupacks, "the marked ACK resumes with the DUPACKs");
    assert!(marked < Duration::from_millis(200), "no wait for a delayed ACK: {marked:?}");
}

// ---- one-way (ns-style) endpoints and ns's timer ------------------------------------------------------

/// The configuration of examples/web-ns.toml: ns-2's one-way agents of 1997 (MSS 1000, a 100 ms tick,
/// a 6 s initial RTO, no minimum RTO beyond two ticks, an ACK per segment).
fn ns_cfg(variant: Variant) -> TcpConfig {
    TcpConfig {
        variant,
        sack: variant == Variant::Sack,
        mss: MSS as u16,
        max_window: 20_000,
        initial_ssthresh: 20_000,
        tick_ms: 100.0,
        min_rto_ms: 0.0,
        max_rto_ms: 100_000_000.0,
        initial_rto_ms: 6000.0,
        delayed_ack_ms: 0.0,
        timer: crate::TimerStyle::Ns,
        ..TcpConfig::default()
    }
}

#[test]
fn established_pair_starts_with_data_and_no_syn() {
    for variant in [Variant::Reno, Variant::Sack] {
        let cfg = ns_cfg(variant);
        let mut s = Sender::new_established(cfg.clone(), SENDER_ADDR, RECEIVER_ADDR, ISS, IRS);
        let mut r = Receiver::new_established(cfg, RECEIVER_ADDR, SENDER_ADDR, IRS, ISS);
        assert!(r.is_synchronized());
        assert!(drain_sender(&mut s, Time::ZERO).is_empty(), "nothing to send, and no SYN");
        s.push(2500);
        let first = drain_sender(&mut s, Time::ZERO);
        assert_eq!(first.len(), 1, "initial window of one segment");
        assert!(!first[0].syn && !first[0].fin);
        assert_eq!((first[0].off, first[0].len), (1, MSS));
        assert_eq!(first[0].ack, Some(IRS + 1), "acknowledges the receiver's implicit SYN");
        // The receiver takes it as in-order data and ACKs it at once (TCPSink: no delayed ACK).
        let mut p = s.poll_transmit(Time::ZERO);
        assert!(p.is_none());
        let mut s2 = Sender::new_established(ns_cfg(variant), SENDER_ADDR, RECEIVER_ADDR, ISS, IRS);
        s2.push(2500);
        p = s2.poll_transmit(Time::ZERO);
        r.handle_packet(Time::from_millis(10), p.as_ref().unwrap());
        let acks = drain_receiver(&mut r, Time::from_millis(10));
        assert_eq!(acks.len(), 1);
        assert_eq!(acks[0].ack, Some(seq(1 + u64::from(MSS))));
        assert_eq!(r.read().map(|c| c.len()), Some(MSS as usize));
        // Out of order: the third segment before the second gives a DUPACK, with SACK for Sack.
        s2.handle_packet(Time::from_millis(20), &ack(1 + u64::from(MSS), &[]));
        let two = drain_sender(&mut s2, Time::from_millis(20));
        assert_eq!(two.len(), 2, "slow start: two more segments");
        let third =
            to_receiver(TcpRepr { seq: seq(two[1].off), ack: Some(IRS + 1), ..TcpRepr::default() }, &two[1].payload);
        r.handle_packet(Time::from_millis(30), &third);
        let dup = drain_receiver(&mut r, Time::from_millis(30));
        assert_eq!(dup[0].ack, Some(seq(1 + u64::from(MSS))));
        assert_eq!(!dup[0].sack.is_empty(), variant == Variant::Sack, "{variant}: SACK only when agreed");
    }
}

#[test]
fn ns_timer_counts_ticks_is_exact_and_keeps_backoff_without_a_sample() {
    let mut s = Sender::new_established(ns_cfg(Variant::Reno), SENDER_ADDR, RECEIVER_ADDR, ISS, IRS);
    s.push(10_000);
    let t0 = Time::from_millis(1234);
    assert_eq!(drain_sender(&mut s, t0).len(), 1);
    // No RTT sample yet: rtxcur_init_ = 6 s, exact (not rounded to a tick boundary).
    assert_eq!(s.poll_timeout(), Some(t0 + Duration::from_secs(6)));
    // ACKed 30 ms later, within one 100 ms tick: t_rtt_ = 1 tick, srtt = 1, rttvar = 1/2, RTO = 3 ticks.
    let t1 = t0 + Duration::from_millis(30);
    s.handle_packet(t1, &ack(1 + u64::from(MSS), &[]));
    assert_eq!(s.rto_ns(), 300_000_000);
    let sent = drain_sender(&mut s, t1);
    assert_eq!(sent.len(), 2);
    assert_eq!(s.poll_timeout(), Some(t1 + Duration::from_millis(300)), "exact: now + RTO");
    ns_rtt_samples_count_tick_boundaries();
    // Timeout: RTO doubles; the ACK of the retransmission (Karn: no sample) does not reset it, unlike BSD.
    let t2 = t1 + Duration::from_millis(300);
    s.handle_timeout(t2);
    assert_eq!(s.rto_ns(), 600_000_000);
    let rx = drain_sender(&mut s, t2);
    assert_eq!(rx[0].off, 1 + u64::from(MSS));
    let t3 = t2 + Duration::from_millis(30);
    s.handle_packet(t3, &ack(1 + 2 * u64::from(MSS), &[]));
    assert_eq!(s.rto_ns(), 600_000_000, "ns resets the backoff only with a valid RTT sample");
    let mut bsd = Sender::new_established(
        TcpConfig { timer: crate::TimerStyle::Bsd, tick_ms: 0.0, ..ns_cfg(Variant::Reno) },
        SENDER_ADDR,
        RECEIVER_ADDR,
        ISS,
        IRS,
    );
    bsd.push(10_000);
    drain_sender(&mut bsd, t0);
    bsd.handle_timeout(t0 + Duration::from_secs(6));
    drain_sender(&mut bsd, t0 + Duration::from_secs(6));
    bsd.handle_packet(t0 + Duration::from_millis(6030), &ack(1 + u64::from(MSS), &[]));
    assert_eq!(bsd.rto_ns(), 6_000_000_000, "BSD: any new ACK resets the backoff");
}

/// Tick counting of ns's RTT samples, through a sender: a segment sent at 1190 ms and ACKed at 1310 ms
/// crosses two tick boundaries (1200, 1300): t_rtt_ = 2, RTO = 2 + 4·1 = 6 ticks.
fn ns_rtt_samples_count_tick_boundaries() {
    {
        let mut s = Sender::new_established(ns_cfg(Variant::Reno), SENDER_ADDR, RECEIVER_ADDR, ISS, IRS);
        s.push(5000);
        drain_sender(&mut s, Time::from_millis(1190));
        s.handle_packet(Time::from_millis(1310), &ack(1 + u64::from(MSS), &[]));
        assert_eq!(s.rto_ns(), 600_000_000);
        // An 80 ms RTT that crosses no boundary still counts one tick; ns's fixed point then has
        // srtt·8 = 16 - 1 = 15, rttvar·4 = 4 + (1 - 1) = 4, RTO = ((4 << 3) + 15) >> 3 = 5 ticks.
        drain_sender(&mut s, Time::from_millis(1310));
        s.handle_packet(Time::from_millis(1310 + 80), &ack(1 + 2 * u64::from(MSS), &[]));
        assert_eq!(s.rto_ns(), 500_000_000);
    }
}

mod behaviours;
mod linux;
mod persist;
