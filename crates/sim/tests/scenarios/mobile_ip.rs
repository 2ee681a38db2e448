//! Mobile IP end to end (Eom 2002): every byte reaches the application once and in order (the simulator
//! checks payload bytes) in every scheme, at property-chosen handoff times, HA–FA delays and handoff rates;
//! the handoff's messages all happen; losses and the buffer behave as §2–§4 describe; determinism; and bad
//! `[mobile_ip]` tables are refused with the field named.

use crate::support;

use crate::support::{run_intact, set};
use lasthop_sim::{run, RunOptions, RunResult, Scenario};
use proptest::prelude::*;

/// The schemes of the `mip-buffer` experiment plus base Mobile IP and the link-ACK cleanup.
const SCHEMES: [&str; 6] = ["base", "ro", "buffer", "buffer-ack", "buffer-ack-order", "buffer-link-ack"];

fn example() -> toml::Value {
    support::example("mobile-ip.toml")
}

fn scenario(scheme: &str, tcp: &str, ha_fa_ms: f64, first_s: f64, every_s: f64, bytes: u64, seed: u64) -> Scenario {
    Scenario::from_toml(scenario_toml(scheme, tcp, ha_fa_ms, first_s, every_s, bytes, seed), "mobile-ip.toml").unwrap()
}

/// The example as a TOML value with `scheme` (one of [`SCHEMES`]) and the rest set.
fn scenario_toml(
    scheme: &str,
    tcp: &str,
    ha_fa_ms: f64,
    first_s: f64,
    every_s: f64,
    bytes: u64,
    seed: u64,
) -> toml::Value {
    let mut v = example();
    set(&mut v, "seed", seed as i64);
    for l in ["ha-fa1", "ha-fa2"] {
        set(&mut v, &format!("links.{l}.delay_ms"), ha_fa_ms);
    }
    let m = v["mobile_ip"].as_table_mut().unwrap();
    let (ro, buffer, cleanup, reorder) = match scheme {
        "base" => ("base", 0, "none", false),
        "ro" => ("ro", 0, "none", false),
        "buffer" => ("ro", 32, "none", false),
        "buffer-ack" => ("ro", 32, "tcp-ack", false),
        "buffer-ack-order" => ("ro", 32, "tcp-ack", true),
        "buffer-link-ack" => ("ro", 32, "link-ack", true),
        other => panic!("{other}"),
    };
    m.insert("scheme".into(), ro.into());
    m.insert("buffer_packets".into(), buffer.into());
    m.insert("buffer_cleanup".into(), cleanup.into());
    m.insert("reorder".into(), reorder.into());
    m.insert("first_handoff_s".into(), first_s.into());
    m.insert("handoff_every_s".into(), every_s.into());
    set(&mut v, "flows.file.bytes", bytes as i64);
    set(&mut v, "tcp.variant", tcp);
    v
}

#[test]
fn the_handoff_runs_the_whole_exchange_in_every_scheme() {
    for scheme in SCHEMES {
        let r = run_intact(&scenario(scheme, "reno", 30.0, 3.3, f64::INFINITY, 1_000_000, 1));
        let m = r.families.mobile_ip.as_ref().unwrap();
        let [h] = &m.handoffs[..] else { panic!("{scheme}: {:?}", m.handoffs) };
        // Beacon every 50 ms: the handoff request within one period of entering the cell (§2.2).
        let request = h.handoff_request_s.unwrap();
        assert!(request <= 0.051, "{scheme}: {h:?}");
        assert!(h.registration_sent_s.unwrap() >= request && h.registered_s.unwrap() > h.registration_sent_s.unwrap());
        assert!(h.packets_lost > 0, "{scheme}: a handoff in a full window loses packets in the air");
        let a = &m.agents;
        assert_eq!(a["ha"]["registrations_accepted"], 1, "{scheme}");
        let ro = scheme != "base";
        assert_eq!(a["fa2"]["binding_updates_sent"], u64::from(ro), "{scheme}");
        assert_eq!(a["fa1"]["binding_updates_received"], u64::from(ro), "{scheme}");
        assert_eq!(a["ha"]["binding_updates_sent"] > 0, ro, "{scheme}: the HA answers the old FA's warning");
        assert_eq!(a.get("ch").is_some_and(|c| c["binding_updates_received"] > 0), ro, "{scheme}");
        let buffered = scheme.starts_with("buffer");
        assert_eq!(a["bs1"]["forward_messages"], u64::from(buffered), "{scheme}");
        assert_eq!(h.sent_from_buffer > 0, buffered, "{scheme}: {h:?}");
        if scheme.contains("ack") {
            // §4.1: with ACK cleanup no already-delivered packet comes back from the buffer.
            assert_eq!(h.duplicates_delivered, 0, "{scheme}: {h:?}");
        }
    }
}

