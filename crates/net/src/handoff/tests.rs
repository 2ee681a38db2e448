//! Unit tests of what the drivers add around the handoff agents: routing and the refusal of unknown
//! control senders at the home agent, the base station's beacons, hop and bounded buffer, the mobile's
//! radio (one cell at a time) and its per-handoff measures. No sockets: frames in, frames out.

use super::bs::{HandoffBsConfig, HandoffBsNode, CELL, WIRED};
use super::ha::HaNode;
use super::mh::{MhNode, KERNEL};
use super::node::{ipv4_of, Link, Node, Out};
use crate::hop::HopConfig;
use bytes::Bytes;
use lasthop_agents::handoff::{Control, Kind, Role, Scheme};
use lasthop_wire::ipip;
use lasthop_wire::{Ipv4Packet, SeqNum, TcpRepr, Time};
use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::time::Duration;

const FH: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 1);
const MH: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 2);
const HA: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 3);
const BS1: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 11);
const BS2: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 12);

fn link(n: u8) -> Link {
    Link { own: [2, 0, 0, 0, 0, n], peer: [2, 0, 0, 0, 1, n] }
}

/// A data segment FH → MH with IP ID `id` carrying `len` bytes from `seq`.
fn data(id: u16, seq: u32, len: usize) -> Bytes {
    let repr = TcpRepr {
        src_port: 40000,
        dst_port: 5001,
        seq: SeqNum(seq),
        ack: Some(SeqNum(1)),
        window: 65535,
        ..TcpRepr::default()
    };
    repr.emit_ipv4(FH, MH, id, 64, &vec![7u8; len])
}

fn packets(out: &Out, port: usize) -> Vec<Bytes> {
    out.iter().filter(|(p, _)| *p == port).map(|(_, f)| ipv4_of(f).unwrap()).collect()
}

fn ha(members: &[Ipv4Addr]) -> HaNode {
    let routes = BTreeMap::from([(FH, 0), (BS1, 1), (BS2, 2)]);
    HaNode::new(HA, MH, members, vec![link(0), link(1), link(2)], routes, vec![BS1, BS2])
}

#[test]
fn the_home_agent_tunnels_one_copy_per_member_and_routes_the_rest() {
    let mut h = ha(&[BS1, BS2]);
    let mut out = Out::new();
    h.handle_frame(Time(0), 0, &link(0).frame(&data(1, 0, 100), false), &mut out);
    let (to1, to2) = (packets(&out, 1), packets(&out, 2));
    assert_eq!((to1.len(), to2.len()), (1, 1), "one tunnelled copy to each base station");
    for (p, bs) in [(&to1[0], BS1), (&to2[0], BS2)] {
        let outer = Ipv4Packet::new_checked(&p[..]).unwrap();
        assert_eq!((outer.src_addr(), outer.dst_addr()), (HA, bs));
        assert_eq!(ipip::decapsulate(p).unwrap(), data(1, 0, 100));
    }
    // The mobile's ACK (to FH) and a message between base stations are routed by destination.
    out.clear();
    let ack = Control::new(Kind::NotifyAck, 1, MH, BS2).emit(BS2, BS1, 1);
    h.handle_frame(Time(0), 2, &link(2).frame(&ack, false), &mut out);
    assert_eq!(packets(&out, 1), [ack]);
    let mut to_nowhere = data(2, 0, 10).to_vec();
    to_nowhere[16..20].copy_from_slice(&[192, 0, 2, 1]);
    Ipv4Packet::new_unchecked(&mut to_nowhere[..]).fill_checksum();
    out.clear();
    h.handle_frame(Time(0), 0, &link(0).frame(&to_nowhere, false), &mut out);
    assert!(out.is_empty());
    assert_eq!(h.stats().no_route, 1);
}

#[test]
fn the_home_agent_hears_the_group_only_from_base_stations() {
    let mut h = ha(&[BS1]);
    let mut out = Out::new();
    // A Join from the fixed host is refused; one from BS2 is applied.
    let forged = Control::new(Kind::Join, 1, MH, FH).emit(FH, HA, 1);
    h.handle_frame(Time(0), 0, &link(0).frame(&forged, false), &mut out);
    assert_eq!((h.stats().control_refused, h.members()), (1, vec![BS1]));
    let join = Control::new(Kind::Join, 1, MH, BS2).emit(BS2, HA, 1);
    h.handle_frame(Time(0), 2, &link(2).frame(&join, false), &mut out);
    assert_eq!((h.stats().control_refused, h.members()), (1, vec![BS1, BS2]));
    assert!(out.is_empty());
}

