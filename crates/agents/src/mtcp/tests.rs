//! State-machine tests: hand-built packets in, actions out. Data flows from the fixed host (FH) to the
//! mobile (MH) with sequence numbers that cross the 2^32 wrap; `s(n)` is the sequence number `n` bytes
//! after the FH's initial one.

use super::*;
use crate::DropReason;
use lasthop_wire::{Ipv4Packet, TcpFlags, TcpPacket};
use std::net::Ipv4Addr;

const FH: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const MH: Ipv4Addr = Ipv4Addr::new(10, 1, 0, 1);
const FP: u16 = 5001;
const MP: u16 = 40000;
const FH_ISS: u32 = u32::MAX - 700;
const MH_SEQ: u32 = 77;

fn s(n: u32) -> SeqNum {
    SeqNum(FH_ISS.wrapping_add(n))
}

/// FH -> MH data: bytes `from .. from + len` of the stream (byte 1 is the first after the SYN).
fn data(from: u32, len: usize, fin: bool) -> Bytes {
    let flags = if fin { TcpFlags::FIN } else { TcpFlags::default() };
    TcpRepr {
        src_port: FP,
        dst_port: MP,
        seq: s(from),
        ack: Some(SeqNum(MH_SEQ)),
        flags,
        window: 65535,
        ..TcpRepr::default()
    }
    .emit_ipv4(FH, MH, 1, 64, &vec![7u8; len])
}

/// MH -> FH ACK of everything before stream byte `n`.
fn ack(n: u32, window: u16) -> Bytes {
    TcpRepr { src_port: MP, dst_port: FP, seq: SeqNum(MH_SEQ), ack: Some(s(n)), window, ..TcpRepr::default() }
        .emit_ipv4(MH, FH, 1, 64, &[])
}

/// (ack number, window, checksum valid) of a MH -> FH packet.
fn read(p: &Bytes) -> (SeqNum, u16, bool) {
    let ip = Ipv4Packet::new_checked(&p[..]).unwrap();
    assert_eq!((ip.src_addr(), ip.dst_addr()), (MH, FH));
    let t = TcpPacket::new_checked(ip.payload()).unwrap();
    assert_eq!((t.src_port(), t.dst_port(), t.seq_number()), (MP, FP, SeqNum(MH_SEQ)));
    (t.ack_number(), t.window_len(), t.verify_checksum(MH, FH))
}

fn on(m: &mut Mtcp, side: Side, p: Bytes) -> Vec<Action> {
    let mut out = Vec::new();
    m.on_packet(Time::ZERO, side, p, &mut out);
    out
}

/// The single forwarded packet of `out`.
fn forwarded(out: &[Action]) -> Bytes {
    let f: Vec<_> =
        out.iter().filter_map(|a| if let Action::Forward(_, p) = a { Some(p.clone()) } else { None }).collect();
    assert_eq!(f.len(), 1, "{out:?}");
    f[0].clone()
}

fn injected(out: &[Action]) -> Vec<Bytes> {
    out.iter()
        .filter_map(|a| match a {
            Action::Inject(Side::ToWired, p) => Some(p.clone()),
            Action::Inject(..) => panic!("injected toward the mobile: {a:?}"),
            _ => None,
        })
        .collect()
}

/// A supervisor that has forwarded bytes 1..=3000 and seen the mobile acknowledge up to `acked`.
fn after(acked: u32) -> Mtcp {
    let mut m = Mtcp::new(MtcpConfig::default());
    for i in 0..3 {
        forwarded(&on(&mut m, Side::ToMobile, data(1 + 1000 * i, 1000, false)));
    }
    forwarded(&on(&mut m, Side::ToWired, ack(acked, 8000)));
    m
}

#[test]
fn the_ack_of_the_last_byte_is_withheld() {
    let mut m = after(1);
    let out = on(&mut m, Side::ToWired, ack(2001, 8000));
    let (a, w, ok) = read(&forwarded(&out));
    assert_eq!((a, w, ok), (s(2000), 8000, true), "one byte held back, checksum still valid");
    assert_eq!(m.stats().acks_withheld, 1);
}