#[test]
fn base_mobile_ip_loses_more_than_route_optimisation() {
    // §3.2, Fig. 8: t_loss grows with the HA–FA delay under base Mobile IP (Eq. 2), not under route
    // optimisation (Eq. 3), so at 70 ms the base scheme loses the most.
    let base = run_intact(&scenario("base", "reno", 70.0, 3.3, f64::INFINITY, 1_000_000, 1));
    let ro = run_intact(&scenario("ro", "reno", 70.0, 3.3, f64::INFINITY, 1_000_000, 1));
    let lost = |r: &RunResult| r.families.mobile_ip.as_ref().unwrap().handoffs[0].packets_lost;
    assert!(lost(&base) > lost(&ro), "base {} ro {}", lost(&base), lost(&ro));
    let t_loss = |r: &RunResult| r.families.mobile_ip.as_ref().unwrap().handoffs[0].t_loss_ms.unwrap();
    assert!(t_loss(&base) > t_loss(&ro) + 70.0, "Eq. (2) − Eq. (3) ≈ 2 × 70 ms: {} {}", t_loss(&base), t_loss(&ro));
    // §3.2: under base Mobile IP the whole window is lost, so no duplicate ACK and no erroneous fast
    // retransmit; route optimisation's smooth handoff lets later packets through, which raise one (Fig. 7).
    let wrong = |r: &RunResult| r.families.mobile_ip.as_ref().unwrap().erroneous_fast_retransmits;
    assert_eq!(wrong(&base), 0);
    assert!(wrong(&ro) >= 1);
}

#[test]
fn same_seed_same_result_with_mobile_ip() {
    for scheme in ["base", "buffer-ack-order"] {
        let s = scenario(scheme, "tahoe", 40.0, 2.1, 1.0, 500_000, 7);
        let opts = RunOptions { trace: true, ..RunOptions::default() };
        assert_eq!(run(&s, &opts).unwrap(), run(&s, &opts).unwrap(), "{scheme}");
    }
}

/// Eom 2002 §4.2, the reverse direction: the mobile sends the file. Under base Mobile IP the handoff loses
/// what the mobile had queued for its old cell; with its own two-packet buffer the mobile re-sends its
/// last two data packets once registered in the new cell, every byte still arrives once and in order, the
/// packets pass the mobile's agent only when it keeps them, and the run is deterministic.
#[test]
fn a_mobile_sender_with_its_own_buffer_resends_its_last_packets_after_the_handoff() {
    let sender = |own: i64, scheme: &str, first_s: f64| {
        let mut v = example();
        v["flows"]["file"] = toml::toml! { from = "mh" to = "ch" bytes = 1_000_000 }.into();
        let m = v["mobile_ip"].as_table_mut().unwrap();
        m.insert("scheme".into(), scheme.into());
        m.insert("own_buffer_packets".into(), own.into());
        m.insert("first_handoff_s".into(), first_s.into());
        Scenario::from_toml(v, "mobile-ip.toml").unwrap()
    };
    for scheme in ["base", "ro"] {
        for first_s in [2.15, 3.3] {
            let with = sender(2, scheme, first_s);
            let r = run_intact(&with);
            let m = r.families.mobile_ip.as_ref().unwrap();
            assert_eq!(m.handoffs.len(), 1);
            assert!(m.handoffs[0].packets_lost > 0, "{scheme} {first_s}: {:?}", m.handoffs);
            assert_eq!(m.agents["mh"]["own_packets_resent"], 2, "{scheme} {first_s}");
            assert_eq!(run(&with, &RunOptions::default()).unwrap(), r, "deterministic");
            let without = run_intact(&sender(0, scheme, first_s));
            assert_eq!(without.families.mobile_ip.as_ref().unwrap().agents["mh"]["own_packets_resent"], 0);
            assert_eq!(without.flows[0].bytes_delivered, 1_000_000);
        }
    }
}