fn bs(role: Role, buffer: usize) -> HandoffBsNode {
    let cfg = HandoffBsConfig {
        addr: BS2,
        home_agent: HA,
        peers: vec![BS1],
        mobile: MH,
        role,
        buffer_packets: buffer,
        snoop: false,
        hop: HopConfig { rate_mbps: 0.0, delay_ms: 0.0, ..HopConfig::default() },
        beacon_every: Some(Duration::from_secs(1)),
    };
    HandoffBsNode::new(&cfg, [link(0), link(1)])
}

fn tunnelled(id: u16) -> Bytes {
    let inner = data(id, u32::from(id) * 1000, 1000);
    link(0).frame(&ipip::encapsulate(&inner, HA, BS2, id, 64), false)
}

#[test]
fn a_buffering_base_station_that_is_never_asked_to_forward_keeps_its_memory_bounded() {
    // The mobile never hands back: 10 000 packets reach the buffering base station, which keeps the last
    // `buffer_packets` for a handoff (and its mirror's few dozen) and sends nothing to the cell.
    let mut b = bs(Role::Buffering, 12);
    let mut out = Out::new();
    for id in 0..10_000u16 {
        b.handle_frame(Time(u64::from(id)), WIRED, &tunnelled(id), &mut out);
    }
    assert!(packets(&out, CELL).is_empty());
    assert_eq!(b.agent().buffered_ids(MH), (9988..10_000).collect::<Vec<u16>>());
    assert_eq!(b.agent().stats().buffered, 10_000);
    assert_eq!(b.agent().mobiles_tracked(), 1);
    // What it ever held: at most the buffer's 12 and the Snoop mirror's 48 (the agent's default).
    assert_eq!((b.buffer_max, b.held_max), (12, 48));
}

#[test]
fn a_forward_request_sends_from_the_buffer_and_is_recorded_as_a_promotion() {
    let mut b = bs(Role::Buffering, 12);
    let mut out = Out::new();
    for id in 1..=20u16 {
        b.handle_frame(Time(0), WIRED, &tunnelled(id), &mut out);
    }
    let mut f = Control::new(Kind::Forward, 1, MH, Ipv4Addr::UNSPECIFIED);
    f.ids = vec![14, 15, 16];
    b.handle_frame(Time(1), CELL, &link(1).frame(&f.emit(MH, BS2, 1), false), &mut out);
    let down: Vec<u16> = packets(&out, CELL).iter().map(|p| Ipv4Packet::new_unchecked(&p[..]).ident()).collect();
    // 17..=20 from the buffer, then the base station's Ack (its own IP ID 1).
    assert_eq!(down, [17, 18, 19, 20, 1]);
    assert_eq!(b.promotions().len(), 1);
    assert_eq!((b.promotions()[0].seq, b.promotions()[0].resent), (1, 4));
}

#[test]
fn beacons_go_out_once_per_period_broadcast_on_the_cell() {
    let mut b = bs(Role::Idle, 12);
    let mut out = Out::new();
    let mut t = Time(0);
    while t < Time(3_500_000_000) {
        if b.poll_timeout().is_some_and(|d| d <= t) {
            b.handle_timeout(t, &mut out);
        }
        t += Duration::from_millis(10);
    }
    let beacons = packets(&out, CELL);
    assert_eq!(beacons.len(), 3, "at 1, 2 and 3 s");
    for p in &beacons {
        let c = Control::parse(p).unwrap();
        assert_eq!((c.kind, c.peer), (Kind::Beacon, BS2));
        assert!(Ipv4Packet::new_unchecked(&p[..]).dst_addr().is_broadcast());
    }
    assert!(out.iter().all(|(_, f)| f[..6] == [0xff; 6]), "broadcast frames");
}

fn mh(scheme: Scheme) -> MhNode {
    MhNode::new(MH, scheme, vec![BS1, BS2], vec![link(0), link(1), link(2)], Some(Duration::from_secs(1)))
}

