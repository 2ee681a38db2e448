//! State-machine tests: hand-built packets in, actions out. Data flows from the mobile (MH) to the fixed
//! host (FH) in segments of `MSS` bytes; `seg(i)` is the sequence number of segment `i`, and `ack(i)` the
//! FH's ACK of everything before segment `i`.

use super::*;
use crate::mobile_sender_fixture::*;
use lasthop_wire::ipv4::PROTO_UDP;
use lasthop_wire::queue_option;
use lasthop_wire::{Ipv4Packet, TcpFlags, TcpPacket, TcpRepr};
use proptest::prelude::*;

fn key() -> FlowKey {
    FlowKey { src: MH, src_port: MP, dst: FH, dst_port: FP }
}

/// MH -> FH data segment `i`, carrying the queue option when `q` is given.
fn data(i: u32, q: Option<u8>) -> Bytes {
    let p = mh_data(i, 0x42);
    match q {
        Some(q) => queue_option::insert_ipv4(&p, QueueOccupancy(q)).unwrap(),
        None => p,
    }
}

/// FH -> MH ACK of everything before segment `i`, ELN bit as given.
fn ack(i: u32, eln: bool) -> Bytes {
    fh_ack_with(i, TcpRepr { window: 65535, eln, timestamps: Some((11, 22)), ..TcpRepr::default() })
}

fn mark() -> Eln {
    Eln::new(ElnConfig::default())
}

/// Hands in one packet; returns the one forwarded packet (asserting there is exactly one action).
fn run(e: &mut Eln, side: Side, p: Bytes) -> Bytes {
    let mut out = Vec::new();
    e.handle_packet(Time::ZERO, side, p, &mut out);
    assert_eq!(out.len(), 1, "{out:?}");
    match out.pop().unwrap() {
        Action::Forward(s, p) => {
            assert_eq!(s, side);
            p
        }
        a => panic!("unexpected {a:?}"),
    }
}

/// The ELN bit of a forwarded ACK, asserting that its checksums are still valid.
fn eln_of(p: &Bytes) -> bool {
    let ip = Ipv4Packet::new_checked(&p[..]).unwrap();
    assert!(ip.verify_checksum());
    let tcp = TcpPacket::new_checked(ip.payload()).unwrap();
    assert!(tcp.verify_checksum(ip.src_addr(), ip.dst_addr()), "checksum broken by marking");
    tcp.eln()
}

fn feed(e: &mut Eln, segs: &[u32]) {
    for &i in segs {
        run(e, Side::ToWired, data(i, None));
    }
}

fn ack_eln(e: &mut Eln, i: u32) -> bool {
    eln_of(&run(e, Side::ToMobile, ack(i, false)))
}

fn idx(v: Vec<(SeqNum, SeqNum)>) -> Vec<(u32, u32)> {
    let base = seg(0);
    v.into_iter().map(|(s, e)| (s.diff(base) as u32 / MSS, e.diff(base) as u32 / MSS)).collect()
}

#[test]
fn blocks_coalesce_holes_open_and_retransmissions_bridge_them() {
    let mut e = mark();
    feed(&mut e, &[0, 1, 2]);
    assert_eq!(idx(e.blocks(&key()).unwrap()), vec![(0, 3)], "in-sequence segments coalesce into one block");
    assert!(e.holes(&key()).unwrap().is_empty());
    feed(&mut e, &[5]);
    assert_eq!(idx(e.blocks(&key()).unwrap()), vec![(0, 3), (5, 6)]);
    assert_eq!(idx(e.holes(&key()).unwrap()), vec![(3, 5)], "an out-of-sequence segment opens a hole");
    feed(&mut e, &[6, 8]);
    assert_eq!(idx(e.blocks(&key()).unwrap()), vec![(0, 3), (5, 7), (8, 9)]);
    assert_eq!(idx(e.holes(&key()).unwrap()), vec![(3, 5), (7, 8)]);
    feed(&mut e, &[3]);
    assert_eq!(idx(e.holes(&key()).unwrap()), vec![(4, 5), (7, 8)], "a retransmission fills part of a hole");
    feed(&mut e, &[4, 7]);
    assert_eq!(idx(e.blocks(&key()).unwrap()), vec![(0, 9)], "filling the holes bridges the blocks");
    assert!(e.holes(&key()).unwrap().is_empty());
    feed(&mut e, &[4]);
    assert_eq!(idx(e.blocks(&key()).unwrap()), vec![(0, 9)], "a duplicate changes nothing");
    assert_eq!(e.stats().holes_recorded, 2);
    assert_eq!(e.stats().holes_bridged, 3);
}

