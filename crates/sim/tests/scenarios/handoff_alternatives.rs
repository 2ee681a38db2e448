//! The alternatives at mobility base stations (Balakrishnan 1995 §2): I-TCP's split relays handed off by moving their
//! state to the new base station, and M-TCP's supervisor host (Brown 1997) freezing the sender through the
//! handoff gap while its relay moves the same way, across both cell layouts; every byte delivered once and in order (the simulator checks
//! payload bytes), the handoff's latency following the bytes the relay held, and the combinations still
//! refused.

use crate::support;
use crate::support::{run_intact, set};
use lasthop_sim::{run, RunOptions, RunResult, Scenario};

/// examples/handoff.toml with a handoff every 2 s from 1 s, `agent` at both base stations, and `edit`.
fn scenario(agent: &str, edit: impl FnOnce(&mut toml::Value)) -> Result<Scenario, String> {
    let mut v = support::example("handoff.toml");
    set(&mut v, "flows.bulk.bytes", 2_000_000);
    set(&mut v, "mobility.scheme", "plain");
    set(&mut v, "mobility.interval_s", 2.0);
    set(&mut v, "mobility.first_s", 1.0);
    for bs in ["bs1", "bs2"] {
        set(&mut v, &format!("nodes.{bs}.agent"), agent);
    }
    edit(&mut v);
    Scenario::from_toml(v, "handoff.toml").map_err(|e| e.to_string())
}

fn counter(r: &RunResult, node: &str, name: &str) -> u64 {
    r.agents.get(node).and_then(|c| c.get(name)).copied().unwrap_or(0)
}

fn moves(r: &RunResult) -> u64 {
    counter(r, "bs1", "split_handoffs") + counter(r, "bs2", "split_handoffs")
}

#[test]
fn split_relays_move_with_the_mobile_and_deliver_every_byte_once_in_order() {
    for agent in ["split", "split-sack"] {
        for (cells, rendezvous) in [("overlapping", 0.0), ("non-overlapping", 0.0), ("non-overlapping", 1.0)] {
            for interval in [2.0, 5.0] {
                let s = scenario(agent, |v| {
                    set(v, "mobility.cells", cells);
                    set(v, "mobility.rendezvous_s", rendezvous);
                    set(v, "mobility.interval_s", interval);
                })
                .unwrap();
                let r = run_intact(&s);
                let handoffs = r.families.handoffs.len() as u64;
                assert!(handoffs >= 2, "{agent} {cells} {rendezvous}: {:?}", r.families.handoffs);
                if interval < 2.7 {
                    // Handoffs come faster than a 64 KB relay moves (2.6 s): it chases the mobile, and when the
                    // mobile returns to where the relay is going, the relay stays there. Still every byte arrives.
                    assert!(moves(&r) <= handoffs, "{:?}", r.agents);
                    continue;
                }
                // One move per handoff; the last may still be waiting for the relay to reach the base station it
                // leaves from when the transfer ends (a handoff every 2 s, a 64 KB move takes 2.6 s).
                let m = moves(&r);
                assert!(m == handoffs || m + 1 == handoffs, "{agent} {cells} {rendezvous}: {m} moves {:?}", r.agents);
                let strays = counter(&r, "bs1", "split_stray_packets") + counter(&r, "bs2", "split_stray_packets");
                assert!(strays < 10 * handoffs, "{agent} {cells} {rendezvous}: {strays} strays {:?}", r.agents);
                // Every handoff's first data packet from the new BS comes from the moved relay: after its transfer.
                for h in r.families.handoffs.iter().filter(|h| h.latency_s.is_some()) {
                    assert!(h.latency_s.unwrap() >= 0.265, "{agent} {cells}: {h:?}");
                }
            }
        }
    }
}