/// Runs `m` to `t` (its schedule).
fn advance(m: &mut MhNode, t: Time, out: &mut Out) {
    while let Some(d) = m.poll_timeout().filter(|d| *d <= t) {
        m.handle_timeout(d.max(Time(1)), out);
    }
}

#[test]
fn the_radio_hears_one_cell_and_the_handoff_is_measured() {
    let mut m = mh(Scheme::Multicast);
    let mut out = Out::new();
    m.handle_timeout(Time(1), &mut out); // starts the schedule: first handoff at 1 s
    for i in 0..5u16 {
        m.handle_frame(Time(1 + u64::from(i)), 1, &link(1).frame(&data(i, u32::from(i) * 1000, 1000), false), &mut out);
    }
    assert_eq!(packets(&out, KERNEL).len(), 5, "cell 1's data reaches the kernel");
    out.clear();
    let at = Time(1_000_000_001);
    advance(&mut m, at, &mut out);
    // Forward to BS2 (with the last three IDs) and Buffer to BS1, both sent on cell 2.
    let sent = packets(&out, 2);
    let kinds: Vec<(Kind, Ipv4Addr)> =
        sent.iter().map(|p| (Control::parse(p).unwrap().kind, Ipv4Packet::new_unchecked(&p[..]).dst_addr())).collect();
    assert_eq!(kinds, [(Kind::Forward, BS2), (Kind::Buffer, BS1)]);
    assert_eq!(Control::parse(&sent[0]).unwrap().ids, [2, 3, 4]);
    out.clear();
    // The old cell's late frame is not received; BS2 resends 5 and 6 is new, then a duplicate of 4.
    m.handle_frame(at + Duration::from_millis(1), 1, &link(1).frame(&data(5, 5000, 1000), false), &mut out);
    m.handle_frame(at + Duration::from_millis(8), 2, &link(2).frame(&data(5, 5000, 1000), false), &mut out);
    m.handle_frame(at + Duration::from_millis(9), 2, &link(2).frame(&data(6, 6000, 1000), false), &mut out);
    m.handle_frame(at + Duration::from_millis(10), 2, &link(2).frame(&data(4, 4000, 1000), false), &mut out);
    let ack = Control::new(Kind::Ack, 1, MH, BS2).emit(BS2, MH, 1);
    m.handle_frame(at + Duration::from_millis(12), 2, &link(2).frame(&ack, false), &mut out);
    assert_eq!(packets(&out, KERNEL).len(), 3, "the control message stays with the controller");
    let r = &m.records()[0];
    assert_eq!((r.from, r.to, r.seq), (BS1, BS2, 1));
    assert!((r.latency_ms.unwrap() - 8.0).abs() < 1e-6, "{r:?}");
    assert!((r.accepted_ms.unwrap() - 12.0).abs() < 1e-6, "{r:?}");
    assert_eq!((r.lost, r.duplicated, r.missed_old_cell), (Some(0), 1, 1));
    // The mobile's kernel now sends on cell 2.
    out.clear();
    m.handle_frame(at + Duration::from_millis(20), KERNEL, &link(0).frame(&data(9, 0, 0), false), &mut out);
    assert_eq!(packets(&out, 2).len(), 1);
}

#[test]
fn a_hole_at_the_first_segment_through_the_new_base_station_counts_as_lost() {
    let mut m = mh(Scheme::Plain);
    let mut out = Out::new();
    m.handle_timeout(Time(1), &mut out);
    for i in 0..3u16 {
        m.handle_frame(Time(2), 1, &link(1).frame(&data(i, u32::from(i) * 1000, 1000), false), &mut out);
    }
    out.clear();
    let at = Time(1_000_000_001);
    advance(&mut m, at, &mut out);
    let greeting = Control::parse(&packets(&out, 2)[0]).unwrap();
    assert_eq!((greeting.kind, greeting.peer), (Kind::Greeting, BS1));
    // Segments 3..=5 were sent into the old cell; the first through BS2 is 6.
    m.handle_frame(at + Duration::from_millis(3), 2, &link(2).frame(&data(6, 6000, 1000), false), &mut out);
    assert_eq!(m.records()[0].lost, Some(3));
}

