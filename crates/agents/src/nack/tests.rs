//! State-machine tests: hand-built packets in, actions out, time passed in by hand. Data flows from the
//! mobile (MH) to the fixed host (FH); `seg(i)` is the sequence number of segment `i`, `fh_ack(i)` the FH's
//! ACK of everything before segment `i`.

use super::*;
use crate::mobile_sender_fixture::*;
use lasthop_wire::{Ipv4Packet, TcpFlags, TcpPacket};
use proptest::prelude::*;

fn ix(s: SeqNum) -> u32 {
    s.diff(seg(0)) as u32 / MSS
}

fn ms(n: u64) -> Time {
    Time::from_millis(n)
}

fn data(i: u32) -> Bytes {
    mh_data(i, 7)
}

fn fh_ack_ts(i: u32, ts: bool) -> Bytes {
    fh_ack_with(i, TcpRepr { window: 4321, timestamps: ts.then_some((55, 66)), ..TcpRepr::default() })
}

fn fh_ack(i: u32) -> Bytes {
    fh_ack_ts(i, false)
}

/// A NACK decoded: cumulative ACK and SACK blocks as segment indices.
#[derive(Debug, PartialEq)]
struct Nk {
    ack: u32,
    sack: Vec<(u32, u32)>,
}

struct H {
    n: Nack,
    now: Time,
}

impl H {
    fn new(cfg: NackConfig, sack: bool) -> H {
        let mut h = H { n: Nack::new(cfg), now: Time::ZERO };
        let syn = TcpRepr {
            src_port: MP,
            dst_port: FP,
            seq: seg(0) + u32::MAX,
            flags: TcpFlags::SYN,
            sack_permitted: sack,
            ..TcpRepr::default()
        };
        assert!(h.go(Side::ToWired, syn.emit_ipv4(MH, FH, 0, 64, &[])).is_empty());
        let synack = TcpRepr {
            src_port: FP,
            dst_port: MP,
            seq: SeqNum(FH_ISS),
            ack: Some(seg(0)),
            flags: TcpFlags::SYN,
            sack_permitted: sack,
            ..TcpRepr::default()
        };
        assert!(h.go(Side::ToMobile, synack.emit_ipv4(FH, MH, 0, 64, &[])).is_empty());
        h
    }

    /// Hands in a packet; asserts it was forwarded first; returns the NACKs that followed.
    fn go(&mut self, side: Side, p: Bytes) -> Vec<Nk> {
        let mut out = Vec::new();
        self.n.handle_packet(self.now, side, p.clone(), &mut out);
        assert_eq!(out.first(), Some(&Action::Forward(side, p)));
        out.drain(1..).map(decode).collect()
    }

    fn data(&mut self, segs: &[u32]) -> Vec<Nk> {
        segs.iter().flat_map(|&i| self.go(Side::ToWired, data(i))).collect()
    }

    fn ack(&mut self, i: u32) -> Vec<Nk> {
        self.go(Side::ToMobile, fh_ack(i))
    }

    fn timeout(&mut self, at: Time) -> Vec<Nk> {
        self.now = at;
        let mut out = Vec::new();
        self.n.handle_timeout(at, &mut out);
        out.into_iter().map(decode).collect()
    }
}

fn decode(a: Action) -> Nk {
    let Action::Inject(Side::ToMobile, p) = a else { panic!("expected a NACK toward the mobile, got {a:?}") };
    let ip = Ipv4Packet::new_checked(&p[..]).unwrap();
    assert!(ip.verify_checksum());
    assert_eq!((ip.src_addr(), ip.dst_addr()), (FH, MH), "a NACK looks like the FH's ACK");
    let tcp = TcpPacket::new_checked(ip.payload()).unwrap();
    assert!(tcp.verify_checksum(FH, MH));
    let r = TcpRepr::parse(&tcp).unwrap();
    assert_eq!((r.src_port, r.dst_port, r.seq, r.window), (FP, MP, SeqNum(FH_ISS + 1), 4321), "FH's fields repeated");
    assert!(tcp.payload().is_empty() && !r.eln);
    Nk { ack: ix(r.ack.unwrap()), sack: r.sack.as_slice().iter().map(|&(l, h)| (ix(l), ix(h))).collect() }
}

fn h() -> H {
    H::new(NackConfig::default(), true)
}

