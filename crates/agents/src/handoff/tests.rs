//! State-machine tests: hand-built packets in, actions out.

use super::*;
use crate::snoop::SnoopConfig;
use crate::{Action, Agent, Side, Time};
use bytes::Bytes;
use lasthop_wire::ipip;
use lasthop_wire::ipv4::{Ipv4Packet, PROTO_IPIP};
use lasthop_wire::{SeqNum, TcpRepr};
use proptest::prelude::*;
use std::net::Ipv4Addr;

const FH: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const HA: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
const BS1: Ipv4Addr = Ipv4Addr::new(10, 0, 1, 1);
const BS2: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 1);
const BS3: Ipv4Addr = Ipv4Addr::new(10, 0, 3, 1);
const MH: Ipv4Addr = Ipv4Addr::new(10, 1, 0, 1);
const MSS: u32 = 100;
const T0: Time = Time(0);

/// FH → MH data segment `i`, IP ID 1000 + i.
fn data(i: u32) -> Bytes {
    let repr = TcpRepr {
        src_port: 5001,
        dst_port: 40000,
        seq: SeqNum(1 + i * MSS),
        ack: Some(SeqNum(1)),
        window: 65535,
        ..TcpRepr::default()
    };
    repr.emit_ipv4(FH, MH, 1000 + i as u16, 64, &[7u8; MSS as usize])
}

/// MH → FH ACK of everything before segment `i`.
fn ack(i: u32) -> Bytes {
    let repr = TcpRepr {
        src_port: 40000,
        dst_port: 5001,
        seq: SeqNum(1),
        ack: Some(SeqNum(1 + i * MSS)),
        window: 65535,
        ..TcpRepr::default()
    };
    repr.emit_ipv4(MH, FH, 1, 64, &[])
}

fn tunnel(i: u32, to: Ipv4Addr) -> Bytes {
    ipip::encapsulate(&data(i), HA, to, i as u16, 64)
}

fn ident(p: &Bytes) -> u16 {
    Ipv4Packet::new_checked(&p[..]).unwrap().ident()
}

/// IP IDs of the packets forwarded toward the mobile.
fn forwarded(out: &[Action]) -> Vec<u16> {
    out.iter()
        .filter_map(|a| match a {
            Action::Forward(Side::ToMobile, p) | Action::ForwardPriority(Side::ToMobile, p) => {
                (Ipv4Packet::new_checked(&p[..]).unwrap().protocol() != PROTO_HANDOFF).then(|| ident(p))
            }
            _ => None,
        })
        .collect()
}

fn controls(out: &[Action]) -> Vec<(Kind, Ipv4Addr)> {
    out.iter()
        .filter_map(|a| match a {
            Action::Inject(_, p) => {
                Control::parse(p).map(|c| (c.kind, Ipv4Packet::new_checked(&p[..]).unwrap().dst_addr()))
            }
            _ => None,
        })
        .collect()
}

fn bs(addr: Ipv4Addr, snoop: bool) -> BaseStation {
    let mut cfg = BsConfig::new(addr, HA);
    cfg.mobiles = vec![MH];
    cfg.peers = [BS1, BS2, BS3].into_iter().filter(|&b| b != addr).collect();
    if snoop {
        cfg.snoop = Some(SnoopConfig::default());
    }
    BaseStation::new(cfg)
}

fn forward_req(seq: u16, ids: &[u16]) -> Bytes {
    forward_to(BS2, seq, ids)
}

fn forward_to(bs: Ipv4Addr, seq: u16, ids: &[u16]) -> Bytes {
    let mut c = Control::new(Kind::Forward, seq, MH, Ipv4Addr::UNSPECIFIED);
    c.ids = ids.to_vec();
    c.emit(MH, bs, 1)
}

fn feed(b: &mut BaseStation, p: Bytes) -> Vec<Action> {
    let mut out = Vec::new();
    b.handle_packet(T0, Side::ToMobile, p, &mut out);
    out
}