#[test]
fn acks_clean_blocks_and_holes_below_them() {
    let mut e = mark();
    feed(&mut e, &[0, 1, 3, 4, 6]);
    assert!(!ack_eln(&mut e, 1));
    assert_eq!(idx(e.blocks(&key()).unwrap()), vec![(1, 2), (3, 5), (6, 7)], "part of a block is cleaned");
    assert!(ack_eln(&mut e, 5), "segment 5 is a hole");
    assert_eq!(idx(e.blocks(&key()).unwrap()), vec![(6, 7)]);
    assert_eq!(idx(e.holes(&key()).unwrap()), vec![(5, 6)], "holes below the ACK are gone");
    // An older ACK (reordered) cleans nothing and is not a reason to mark.
    assert!(!ack_eln(&mut e, 1));
    assert_eq!(idx(e.blocks(&key()).unwrap()), vec![(6, 7)]);
}

#[test]
fn marks_new_and_duplicate_acks_pointing_at_a_hole() {
    let mut e = mark();
    feed(&mut e, &[0, 1, 3, 4]);
    assert!(!ack_eln(&mut e, 1), "segment 1 was seen: not a hole");
    assert!(ack_eln(&mut e, 2), "a new ACK whose next segment is a hole is marked");
    assert!(ack_eln(&mut e, 2), "and so is each duplicate");
    assert!(ack_eln(&mut e, 2));
    assert_eq!((e.stats().acks_marked, e.stats().dupacks_marked), (3, 2));
    feed(&mut e, &[2]); // the mobile's retransmission
    assert!(!ack_eln(&mut e, 2), "hole filled: no longer marked");
    assert!(!ack_eln(&mut e, 5));
}

#[test]
fn never_marks_with_an_empty_block_list() {
    let mut e = mark();
    feed(&mut e, &[0, 1]);
    // Segment 2 is lost, nothing after it has reached the BS: the FH's ACK cleans the list to empty.
    assert!(!ack_eln(&mut e, 2));
    assert!(e.blocks(&key()).unwrap().is_empty());
    assert!(!ack_eln(&mut e, 2), "no hole can be known without a later block");
    assert_eq!(e.stats().acks_marked, 0);
    // An ACK of a connection the agent has no state for passes untouched.
    let mut fresh = mark();
    assert!(!ack_eln(&mut fresh, 2));
    assert_eq!(fresh.stats().pass.unknown_forwarded, 1);
}

#[test]
fn bs_input_queue_classifies_at_the_threshold_edge() {
    for (fraction, recorded) in [(0.0, true), (0.75, true), (0.7501, false), (1.0, false), (f64::NAN, false)] {
        let mut e = mark();
        e.set_input_queue(fraction);
        feed(&mut e, &[0, 2]);
        assert_eq!(e.stats().holes_recorded == 1, recorded, "input queue {fraction}");
        assert_eq!(e.stats().holes_classified_congestion == 1, !recorded, "input queue {fraction}");
        assert_eq!(ack_eln(&mut e, 1), recorded, "a congestion gap is never marked");
    }
}

#[test]
fn mobile_output_queue_from_the_option_classifies_too() {
    // 191/255 = 74.9 % is not above 75 %; 192/255 = 75.3 % is.
    for (q, recorded) in [(0u8, true), (191, true), (192, false), (255, false)] {
        let mut e = mark();
        run(&mut e, Side::ToWired, data(0, Some(q)));
        run(&mut e, Side::ToWired, data(2, Some(q)));
        assert_eq!(e.stats().queue_options_read, 2);
        assert_eq!(e.stats().holes_recorded == 1, recorded, "MH queue {q}");
        assert_eq!(ack_eln(&mut e, 1), recorded);
    }
    // Only the occupancy on the out-of-sequence packet matters.
    let mut e = mark();
    run(&mut e, Side::ToWired, data(0, Some(255)));
    run(&mut e, Side::ToWired, data(2, Some(10)));
    assert_eq!(e.stats().holes_recorded, 1);
    // Either queue above the threshold is enough.
    let mut e = mark();
    e.set_input_queue(0.9);
    run(&mut e, Side::ToWired, data(0, Some(0)));
    run(&mut e, Side::ToWired, data(2, Some(0)));
    assert_eq!(e.stats().holes_classified_congestion, 1);
}