#[test]
fn an_ack_of_no_data_passes_and_dupacks_stay_dupacks() {
    let mut m = Mtcp::new(MtcpConfig::default());
    forwarded(&on(&mut m, Side::ToMobile, data(1, 1000, false)));
    // Segment 1 lost: the mobile's DUPACKs ask for byte 1, which the sender must see as DUPACKs.
    for _ in 0..3 {
        assert_eq!(read(&forwarded(&on(&mut m, Side::ToWired, ack(1, 8000)))).0, s(1));
    }
    let mut m = after(1001);
    for _ in 0..3 {
        assert_eq!(read(&forwarded(&on(&mut m, Side::ToWired, ack(1001, 8000)))).0, s(1000));
    }
    assert_eq!(m.stats().acks_withheld, 4);
}

#[test]
fn a_disconnect_freezes_the_sender_with_the_withheld_ack_and_a_zero_window() {
    let mut m = after(2001);
    let mut out = Vec::new();
    m.link_down(Time::ZERO, &mut out);
    let acks = injected(&out);
    assert_eq!(acks.len(), 1);
    assert_eq!(read(&acks[0]), (s(2001), 0, true), "the withheld byte, window zero");
    // Once frozen, another report sends nothing new.
    out.clear();
    m.link_down(Time::ZERO, &mut out);
    assert!(out.is_empty());
    assert_eq!(m.stats().freezes, 1);
}

#[test]
fn probes_while_frozen_are_answered_with_the_zero_window() {
    let mut m = after(2001);
    m.link_down(Time::ZERO, &mut Vec::new());
    let out = on(&mut m, Side::ToMobile, data(2001, 1, false));
    forwarded(&out);
    let acks = injected(&out);
    assert_eq!(acks.len(), 1);
    assert_eq!(read(&acks[0]), (s(2001), 0, true));
    assert_eq!(m.stats().probes_answered, 1);
}

#[test]
fn reconnection_sends_a_window_update_and_withholding_resumes() {
    let mut m = after(2001);
    m.link_down(Time::ZERO, &mut Vec::new());
    let mut out = Vec::new();
    m.link_up(Time::ZERO, &mut out);
    assert_eq!(read(&injected(&out)[0]), (s(2001), 8000, true), "the mobile's own window");
    assert_eq!(m.stats().resumes, 1);
    // A DUPACK of 2001 now stays at 2001 (the sender has it) instead of going back to 2000.
    assert_eq!(read(&forwarded(&on(&mut m, Side::ToWired, ack(2001, 8000)))).0, s(2001));
    assert_eq!(read(&forwarded(&on(&mut m, Side::ToWired, ack(3001, 8000)))).0, s(3000));
}

#[test]
fn an_ack_from_the_mobile_while_frozen_resumes_the_sender() {
    let mut m = after(1001);
    m.link_down(Time::ZERO, &mut Vec::new());
    let out = on(&mut m, Side::ToWired, ack(2001, 4000));
    assert_eq!(read(&injected(&out)[0]), (s(1001), 4000, true));
    assert_eq!(read(&forwarded(&out)).0, s(2000), "the mobile's ACK goes on, its last byte withheld again");
    assert_eq!(m.stats().resumes, 1);
}

#[test]
fn the_ack_of_the_fin_is_released_unchanged() {
    let mut m = after(1);
    forwarded(&on(&mut m, Side::ToMobile, data(3001, 0, true)));
    assert_eq!(read(&forwarded(&on(&mut m, Side::ToWired, ack(3002, 8000)))).0, s(3002));
    assert_eq!(m.stats().final_acks_released, 1);
}

