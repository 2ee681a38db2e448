//! Many flows: the `[scale]` scenarios of `examples/` run to completion with every byte delivered
//! once and in order, the same seed gives the same run, and a large cell (past the sizes where routing tables
//! turn compact and the shared medium keeps its index) runs as its small version does per flow.

use lasthop_sim::{run, RunOptions, RunResult, Scenario};
use std::path::Path;

/// `examples/NAME` with `[scale]` set to `count` copies sharing `total_bytes`.
fn scenario(name: &str, count: u64, total_bytes: u64) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples").join(name);
    let mut v: toml::Value = toml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let scale = v["scale"].as_table_mut().unwrap();
    scale.insert("count".into(), toml::Value::Integer(count as i64));
    scale.insert("total_bytes".into(), toml::Value::Integer(total_bytes as i64));
    Scenario::from_toml(v, name).unwrap()
}

/// Every flow delivered all of its bytes, each checked against what was sent (`corrupt_bytes` counts every
/// byte delivered out of place or twice into the stream), and no packet went astray.
fn assert_every_byte_once_in_order(r: &RunResult, flows: usize) {
    assert_eq!(r.flows.len(), flows);
    for f in &r.flows {
        assert!(f.completed, "{} did not complete: {} of {} bytes", f.name, f.bytes_delivered, f.bytes_total);
        assert_eq!(f.bytes_delivered, f.bytes_total, "{}", f.name);
        assert_eq!(f.corrupt_bytes, 0, "{}", f.name);
    }
    assert_eq!(r.undeliverable_packets, 0);
    assert!(!r.hit_time_limit);
}

#[test]
fn a_hundred_mobiles_in_one_cell_get_every_byte_once_and_in_order() {
    let s = scenario("scale-cell.toml", 100, 1_000_000);
    let r = run(&s, &RunOptions::default()).unwrap();
    assert_every_byte_once_in_order(&r, 100);
    // Snoop at the base station saw every connection.
    assert_eq!(r.agents["bs"]["connections_created"], 100);
    // One medium: the 100 links' frames never overlapped, so the air was busy at most all the time.
    let busy: f64 = r.links.iter().filter(|l| l.name.starts_with("air-")).map(|l| l.utilisation).sum();
    assert!(busy <= 1.0 + 1e-9, "{busy}");
}

#[test]
fn a_hundred_flows_to_one_mobile_get_every_byte_once_and_in_order() {
    let s = scenario("scale-flows.toml", 100, 1_000_000);
    let r = run(&s, &RunOptions::default()).unwrap();
    assert_every_byte_once_in_order(&r, 100);
    assert_eq!(r.agents["bs"]["connections_created"], 100);
}

#[test]
fn the_same_seed_gives_the_same_many_flow_run() {
    for name in ["scale-cell.toml", "scale-flows.toml"] {
        let s = scenario(name, 50, 500_000);
        let a = serde_json::to_string(&run(&s, &RunOptions::default()).unwrap()).unwrap();
        let b = serde_json::to_string(&run(&s, &RunOptions::default()).unwrap()).unwrap();
        assert_eq!(a, b, "{name}");
        let mut other = s.clone();
        other.set_seed(2);
        let c = serde_json::to_string(&run(&other, &RunOptions::default()).unwrap()).unwrap();
        assert_ne!(a, c, "{name}: another seed, another run");
    }
}

#[test]
fn a_cell_of_two_thousand_mobiles_completes() {
    // 2,000 mobiles: compact routing tables (more than 256 nodes) and the medium's index (more than 8 links).
    let s = scenario("scale-cell.toml", 2000, 4_000_000);
    let r = run(&s, &RunOptions::default()).unwrap();
    assert_every_byte_once_in_order(&r, 2000);
}

/// Several flows through one Snoop base station: each flow's `local_retransmissions` and
/// `dupacks_suppressed` are its own connection's, not the station's sums. Each of four flows loses its own
/// packets on the shared hop, so their counts differ, and together they make the station's totals.
#[test]
fn each_flow_reports_its_own_connections_snoop_counters() {
    let s = scenario("scale-flows.toml", 4, 4_000_000);
    let r = run(&s, &RunOptions::default()).unwrap();
    assert_every_byte_once_in_order(&r, 4);
    let station = &r.agents["bs"];
    for column in ["local_retransmissions", "dupacks_suppressed"] {
        let per_flow: Vec<u64> = r
            .flows
            .iter()
            .map(|f| if column == "local_retransmissions" { f.local_retransmissions } else { f.dupacks_suppressed })
            .collect();
        assert_eq!(per_flow.iter().sum::<u64>(), station[column], "{column}: {per_flow:?}");
        assert!(
            per_flow.iter().all(|&n| n > 0 && n < station[column]),
            "{column}: {per_flow:?} of {}",
            station[column]
        );
    }
}
