//! End to end across handoffs: every byte delivered once and in order (the simulator checks payload bytes),
//! for both schemes and both cell layouts, at property-chosen handoff times; and determinism with mobility.

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

fn check_intact(s: &Scenario) -> lasthop_sim::RunResult {
    let r = run(s, &RunOptions::default()).unwrap();
    let f = &r.flows[0];
    assert!(f.completed, "{f:?}");
    assert_eq!(f.bytes_delivered, f.bytes_total);
    assert_eq!(f.corrupt_bytes, 0);
    r
}

#[test]
fn multicast_handoffs_complete_quickly_with_one_primary() {
    let r = check_intact(&scenario("multicast", 1.0, 0.7, "overlapping", 0.0, false, 1_000_000, false));
    assert!(r.handoffs.len() >= 4, "{}", r.handoffs.len());
    for h in &r.handoffs {
        let lat = h.latency_s.expect("first packet from the new BS");
        assert!(lat < 0.2, "{h:?}");
        assert!(h.request_at_new_bs_s.is_some() && h.old_bs_told_s.is_some(), "{h:?}");
    }
}

#[test]
fn plain_non_overlapping_loses_packets_and_signals_completion() {
    let slow = check_intact(&scenario("plain", 2.0, 1.0, "non-overlapping", 0.5, false, 1_000_000, false));
    let fast = check_intact(&scenario("plain", 2.0, 1.0, "non-overlapping", 0.5, true, 1_000_000, false));
    assert!(slow.handoffs.iter().map(|h| h.packets_lost).sum::<u64>() > 0);
    assert!(fast.handoffs.iter().all(|h| h.accepted_s.is_some()), "{:?}", fast.handoffs);
}

#[test]
fn same_seed_same_result_with_mobility() {
    let s = scenario("multicast", 0.5, 0.3, "non-overlapping", 0.1, true, 500_000, true);
    let a = run(&s, &RunOptions { trace: true, pcap_dir: None }).unwrap();
    let b = run(&s, &RunOptions { trace: true, pcap_dir: None }).unwrap();
    assert_eq!(a, b);
    assert!(!a.handoffs.is_empty());
    assert!(a.series.as_ref().unwrap()[0].handoffs.len() == a.handoffs.len());
}

#[test]
fn scheme_none_is_the_static_topology() {
    let r = check_intact(&scenario("none", 1.0, 0.5, "overlapping", 0.0, false, 300_000, false));
    assert!(r.handoffs.is_empty());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]
    /// Across many handoffs at arbitrary times, with either scheme and layout, errors and Snoop or not,
    /// the application receives every byte once, in order.
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
        prop_assert!(f.completed, "{:?}", f);
        prop_assert_eq!(f.bytes_delivered, f.bytes_total);
        prop_assert_eq!(f.corrupt_bytes, 0);
    }
}
