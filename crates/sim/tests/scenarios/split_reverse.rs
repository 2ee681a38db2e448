//! I-TCP's relay for connections the mobile opens (Balakrishnan 1995 §2: the split is "between a fixed and mobile
//! host", whichever sends): Balakrishnan 1998's transfer from a mobile host through a split base station, every byte
//! verified at the fixed host; handed off by moving the relay between mobility base stations; and a base
//! station failure that loses exactly what the relay had acknowledged to the mobile.

use crate::support::{example, set};
use lasthop_sim::{run, FlowMetrics, RunOptions, RunResult, Scenario};

fn run_toml(v: toml::Value, origin: &str) -> RunResult {
    let s = Scenario::from_toml(v, origin).unwrap();
    run(&s, &RunOptions::default()).unwrap()
}

/// examples/eln.toml (Balakrishnan 1998 §3: the mobile sends over WaveLAN and a wide-area path) with `agent` at the
/// base station, a 1 MB upload and bit error rate `ber`.
fn upload(agent: &str, ber: f64, edit: impl FnOnce(&mut toml::Value)) -> RunResult {
    let mut v = example("eln.toml");
    set(&mut v, "nodes.bs.agent", agent);
    set(&mut v, "tcp.eln", false);
    set(&mut v, "tcp.sack", true);
    set(&mut v, "flows.upload.bytes", 1_000_000);
    set(&mut v, "links.wavelan.error.ber", ber);
    edit(&mut v);
    run_toml(v, "eln.toml")
}

fn counter(r: &RunResult, node: &str, name: &str) -> u64 {
    r.agents
        .get(node)
        .and_then(|c| c.get(name))
        .copied()
        .unwrap_or_else(|| panic!("no {name} at {node}: {:?}", r.agents))
}

fn intact(f: &FlowMetrics) {
    assert!(f.completed, "{f:?}");
    assert_eq!((f.bytes_delivered, f.corrupt_bytes, f.bytes_acked_not_delivered), (f.bytes_total, 0, 0), "{f:?}");
}

#[test]
fn a_mobile_senders_connection_is_split_and_every_byte_reaches_the_fixed_host() {
    for agent in ["split", "split-sack"] {
        for ber in [0.0, 1.6e-5] {
            let r = upload(agent, ber, |_| {});
            let f = &r.flows[0];
            intact(f);
            assert_eq!(counter(&r, "bs", "split_relays_opened"), 1, "{agent} {ber}");
            assert_eq!(counter(&r, "bs", "split_relays_from_mobile"), 1, "{agent} {ber}");
            assert_eq!(counter(&r, "bs", "split_bytes_relayed"), 1_000_000, "{agent} {ber}");
            assert_eq!(counter(&r, "bs", "split_corrupt_bytes"), 0);
            assert!(counter(&r, "bs", "split_max_buffered") <= 65536 + 1);
            // The relay's sender is on the wired path: nothing of it goes over the wireless hop.
            assert_eq!(counter(&r, "bs", "split_wireless_retransmitted"), 0);
            assert_eq!(
                counter(&r, "bs", "split_wired_retransmitted"),
                0,
                "{agent} {ber}: the wired path loses nothing"
            );
            if ber > 0.0 {
                assert!(f.segments_retransmitted > 0, "{agent}: the mobile recovers its own wireless losses: {f:?}");
            }
        }
    }
}

#[test]
fn the_split_relay_acknowledges_the_mobile_before_the_fixed_host_has_the_bytes() {
    // A slow wired path (a 100 ms each way wide-area link at 1 Mb/s): the relay's buffer fills, the mobile's
    // window is the buffer's free space.
    let r = upload("split", 0.0, |v| {
        set(v, "links.wan.rate_mbps", 1.0);
        set(v, "links.wan.delay_ms", 100.0);
    });
    intact(&r.flows[0]);
    let held = counter(&r, "bs", "split_max_buffered");
    assert!(held > 32768 && held <= 65536 + 1, "the buffer filled: {held}");
    let small = upload("split", 0.0, |v| {
        set(v, "links.wan.rate_mbps", 1.0);
        set(v, "links.wan.delay_ms", 100.0);
        set(v, "split.buffer_bytes", 8192);
    });
    intact(&small.flows[0]);
    assert!(counter(&small, "bs", "split_max_buffered") <= 8192 + 1, "{:?}", small.agents);
}