#[test]
fn nack_after_threshold_packets_past_a_gap() {
    let mut h = h();
    assert!(h.data(&[0, 1]).is_empty());
    assert!(h.ack(1).is_empty());
    // Segment 2 lost on the wireless hop; 3 and 4 are not enough...
    assert!(h.data(&[3, 4]).is_empty());
    // ...the third packet past the gap is.
    let n = h.data(&[5]);
    assert_eq!(n, vec![Nk { ack: 1, sack: vec![(3, 6), (1, 2)] }], "cumulative ACK is the FH's; newest block first");
    assert_eq!(h.n.stats().nacks_threshold, 1);
    // The count restarts: three more past the gap give another NACK with the grown block.
    assert!(h.data(&[6, 7]).is_empty());
    assert_eq!(h.data(&[8]), vec![Nk { ack: 1, sack: vec![(3, 9), (1, 2)] }]);
    // The retransmission fills the gap: nothing more, and no timer.
    assert!(h.data(&[2]).is_empty());
    assert_eq!(h.n.poll_timeout(), None);
    assert!(h.data(&[9, 10, 11]).is_empty());
}

#[test]
fn nack_on_timeout_once_per_silence() {
    let mut h = h();
    h.data(&[0]);
    h.ack(1);
    h.now = ms(10);
    assert!(h.data(&[2]).is_empty());
    assert_eq!(h.n.poll_timeout(), Some(ms(60)), "50 ms without new packets from the mobile");
    assert!(h.timeout(ms(59)).is_empty(), "early call does nothing");
    assert_eq!(h.timeout(ms(60)), vec![Nk { ack: 1, sack: vec![(2, 3)] }]);
    assert_eq!(h.n.poll_timeout(), None, "one NACK per silence");
    assert_eq!(h.n.stats().nacks_timeout, 1);
    // A new packet re-arms the timer.
    h.now = ms(100);
    h.data(&[3]);
    assert_eq!(h.n.poll_timeout(), Some(ms(150)));
    // The FH's ACK covering the gap (the segment reached it some other way) disarms it.
    h.ack(4);
    assert_eq!(h.n.poll_timeout(), None);
    assert!(h.timeout(ms(150)).is_empty());
}

#[test]
fn a_syn_that_recreates_a_connection_takes_its_timer_with_it() {
    // Connection churn on one key: each round arms the timer (a packet past a gap), then a SYN re-creates
    // the connection. The old timer entry must go with the old state: none may pile up, and none may fire
    // on the new connection.
    let mut h = h();
    for round in 0..100u64 {
        h.now = ms(round);
        h.data(&[0]);
        h.ack(1);
        h.data(&[2]);
        assert_eq!(h.n.timers_pending(), 1);
        let syn =
            TcpRepr { src_port: MP, dst_port: FP, seq: seg(0) + u32::MAX, flags: TcpFlags::SYN, ..TcpRepr::default() };
        assert!(h.go(Side::ToWired, syn.emit_ipv4(MH, FH, 0, 64, &[])).is_empty());
        assert_eq!(h.n.connections(), 1);
        assert_eq!(h.n.timers_pending(), 0, "round {round}");
        assert_eq!(h.n.poll_timeout(), None);
    }
    assert!(h.timeout(ms(10_000)).is_empty());
}

#[test]
fn never_acknowledges_more_than_the_fh() {
    let mut h = h();
    h.data(&[0, 1, 2]);
    // The FH has acknowledged nothing yet beyond the SYN: its ACK is segment 0.
    h.ack(0);
    let n = h.data(&[4, 5, 6]);
    assert_eq!(n.len(), 1);
    assert_eq!(n[0].ack, 0, "the BS saw 0..3 but the FH only acknowledged up to 0");
    assert_eq!(n[0].sack, vec![(4, 7), (0, 3)]);
    // A reordered older FH ACK does not lower what is repeated, and a newer one raises it.
    h.ack(0);
    h.ack(2);
    let n = h.data(&[8, 9, 10]);
    assert_eq!(n[0].ack, 2);
    assert!(n[0].sack.iter().all(|&(l, _)| l >= 2), "no SACK block below the cumulative ACK");
}

#[test]
fn no_nack_without_an_fh_ack_or_without_sack() {
    let mut h = h();
    assert!(h.data(&[0, 2, 3, 4]).is_empty(), "the FH has not ACKed anything: nothing to repeat");
    assert_eq!(h.n.stats().nacks_suppressed, 1);
    let mut no_sack = H::new(NackConfig::default(), false);
    no_sack.ack(0);
    assert!(no_sack.data(&[0, 2, 3, 4]).is_empty());
    assert_eq!(no_sack.n.stats().nacks_suppressed, 1);
    // A connection picked up mid-stream NACKs only when told to assume SACK.
    for assume in [false, true] {
        let mut n = Nack::new(NackConfig { assume_sack_permitted: assume, ..NackConfig::default() });
        let mut out = Vec::new();
        for p in [data(0), fh_ack(1), data(1), data(3), data(4), data(5)] {
            let side = if p[12..16] == MH.octets() { Side::ToWired } else { Side::ToMobile };
            n.handle_packet(Time::ZERO, side, p, &mut out);
        }
        assert_eq!(out.iter().filter(|a| matches!(a, Action::Inject(..))).count(), usize::from(assume));
    }
}