#[test]
fn the_handoff_takes_longer_the_more_the_relay_holds() {
    let latency = |buffer: i64| {
        let s = scenario("split", |v| set(v, "split.buffer_bytes", buffer)).unwrap();
        let r = run_intact(&s);
        let lat: Vec<f64> = r.families.handoffs.iter().filter_map(|h| h.latency_s).collect();
        assert!(!lat.is_empty());
        let held = counter(&r, "bs1", "split_handoff_state_bytes") + counter(&r, "bs2", "split_handoff_state_bytes");
        (lat.iter().sum::<f64>() / lat.len() as f64, held / moves(&r))
    };
    let (small, small_held) = latency(4096);
    let (large, large_held) = latency(32768);
    // A full buffer moves at a handoff during a transfer (the wired side outruns the 2 Mb/s cell).
    assert!(small_held <= 4096 + 1 && large_held > 24 * 1024, "{small_held} {large_held}");
    // 36.4 ms per KB more (Balakrishnan 1995 §2): 28 KB more held is about a second more.
    let per_kb = (large - small) * 1e3 / ((large_held - small_held) as f64 / 1024.0);
    assert!((30.0..45.0).contains(&per_kb), "{small} s, {large} s: {per_kb} ms/KB");
}

#[test]
fn the_state_transfer_cost_is_a_parameter() {
    let mean = |fixed: f64| {
        let s = scenario("split", |v| {
            set(v, "split.handoff.fixed_ms", fixed);
            set(v, "split.handoff.per_kb_ms", 0.0);
        })
        .unwrap();
        let r = run_intact(&s);
        let lat: Vec<f64> = r.families.handoffs.iter().filter_map(|h| h.latency_s).collect();
        lat.iter().sum::<f64>() / lat.len() as f64
    };
    let (cheap, dear) = (mean(10.0), mean(510.0));
    assert!((dear - cheap - 0.5).abs() < 0.05, "{cheap} {dear}");
}

#[test]
fn mtcp_freezes_the_sender_through_every_gap_and_delivers_every_byte_once_in_order() {
    for (cells, rendezvous) in [("overlapping", 0.0), ("non-overlapping", 0.0), ("non-overlapping", 1.0)] {
        let s = scenario("mtcp", |v| {
            set(v, "mobility.cells", cells);
            set(v, "mobility.rendezvous_s", rendezvous);
        })
        .unwrap();
        let r = run_intact(&s);
        let f = &r.flows[0];
        let handoffs = r.families.handoffs.len() as u64;
        let sum = |name| counter(&r, "bs1", name) + counter(&r, "bs2", name);
        assert!(handoffs >= 2, "{cells} {rendezvous}: {:?}", r.families.handoffs);
        // Every base station is its own supervisor host: the relay moves (once per handoff, or fewer when the
        // mobile moves on again before the state arrives); a departure freezes the sender from the old base
        // station (unless it is frozen already), and the moved relay resumes it.
        let moved = moves(&r);
        assert!(moved > 0 && moved <= handoffs, "{cells} {rendezvous}: {moved} moves, {handoffs} handoffs");
        let freezes = sum("mtcp_freezes_cut_off");
        assert!(freezes > 0 && freezes <= moved, "{cells} {rendezvous}: {:?}", r.agents);
        assert_eq!(sum("mtcp_resumes"), freezes + sum("mtcp_freezes_silent"), "every freeze resumed");
        assert_eq!(f.sender_timeouts, 0, "{cells} {rendezvous}: frozen, not timed out: {f:?}");
    }
}

#[test]
fn split_handoff_runs_are_deterministic() {
    let s = scenario("split", |v| set(v, "mobility.cells", "non-overlapping")).unwrap();
    let a = run(&s, &RunOptions::default()).unwrap();
    let b = run(&s, &RunOptions::default()).unwrap();
    assert_eq!(a, b);
}

#[test]
fn combinations_still_refused_name_their_field() {
    let e = scenario("split", |v| set(v, "mobility.scheme", "multicast")).unwrap_err();
    assert!(e.contains("mobility.scheme") && e.contains("plain"), "{e}");
    let e = scenario("split", |v| set(v, "nodes.bs2.agent", "snoop")).unwrap_err();
    assert!(e.contains("nodes.bs2.agent") && e.contains("same"), "{e}");
    let e = scenario("split", |v| set(v, "split.handoff.per_kb_ms", -1.0)).unwrap_err();
    assert!(e.contains("split.handoff.per_kb_ms"), "{e}");
    let e = scenario("mtcp+snoop", |_| {}).unwrap_err();
    assert!(e.contains("nodes.bs1.agent") && e.contains("chained"), "{e}");
    let e = scenario("split", |v| set(v, "nodes.bs2.agent", "mtcp")).unwrap_err();
    assert!(e.contains("nodes.bs2.agent") && e.contains("same"), "{e}");
    let e = scenario("eln", |_| {}).unwrap_err();
    assert!(e.contains("nodes.bs1.agent") && e.contains("not supported"), "{e}");
    let e = scenario("eln-fixed+snoop", |_| {}).unwrap_err();
    assert!(e.contains("nodes.bs1.agent") && e.contains("alone"), "{e}");
}