#[test]
fn control_messages_round_trip_and_reject_garbage() {
    let mut c = Control::new(Kind::Forward, 65535, MH, BS1);
    c.ids = vec![1, 2, 0xffff];
    let p = c.emit(MH, BS2, 9);
    let ip = Ipv4Packet::new_checked(&p[..]).unwrap();
    assert!(ip.verify_checksum());
    assert_eq!((ip.src_addr(), ip.dst_addr(), ip.protocol()), (MH, BS2, PROTO_HANDOFF));
    assert_eq!(Control::parse(&p), Some(c));
    assert_eq!(Control::parse(&data(1)), None, "TCP is not control");
    let mut cut = p.to_vec();
    cut.truncate(p.len() - 1);
    assert_eq!(Control::parse(&cut), None, "truncated IDs");
    let mut bad = p.to_vec();
    bad[20] = 99;
    assert_eq!(Control::parse(&bad), None, "unknown kind");
    assert!(msg::seq_after(1, 65535) && !msg::seq_after(65535, 1) && !msg::seq_after(3, 3));
}

#[test]
fn buffering_bs_keeps_the_last_packets_and_forwards_nothing() {
    let mut b = bs(BS2, false);
    b.set_role(MH, Role::Buffering);
    for i in 0..20 {
        let out = feed(&mut b, tunnel(i, BS2));
        assert_eq!(out, vec![Action::Drop(crate::DropReason::Consumed)]);
    }
    // Buffer wrap: the 12 most recent, oldest first.
    assert_eq!(b.buffered_ids(MH), (1008..1020).collect::<Vec<u16>>());
}

#[test]
fn promotion_sends_what_follows_the_last_id_found() {
    let mut b = bs(BS2, false);
    b.set_role(MH, Role::Buffering);
    for i in 0..20 {
        feed(&mut b, tunnel(i, BS2));
    }
    // The mobile got up to 1014 (1013 and 1014 and an ID the buffer never had).
    let out = feed(&mut b, forward_req(1, &[1013, 1014, 4242]));
    assert_eq!(forwarded(&out), (1015..1020).collect::<Vec<u16>>());
    assert_eq!(controls(&out), vec![(Kind::Ack, MH)], "already a member: no Join");
    assert_eq!(b.role(MH), Role::Primary);
    assert_eq!((b.stats().resent_from_buffer, b.stats().sync_found), (5, 1));
    // Hosts holding the agent as any agent read the count by its counter name.
    assert!(b.counters().contains(&(RESENT_FROM_BUFFER, 5)), "{:?}", b.counters());
    // New packets now go straight through.
    assert_eq!(forwarded(&feed(&mut b, tunnel(20, BS2))), vec![1020]);
}

#[test]
fn promotion_without_a_match_sends_the_whole_buffer() {
    let mut b = bs(BS2, false);
    b.set_role(MH, Role::Buffering);
    for i in 0..30 {
        feed(&mut b, tunnel(i, BS2));
    }
    // IDs older than the buffer (they are still in the larger mirror) must not count as found.
    let out = feed(&mut b, forward_req(1, &[1001, 1002, 1003]));
    assert_eq!(forwarded(&out), (1018..1030).collect::<Vec<u16>>());
    assert_eq!(b.stats().sync_not_found, 1);
}

#[test]
fn idle_bs_joins_the_group_when_asked_and_leaves_on_stop() {
    let mut b = bs(BS3, false);
    assert_eq!(feed(&mut b, tunnel(0, BS3)), vec![Action::Drop(crate::DropReason::Consumed)]);
    let out = feed(&mut b, Control::new(Kind::Buffer, 1, MH, Ipv4Addr::UNSPECIFIED).emit(MH, BS3, 1));
    assert_eq!(controls(&out), vec![(Kind::Join, HA)]);
    assert_eq!(b.role(MH), Role::Buffering);
    feed(&mut b, tunnel(1, BS3));
    let out = feed(&mut b, Control::new(Kind::Stop, 2, MH, Ipv4Addr::UNSPECIFIED).emit(MH, BS3, 2));
    assert_eq!(controls(&out), vec![(Kind::Leave, HA)]);
    assert_eq!((b.role(MH), b.buffered_ids(MH).len()), (Role::Idle, 0));
    // An idle BS asked to forward joins and answers.
    let out = feed(&mut b, forward_to(BS3, 3, &[]));
    assert_eq!(controls(&out), vec![(Kind::Join, HA), (Kind::Ack, MH)]);
}

