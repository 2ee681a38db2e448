//! End-to-end tests of handoff on real packets: kernel TCP from the fixed host to a mobile that moves
//! between two base stations, the home agent, base stations and mobile being the drivers of
//! `lasthop_net::handoff`. They need root and network namespaces; without them they print why and pass,
//! unless LASTHOP_NO_SKIP=1 (CI), where they fail.

use lasthop_agents::handoff::{Control, Kind};
use lasthop_net::handoff::testbed::{HandoffTestbed, Host, BS1_IP, BS2_IP, HA_IP};
use lasthop_net::handoff::{HandoffBy, HandoffScheme};
use lasthop_net::testbed::{skip_or_fail, FH_IP, MH_IP};
use lasthop_net::{NetError, TestbedConfig, TestbedResult};
use std::net::Ipv4Addr;
use std::time::Duration;

/// A handoff testbed, or None (reported by `skip_or_fail`) where this machine cannot make one.
fn testbed_or_skip() -> Option<HandoffTestbed> {
    match HandoffTestbed::create() {
        Ok(tb) => Some(tb),
        Err(e @ (NetError::NotRoot(_) | NetError::NamespacesUnavailable(_))) => {
            skip_or_fail(e);
            None
        }
        Err(e) => panic!("handoff testbed: {e}"),
    }
}

fn config(scheme: HandoffScheme, every_s: f64, bytes: u64) -> TestbedConfig {
    TestbedConfig {
        handoff: Some(scheme),
        handoff_every_s: every_s,
        bytes,
        timeout_s: 60.0,
        ..TestbedConfig::default()
    }
}

fn run(cfg: &TestbedConfig) -> Option<TestbedResult> {
    // Probe for root and namespaces first, so the run itself may fail loudly.
    drop(testbed_or_skip()?);
    let r = lasthop_net::run_testbed_transfer(cfg).unwrap();
    let h = r.handoff.as_ref().unwrap();
    eprintln!(
        "{} every {} s: {:.3} Mb/s, sender {:?}, handoffs {:?}\n{:?}",
        h.scheme, cfg.handoff_every_s, r.goodput_mbps, r.sender, h.handoffs, h.counters
    );
    Some(r)
}

#[test]
fn a_transfer_through_two_handoffs_arrives_byte_exact_with_each_scheme() {
    // 2 Mb/s: 384 KB take about 2 s, so handoffs every 0.7 s happen twice or more mid-transfer.
    for scheme in [HandoffScheme::Multicast, HandoffScheme::Plain] {
        let Some(r) = run(&config(scheme, 0.7, 384 << 10)) else { return };
        let h = r.handoff.as_ref().unwrap();
        assert!(r.hash_ok, "{scheme}: {} of {} bytes, hash {}", r.bytes, 384 << 10, r.hash_ok);
        assert!(h.handoffs.len() >= 2, "{scheme}: {} handoffs", h.handoffs.len());
        assert!(h.handoffs.iter().all(|x| x.latency_ms.is_some()), "{scheme}: every handoff reached the new cell");
        // Each handoff went to the other base station and the mobile's kernel got data through both.
        assert!(h.counters["bs1.forwarded_to_mobile"] > 0 && h.counters["bs2.forwarded_to_mobile"] > 0);
        match scheme {
            HandoffScheme::Multicast => {
                assert!(h.counters["bs2.buffered"] > 0, "the second base station buffered before its first handoff");
                assert_eq!(h.counters["bs1.forwarded_to_new_bs"] + h.counters["bs2.forwarded_to_new_bs"], 0);
            }
            HandoffScheme::Plain | HandoffScheme::FastRexmit => {
                assert_eq!(
                    h.counters["bs1.buffered"] + h.counters["bs2.buffered"],
                    0,
                    "no buffering in the plain scheme"
                );
                assert_eq!(h.handoffs.iter().map(|x| x.resent_from_buffer).sum::<u64>(), 0);
            }
        }
    }
}