/// examples/mtcp-supervisor.toml (one M-TCP supervisor host above two cells) with a handoff every 2 s from
/// 1 s, a 2 MB transfer, and `edit`.
fn supervisor(edit: impl FnOnce(&mut toml::Value)) -> Result<Scenario, String> {
    let mut v = support::example("mtcp-supervisor.toml");
    set(&mut v, "flows.bulk.bytes", 2_000_000);
    set(&mut v, "mobility.interval_s", 2.0);
    set(&mut v, "mobility.first_s", 1.0);
    edit(&mut v);
    Scenario::from_toml(v, "mtcp-supervisor.toml").map_err(|e| e.to_string())
}

/// Adds a third cell, `bs3`, under a second supervisor host `sh2` hanging off the home agent.
fn second_supervisor(v: &mut toml::Value) {
    set(v, "nodes.sh2.addr", "10.0.0.4");
    set(v, "nodes.sh2.agent", "mtcp");
    set(v, "nodes.bs3.addr", "10.0.3.1");
    let wired = |v: &mut toml::Value, name: &str, a: &str, b: &str| {
        set(v, &format!("links.{name}.ends"), toml::Value::Array(vec![a.into(), b.into()]));
        set(v, &format!("links.{name}.kind"), "wired");
        set(v, &format!("links.{name}.rate_mbps"), 10.0);
        set(v, &format!("links.{name}.delay_ms"), 0.5);
    };
    wired(v, "ha-sh2", "ha", "sh2");
    wired(v, "sh2-bs3", "sh2", "bs3");
    let cell = v["links"]["cell2"].clone();
    v["links"].as_table_mut().unwrap().insert("cell3".into(), cell);
    set(v, "links.cell3.ends", toml::Value::Array(vec!["bs3".into(), "mh".into()]));
    set(v, "mobility.base_stations", toml::Value::Array(vec!["bs1".into(), "bs2".into(), "bs3".into()]));
}

#[test]
fn a_handoff_between_the_cells_of_one_supervisor_host_moves_nothing() {
    for (cells, rendezvous) in [("overlapping", 0.0), ("non-overlapping", 0.0), ("non-overlapping", 1.0)] {
        let s = supervisor(|v| {
            set(v, "mobility.cells", cells);
            set(v, "mobility.rendezvous_s", rendezvous);
        })
        .unwrap();
        let r = run_intact(&s);
        let f = &r.flows[0];
        assert!(r.families.handoffs.len() >= 3, "{cells} {rendezvous}: {:?}", r.families.handoffs);
        assert!(r.families.handoffs.iter().all(|h| h.completion_s.is_some()), "{:?}", r.families.handoffs);
        // One relay, opened at the supervisor host and never moved; the base stations split nothing.
        assert_eq!(counter(&r, "sh", "split_relays_opened"), 1, "{:?}", r.agents);
        assert_eq!(counter(&r, "sh", "split_handoffs"), 0, "{cells} {rendezvous}: {:?}", r.agents);
        assert_eq!(counter(&r, "sh", "split_bytes_relayed"), f.bytes_total, "{:?}", r.agents);
        assert_eq!(f.sender_timeouts, 0, "{cells} {rendezvous}: {f:?}");
        // Its connection to the mobile repaired what the handoffs lost in the cells.
        if cells == "non-overlapping" {
            assert!(counter(&r, "sh", "split_wireless_retransmitted") > 0, "{:?}", r.agents);
        }
    }
}

