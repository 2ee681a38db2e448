//! End to end across handoffs: every byte delivered once and in order (the simulator checks payload bytes),
//! for both schemes and both cell layouts, at property-chosen handoff times; and determinism with mobility.

use crate::support::run_intact;
use lasthop_sim::{run, RunOptions, Scenario};
use proptest::prelude::*;

#[allow(clippy::too_many_arguments)] // one knob per scenario field the tests vary
fn scenario(
    scheme: &str,
    interval: f64,
    first: f64,
    cells: &str,
    rendezvous: f64,
    fast: bool,
    bytes: u64,
    snoop: bool,
) -> Scenario {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/handoff.toml")).unwrap();
    let mut v: toml::Value = toml::from_str(&text).unwrap();
    let m = v["mobility"].as_table_mut().unwrap();
    m.insert("scheme".into(), scheme.into());
    m.insert("interval_s".into(), interval.into());
    m.insert("first_s".into(), first.into());
    m.insert("cells".into(), cells.into());
    m.insert("rendezvous_s".into(), rendezvous.into());
    m.insert("fast_retransmit".into(), fast.into());
    v["flows"]["bulk"].as_table_mut().unwrap().insert("bytes".into(), (bytes as i64).into());
    if snoop {
        for bs in ["bs1", "bs2"] {
            v["nodes"][bs].as_table_mut().unwrap().insert("agent".into(), "snoop".into());
        }
        v["links"]["cell1"]["error"] = toml::toml! { model = "ber" ber = 2e-6 }.into();
        v["links"]["cell2"]["error"] = toml::toml! { model = "ber" ber = 2e-6 }.into();
    }
    Scenario::from_toml(v, "handoff.toml").unwrap()
}

#[test]
fn multicast_handoffs_complete_quickly_with_one_primary() {
    let r = run_intact(&scenario("multicast", 1.0, 0.7, "overlapping", 0.0, false, 1_000_000, false));
    assert!(r.families.handoffs.len() >= 4, "{}", r.families.handoffs.len());
    for h in &r.families.handoffs {
        let lat = h.latency_s.expect("first packet from the new BS");
        assert!(lat < 0.2, "{h:?}");
        assert!(h.request_at_new_bs_s.is_some() && h.old_bs_told_s.is_some(), "{h:?}");
    }
}

#[test]
fn plain_non_overlapping_loses_packets_and_signals_completion() {
    let slow = run_intact(&scenario("plain", 2.0, 1.0, "non-overlapping", 0.5, false, 1_000_000, false));
    let fast = run_intact(&scenario("plain", 2.0, 1.0, "non-overlapping", 0.5, true, 1_000_000, false));
    assert!(slow.families.handoffs.iter().map(|h| h.packets_lost).sum::<u64>() > 0);
    assert!(fast.families.handoffs.iter().all(|h| h.accepted_s.is_some()), "{:?}", fast.families.handoffs);
}

#[test]
fn same_seed_same_result_with_mobility() {
    let s = scenario("multicast", 0.5, 0.3, "non-overlapping", 0.1, true, 500_000, true);
    let a = run(&s, &RunOptions { trace: true, pcap_dir: None }).unwrap();
    let b = run(&s, &RunOptions { trace: true, pcap_dir: None }).unwrap();
    assert_eq!(a, b);
    assert!(!a.families.handoffs.is_empty());
    assert!(a.series.as_ref().unwrap()[0].handoffs.len() == a.families.handoffs.len());
}