/// Snoop at both base stations together with Mobile IP and BS buffering, over a lossy hop: every TCP segment
/// the BS entity passes on goes through the node's Snoop agent, which retransmits locally what the air
/// loses; every byte still arrives once and in order, across the handoff, in every scheme.
#[test]
fn snoop_at_the_base_stations_works_with_buffering_across_the_handoff() {
    for scheme in ["ro", "buffer", "buffer-ack-order"] {
        for (first_s, seed) in [(2.15, 1), (3.3, 2)] {
            let mut t = scenario_toml(scheme, "reno", 30.0, first_s, f64::INFINITY, 1_000_000, seed);
            for bs in ["bs1", "bs2"] {
                t["nodes"][bs].as_table_mut().unwrap().insert("agent".into(), "snoop".into());
            }
            for air in ["air1", "air2"] {
                t["links"][air]
                    .as_table_mut()
                    .unwrap()
                    .insert("error".into(), toml::toml! { model = "ber" ber = 2e-6 }.into());
            }
            let sc = Scenario::from_toml(t, "mobile-ip.toml").unwrap();
            let r = run_intact(&sc);
            assert!(r.flows[0].local_retransmissions > 0, "{scheme}: Snoop at bs1 saw the data: {:?}", r.agents["bs1"]);
            assert!(r.agents["bs2"].values().sum::<u64>() > 0, "{scheme}: Snoop at bs2 too: {:?}", r.agents["bs2"]);
            let mip = r.families.mobile_ip.as_ref().unwrap();
            assert_eq!(mip.handoffs.len(), 1);
            assert_eq!(mip.agents["bs1"]["forward_messages"], u64::from(scheme.starts_with("buffer")), "{scheme}");
        }
    }
}

/// The example under base Mobile IP with `field` set to `value`: the error it gets.
fn bad(field: &str, value: toml::Value) -> String {
    let mut v = example();
    set(&mut v, "mobile_ip.scheme", "base");
    set(&mut v, field, value);
    Scenario::from_toml(v, "mobile-ip.toml").unwrap_err().to_string()
}

#[test]
fn bad_combinations_are_refused_with_the_field_named() {
    let cases: Vec<(&str, toml::Value, &str)> = vec![
        // Buffering with base Mobile IP (it modifies route optimisation).
        ("mobile_ip.buffer_packets", 32.into(), "mobile_ip.buffer_packets"),
        ("mobile_ip.buffer_cleanup", "tcp-ack".into(), "mobile_ip.buffer_cleanup"),
        ("mobile_ip.reorder", true.into(), "mobile_ip.reorder"),
        ("mobile_ip.beacon_interval_ms", 0.0.into(), "mobile_ip.beacon_interval_ms"),
        ("mobile_ip.advertisement_interval_s", 0.5.into(), "mobile_ip.advertisement_interval_s"),
        ("mobile_ip.home_agent", "nowhere".into(), "mobile_ip.home_agent"),
        ("mobile_ip.gap_ms", (-1.0).into(), "mobile_ip.gap_ms"),
        ("mobile_ip.handoff_every_s", 0.0.into(), "mobile_ip.handoff_every_s"),
        ("mobile_ip.handoff_every_s", 1e-4.into(), "mobile_ip.handoff_every_s"),
        ("mobile_ip.handoff_every_s", 1e300.into(), "mobile_ip.handoff_every_s"),
        ("mobile_ip.handoff_every_s", f64::NAN.into(), "mobile_ip.handoff_every_s"),
        ("mobile_ip.own_buffer_packets", 3.into(), "mobile_ip.own_buffer_packets"),
        // only a base station runs a node agent under Mobile IP; elsewhere it would silently see nothing
        ("nodes.fa1.agent", "snoop".into(), "nodes.fa1.agent"),
        ("nodes.mh.agent", "eln".into(), "nodes.mh.agent"),
        ("nodes.ha.agent", "snoop".into(), "nodes.ha.agent"),
    ];
    for (field, value, named) in cases {
        let e = bad(field, value);
        assert!(e.contains(&format!("`{named}`")), "{field}: {e}");
    }
    // A BS with no link to its FA: swap the cells' BSs.
    let e = bad(
        "mobile_ip.cells",
        toml::Value::try_from(vec![
            toml::toml! { foreign_agent = "fa1" base_station = "bs2" },
            toml::toml! { foreign_agent = "fa2" base_station = "bs1" },
        ])
        .unwrap(),
    );
    assert!(e.contains("`mobile_ip.cells.0.base_station`") && e.contains("no wired link"), "{e}");
    // The correspondent straight on the home agent (its first hop must run its binding cache).
    let mut v = example();
    v["links"]["ch-access"].as_table_mut().unwrap().insert("ends".into(), toml::Value::try_from(["ch", "ha"]).unwrap());
    let e = Scenario::from_toml(v, "x").unwrap_err().to_string();
    assert!(e.contains("`mobile_ip.correspondent`"), "{e}");
    // A zero-packet buffer with buffering asked for through its cleanup.
    let mut v = example();
    let m = v["mobile_ip"].as_table_mut().unwrap();
    m.insert("buffer_packets".into(), 0.into());
    m.insert("buffer_cleanup".into(), "link-ack".into());
    let e = Scenario::from_toml(v, "x").unwrap_err().to_string();
    assert!(e.contains("`mobile_ip.buffer_cleanup`") && e.contains("buffer_packets ≥ 1"), "{e}");
}