#[test]
fn a_congestion_gap_then_a_corruption_gap() {
    let mut e = mark();
    e.set_input_queue(0.9);
    feed(&mut e, &[0, 2]);
    e.set_input_queue(0.1);
    feed(&mut e, &[4]);
    assert_eq!(idx(e.holes(&key()).unwrap()), vec![(3, 4)]);
    assert!(!ack_eln(&mut e, 1), "the congestion loss is left to ordinary congestion control");
    feed(&mut e, &[1]);
    assert!(ack_eln(&mut e, 3), "the corruption loss is flagged");
}

fn filter() -> Eln {
    Eln::new(ElnConfig { role: ElnRole::Filter, ..ElnConfig::default() })
}

#[test]
fn transit_filter_passes_eln_for_segments_it_saw_and_clears_the_rest() {
    // At A, data from the sender goes out over the wireless link (ToMobile) and ACKs come back ToWired.
    let mut a = filter();
    for i in [0, 1, 3, 4] {
        run(&mut a, Side::ToMobile, data(i, None)); // segment 2 was lost before A: congestion
    }
    assert!(a.holes(&key()).unwrap().is_empty(), "a filter records no holes");
    // B marks ACK(3) (segment 3 lost on the wireless link after A): A saw it, so the mark stays.
    let p = run(&mut a, Side::ToWired, ack(3, true));
    assert!(eln_of(&p));
    // B marks ACK(2) too (it never saw segment 2), but A did not see it either: cleared.
    let p = run(&mut a, Side::ToWired, ack(2, true));
    assert!(!eln_of(&p), "a loss before A is congestion: the ELN bit is cleared");
    // Unmarked ACKs pass as they are.
    assert!(!eln_of(&run(&mut a, Side::ToWired, ack(2, false))));
    assert_eq!((a.stats().eln_passed, a.stats().eln_cleared), (1, 1));
    // No state, no evidence: cleared.
    let mut empty = filter();
    assert!(!eln_of(&run(&mut empty, Side::ToWired, ack(2, true))));
}

#[test]
fn marker_and_filter_in_series() {
    // Sender -> A ~~wireless~~ B -> receiver. Segment 2 is corrupted between A and B.
    let (mut a, mut b) = (filter(), mark());
    for i in 0..5 {
        let p = run(&mut a, Side::ToMobile, data(i, None));
        if i != 2 {
            run(&mut b, Side::ToWired, p);
        }
    }
    let at_b = run(&mut b, Side::ToMobile, ack(2, false));
    assert!(eln_of(&at_b), "B marks");
    let at_a = run(&mut a, Side::ToWired, at_b);
    assert!(eln_of(&at_a), "A saw segment 2, so the sender learns it was a wireless loss");
}

#[test]
fn rst_and_acknowledged_fin_drop_state_and_the_table_is_bounded() {
    let mut e = Eln::new(ElnConfig { max_connections: 2, ..ElnConfig::default() });
    feed(&mut e, &[0]);
    let rst =
        TcpRepr { src_port: FP, dst_port: MP, seq: SeqNum(FH_ISS + 1), flags: TcpFlags::RST, ..TcpRepr::default() };
    run(&mut e, Side::ToMobile, rst.emit_ipv4(FH, MH, 0, 64, &[]));
    assert_eq!(e.connections(), 0);
    // FIN: acknowledged -> state dropped.
    let fin = TcpRepr {
        src_port: MP,
        dst_port: FP,
        seq: seg(1),
        ack: Some(SeqNum(FH_ISS + 1)),
        flags: TcpFlags::FIN,
        ..TcpRepr::default()
    };
    feed(&mut e, &[0]);
    run(&mut e, Side::ToWired, fin.emit_ipv4(MH, FH, 0, 64, &[]));
    let fin_ack =
        TcpRepr { src_port: FP, dst_port: MP, seq: SeqNum(FH_ISS + 1), ack: Some(seg(1) + 1), ..TcpRepr::default() };
    run(&mut e, Side::ToMobile, fin_ack.emit_ipv4(FH, MH, 0, 64, &[]));
    assert_eq!(e.connections(), 0);
    assert_eq!(e.stats().pass.connections_closed, 2);
    // Three connections through a table of two: the least recently active is evicted.
    for port in [1u16, 2, 3] {
        let r = TcpRepr { src_port: port, dst_port: FP, seq: SeqNum(1), ack: Some(SeqNum(1)), ..TcpRepr::default() };
        run(&mut e, Side::ToWired, r.emit_ipv4(MH, FH, 0, 64, &[1; 10]));
    }
    assert_eq!(e.connections(), 2);
    assert_eq!(e.stats().pass.connections_evicted, 1);
}