#[test]
fn scheme_none_is_the_static_topology() {
    let r = run_intact(&scenario("none", 1.0, 0.5, "overlapping", 0.0, false, 300_000, false));
    assert!(r.families.handoffs.is_empty());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]
    /// Across many handoffs at arbitrary times, with either scheme and layout, errors and Snoop or not,
    /// the application receives every byte once, in order: what it received is the stream's start, never
    /// a byte twice or out of place (the flow compares each delivered byte with the pattern at its offset).
    /// It receives all of it within the time limit whenever the cells overlap. When they do not, the mobile
    /// is out of reach for `rendezvous` in every handoff and a plain handoff loses what was in flight, so
    /// Reno's backed-off timers may leave the transfer unfinished at 600 s (a handoff every 0.97 s with
    /// 0.45 s out of reach delivered 212 of 400 KB), or never let it start: with handoffs every 0.5 s from
    /// t = 0, every SYN (sent at 0, 3, 9, 21 s, ...) leaves at a handoff and is lost. That is the protocols'
    /// behaviour, not a fault; the fixed cases above check completion there.
    #[test]
    fn every_byte_once_in_order(
        multicast in any::<bool>(),
        interval in 0.5f64..2.0,
        first in 0.0f64..1.0,
        non_overlapping in any::<bool>(),
        rendezvous_frac in 0.0f64..0.5,
        fast in any::<bool>(),
        snoop in any::<bool>(),
    ) {
        let s = scenario(
            if multicast { "multicast" } else { "plain" },
            interval,
            first,
            if non_overlapping { "non-overlapping" } else { "overlapping" },
            rendezvous_frac * interval,
            fast,
            400_000,
            snoop,
        );
        let r = run(&s, &RunOptions::default()).unwrap();
        let f = &r.flows[0];
        prop_assert_eq!(f.corrupt_bytes, 0);
        prop_assert!(f.bytes_delivered <= f.bytes_total, "{:?}", f);
        prop_assert_eq!(f.completed, f.bytes_delivered == f.bytes_total, "{:?}", f);
        if !non_overlapping {
            prop_assert!(f.completed, "{:?}", f);
        }
    }
}

/// examples/walk.toml (beacon-driven handoff) with the mobile walking once from BS1 to BS2 at `speed` m/s.
fn walk(scheme: &str, agent: &str, hysteresis_db: f64, samples: i64, seed: i64, bytes: i64) -> Scenario {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/walk.toml")).unwrap();
    let mut v: toml::Value = toml::from_str(&text).unwrap();
    v["seed"] = seed.into();
    let m = v["mobility"].as_table_mut().unwrap();
    m.insert("scheme".into(), scheme.into());
    m.insert("repeat".into(), "once".into());
    m.insert("speed_mps".into(), 5.0.into());
    m.insert("hysteresis_db".into(), hysteresis_db.into());
    m.insert("beacon_samples".into(), samples.into());
    for bs in ["bs1", "bs2"] {
        v["nodes"][bs].as_table_mut().unwrap().insert("agent".into(), agent.into());
    }
    v["flows"]["bulk"].as_table_mut().unwrap().insert("bytes".into(), bytes.into());
    Scenario::from_toml(v, "walk.toml").unwrap()
}

#[test]
fn walking_across_two_cells_hands_off_once_with_hysteresis() {
    // 100 m at 5 m/s: the mobile reaches BS2 after 20 s; 4 MB take about 21 s.
    for agent in ["none", "snoop"] {
        for seed in 1..=4 {
            let r = run_intact(&walk("multicast", agent, 8.0, 3, seed, 4_000_000));
            assert_eq!(r.families.handoffs.len(), 1, "{agent} seed {seed}: {:?}", r.families.handoffs);
            let h = &r.families.handoffs[0];
            assert_eq!((h.from.as_str(), h.to.as_str()), ("bs1", "bs2"));
            // The decision comes after the midpoint (50 m, 10 s): BS2 must be 8 dB stronger.
            assert!(h.decided_s > 10.0 && h.decided_s < 20.0, "{h:?}");
            assert!(h.completion_s.is_some_and(|c| c < 0.2), "{h:?}");
        }
    }
}

#[test]
fn without_hysteresis_shadowing_makes_the_mobile_ping_pong() {
    let mut total = 0;
    for seed in 1..=4 {
        let r = run_intact(&walk("multicast", "none", 0.0, 1, seed, 4_000_000));
        assert!(r.families.handoffs.len() % 2 == 1, "it ends at BS2: {:?}", r.families.handoffs);
        total += r.families.handoffs.len();
    }
    assert!(total > 4 * 2, "{total} handoffs for 4 single crossings");
}