#[test]
fn the_handoff_configuration_is_checked() {
    use crate::{AgentKind, TestbedConfig};
    let ok = TestbedConfig { handoff: Some(super::HandoffScheme::Plain), ..TestbedConfig::default() };
    assert!(ok.validate().is_ok(), "never hands off by default");
    assert!(TestbedConfig { handoff_every_s: 1.0, ..ok.clone() }.validate().is_ok());
    for (bad, says) in [
        (TestbedConfig { agent: AgentKind::Split, ..ok.clone() }, "not split"),
        (TestbedConfig { handoff_every_s: 0.01, ..ok.clone() }, "at least 0.1"),
        (TestbedConfig { handoff_every_s: f64::NAN, ..ok.clone() }, "at least 0.1"),
        (TestbedConfig { handoff_buffer_packets: 0, ..ok.clone() }, "at least 1"),
        (TestbedConfig { beacon_every_s: -1.0, ..ok.clone() }, "beacon_every_s"),
        (TestbedConfig { handoff_by: super::HandoffBy::Beacons, beacon_every_s: 0.0, ..ok.clone() }, "needs beacons"),
        (TestbedConfig { handoff_by: super::HandoffBy::Beacons, walk_speed_mps: -1.0, ..ok.clone() }, "walk_speed_mps"),
        (
            TestbedConfig { handoff_by: super::HandoffBy::Beacons, hysteresis_db: f64::NAN, ..ok.clone() },
            "hysteresis_db",
        ),
    ] {
        let e = bad.validate().unwrap_err().to_string();
        assert!(e.contains(says), "{e}");
    }
    assert_eq!("plain".parse::<super::HandoffScheme>(), Ok(super::HandoffScheme::Plain));
    assert_eq!("fast-rexmit".parse::<super::HandoffScheme>(), Ok(super::HandoffScheme::FastRexmit));
    assert_eq!(super::HandoffScheme::FastRexmit.to_string(), "fast-rexmit");
    assert!("mobile-ip".parse::<super::HandoffScheme>().unwrap_err().contains("expected"));
}

#[test]
fn a_mobile_deciding_by_beacons_does_not_leave_a_cell_it_has_not_heard_yet() {
    // At start-up the far cell's beacon may come first: the near one is not yet heard, which is not out of
    // range. Standing at 0 m (BS1's position), the mobile stays with BS1 through both first beacons.
    use super::mh::BeaconDriven;
    use lasthop_agents::handoff::{BeaconConfig, BeaconMonitor};
    use lasthop_sim::mobility::{Radio, Repeat, Walk};
    let radio = Radio { tx_power_dbm: 20.0, ref_loss_db: 40.0, exponent: 3.0, shadowing_db: 4.0, range_dbm: -85.0 };
    let beacons = BeaconDriven {
        walk: Walk { waypoints: vec![0.0], speed_mps: 0.0, repeat: Repeat::BackAndForth },
        positions: vec![0.0, 50.0],
        radio,
        shadowing: (0..2).map(|i| lasthop_sim::rng::stream(1, &format!("mobility.bs{i}"), "shadowing")).collect(),
        monitor: BeaconMonitor::new(BeaconConfig {
            hysteresis_db: 6.0,
            samples: 3,
            max_age: Time(300_000_000),
            buffer_threshold_dbm: -75.0,
        }),
    };
    let mut m = mh(Scheme::Multicast).deciding_by_beacons(beacons);
    let mut out = Out::new();
    m.handle_timeout(Time(1), &mut out);
    let beacon = |bs: Ipv4Addr| {
        link(1).frame(&Control::new(Kind::Beacon, 0, Ipv4Addr::UNSPECIFIED, bs).emit(bs, Ipv4Addr::BROADCAST, 1), true)
    };
    m.handle_frame(Time(50_000_000), 2, &beacon(BS2), &mut out);
    m.handle_frame(Time(60_000_000), 1, &beacon(BS1), &mut out);
    assert!(m.records().is_empty(), "{:?}", m.records());
    let kinds: Vec<Kind> =
        packets(&out, 1).iter().chain(&packets(&out, 2)).filter_map(|p| Control::parse(p)).map(|c| c.kind).collect();
    assert!(!kinds.contains(&Kind::Forward), "{kinds:?}");
}