#[test]
fn stale_requests_are_ignored() {
    let mut b = bs(BS2, false);
    b.set_role(MH, Role::Buffering);
    feed(&mut b, forward_req(5, &[]));
    assert_eq!(b.role(MH), Role::Primary);
    // A Buffer request from handoff 4, delayed behind handoff 5's Forward, must not demote it.
    let out = feed(&mut b, Control::new(Kind::Buffer, 4, MH, Ipv4Addr::UNSPECIFIED).emit(MH, BS2, 1));
    assert!(controls(&out).is_empty());
    assert_eq!((b.role(MH), b.stats().control_stale), (Role::Primary, 1));
}

#[test]
fn mirror_snoop_caches_without_forwarding_and_synchronises_on_the_first_ack() {
    let mut b = bs(BS2, true);
    b.set_role(MH, Role::Buffering);
    for i in 0..10 {
        feed(&mut b, tunnel(i, BS2));
    }
    assert!(b.snoop(MH).is_none(), "a buffering BS sees no ACKs: it only mirrors");
    // The mobile has 0..=6; 7, 8, 9 are sent from the buffer.
    let out = feed(&mut b, forward_req(1, &[1004, 1005, 1006]));
    assert_eq!(forwarded(&out), vec![1007, 1008, 1009]);
    let key = crate::flow::FlowKey { src: FH, src_port: 5001, dst: MH, dst_port: 40000 };
    let snoop = b.snoop(MH).expect("primary runs Snoop");
    assert_eq!(snoop.cached_bytes(&key), Some(10 * MSS as usize), "mirror cached all ten, sent three");
    // First ACK from the mobile: segments 0..5 are acknowledged and freed.
    let mut out = Vec::new();
    b.handle_packet(T0, Side::ToWired, ack(5), &mut out);
    assert!(matches!(out[0], Action::Forward(Side::ToWired, _)));
    assert_eq!(b.snoop(MH).unwrap().cached_bytes(&key), Some(5 * MSS as usize));
    // A duplicate ACK for 5 means 5 (mirrored, never sent by this BS) is lost: resent from the cache.
    out.clear();
    b.handle_packet(Time(1_000_000), Side::ToWired, ack(5), &mut out);
    assert_eq!(forwarded(&out), vec![1005]);
    assert!(b.counters().iter().any(|&(k, v)| k == "local_retransmissions" && v == 1));
}

#[test]
fn a_snoop_that_takes_over_at_a_handoff_is_queue_timed() {
    let mut first = bs(BS1, true);
    first.set_role(MH, Role::Primary);
    assert!(first.reports_transmissions(MH), "the run's first primary times from transmissions");
    let mut off = BsConfig::new(BS1, HA);
    off.snoop = Some(SnoopConfig::default());
    off.transmit_reports = false;
    let mut off = BaseStation::new(off);
    off.set_role(MH, Role::Primary);
    assert!(!off.reports_transmissions(MH), "Balakrishnan 1995's queue-timed Snoop on request");
    // Multicast: promoted by Forward.
    let mut b = bs(BS2, true);
    b.set_role(MH, Role::Buffering);
    feed(&mut b, tunnel(0, BS2));
    feed(&mut b, forward_req(1, &[999]));
    assert!(b.snoop(MH).is_some() && !b.reports_transmissions(MH));
    // A transmission report then changes nothing: the next DUPACKs are handled by the queue-timed rules.
    b.handle_transmit(Time(1), Side::ToMobile, &data(0));
    assert!(!b.reports_transmissions(MH));
    // Plain: the new BS after a greeting.
    let mut g = bs(BS3, true);
    let greeting = Control::new(Kind::Greeting, 1, MH, BS1).emit(MH, BS3, 1);
    feed(&mut g, greeting);
    assert!(g.snoop(MH).is_some() && !g.reports_transmissions(MH));
}