#[test]
fn plain_handoff_on_beacons_and_the_buffering_set_follows_the_signal() {
    let r = run_intact(&walk("plain", "none", 8.0, 3, 1, 4_000_000));
    assert!(!r.families.handoffs.is_empty());
    assert!(r.families.handoffs.iter().all(|h| h.accepted_s.is_some()));
    let r = run_intact(&walk("multicast", "none", 8.0, 3, 1, 4_000_000));
    // BS2 (-80 dBm at the start) is idle at first and asked to buffer once it is heard above -75 dBm.
    let bs2 = &r.agents["bs2"];
    assert!(bs2["buffered"] > 0 && bs2["control_received"] >= 2, "{bs2:?}");
}

#[test]
fn out_of_range_between_cells_no_frames_until_the_next_bs_is_heard() {
    // 300 m apart: beyond ≈146 m from both BSs the mobile hears neither; it hands off when it hears BS2.
    let mut s = walk("multicast", "none", 6.0, 3, 1, 3_000_000);
    let m = s.mobility.as_mut().unwrap();
    m.positions_m = Some(vec![0.0, 300.0]);
    m.waypoints_m = Some(vec![130.0, 170.0]);
    m.speed_mps = 2.0;
    let r = run_intact(&s);
    assert_eq!(r.families.handoffs.len(), 1, "{:?}", r.families.handoffs);
    let h = &r.families.handoffs[0];
    // Out of BS1's range at 146.8 m (8.4 s); BS2 in range from 153.2 m (11.6 s), heard at its next beacon.
    assert!((h.left_s - 8.4).abs() < 0.1, "{h:?}");
    assert!(h.decided_s > 11.6 && h.decided_s < 13.0, "{h:?}");
    assert!(r.flows[0].longest_pause_s > 3.0, "{:?}", r.flows[0]);
}

#[test]
fn same_seed_same_result_with_beacons() {
    let s = walk("multicast", "snoop", 0.0, 1, 7, 2_000_000);
    let a = run(&s, &RunOptions { trace: true, pcap_dir: None }).unwrap();
    let b = run(&s, &RunOptions { trace: true, pcap_dir: None }).unwrap();
    assert_eq!(a, b);
    assert!(a.families.handoffs.len() > 1);
    let other = run(&walk("multicast", "snoop", 0.0, 1, 8, 2_000_000), &RunOptions::default()).unwrap();
    assert_ne!(a.families.handoffs, other.families.handoffs, "another seed shadows differently");
}

#[test]
fn overlapping_cells_share_one_medium_so_frequent_handoffs_do_not_add_capacity() {
    let still = run_intact(&scenario("plain", f64::INFINITY, 0.0, "overlapping", 0.0, false, 2_000_000, false));
    let busy = run_intact(&scenario("plain", 0.5, 0.25, "overlapping", 0.0, false, 2_000_000, false));
    let g = |r: &lasthop_sim::RunResult| r.flows[0].goodput_mbps;
    assert!(g(&busy) <= g(&still) * 1.001, "handoffs every 0.5 s: {} > {} without", g(&busy), g(&still));
    // With a medium per cell (the old BS's queue drains in parallel with the new cell) they would.
    let mut s = scenario("plain", 0.5, 0.25, "overlapping", 0.0, false, 2_000_000, false);
    s.mobility.as_mut().unwrap().shared_medium = Some(false);
    let parallel = run_intact(&s);
    assert!(g(&parallel) > g(&busy), "{} vs {}", g(&parallel), g(&busy));
}