#[test]
fn sack_blocks_most_recent_first_and_limited() {
    let mut h = h();
    h.data(&[0]);
    h.ack(1);
    // Blocks at 2, 4, 6, 8, 10 (five blocks), then one more segment to reach the threshold.
    let mut all = h.data(&[2, 4, 6, 8, 10]);
    assert_eq!(all.len(), 1, "third packet past the gap");
    assert_eq!(all.remove(0).sack, vec![(6, 7), (4, 5), (2, 3)]);
    // Three more past the gap (8, 10, 12): four blocks fit without timestamps.
    let n = h.data(&[12]);
    assert_eq!(n[0].sack, vec![(12, 13), (10, 11), (8, 9), (6, 7)], "four blocks without timestamps");
    // With timestamps in the FH's ACK, three fit.
    h.go(Side::ToMobile, fh_ack_ts(1, true));
    let n = h.data(&[14, 16, 18]);
    assert_eq!(n[0].sack, vec![(18, 19), (16, 17), (14, 15)]);
}

#[test]
fn rst_and_fin_close_and_table_is_bounded() {
    let mut h = H::new(NackConfig { max_connections: 1, ..NackConfig::default() }, true);
    h.data(&[0]);
    assert_eq!(h.n.connections(), 1);
    let rst = TcpRepr { src_port: MP, dst_port: FP, seq: seg(1), flags: TcpFlags::RST, ..TcpRepr::default() };
    h.go(Side::ToWired, rst.emit_ipv4(MH, FH, 0, 64, &[]));
    assert_eq!(h.n.connections(), 0);
    // Another connection evicts the one there.
    h.data(&[0]);
    let other = TcpRepr { src_port: MP + 1, dst_port: FP, seq: SeqNum(1), ack: Some(SeqNum(1)), ..TcpRepr::default() };
    h.go(Side::ToWired, other.emit_ipv4(MH, FH, 0, 64, &[1; 10]));
    assert_eq!((h.n.connections(), h.n.stats().pass.connections_evicted), (1, 1));
}

#[test]
fn malformed_is_dropped() {
    let mut n = Nack::new(NackConfig::default());
    let mut out = Vec::new();
    n.handle_packet(Time::ZERO, Side::ToWired, data(0).slice(..25), &mut out);
    assert_eq!(out, vec![Action::Drop(DropReason::Malformed)]);
    assert_eq!(n.stats().pass.malformed_dropped, 1);
}

#[derive(Debug, Clone)]
enum Ev {
    Data(u32),
    Ack(u32),
    Wait(u64),
}

fn ev() -> impl Strategy<Value = Ev> {
    prop_oneof![
        4 => (0u32..40).prop_map(Ev::Data),
        1 => (0u32..40).prop_map(Ev::Ack),
        1 => (1u64..100).prop_map(Ev::Wait),
    ]
}

proptest! {
    /// Whatever arrives, every NACK repeats the highest ACK the FH has sent (never more), its SACK blocks lie
    /// above it, are disjoint, at most four, and cover only data the BS saw.
    #[test]
    fn nacks_never_ack_more_than_the_fh(events in proptest::collection::vec(ev(), 1..120)) {
        let mut h = h();
        let mut fh_max: Option<u32> = None;
        let mut seen = std::collections::BTreeSet::new();
        for e in events {
            let nacks = match e {
                Ev::Data(i) => { seen.insert(i); h.data(&[i]) }
                Ev::Ack(i) => { fh_max = Some(fh_max.map_or(i, |m| m.max(i))); h.ack(i) }
                Ev::Wait(d) => { let t = h.now + std::time::Duration::from_millis(d); h.timeout(t) }
            };
            for n in nacks {
                prop_assert_eq!(Some(n.ack), fh_max, "cumulative ACK must be the FH's highest");
                prop_assert!(!n.sack.is_empty() && n.sack.len() <= 4);
                for (k, &(l, r)) in n.sack.iter().enumerate() {
                    prop_assert!(l >= n.ack && l < r);
                    prop_assert!((l..r).all(|s| seen.contains(&s)), "SACKed {}..{} not all seen", l, r);
                    for &(l2, r2) in &n.sack[k + 1..] {
                        prop_assert!(r < l2 || r2 < l, "blocks overlap or touch");
                    }
                }
            }
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..120), to_mobile: bool) {
        let mut n = Nack::new(NackConfig::default());
        let mut out = Vec::new();
        let side = if to_mobile { Side::ToMobile } else { Side::ToWired };
        n.handle_packet(Time::ZERO, side, Bytes::from(data), &mut out);
        prop_assert_eq!(out.len(), 1);
        n.handle_timeout(Time::MAX, &mut out);
    }
}