#[test]
fn block_list_is_bounded_and_errs_toward_no_mark() {
    let mut e = Eln::new(ElnConfig { max_blocks: 3, ..ElnConfig::default() });
    feed(&mut e, &[0, 2, 4, 6, 8]);
    let blocks = e.blocks(&key()).unwrap();
    assert_eq!(blocks.len(), 3);
    assert_eq!(idx(blocks), vec![(0, 1), (2, 3), (4, 9)], "the highest blocks were bridged");
    assert_eq!(idx(e.holes(&key()).unwrap()), vec![(1, 2), (3, 4)], "and the holes between them forgotten");
    assert!(ack_eln(&mut e, 1));
}

#[test]
fn non_tcp_fragments_and_malformed() {
    let mut e = mark();
    let mut udp = data(0, None).to_vec();
    udp[9] = PROTO_UDP;
    let mut ip = Ipv4Packet::new_unchecked(&mut udp[..]);
    ip.fill_checksum();
    run(&mut e, Side::ToWired, Bytes::from(udp));
    let mut frag = data(0, None).to_vec();
    frag[6] = 0x20; // MF
    run(&mut e, Side::ToWired, Bytes::from(frag));
    let mut out = Vec::new();
    e.handle_packet(Time::ZERO, Side::ToWired, data(0, None).slice(..30), &mut out);
    assert_eq!(out, vec![Action::Drop(DropReason::Malformed)]);
    let mut bad_opt = data(0, Some(1)).to_vec();
    bad_opt[20 + 21] = 9; // queue option length 9 runs past the header
    e.handle_packet(Time::ZERO, Side::ToWired, Bytes::from(bad_opt), &mut out);
    assert_eq!(out.len(), 2);
    assert_eq!(out[1], Action::Drop(DropReason::Malformed));
    let s = e.stats();
    assert_eq!(
        (s.pass.not_tcp_forwarded, s.pass.fragments_forwarded, s.pass.malformed_dropped, e.connections()),
        (1, 1, 2, 0)
    );
    assert!(e.counters().iter().any(|&(n, v)| n == "malformed_dropped" && v == 2));
    assert_eq!(e.poll_timeout(), None);
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..120), to_mobile: bool, filter_role: bool) {
        let mut e = if filter_role { filter() } else { mark() };
        let side = if to_mobile { Side::ToMobile } else { Side::ToWired };
        let mut out = Vec::new();
        e.handle_packet(Time::ZERO, side, Bytes::from(data), &mut out);
        prop_assert_eq!(out.len(), 1);
    }

    #[test]
    fn mutated_packets_never_panic(events in proptest::collection::vec((0u32..20, any::<bool>(), 0usize..80, any::<u8>()), 1..60), filter_role: bool) {
        let mut e = if filter_role { filter() } else { mark() };
        let mut out = Vec::new();
        for (i, is_ack, at, byte) in events {
            let mut p = if is_ack { ack(i, i % 3 == 0) } else { data(i, Some(byte)) }.to_vec();
            if at < p.len() && byte % 4 == 0 {
                p[at] = byte;
            }
            let side = if is_ack == filter_role { Side::ToWired } else { Side::ToMobile };
            out.clear();
            e.handle_packet(Time::ZERO, side, Bytes::from(p), &mut out);
            // One disposition per packet, as for arbitrary bytes.
            prop_assert_eq!(out.len(), 1);
        }
    }

    /// Marks only ever point at a recorded hole above every ACK seen, and never on an empty block list.
    #[test]
    fn marks_only_recorded_holes(events in proptest::collection::vec((0u32..30, any::<bool>()), 1..80)) {
        let mut e = mark();
        let mut seen = std::collections::BTreeSet::new();
        for (i, is_ack) in events {
            if is_ack {
                let holes = e.holes(&key()).unwrap_or_default();
                let blocks = e.blocks(&key()).unwrap_or_default();
                let marked = ack_eln(&mut e, i);
                if marked {
                    prop_assert!(!seen.contains(&i), "segment {} was seen yet marked", i);
                    prop_assert!(!blocks.is_empty() || holes.is_empty());
                }
            } else {
                seen.insert(i);
                feed(&mut e, &[i]);
            }
        }
    }
}