#[test]
fn plain_handoff_greeting_notify_ack() {
    let (mut new, mut old) = (bs(BS2, false), bs(BS1, false));
    old.set_role(MH, Role::Primary);
    let mut mh = MobileHost::new(MH, Scheme::Plain, BS1, &[]);
    let greeting = mh.handoff(BS2, &[]);
    assert_eq!(greeting.len(), 1);
    let out = feed(&mut new, greeting[0].clone());
    assert_eq!(controls(&out), vec![(Kind::GreetingAck, MH), (Kind::Notify, BS1), (Kind::Notify, HA)]);
    let inject = |out: &[Action], k: Kind| {
        out.iter()
            .find_map(|a| match a {
                Action::Inject(_, p) if Control::parse(p).is_some_and(|c| c.kind == k) => Some(p.clone()),
                _ => None,
            })
            .unwrap()
    };
    assert_eq!(mh.handle_received(&inject(&out, Kind::GreetingAck)), Some(MhEvent::Accepted { seq: 1, bs: BS2 }));
    // Before Notify, the old BS still sends over the air (lost once the mobile has gone).
    assert_eq!(forwarded(&feed(&mut old, tunnel(1, BS1))), vec![1001]);
    let out2 = feed(&mut old, inject(&out, Kind::Notify));
    assert_eq!(controls(&out2), vec![(Kind::NotifyAck, BS2)]);
    let fwd = feed(&mut old, tunnel(2, BS1));
    let Action::Forward(Side::ToWired, p) = &fwd[0] else { panic!("{fwd:?}") };
    let ip = Ipv4Packet::new_checked(&p[..]).unwrap();
    assert_eq!((ip.protocol(), ip.dst_addr()), (PROTO_IPIP, BS2));
    assert_eq!(forwarded(&feed(&mut new, p.clone())), vec![1002]);
    let out3 = feed(&mut new, inject(&out2, Kind::NotifyAck));
    assert_eq!(controls(&out3), vec![(Kind::Complete, MH)]);
    assert_eq!(mh.handle_received(&inject(&out3, Kind::Complete)), Some(MhEvent::Completed { seq: 1, bs: BS2 }));
}

#[test]
fn home_agent_tunnels_to_every_member() {
    let mut ha = HomeAgent::new(HA);
    ha.set_members(MH, [BS1, BS2]);
    let mut out = Vec::new();
    ha.handle_packet(T0, Side::ToMobile, data(3), &mut out);
    let dsts: Vec<Ipv4Addr> = out
        .iter()
        .filter_map(|a| match a {
            Action::Inject(_, p) => {
                assert_eq!(ipip::decapsulate(p).unwrap(), data(3));
                Some(Ipv4Packet::new_checked(&p[..]).unwrap().dst_addr())
            }
            _ => None,
        })
        .collect();
    assert_eq!(dsts, vec![BS1, BS2]);
    out.clear();
    ha.handle_packet(T0, Side::ToMobile, Control::new(Kind::Leave, 1, MH, BS1).emit(BS1, HA, 1), &mut out);
    assert_eq!(ha.members(MH), vec![BS2]);
    out.clear();
    ha.handle_packet(T0, Side::ToWired, ack(1), &mut out);
    assert!(matches!(out[..], [Action::Forward(Side::ToWired, _)]), "not for a mobile: passes");
}