#[test]
fn a_base_station_killed_mid_transfer_loses_no_acknowledged_byte() {
    // The mobile's base station crashes 0.5 s into a 2 s transfer and never comes back. No handoff is
    // scheduled: the mobile leaves because the cell's beacons (every 0.25 s here, longer than a third of a
    // full queue's 0.6 s, which they wait behind) stop, for the other base station, and the fixed host's
    // TCP repairs what died with the crashed one. Everything the mobile's TCP had acknowledged was already
    // in its kernel, and the rest arrives, byte-exact.
    for scheme in [HandoffScheme::Multicast, HandoffScheme::Plain] {
        let Some(tb) = testbed_or_skip() else { return };
        drop(tb);
        let cfg = TestbedConfig { beacon_every_s: 0.25, ..config(scheme, f64::INFINITY, 384 << 10) };
        let mut killer = None;
        let r = lasthop_net::handoff::run_handoff_transfer_with(&cfg, scheme, |d| {
            let k = d.kill_switch(Host::Bs1);
            killer = Some(std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(500));
                k.pull();
            }));
        })
        .unwrap();
        killer.unwrap().join().unwrap();
        let h = r.handoff.as_ref().unwrap();
        eprintln!("{scheme}, BS1 killed: {:.3} Mb/s, sender {:?}, handoffs {:?}", r.goodput_mbps, r.sender, h.handoffs);
        assert!(r.hash_ok && r.bytes == 384 << 10, "{scheme}: {} bytes, hash {}", r.bytes, r.hash_ok);
        assert_eq!(h.handoffs.len(), 1, "{scheme}: {:?}", h.handoffs);
        let x = &h.handoffs[0];
        assert!(x.cell_lost && x.to == BS2_IP, "{scheme}: {x:?}");
        assert!(
            (0.5..2.0).contains(&x.requested_s),
            "{scheme}: left at {} s, after 3 silent beacon periods",
            x.requested_s
        );
        assert!(x.accepted_ms.is_some(), "{scheme}: BS2 accepted");
        assert!(
            h.counters["bs1.forwarded_to_mobile"] > 0 && h.counters["bs2.forwarded_to_mobile"] > 0,
            "{:?}",
            h.counters
        );
    }
}

#[test]
fn a_mobile_that_never_hands_back_leaves_the_buffering_base_station_bounded() {
    // One handoff at 0.3 s, then BS1 buffers for the rest of a 3 s transfer (about 350 packets) for a
    // mobile that never returns: it holds no more than its 12-packet buffer and its 48-packet Snoop mirror.
    let mut cfg = config(HandoffScheme::Multicast, 0.3, 512 << 10);
    cfg.handoff_limit = Some(1);
    let Some(r) = run(&cfg) else { return };
    let h = r.handoff.as_ref().unwrap();
    assert!(r.hash_ok);
    assert_eq!(h.handoffs.len(), 1);
    let c = &h.counters;
    assert!(c["bs1.buffered"] > 200, "BS1 buffered {} packets after the mobile left", c["bs1.buffered"]);
    assert_eq!(c["bs1.buffer_max_packets"], 12, "{c:?}");
    assert!(c["bs1.held_max_packets"] <= 48, "{c:?}");
}

#[test]
fn fast_retransmit_after_handoff_makes_the_fixed_host_fast_retransmit() {
    // Caceres 1995: at the new base station's greeting ACK, the mobile's controller sends three copies of
    // its kernel's last ACK; the fixed host's unmodified Reno takes them as duplicates and retransmits the
    // segments lost in the old cell at once. The same run with plain handoffs is the baseline.
    let cfg = |scheme| TestbedConfig { seed: 3, ..config(scheme, 0.7, 512 << 10) };
    let Some(plain) = run(&cfg(HandoffScheme::Plain)) else { return };
    let Some(fast) = run(&cfg(HandoffScheme::FastRexmit)) else { return };
    let h = fast.handoff.as_ref().unwrap();
    assert!(fast.hash_ok && plain.hash_ok);
    assert!(h.handoffs.len() >= 2, "{:?}", h.handoffs);
    assert!(
        h.handoffs.iter().all(|x| x.dup_acks_sent == 3 && x.accepted_ms.is_some()),
        "three duplicate ACKs at each accepted handoff: {:?}",
        h.handoffs
    );
    assert_eq!(plain.handoff.as_ref().unwrap().counters["mh.dup_acks_sent"], 0);
    assert!(
        fast.sender.fast_retrans > plain.sender.fast_retrans + 5,
        "fast retransmits: {} with the mobile's duplicate ACKs, {} without",
        fast.sender.fast_retrans,
        plain.sender.fast_retrans
    );
}

