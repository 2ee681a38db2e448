//! End-to-end runs of the alternatives Snoop is measured against (Balakrishnan 1995 §2): I-TCP's split connection
//! (plain and SACK over the wireless hop) and M-TCP's supervisor, on `examples/snoop.toml`'s topology with
//! bit errors; every byte verified at the mobile, and a base-station failure mid-transfer showing which
//! schemes keep end-to-end semantics.

use crate::support::set;
use lasthop_sim::{run, FlowMetrics, RunOptions, RunResult, Scenario};

fn scenario(edit: impl FnOnce(&mut toml::Value)) -> Result<Scenario, String> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/snoop.toml")).unwrap();
    let mut v: toml::Value = toml::from_str(&text).unwrap();
    set(&mut v, "flows.bulk.bytes", 1_000_000);
    set(&mut v, "tcp.sack", true);
    edit(&mut v);
    Scenario::from_toml(v, "snoop.toml").map_err(|e| e.to_string())
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
            // M-TCP's sender, frozen by a zero window whenever the mobile is silent, goes back over what the
            // supervisor host holds when the window reopens (4.4BSD pulls snd_nxt back): wired bytes only.
            let least = if agent == "mtcp" { 0.0 } else { 0.5 };
            assert!(f.wired_goodput > least && f.wired_goodput <= 1.0, "{agent}: {f:?}");
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
fn mtcp_recovers_wireless_losses_at_the_supervisor_host_and_its_sender_never_enters_loss_recovery() {
    let r = run_with("mtcp", 3.9e-6, |_| {});
    let f = flow(&r);
    assert!(f.completed, "{f:?}");
    assert_eq!((f.bytes_acked_not_delivered, f.corrupt_bytes), (0, 0), "{f:?}");
    assert_eq!((f.sender_timeouts, f.fast_retransmits), (0, 0), "no timeout waits on the held byte: {f:?}");
    assert!(bs(&r, "mtcp_held_acks") > 100, "{:?}", r.agents);
    assert!(bs(&r, "split_wireless_retransmitted") > 0, "the relay resent the wireless losses");
    let reno = flow(&run_with("none", 3.9e-6, |_| {})).goodput_mbps;
    assert!(f.goodput_mbps >= reno, "M-TCP {} Mb/s, end-to-end Reno {reno} Mb/s", f.goodput_mbps);
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
    for agent in ["none", "snoop"] {
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
    // M-TCP's supervisor host splits the connection too and its relay dies the same way, but it had
    // acknowledged only what the mobile had: nothing is owed.
    let r = failure("mtcp");
    let f = flow(&r);
    assert!(!f.completed, "{f:?}");
    assert_eq!((f.bytes_acked_not_delivered, f.corrupt_bytes), (0, 0), "{f:?}");
    assert_eq!(bs(&r, "split_relays_lost"), 1);
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

/// The four link-level schemes of the ToN'97 comparison, as `[links.wavelan.arq]` settings.
const LL: [(&str, bool, bool); 4] = [
    ("ll", false, false),
    ("ll-tcp-aware", false, true),
    ("ll-smart", true, false),
    ("ll-smart-tcp-aware", true, true),
];

fn run_ll(selective: bool, tcp_aware: bool, ber: f64, edit: impl FnOnce(&mut toml::Value)) -> RunResult {
    run_with("none", ber, |v| {
        set(v, "links.wavelan.arq.selective_acks", selective);
        set(v, "links.wavelan.arq.tcp_aware", tcp_aware);
        edit(v);
    })
}

#[test]
fn link_level_arq_delivers_every_byte_intact() {
    for (name, selective, tcp_aware) in LL {
        for ber in [0.0, 7.6e-6] {
            let r = run_ll(selective, tcp_aware, ber, |_| {});
            let f = flow(&r);
            assert!(f.completed, "{name} at {ber}: {f:?}");
            assert_eq!((f.bytes_delivered, f.corrupt_bytes), (1_000_000, 0), "{name}");
            let sent = bs(&r, "arq_frames_sent");
            let acks = r.agents["mh"]["arq_acks_sent"];
            assert!(
                acks > 0 && acks <= sent,
                "{name}: every data frame that arrives is acknowledged ({acks} of {sent})"
            );
            if ber == 0.0 {
                assert_eq!(bs(&r, "arq_retransmissions"), 0, "{name}");
            } else {
                assert!(bs(&r, "arq_retransmissions") > 0, "{name}: the link recovered losses");
                // A duplicate at the mobile is a retransmission whose first copy had arrived (its link ACK lost).
                assert!(r.agents["mh"]["arq_duplicates"] <= bs(&r, "arq_retransmissions"), "{name}");
            }
        }
    }
}

#[test]
fn selective_link_acks_resend_gaps_at_once_and_tcp_awareness_hides_dupacks() {
    let plain = run_ll(false, false, 1.5e-5, |_| {});
    let smart = run_ll(true, false, 1.5e-5, |_| {});
    assert_eq!(bs(&plain, "arq_gap_retransmissions"), 0);
    assert!(bs(&smart, "arq_gap_retransmissions") > 0);
    // In-order delivery hides the link's recovery from TCP; out of order, the mobile sends DUPACKs for the
    // frames the link is still resending, and a TCP-aware link drops them.
    let ooo = |v: &mut toml::Value| set(v, "links.wavelan.arq.delivery", "out-of-order");
    let plain = run_ll(false, false, 1.5e-5, ooo);
    let aware = run_ll(false, true, 1.5e-5, ooo);
    assert_eq!(bs(&plain, "arq_dupacks_suppressed"), 0);
    assert!(bs(&aware, "arq_dupacks_suppressed") > 0, "{:?}", aware.agents);
    assert!(
        flow(&aware).fast_retransmits < flow(&plain).fast_retransmits,
        "fewer spurious fast retransmits: {} against {}",
        flow(&aware).fast_retransmits,
        flow(&plain).fast_retransmits
    );
    assert!(flow(&aware).completed && flow(&aware).corrupt_bytes == 0);
}

#[test]
fn out_of_order_link_delivery_makes_dupacks_and_a_tcp_unaware_link_lets_them_through() {
    let r = run_ll(false, false, 1.5e-5, |v| set(v, "links.wavelan.arq.delivery", "out-of-order"));
    let f = flow(&r);
    assert!(f.completed && f.corrupt_bytes == 0);
    assert!(f.fast_retransmits > 0, "reordering reaches TCP as DUPACKs: spurious fast retransmits {f:?}");
    // Each of them resent a segment the link was still delivering: both copies reached the mobile.
    assert!(f.spurious_fast_retransmits > 0 && f.spurious_fast_retransmits <= f.fast_retransmits, "{f:?}");
    assert!(f.duplicate_segments >= f.spurious_fast_retransmits, "{f:?}");
    // In order, the link's recovery is invisible to TCP: nothing is resent twice.
    let in_order = run_ll(false, false, 1.5e-5, |_| {});
    assert_eq!((flow(&in_order).spurious_fast_retransmits, flow(&in_order).duplicate_segments), (0, 0));
    // Reno end to end: its fast retransmissions repair real losses.
    let reno = run_with("none", 1.5e-5, |_| {});
    assert!(flow(&reno).fast_retransmits > 0);
    assert_eq!(flow(&reno).spurious_fast_retransmits, 0, "{:?}", flow(&reno));
}

#[test]
fn the_retry_limit_hands_persistent_losses_back_to_tcp() {
    let r = run_ll(false, false, 3e-5, |v| set(v, "links.wavelan.arq.retry_limit", 0));
    let f = flow(&r);
    assert!(f.completed && f.corrupt_bytes == 0, "{f:?}");
    assert!(bs(&r, "arq_frames_abandoned") > 0);
    assert!(f.segments_retransmitted > 0, "TCP resent what the link gave up");
}

#[test]
fn arq_combinations_that_cannot_work_are_refused() {
    let e = scenario(|v| set(v, "links.ether.arq.window", 4)).unwrap_err();
    assert!(e.contains("links.ether.arq") && e.contains("wireless"), "{e}");
    let e = scenario(|v| {
        set(v, "nodes.bs.agent", "snoop");
        set(v, "links.wavelan.arq.window", 4);
    })
    .unwrap_err();
    assert!(e.contains("nodes.bs.agent"), "{e}");
    let e = scenario(|v| set(v, "links.wavelan.arq.window", 0)).unwrap_err();
    assert!(e.contains("links.wavelan.arq.window"), "{e}");
}

#[test]
fn arq_in_both_directions_carries_the_mobiles_data_and_acks() {
    let both = |v: &mut toml::Value| set(v, "links.wavelan.arq.both_directions", true);
    // Fixed host to mobile: the mobile's TCP ACKs cross the hop in link frames too, each link-acknowledged.
    for (name, selective, tcp_aware) in LL {
        let r = run_ll(selective, tcp_aware, 7.6e-6, both);
        let f = flow(&r);
        assert!(f.completed && (f.bytes_delivered, f.corrupt_bytes) == (1_000_000, 0), "{name}: {f:?}");
        let mh = &r.agents["mh"];
        assert!(mh["arq_frames_sent"] > 0, "{name}: the mobile's ACKs go in frames: {mh:?}");
        assert!(bs(&r, "arq_acks_sent") > 0 && bs(&r, "arq_acks_sent") <= mh["arq_frames_sent"], "{name}");
        assert!(bs(&r, "arq_retransmissions") > 0, "{name}");
    }
    // Mobile to fixed host: the link recovers the mobile's data losses, so TCP resends less than without ARQ.
    let reverse = |v: &mut toml::Value| {
        set(v, "flows.bulk.from", "mh");
        set(v, "flows.bulk.to", "fh");
    };
    let plain = run_with("none", 7.6e-6, reverse);
    let ll = run_ll(false, false, 7.6e-6, |v| {
        reverse(v);
        both(v);
    });
    let f = flow(&ll);
    assert!(f.completed && (f.bytes_delivered, f.corrupt_bytes) == (1_000_000, 0), "{f:?}");
    assert!(ll.agents["mh"]["arq_retransmissions"] > 0, "{:?}", ll.agents);
    assert!(
        f.segments_retransmitted < flow(&plain).segments_retransmitted,
        "the link hides wireless losses from the mobile sender: {} against {}",
        f.segments_retransmitted,
        flow(&plain).segments_retransmitted
    );
    assert!(f.goodput_mbps > flow(&plain).goodput_mbps);
    // Without `both_directions` the mobile's data goes bare.
    let one_way = run_ll(false, false, 7.6e-6, reverse);
    assert_eq!(one_way.agents["mh"].get("arq_frames_sent"), None, "{:?}", one_way.agents);
    // Out-of-order delivery in both directions: the TCP-aware base station still hides the DUPACKs it
    // receives through its link layer.
    let ooo = |v: &mut toml::Value| {
        both(v);
        set(v, "links.wavelan.arq.delivery", "out-of-order");
    };
    let aware = run_ll(false, true, 1.5e-5, ooo);
    assert!(bs(&aware, "arq_dupacks_suppressed") > 0, "{:?}", aware.agents);
    assert!(flow(&aware).completed && flow(&aware).corrupt_bytes == 0);
}

#[test]
fn arq_both_ways_needs_no_agent_at_either_end() {
    let e = scenario(|v| {
        set(v, "nodes.bs.agent", "none");
        set(v, "nodes.mh.agent", "eln");
        set(v, "links.wavelan.arq.both_directions", true);
    })
    .unwrap_err();
    assert!(e.contains("nodes.mh.agent") && e.contains("link-level ARQ"), "{e}");
    // One way, an agent at the receiving end is the scenario's own business.
    assert!(scenario(|v| {
        set(v, "nodes.bs.agent", "none");
        set(v, "nodes.mh.agent", "eln");
        set(v, "links.wavelan.arq.window", 4);
    })
    .is_ok());
}

#[test]
fn e2e_eln_for_a_fixed_sender_resends_wireless_losses_without_a_congestion_response() {
    let eln = |thresh: i64| {
        move |v: &mut toml::Value| {
            set(v, "tcp.eln", true);
            set(v, "tcp.eln_rexmt_thresh", thresh);
        }
    };
    let plain = run_with("none", 7.6e-6, |_| {});
    for thresh in [3, 1] {
        let r = run_with("eln-fixed", 7.6e-6, eln(thresh));
        let f = flow(&r);
        assert!(f.completed && (f.bytes_delivered, f.corrupt_bytes) == (1_000_000, 0), "{thresh}: {f:?}");
        assert!(bs(&r, "dupacks_marked") > 0 && bs(&r, "dupacks_marked") == bs(&r, "acks_marked"));
        assert!(f.eln_retransmits > 0, "{thresh}: {f:?}");
        // Wireless losses no longer halve the window: no fast retransmit at all (ELN DUPACKs bypass the
        // dupack counter) and more goodput than Reno.
        assert_eq!(f.fast_retransmits, 0, "{thresh}: {f:?}");
        assert!(f.goodput_mbps > flow(&plain).goodput_mbps, "{thresh}: {f:?} against {:?}", flow(&plain));
    }
    // Without the marks an ELN-aware sender recovers as Reno does (its frames carry the 4-byte queue option,
    // so the bit errors fall differently and the counts are not Reno's to the unit).
    let unmarked = flow(&run_with("none", 7.6e-6, eln(1))).clone();
    assert_eq!(unmarked.eln_retransmits, 0);
    assert!(unmarked.fast_retransmits > 0, "{unmarked:?}");
}

#[test]
fn burst_errors_lose_frames_in_runs_and_every_scheme_still_delivers() {
    for frames in [2i64, 6] {
        for (agent, arq) in [("none", None), ("snoop", None), ("none", Some(false)), ("none", Some(true))] {
            let r = run_with(agent, 0.0, |v| {
                let mut e = toml::value::Table::new();
                e.insert("model".into(), "burst".into());
                e.insert("ber".into(), 1.9e-6.into());
                e.insert("frames".into(), frames.into());
                v["links"]["wavelan"].as_table_mut().unwrap().insert("error".into(), toml::Value::Table(e));
                if let Some(selective) = arq {
                    set(v, "links.wavelan.arq.selective_acks", selective);
                    set(v, "links.wavelan.arq.tcp_aware", true);
                }
            });
            let f = flow(&r);
            assert!(f.completed && (f.bytes_delivered, f.corrupt_bytes) == (1_000_000, 0), "{agent} {arq:?}: {f:?}");
            let down = r.links.iter().find(|l| l.name == "wavelan" && l.direction.starts_with("bs")).unwrap();
            assert!(down.frames_lost_to_errors >= frames as u64, "{agent} {arq:?}: {down:?}");
        }
    }
    let e = scenario(|v| {
        set(v, "links.wavelan.error.model", "burst");
        set(v, "links.wavelan.error.frames", 0);
    })
    .unwrap_err();
    assert!(e.contains("links.wavelan.error") && e.contains("frames"), "{e}");
}