#[test]
fn mobile_records_the_last_three_ids_and_sends_them() {
    let mut mh = MobileHost::new(MH, Scheme::Multicast, BS1, &[BS2]);
    for i in 0..5 {
        assert_eq!(mh.handle_received(&data(i)), None);
    }
    assert_eq!(mh.last_ids(), vec![1002, 1003, 1004]);
    let msgs = mh.handoff(BS2, &[BS1]);
    let c: Vec<Control> = msgs.iter().map(|p| Control::parse(p).unwrap()).collect();
    assert_eq!(c[0].kind, Kind::Forward);
    assert_eq!(c[0].ids, vec![1002, 1003, 1004]);
    assert_eq!((c[1].kind, c.len()), (Kind::Buffer, 2));
    assert_eq!(mh.primary(), BS2);
    // Only the new primary's answer to this handoff counts, once.
    let ack2 = Control::new(Kind::Ack, 1, MH, BS2).emit(BS2, MH, 1);
    let ack1 = Control::new(Kind::Ack, 1, MH, BS1).emit(BS1, MH, 1);
    assert_eq!(mh.handle_received(&ack1), None);
    assert_eq!(mh.handle_received(&ack2), Some(MhEvent::Accepted { seq: 1, bs: BS2 }));
    assert_eq!(mh.handle_received(&ack2), None);
}

#[test]
fn buffering_follows_the_likely_targets_between_handoffs() {
    let mut mh = MobileHost::new(MH, Scheme::Multicast, BS1, &[BS2]);
    let mut stations: Vec<BaseStation> = [BS1, BS2, BS3].iter().map(|&a| bs(a, false)).collect();
    stations[0].set_role(MH, Role::Primary);
    stations[1].set_role(MH, Role::Buffering);
    assert!(mh.set_buffering(&[BS2]).is_empty(), "no change, no message");
    // BS3 comes into range and BS2 fades: BS3 is asked to buffer, BS2 to stop; the primary is left alone.
    let msgs = mh.set_buffering(&[BS3, BS1]);
    let c: Vec<(Kind, Ipv4Addr)> = msgs
        .iter()
        .map(|p| (Control::parse(p).unwrap().kind, Ipv4Packet::new_checked(&p[..]).unwrap().dst_addr()))
        .collect();
    assert_eq!(c, vec![(Kind::Stop, BS2), (Kind::Buffer, BS3)]);
    assert_eq!((mh.role_of(BS1), mh.role_of(BS2), mh.role_of(BS3)), (Role::Primary, Role::Idle, Role::Buffering));
    let mut joins = Vec::new();
    for m in msgs {
        let i = [BS1, BS2, BS3].iter().position(|&a| a == Ipv4Packet::new_checked(&m[..]).unwrap().dst_addr()).unwrap();
        joins.extend(controls(&feed(&mut stations[i], m)));
    }
    assert_eq!((stations[1].role(MH), stations[2].role(MH)), (Role::Idle, Role::Buffering));
    assert_eq!(joins.iter().map(|j| j.0).collect::<Vec<_>>(), vec![Kind::Leave, Kind::Join], "{joins:?}");
    // A handoff in progress keeps its numbering: no buffering change until the new primary accepts.
    let _ = mh.handoff(BS3, &[BS1]);
    assert!(mh.set_buffering(&[BS2]).is_empty());
    let ack = Control::new(Kind::Ack, mh.seq(), MH, BS3).emit(BS3, MH, 9);
    assert!(matches!(mh.handle_received(&ack), Some(MhEvent::Accepted { .. })));
    assert_eq!(mh.set_buffering(&[BS2]).len(), 2, "BS1 stops, BS2 buffers");
    // The plain scheme has no buffering base stations.
    let mut plain = MobileHost::new(MH, Scheme::Plain, BS1, &[]);
    assert!(plain.set_buffering(&[BS2]).is_empty());
}