#[test]
fn a_base_station_failure_loses_exactly_what_the_relay_acknowledged_to_the_mobile() {
    let failing = |agent: &str| {
        upload(agent, 0.0, |v| {
            set(v, "links.wan.rate_mbps", 1.0);
            set(v, "time_limit_s", 60.0);
            set(v, "failure.node", "bs");
            set(v, "failure.at_s", 3.0);
            set(v, "failure.restart_after_s", 1.0);
        })
    };
    let none = failing("none");
    intact(&none.flows[0]);
    let r = failing("split");
    let f = &r.flows[0];
    assert!(!f.completed, "the relay's connection to the fixed host died with it: {f:?}");
    assert_eq!(f.corrupt_bytes, 0);
    // The relay's count at the failure: it had received `received` bytes from the mobile, and the fixed host
    // had acknowledged all but `held` of them.
    let (held, received) =
        (counter(&r, "bs", "split_failure_bytes_held"), counter(&r, "bs", "split_failure_bytes_received"));
    assert!(held > 0 && held <= 65536 + 1, "bounded by the relay's buffer: {held}");
    let lost = f.bytes_acked_not_delivered;
    assert!(lost > 0, "acknowledged to the mobile, never at the fixed host: {f:?}");
    // What the flow counts is what the relay held, less what was in the network when it failed: the mobile
    // saw no more acknowledged than the relay had received, and the fixed host got at least what the relay
    // saw acknowledged.
    assert!(lost + f.bytes_delivered <= received, "{lost} + {} > {received}", f.bytes_delivered);
    assert!(f.bytes_delivered >= received - held, "{} < {received} - {held}", f.bytes_delivered);
    assert!(lost <= held);
    assert_eq!(counter(&r, "bs", "split_relays_lost"), 1);
    assert!(counter(&r, "bs", "split_orphaned_packets") > 0, "the mobile's retransmissions find no relay");
}

/// examples/handoff.toml with the flow reversed (the mobile uploads 2 MB), a handoff every `interval` s from
/// 1 s under the plain scheme, and `agent` at both base stations.
fn upload_with_handoffs(agent: &str, cells: &str, rendezvous: f64, interval: f64) -> RunResult {
    let mut v = example("handoff.toml");
    set(&mut v, "flows.bulk.from", "mh");
    set(&mut v, "flows.bulk.to", "fh");
    set(&mut v, "flows.bulk.bytes", 2_000_000);
    set(&mut v, "mobility.scheme", "plain");
    set(&mut v, "mobility.first_s", 1.0);
    set(&mut v, "mobility.interval_s", interval);
    set(&mut v, "mobility.cells", cells);
    set(&mut v, "mobility.rendezvous_s", rendezvous);
    set(&mut v, "tcp.sack", true);
    for bs in ["bs1", "bs2"] {
        set(&mut v, &format!("nodes.{bs}.agent"), agent);
    }
    run_toml(v, "handoff.toml")
}

#[test]
fn the_mobiles_relay_moves_with_it_and_every_byte_arrives_once_in_order() {
    for agent in ["split", "split-sack"] {
        for (cells, rendezvous) in [("overlapping", 0.0), ("non-overlapping", 1.0)] {
            for interval in [2.0, 5.0] {
                let r = upload_with_handoffs(agent, cells, rendezvous, interval);
                intact(&r.flows[0]);
                let handoffs = r.families.handoffs.len() as u64;
                assert!(handoffs >= 2, "{agent} {cells}: {:?}", r.families.handoffs);
                let moves = counter(&r, "bs1", "split_handoffs") + counter(&r, "bs2", "split_handoffs");
                assert!(moves >= 1 && moves <= handoffs, "{agent} {cells} {interval}: {moves} {:?}", r.agents);
                let from_mobile =
                    counter(&r, "bs1", "split_relays_from_mobile") + counter(&r, "bs2", "split_relays_from_mobile");
                assert_eq!(from_mobile, 1, "one relay, opened at the first base station, moved: {:?}", r.agents);
                let state =
                    counter(&r, "bs1", "split_handoff_state_bytes") + counter(&r, "bs2", "split_handoff_state_bytes");
                assert!(state <= moves * (65536 + 1), "{agent}: {state}");
            }
        }
    }
}