#[test]
fn snoop_keeps_its_goodput_across_frequent_handoffs() {
    // Regression: a Snoop taking over at a handoff read the DUPACKs caused by the old BS's queued duplicates
    // as losses and retransmitted segments the mobile had, in a storm (0.43 against 1.58 Mb/s).
    let g = |interval: f64| {
        let r = run_intact(&scenario("multicast", interval, 1.0, "overlapping", 0.0, false, 2_000_000, true));
        (r.flows[0].goodput_mbps, r.flows[0].local_retransmissions)
    };
    let ((with, rexmit), (without, _)) = (g(2.0), g(f64::INFINITY));
    assert!(with >= 0.8 * without, "{with} vs {without}");
    assert!(rexmit < 200, "{rexmit} local retransmissions");
}

#[test]
fn an_old_bs_that_discards_its_queue_sends_no_duplicates_of_the_buffer() {
    // Overlapping cells on one channel: a draining old BS still delivers every frame it queued for the mobile,
    // including the ones the new primary re-sends from its buffer (Balakrishnan 1995 §6), so the mobile gets them twice.
    // `old_bs_drains = false` discards them at the request instead; every byte still arrives once, in order.
    let run_with = |drains: bool| {
        let mut s = scenario("multicast", 1.0, 0.7, "overlapping", 0.0, false, 2_000_000, false);
        s.mobility.as_mut().unwrap().old_bs_drains = drains;
        run_intact(&s)
    };
    let sum = |r: &lasthop_sim::RunResult, f: fn(&lasthop_sim::HandoffMetrics) -> u64| {
        r.families.handoffs.iter().map(f).sum()
    };
    let (drains, discards) = (run_with(true), run_with(false));
    assert_eq!(sum(&drains, |h| h.purged_at_old_bs), 0);
    let resent: u64 = sum(&drains, |h| h.resent_from_buffer);
    assert!(sum(&drains, |h| h.duplicates) >= resent && resent > 0, "every re-sent packet arrives twice");
    let purged: u64 = sum(&discards, |h| h.purged_at_old_bs);
    assert!(
        purged >= discards.families.handoffs.len() as u64,
        "{purged} frames over {} handoffs",
        discards.families.handoffs.len()
    );
    assert!(
        sum(&discards, |h| h.duplicates) * 4 < sum(&drains, |h| h.duplicates),
        "{} duplicates against {}",
        sum(&discards, |h| h.duplicates),
        sum(&drains, |h| h.duplicates)
    );
}

#[test]
fn host_processing_time_delays_the_request_and_the_answer() {
    // `host_processing_ms`: the mobile waits before sending its request and the new BS before acting on it, so
    // an idle handoff's latency (decision to the new BS's acceptance) grows by both; every byte still arrives.
    let idle = |ms: f64| {
        let mut s = scenario("multicast", 1.0, 0.7, "overlapping", 0.0, false, 20_000, false);
        s.mobility.as_mut().unwrap().host_processing_ms = ms;
        s.flows.get_mut("bulk").unwrap().start_s = 4.1; // after three idle handoffs
        let r = run_intact(&s);
        let first = &r.families.handoffs[0];
        (first.completion_s.expect("accepted"), first.request_at_new_bs_s.expect("request arrived"))
    };
    let (none, request0) = idle(0.0);
    let (four, request4) = idle(4.0);
    // Both hosts' 4 ms are on the path, and processing adds no more than itself (at 0 ms the new BS's answer can
    // wait behind the mobile's second message on the shared channel, which 4 ms of processing hides).
    assert!(four >= 0.008 && four <= none + 0.008 + 1e-9, "{none} s without processing, {four} s with 4 ms");
    assert!(request4 >= request0 + 0.004 + 0.004 - 1e-9, "the new BS notes the request once processed");
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/handoff.toml")).unwrap();
    for value in [-1.0, f64::NAN, 1e300] {
        let mut v: toml::Value = toml::from_str(&text).unwrap();
        v["mobility"].as_table_mut().unwrap().insert("host_processing_ms".into(), value.into());
        let e = Scenario::from_toml(v, "handoff.toml").unwrap_err().to_string();
        assert!(e.contains("host_processing_ms") && e.contains("handoff.toml"), "{e}");
    }
}