proptest! {
    /// Whatever the sequence of handoffs and whichever requests arrive, late or never, the mobile's table
    /// has exactly one primary, and base stations end with at most one primary once the last handoff's
    /// requests are delivered.
    #[test]
    fn single_primary(targets in proptest::collection::vec(0usize..3, 1..30), lose in proptest::collection::vec(any::<bool>(), 100)) {
        let addrs = [BS1, BS2, BS3];
        let mut mh = MobileHost::new(MH, Scheme::Multicast, BS1, &[BS2]);
        let mut stations: Vec<BaseStation> = addrs.iter().map(|&a| bs(a, false)).collect();
        stations[0].set_role(MH, Role::Primary);
        stations[1].set_role(MH, Role::Buffering);
        let mut k = 0;
        // A handoff to the current primary is no handoff: drop those, so the last one really moves.
        let mut targets = targets;
        targets.dedup();
        if targets[0] == 0 {
            targets.remove(0);
        }
        prop_assume!(!targets.is_empty());
        let n = targets.len();
        for (h, &t) in targets.iter().enumerate() {
            let others: Vec<Ipv4Addr> = addrs.iter().copied().filter(|&a| a != addrs[t]).take(1).collect();
            let msgs = mh.handoff(addrs[t], &others);
            prop_assert_eq!(addrs.iter().filter(|&&a| mh.role_of(a) == Role::Primary).count(), 1);
            prop_assert_eq!(mh.primary(), addrs[t]);
            for m in msgs {
                k += 1;
                // Requests of earlier handoffs may be lost; the last handoff's all arrive.
                if h + 1 < n && lose[k % lose.len()] {
                    continue;
                }
                let dst = Ipv4Packet::new_checked(&m[..]).unwrap().dst_addr();
                let i = addrs.iter().position(|&a| a == dst).unwrap();
                feed(&mut stations[i], m);
            }
        }
        let primaries = stations.iter().filter(|s| s.role(MH) == Role::Primary).count();
        prop_assert!(primaries <= 1, "{} primaries", primaries);
        prop_assert_eq!(stations[targets[n - 1]].role(MH), Role::Primary);
    }
}

#[test]
fn spoofed_control_and_tunnelled_traffic_cannot_grow_the_tables() {
    // An attacker on the wired side sends every kind of control message about 5000 invented mobiles, from
    // invented sources and from the mobile's own address, and tunnels packets to invented mobiles. The
    // table holds the one mobile the configuration names; nothing else is applied or answered.
    let mut b = bs(BS2, true);
    b.set_role(MH, Role::Primary);
    let spoof = |i: u32| Ipv4Addr::from(0x0a80_0000 + i);
    let kinds = [
        Kind::Forward,
        Kind::Buffer,
        Kind::Stop,
        Kind::Greeting,
        Kind::Notify,
        Kind::NotifyAck,
        Kind::Join,
        Kind::Leave,
        Kind::Ack,
    ];
    for i in 0..5000u32 {
        let kind = kinds[i as usize % kinds.len()];
        let mobile = spoof(i);
        let out = feed(&mut b, Control::new(kind, i as u16, mobile, spoof(i + 1)).emit(mobile, BS2, 1));
        assert_eq!(out, [Action::Drop(crate::DropReason::Consumed)], "{kind:?} about {mobile}");
        let inner = TcpRepr { src_port: 1, dst_port: 2, ..TcpRepr::default() }.emit_ipv4(FH, mobile, 1, 64, &[]);
        let out = feed(&mut b, ipip::encapsulate(&inner, HA, BS2, 1, 64));
        assert_eq!(out, [Action::Drop(crate::DropReason::Consumed)]);
    }
    assert_eq!(b.mobiles_tracked(), 1);
    // About the named mobile, but from someone else: a mobile speaks only for itself, Notify comes only
    // from a named base station that names itself as the peer, and tunnels only from the HA or a peer.
    let mut stop = Control::new(Kind::Stop, 9, MH, Ipv4Addr::UNSPECIFIED).emit(spoof(1), BS2, 1);
    assert_eq!(feed(&mut b, stop.clone()), [Action::Drop(crate::DropReason::Consumed)]);
    let notify_forged = Control::new(Kind::Notify, 9, MH, spoof(7)).emit(BS1, BS2, 1);
    feed(&mut b, notify_forged);
    let notify_stranger = Control::new(Kind::Notify, 9, MH, spoof(7)).emit(spoof(7), BS2, 1);
    feed(&mut b, notify_stranger);
    feed(&mut b, ipip::encapsulate(&data(0), spoof(3), BS2, 1, 64));
    assert_eq!(b.role(MH), Role::Primary, "nothing refused was applied");
    assert_eq!(b.stats().control_refused, 5000 + 3);
    assert_eq!(b.stats().tunnel_refused, 5000 + 1);
    assert_eq!(b.stats().control_received, 0);
    // The mobile itself is still obeyed.
    stop = Control::new(Kind::Stop, 9, MH, Ipv4Addr::UNSPECIFIED).emit(MH, BS2, 1);
    feed(&mut b, stop);
    assert_eq!(b.role(MH), Role::Idle);
}