fn notifier() -> Eln {
    Eln::new(ElnConfig { role: ElnRole::MarkForwarded, ..ElnConfig::default() })
}

#[test]
fn fixed_sender_notifier_marks_duplicate_acks_for_segments_it_forwarded() {
    // The last-hop BS with a fixed sender: data goes out over the wireless link (ToMobile), the mobile's
    // ACKs come back ToWired. Segment 2 never reached the BS (lost upstream), segment 3 was forwarded.
    let mut bs = notifier();
    for i in [0, 1, 3, 4] {
        run(&mut bs, Side::ToMobile, data(i, None));
    }
    // The first ACK asking for segment 3 reports no loss yet: unmarked.
    assert!(!eln_of(&run(&mut bs, Side::ToWired, ack(3, false))));
    // Its duplicates: the BS forwarded segment 3, so it was lost on the wireless hop.
    assert!(eln_of(&run(&mut bs, Side::ToWired, ack(3, false))));
    assert!(eln_of(&run(&mut bs, Side::ToWired, ack(3, false))));
    assert_eq!((bs.stats().acks_marked, bs.stats().dupacks_marked), (2, 2));
    // A new ACK is never marked; duplicates for a segment the BS never forwarded are congestion losses.
    let mut up = notifier();
    for i in [0, 1, 3, 4] {
        run(&mut up, Side::ToMobile, data(i, None));
    }
    for _ in 0..3 {
        assert!(!eln_of(&run(&mut up, Side::ToWired, ack(2, false))), "segment 2 was lost before the BS");
    }
    // Once the ACK moves past the forwarded data, nothing is left to vouch for: no mark.
    let p = run(&mut bs, Side::ToWired, ack(5, false));
    assert!(!eln_of(&p));
    assert!(!eln_of(&run(&mut bs, Side::ToWired, ack(5, false))), "segment 5 was never forwarded");
    // No state, no evidence.
    let mut empty = notifier();
    assert!(!eln_of(&run(&mut empty, Side::ToWired, ack(2, false))));
    assert!(!eln_of(&run(&mut empty, Side::ToWired, ack(2, false))));
}

#[test]
fn fixed_sender_notifier_does_not_vouch_for_segments_forwarded_into_a_congested_queue() {
    let mut bs = notifier();
    run(&mut bs, Side::ToMobile, data(0, None));
    // The queue toward the mobile is above 75 % when segment 1 passes: it may be dropped there.
    bs.handle_queue_occupancy(Side::ToMobile, 0.9);
    run(&mut bs, Side::ToMobile, data(1, None));
    bs.handle_queue_occupancy(Side::ToMobile, 0.1);
    run(&mut bs, Side::ToMobile, data(2, None));
    // Only the queue on the data's side counts.
    bs.handle_queue_occupancy(Side::ToWired, 1.0);
    run(&mut bs, Side::ToMobile, data(3, None));
    assert_eq!(bs.stats().forwarded_under_congestion, 1);
    run(&mut bs, Side::ToWired, ack(1, false));
    assert!(!eln_of(&run(&mut bs, Side::ToWired, ack(1, false))), "a possible congestion loss stays unmarked");
    run(&mut bs, Side::ToWired, ack(3, false));
    assert!(eln_of(&run(&mut bs, Side::ToWired, ack(3, false))), "segment 3 passed an uncongested queue");
}