#[test]
fn the_relay_moves_only_when_the_mobile_changes_supervisor_host() {
    // A handoff every 5 s: a move (2.6 s for a full 64 KB relay) ends before the next handoff.
    let s = supervisor(|v| {
        second_supervisor(v);
        set(v, "flows.bulk.bytes", 3_000_000);
        set(v, "mobility.interval_s", 5.0);
    })
    .unwrap();
    let r = run_intact(&s);
    let f = &r.flows[0];
    // The mobile goes bs1 → bs2 → bs3 → bs1 …: only bs2 → bs3 and bs3 → bs1 change supervisor host.
    let under = |bs: &str| if bs == "bs3" { "sh2" } else { "sh" };
    let crossings = r.families.handoffs.iter().filter(|h| under(&h.from) != under(&h.to)).count() as u64;
    let within = r.families.handoffs.len() as u64 - crossings;
    assert!(crossings >= 2 && within >= 1, "{:?}", r.families.handoffs);
    let moved = counter(&r, "sh", "split_handoffs") + counter(&r, "sh2", "split_handoffs");
    // One move per change of supervisor host (the last may still be under way when the transfer ends).
    assert!(moved == crossings || moved + 1 == crossings, "{moved} moves, {crossings} crossings: {:?}", r.agents);
    assert_eq!(f.sender_timeouts, 0, "{f:?}");
    // A handoff that moves nothing pauses the transfer less than one that moves the relay.
    let pause = |cross: bool| {
        r.families.handoffs.iter().filter(move |h| (under(&h.from) != under(&h.to)) == cross).filter_map(|h| h.pause_s)
    };
    let slowest_within = pause(false).fold(0.0, f64::max);
    assert!(pause(true).all(|p| p > slowest_within), "{:?}", r.families.handoffs);
}

#[test]
fn supervisor_hosts_refuse_what_they_cannot_serve() {
    let e = supervisor(|v| set(v, "mobility.scheme", "multicast")).unwrap_err();
    assert!(e.contains("mobility.scheme") && e.contains("plain"), "{e}");
    let e = supervisor(|v| set(v, "nodes.bs1.agent", "mtcp")).unwrap_err();
    assert!(e.contains("nodes.bs1.agent") && e.contains("no split agent"), "{e}");
    // A cell under no supervisor host.
    let e = supervisor(|v| {
        second_supervisor(v);
        set(v, "nodes.sh2.agent", "none");
    })
    .unwrap_err();
    assert!(e.contains("mobility.base_stations") && e.contains("`bs3` has none"), "{e}");
    // A supervisor host off the home agent's route to its cells.
    let e = supervisor(|v| {
        set(v, "links.ha-bs2.ends", toml::Value::Array(vec!["ha".into(), "bs2".into()]));
        set(v, "links.ha-bs2.kind", "wired");
        set(v, "links.ha-bs2.rate_mbps", 100.0);
        set(v, "links.ha-bs2.delay_ms", 0.1);
    })
    .and_then(|s| run(&s, &RunOptions::default()).map(|_| ()).map_err(|e| e.to_string()))
    .unwrap_err();
    assert!(e.contains("nodes.sh") && e.contains("route"), "{e}");
}

#[test]
fn an_mtcp_mobile_sender_freezes_its_timers_out_of_every_cell_and_resumes_without_a_timeout() {
    // The mobile sends 2 MB to the fixed host across 1 s rendezvous gaps.
    let reverse = |v: &mut toml::Value| {
        set(v, "flows.bulk.from", "mh");
        set(v, "flows.bulk.to", "fh");
        set(v, "mobility.cells", "non-overlapping");
        set(v, "mobility.rendezvous_s", 1.0);
    };
    // M-TCP's cells, a supervisor host at each base station or one above both: the mobile's TCP is M-TCP's.
    for s in [scenario("mtcp", reverse).unwrap(), supervisor(reverse).unwrap()] {
        let r = run_intact(&s);
        assert!(r.families.handoffs.len() >= 3, "{:?}", r.families.handoffs);
        assert_eq!(r.flows[0].sender_timeouts, 0, "{:?}", r.flows[0]);
    }
    // The same mobile with plain TCP times out in the gaps; its backed-off timer (2, 4, 8 … s) keeps
    // falling in the gaps of this 2 s cycle, and the transfer never completes.
    let r = run(&scenario("none", reverse).unwrap(), &RunOptions::default()).unwrap();
    assert!(r.flows[0].sender_timeouts > 5 && !r.flows[0].completed, "{:?}", r.flows[0]);
}
