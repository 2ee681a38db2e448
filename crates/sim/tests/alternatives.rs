//! End-to-end runs of the alternatives Snoop is measured against (seed 000 §2): I-TCP's split connection
//! (plain and SACK over the wireless hop) and M-TCP's supervisor, on `examples/snoop.toml`'s topology with
//! bit errors; every byte verified at the mobile, and a base-station failure mid-transfer showing which
//! schemes keep end-to-end semantics.

use lasthop_sim::{run, FlowMetrics, RunOptions, RunResult, Scenario};

fn scenario(edit: impl FnOnce(&mut toml::Value)) -> Result<Scenario, String> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/snoop.toml")).unwrap();
    let mut v: toml::Value = toml::from_str(&text).unwrap();
    set(&mut v, "flows.bulk.bytes", 1_000_000);
    set(&mut v, "tcp.sack", true);
    edit(&mut v);
    Scenario::from_toml(v, "snoop.toml").map_err(|e| e.to_string())
}

fn set(v: &mut toml::Value, path: &str, value: impl Into<toml::Value>) {
    let mut cur = v;
    let parts: Vec<&str> = path.split('.').collect();
    for p in &parts[..parts.len() - 1] {
        if cur.get(*p).is_none() {
            cur.as_table_mut().unwrap().insert(p.to_string(), toml::Value::Table(Default::default()));
        }
        cur = cur.get_mut(*p).unwrap();
    }
    cur.as_table_mut().unwrap().insert(parts[parts.len() - 1].to_string(), value.into());
}

fn run_with(agent: &str, ber: f64, edit: impl FnOnce(&mut toml::Value)) -> RunResult {
    let s = scenario(|v| {
        set(v, "nodes.bs.agent", agent);
        set(v, "links.wavelan.error.ber", ber);
        edit(v);
    })
    .unwrap();
    run(&s, &RunOptions::default()).unwrap()
}

fn flow(r: &RunResult) -> &FlowMetrics {
    &r.flows[0]
}

fn bs(r: &RunResult, counter: &str) -> u64 {
    r.agents
        .get("bs")
        .and_then(|c| c.get(counter))
        .copied()
        .unwrap_or_else(|| panic!("no counter {counter}: {:?}", r.agents))
}

#[test]
fn every_scheme_delivers_every_byte_intact_under_bit_errors() {
    for agent in ["none", "snoop", "split", "split-sack", "mtcp"] {
        for ber in [0.0, 3.9e-6] {
            let r = run_with(agent, ber, |_| {});
            let f = flow(&r);
            assert!(f.completed, "{agent} at {ber}: {f:?}");
            assert_eq!((f.bytes_delivered, f.corrupt_bytes), (1_000_000, 0), "{agent} at {ber}");
            assert_eq!(f.bytes_acked_not_delivered, 0, "{agent}: a completed transfer leaves nothing behind");
            assert!(f.wired_goodput > 0.5 && f.wired_goodput <= 1.0, "{agent}: {f:?}");
            if ber == 0.0 {
                assert_eq!(f.wired_goodput, 1.0, "{agent}: nothing resent without errors");
            }
            let w = f.wireless_goodput.unwrap();
            assert!(w > 0.5 && w < 1.0, "{agent}: wireless goodput {w} (headers count)");
        }
    }
}

#[test]
fn the_split_relay_recovers_wireless_losses_without_the_fixed_sender() {
    for agent in ["split", "split-sack"] {
        let r = run_with(agent, 7.6e-6, |_| {});
        let f = flow(&r);
        assert!(f.completed);
        assert_eq!(bs(&r, "split_relays_opened"), 1);
        assert_eq!(bs(&r, "split_bytes_relayed"), 1_000_000);
        assert!(bs(&r, "split_wireless_retransmitted") > 0, "{agent}: the relay resent on the wireless hop");
        assert_eq!(f.segments_retransmitted, 0, "{agent}: the wired sender never saw a wireless loss: {f:?}");
        assert!(bs(&r, "split_max_buffered") <= 65536 + 1);
    }
}

#[test]
fn mtcp_withholds_the_last_byte_and_keeps_the_transfer_whole() {
    let r = run_with("mtcp", 3.9e-6, |_| {});
    assert!(flow(&r).completed);
    assert!(bs(&r, "acks_withheld") > 100, "{:?}", r.agents);
}

/// The base station fails 1.5 s into the transfer and restarts 1 s later with empty state.
fn failure(agent: &str) -> RunResult {
    run_with(agent, 0.0, |v| {
        set(v, "time_limit_s", 60.0);
        set(v, "failure.node", "bs");
        set(v, "failure.at_s", 1.5);
        set(v, "failure.restart_after_s", 1.0);
    })
}

#[test]
fn a_base_station_failure_loses_acknowledged_bytes_only_under_the_split_connection() {
    for agent in ["none", "snoop", "mtcp"] {
        let r = failure(agent);
        let f = flow(&r);
        assert!(f.completed, "{agent}: soft state, the transfer survives: {f:?}");
        assert_eq!((f.bytes_delivered, f.corrupt_bytes, f.bytes_acked_not_delivered), (1_000_000, 0, 0), "{agent}");
        assert!(bs(&r, "failure_packets_lost") > 0);
    }
    let r = failure("split");
    let f = flow(&r);
    assert!(!f.completed, "the relay's connection to the mobile died with it: {f:?}");
    assert_eq!(f.corrupt_bytes, 0);
    // What the relay had acknowledged and not yet delivered: at most its buffer (and the probe byte).
    let lost = f.bytes_acked_not_delivered;
    assert!(lost > 0 && lost <= 65536 + 1, "{lost}");
    assert_eq!(bs(&r, "split_relays_lost"), 1);
    assert!(bs(&r, "split_orphaned_packets") > 0, "the fixed sender's retransmissions find no relay");
}

#[test]
fn impossible_combinations_are_refused_with_the_field_named() {
    let e = scenario(|v| set(v, "nodes.bs.agent", "split+snoop")).unwrap_err();
    assert!(e.contains("nodes.bs.agent") && e.contains("cannot be chained"), "{e}");
    let e = scenario(|v| set(v, "split.buffer_bytes", 0)).unwrap_err();
    assert!(e.contains("split.buffer_bytes"), "{e}");
    let e = scenario(|v| {
        set(v, "failure.node", "nowhere");
        set(v, "failure.at_s", 1.0);
    })
    .unwrap_err();
    assert!(e.contains("failure.node"), "{e}");
    let e = scenario(|v| {
        set(v, "failure.node", "bs");
        set(v, "failure.at_s", -1.0);
    })
    .unwrap_err();
    assert!(e.contains("failure.at_s"), "{e}");
}

#[test]
fn runs_are_deterministic() {
    let a = run_with("split-sack", 7.6e-6, |_| {});
    let b = run_with("split-sack", 7.6e-6, |_| {});
    assert_eq!(a.flows, b.flows);
    assert_eq!(a.agents, b.agents);
}