#[test]
fn a_corrupted_ack_stays_corrupted() {
    let mut m = after(1);
    let mut bad = ack(2001, 8000).to_vec();
    bad[20 + 16] ^= 0x55;
    let (a, _, ok) = read(&forwarded(&on(&mut m, Side::ToWired, Bytes::from(bad))));
    assert_eq!((a, ok), (s(2000), false));
}

#[test]
fn malformed_is_dropped_and_other_traffic_passes() {
    let mut m = Mtcp::new(MtcpConfig::default());
    assert_eq!(on(&mut m, Side::ToWired, Bytes::from_static(&[0x45, 0, 0])), vec![Action::Drop(DropReason::Malformed)]);
    let mut udp = ack(1, 1).to_vec();
    udp[9] = 17;
    let udp = Bytes::from(udp);
    assert_eq!(on(&mut m, Side::ToWired, udp.clone()), vec![Action::Forward(Side::ToWired, udp)]);
    // An ACK of a connection never seen passes unchanged, and nothing is frozen for it.
    let a = ack(500, 10);
    assert_eq!(on(&mut m, Side::ToWired, a.clone()), vec![Action::Forward(Side::ToWired, a)]);
    let mut out = Vec::new();
    m.link_down(Time::ZERO, &mut out);
    assert!(out.is_empty());
    let c = m.counters();
    assert!(c.contains(&("malformed_dropped", 1)) && c.contains(&("not_tcp_forwarded", 1)), "{c:?}");
}

#[test]
fn the_table_is_bounded() {
    let mut m = Mtcp::new(MtcpConfig { max_connections: 1 });
    forwarded(&on(&mut m, Side::ToMobile, data(1, 100, false)));
    let other = TcpRepr { src_port: FP + 1, dst_port: MP, seq: s(1), ack: Some(SeqNum(MH_SEQ)), ..TcpRepr::default() }
        .emit_ipv4(FH, MH, 1, 64, &[1u8; 100]);
    forwarded(&on(&mut m, Side::ToMobile, other));
    // The first connection was evicted: its ACK passes unchanged.
    assert_eq!(read(&forwarded(&on(&mut m, Side::ToWired, ack(101, 10)))).0, s(101));
}

#[test]
fn a_handoff_hands_the_frozen_state_to_the_next_supervisor_which_resumes_the_sender() {
    let mut old = after(2001);
    let mut out = Vec::new();
    // The mobile leaves the old cell: only its connections freeze (another mobile's would not).
    old.on_reachability(Time::ZERO, Ipv4Addr::new(10, 9, 9, 9), false, &mut out);
    assert!(out.is_empty());
    old.on_reachability(Time::ZERO, MH, false, &mut out);
    assert_eq!(read(&injected(&out)[0]), (s(2001), 0, true));
    // The state moves with the mobile; the old supervisor forgets it.
    let mut state = Agent::hand_over(&mut old, MH);
    assert_eq!(state.mtcp.as_ref().map(Handover::connections), Some(1));
    assert_eq!(Agent::hand_over(&mut old, MH).mtcp.map(|h| h.connections()), Some(0));
    let mut new = Mtcp::new(MtcpConfig::default());
    new.take_over(&mut state);
    assert!(state.mtcp.is_none(), "taken");
    // A probe at the new base station before the mobile is back: still frozen, answered with window zero.
    let probe = on(&mut new, Side::ToMobile, data(2001, 1, false));
    assert_eq!(read(&injected(&probe)[0]), (s(2001), 0, true));
    // The mobile is accepted at the new base station: the window update with the mobile's own window.
    out.clear();
    new.on_reachability(Time::ZERO, MH, true, &mut out);
    assert_eq!(read(&injected(&out)[0]), (s(2001), 8000, true));
    // Withholding goes on where the old supervisor left it.
    assert_eq!(read(&forwarded(&on(&mut new, Side::ToWired, ack(3001, 8000)))).0, s(3000));
    let c = new.counters();
    assert!(c.contains(&("taken_over", 1)) && c.contains(&("resumes", 1)), "{c:?}");
    assert!(old.counters().contains(&("handed_over", 1)));
}