#[test]
fn periodic_handoffs_bounce_between_the_cells_and_each_one_registers() {
    // Eom 2002 Fig. 16's case: one handoff a second (the first at 1.3 s), a 3 MB file, route optimisation with
    // the buffer holding each handoff's drops (link-layer ACK cleanup, Fig. 17's order).
    let s = scenario("buffer-link-ack", "reno", 50.0, 1.3, 1.0, 3_000_000, 1);
    let r = run_intact(&s);
    let m = r.families.mobile_ip.as_ref().unwrap();
    let f = &r.flows[0];
    // One handoff at 1.3 s, then one every second until the transfer ends.
    let expected = ((f.duration_s - 1.3) / 1.0).floor() as usize + 1;
    assert!(m.handoffs.len().abs_diff(expected) <= 1, "{} handoffs in {} s", m.handoffs.len(), f.duration_s);
    assert!(m.handoffs.len() >= 10);
    for (k, h) in m.handoffs.iter().enumerate() {
        assert_eq!(h.index as usize, k);
        assert!((h.left_s - (1.3 + k as f64)).abs() < 1e-9, "{h:?}");
        let (from, to) = if k % 2 == 0 { ("bs1", "bs2") } else { ("bs2", "bs1") };
        assert_eq!((h.from.as_str(), h.to.as_str()), (from, to), "{h:?}");
        // The mobile hears the new cell's beacon (50 ms) and registers through it before the next handoff
        // (the transfer may end before the last registration's reply).
        assert!(h.handoff_request_s.is_some_and(|t| t <= 0.051), "{h:?}");
        let last = k + 1 == m.handoffs.len();
        assert!(h.registered_s.map_or(last, |t| t < 1.0), "{h:?}");
        // The buffer gives back exactly what the handoff dropped (§2.2; the link layer's ACKs freed the rest).
        assert_eq!(h.sent_from_buffer, h.packets_lost, "{h:?}");
    }
    let a = &m.agents;
    let n = m.handoffs.len() as u64;
    assert!(a["ha"]["registrations_accepted"] >= n - 1);
    assert_eq!(a["bs1"]["forward_messages"] + a["bs2"]["forward_messages"], n);
    // Transparent (§5): no duplicate, no fast retransmit, no timeout.
    assert_eq!((m.duplicates_delivered, f.fast_retransmits, f.sender_timeouts), (0, 0, 0), "{f:?}");
}

#[test]
fn duplicates_delivered_are_the_buffered_packets_the_mobile_already_had() {
    // A handoff at 3.3 s in a full window at HA–FA 50 ms drops 16 packets (mip-buffer-size). A plain FIFO of
    // B ≥ 16 packets (§3.3, no cleanup) holds the last B packets the old BS passed: the 16 the handoff
    // dropped and, before them, B − 16 the mobile had received. So the mobile gets exactly B − 16 again.
    for (b, dups) in [(16u64, 0u64), (17, 1), (18, 2)] {
        let mut s = scenario("buffer", "tahoe", 50.0, 3.3, f64::INFINITY, 1_000_000, 1);
        s.mobile_ip.as_mut().unwrap().buffer_packets = b as usize;
        let r = run(&s, &RunOptions { trace: true, ..RunOptions::default() }).unwrap();
        let m = r.families.mobile_ip.as_ref().unwrap();
        let [h] = &m.handoffs[..] else { panic!("{:?}", m.handoffs) };
        assert_eq!((h.packets_lost, h.sent_from_buffer), (16, b), "B = {b}: {h:?}");
        assert_eq!(h.duplicates_delivered, dups, "B = {b}: {h:?}");
        assert_eq!(m.duplicates_delivered, dups, "B = {b}");
        // The same count from the receiver's trace: offsets that arrived more than once.
        let series = &r.series.as_ref().unwrap()[0];
        let mut seen = std::collections::BTreeSet::new();
        let again = series.received.iter().filter(|(_, off)| !seen.insert(*off)).count() as u64;
        assert_eq!(again, dups, "B = {b}");
        // Two duplicates or fewer raise too few duplicate ACKs for a fast retransmit (§4.1's condition 2).
        assert_eq!(r.flows[0].fast_retransmits, 0, "B = {b}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Every byte once and in order, whatever the scheme, TCP, handoff time, HA–FA delay and handoff rate.
    #[test]
    fn every_byte_once_and_in_order(
        scheme in 0..SCHEMES.len(),
        tahoe in any::<bool>(),
        ha_fa in 0.0..70.0f64,
        first in 0.2..3.0f64,
        every in prop_oneof![Just(f64::INFINITY), 0.6..3.0f64],
        seed in 1..1000u64,
    ) {
        let tcp = if tahoe { "tahoe" } else { "reno" };
        run_intact(&scenario(SCHEMES[scheme], tcp, ha_fa, first, every, 400_000, seed));
    }
}