/// Whether a MH → FH packet carries the ELN bit.
fn eln_marked(p: &Bytes) -> bool {
    let ip = Ipv4Packet::new_checked(&p[..]).unwrap();
    lasthop_wire::TcpPacket::new_checked(ip.payload()).unwrap().eln()
}

/// The mobile's ACK `ack(i)` through the base station: the ELN bit of what goes on to the fixed host.
fn ack_marked(b: &mut BaseStation, i: u32) -> bool {
    let mut out = Vec::new();
    b.handle_packet(T0, Side::ToWired, ack(i), &mut out);
    match out.as_slice() {
        [Action::Forward(Side::ToWired, p)] => eln_marked(p),
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_eln_base_station_marks_dupacks_only_for_what_it_forwarded_as_primary_and_starts_afresh_each_time() {
    let mut cfg = BsConfig::new(BS2, HA);
    cfg.mobiles = vec![MH];
    cfg.peers = vec![BS1];
    cfg.eln = Some(crate::eln::ElnConfig { role: crate::eln::ElnRole::MarkForwarded, ..Default::default() });
    let mut b = BaseStation::new(cfg);
    b.set_role(MH, Role::Buffering);
    assert!(b.eln(MH).is_none(), "a buffering base station forwards nothing, so vouches for nothing");
    for i in 0..20 {
        feed(&mut b, tunnel(i, BS2));
    }
    // The mobile had up to 1014: segments 15..19 are resent from the buffer, through the notifier.
    let out = feed(&mut b, forward_req(1, &[1013, 1014]));
    assert_eq!(forwarded(&out), (1015..1020).collect::<Vec<u16>>());
    assert!(b.eln(MH).is_some());
    // A DUPACK for segment 12, which this base station buffered but never sent: no evidence, no mark.
    assert!(!ack_marked(&mut b, 12) && !ack_marked(&mut b, 12));
    // A DUPACK for segment 15, which it sent: lost on the wireless hop, marked (the first, new, ACK is not).
    assert!(!ack_marked(&mut b, 15));
    assert!(ack_marked(&mut b, 15));
    // Data tunnelled in now goes through the notifier too.
    assert_eq!(forwarded(&feed(&mut b, tunnel(20, BS2))), vec![1020]);
    assert!(!ack_marked(&mut b, 20) && ack_marked(&mut b, 20));
    // The mobile moves on: the notifier goes with the primary role, its counters stay.
    feed(&mut b, Control::new(Kind::Buffer, 2, MH, Ipv4Addr::UNSPECIFIED).emit(MH, BS2, 1));
    assert!(b.eln(MH).is_none());
    assert!(!ack_marked(&mut b, 20) && !ack_marked(&mut b, 20), "not primary: passed on untouched");
    assert!(b.counters().contains(&("dupacks_marked", 2)), "{:?}", b.counters());
    // Back as primary with its queue toward the mobile over the congestion threshold: the fresh notifier
    // knows the queue and vouches for nothing it forwards into it.
    b.handle_queue_occupancy(Side::ToMobile, 0.9);
    feed(&mut b, tunnel(21, BS2));
    let out = feed(&mut b, forward_req(3, &[1021]));
    assert!(forwarded(&out).is_empty(), "the mobile has the last packet");
    assert_eq!(forwarded(&feed(&mut b, tunnel(22, BS2))), vec![1022]);
    assert!(!ack_marked(&mut b, 22) && !ack_marked(&mut b, 22));
    assert!(b.counters().contains(&("forwarded_under_congestion", 1)), "{:?}", b.counters());
}