#[test]
fn handing_off_by_beacon_strength_crosses_once_each_way_past_the_hysteresis_margin() {
    // Balakrishnan 1995 §4: the mobile hands off when "a base station with a stronger signal" is heard, and
    // "using hysteresis ensures that very frequent and unnecessary handoffs don't occur". The simulator's
    // radio (log-distance, exponent 3, 4 dB shadowing, 3 beacons averaged): the mean strengths are equal at
    // 25 m, and BS2 is 6 dB stronger past 30.6 m (BS1 before 19.4 m on the way back). With the 6 dB margin
    // the mobile hands off once each way, after the midpoint, never back and forth near it.
    // Walks 0 → 50 → 0 m at 25 m/s, beacons every 0.05 s; idle (no transfer), 3.7 s.
    let Some(tb) = testbed_or_skip() else { return };
    let cfg = TestbedConfig {
        handoff_by: HandoffBy::Beacons,
        walk_speed_mps: 25.0,
        beacon_every_s: 0.05,
        ..config(HandoffScheme::Multicast, f64::INFINITY, 1)
    };
    let d = tb.start(&cfg, HandoffScheme::Multicast).unwrap();
    std::thread::sleep(Duration::from_millis(3700));
    let h = d.stop().unwrap().handoffs();
    let at: Vec<(Ipv4Addr, f64)> = h.iter().map(|x| (x.to, x.position_m.unwrap())).collect();
    eprintln!("handoffs (to, at m): {at:?}");
    assert_eq!(at.len(), 2, "one handoff per crossing: {at:?}");
    assert!(at[0].0 == BS2_IP && (25.0..45.0).contains(&at[0].1), "out: {at:?}");
    assert!(at[1].0 == BS1_IP && (5.0..25.0).contains(&at[1].1), "back: {at:?}");
    assert!(h.iter().all(|x| x.accepted_ms.is_some()), "{h:?}");
}

#[test]
fn handoff_latency_on_an_idle_testbed_is_under_70_ms() {
    // Balakrishnan 1995 §7: "handoff completes in 5 to 70 ms"; idle, "on the order of 5 to 10 ms". No
    // transfer runs, so the first packet through the new base station is its acceptance.
    let Some(tb) = testbed_or_skip() else { return };
    for scheme in [HandoffScheme::Multicast, HandoffScheme::Plain] {
        let cfg = TestbedConfig { handoff_every_s: 0.3, ..config(scheme, 0.3, 1) };
        let d = tb.start(&cfg, scheme).unwrap();
        std::thread::sleep(Duration::from_millis(1000));
        let s = d.stop().unwrap();
        let h = s.handoffs();
        assert!(h.len() >= 2, "{scheme}: {} handoffs", h.len());
        for x in &h {
            let l = x.latency_ms.unwrap_or_else(|| panic!("{scheme}: handoff {} never completed", x.seq));
            assert!(l < 70.0, "{scheme}: handoff {} took {l:.1} ms", x.seq);
            assert!(x.accepted_ms.is_some(), "{scheme}: handoff {} accepted", x.seq);
        }
        eprintln!("{scheme} idle: {:?}", h.iter().map(|x| x.latency_ms.unwrap()).collect::<Vec<_>>());
    }
}

#[test]
fn a_control_message_from_an_unknown_host_is_dropped_and_counted() {
    let Some(tb) = testbed_or_skip() else { return };
    let cfg = config(HandoffScheme::Multicast, f64::INFINITY, 1);
    let d = tb.start(&cfg, HandoffScheme::Multicast).unwrap();
    // From the fixed host: a Join to the home agent naming itself, and a Forward to BS1 for the mobile.
    let join = Control::new(Kind::Join, 1, MH_IP, FH_IP).emit(FH_IP, HA_IP, 1);
    let forward = Control::new(Kind::Forward, 9, MH_IP, Ipv4Addr::UNSPECIFIED).emit(FH_IP, BS1_IP, 2);
    tb.in_ns(Host::Fh, move || send_raw(&[join, forward])).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let s = d.stop().unwrap();
    let c = s.counters();
    assert_eq!(c["ha.control_refused"], 1, "{c:?}");
    assert_eq!(s.ha.members(), [BS1_IP, lasthop_net::handoff::testbed::BS2_IP], "the group is unchanged");
    assert_eq!(c["bs1.control_refused"], 1, "{c:?}");
    assert_eq!(c["bs1.control_received"], 0, "{c:?}");
}

/// Sends whole IPv4 packets from the calling thread's namespace (a raw socket with IP_HDRINCL).
fn send_raw(packets: &[bytes::Bytes]) {
    let s =
        socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::RAW, Some(socket2::Protocol::from(253))).unwrap();
    s.set_header_included_v4(true).unwrap();
    for p in packets {
        let dst = Ipv4Addr::new(p[16], p[17], p[18], p[19]);
        s.send_to(p, &std::net::SocketAddrV4::new(dst, 0).into()).unwrap();
    }
}
