//! End-to-end runs of the Web workload (Balakrishnan 1998 §5, `examples/web.toml`): every byte of every object is
//! verified, downloads happen, persistent and parallel connections behave, and runs are deterministic.

use crate::support::set;
use lasthop_sim::{run, RunOptions, RunResult, Scenario, WebMetrics};

fn scenario(edit: impl FnOnce(&mut toml::Value)) -> Scenario {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/web.toml")).unwrap();
    let mut v: toml::Value = toml::from_str(&text).unwrap();
    edit(&mut v);
    Scenario::from_toml(v, "web.toml").unwrap()
}

fn web_run(edit: impl FnOnce(&mut toml::Value)) -> (RunResult, WebMetrics) {
    let r = run(&scenario(edit), &RunOptions::default()).unwrap();
    let w = r.families.web[0].clone();
    (r, w)
}

fn assert_intact(w: &WebMetrics, what: &str) {
    assert_eq!(w.corrupt_bytes, 0, "{what}: corrupt bytes");
    assert!(w.downloads_completed > 0, "{what}: no downloads");
    assert!(w.bytes_delivered > 0, "{what}");
    assert!(w.downloads_completed <= w.objects_requested, "{what}");
    assert!(w.pages_completed <= w.pages_started, "{what}");
}

#[test]
fn every_configuration_downloads_and_verifies_every_byte() {
    for (agent, variant) in [("none", "reno"), ("none", "sack"), ("snoop", "reno")] {
        for (conns, persistent) in [(1, false), (4, false), (1, true), (3, true)] {
            let what = format!("{agent}/{variant}/{conns}/{persistent}");
            let (r, w) = web_run(|v| {
                set(v, "time_limit_s", 300.0);
                set(v, "web.browse.duration_s", 300.0);
                set(v, "nodes.bs.agent", agent);
                set(v, "tcp.variant", variant);
                set(v, "web.browse.connections", conns);
                set(v, "web.browse.persistent", persistent);
                set(v, "web.browse.think_time", !persistent);
            });
            assert_intact(&w, &what);
            assert!(r.flows.is_empty() && r.sim_time_s <= 300.0, "{what}");
            if persistent {
                // P-HTTP reuses connections: far fewer connections than objects
                assert!(w.connections_opened * 2 < w.objects_requested, "{what}: {w:?}");
            } else {
                assert_eq!(w.connections_opened, w.objects_requested, "{what}: one connection per object");
            }
        }
    }
}

#[test]
fn without_think_time_the_link_stays_busy_and_downloads_grow() {
    let (_, thinking) = web_run(|v| set(v, "nodes.bs.agent", "none"));
    let (_, eager) = web_run(|v| {
        set(v, "nodes.bs.agent", "none");
        set(v, "web.browse.think_time", false);
    });
    assert_intact(&thinking, "think");
    assert_intact(&eager, "no think");
    assert!(eager.downloads_completed > 3 * thinking.downloads_completed, "{eager:?} vs {thinking:?}");
}

#[test]
fn same_seed_same_results_other_seed_other_results() {
    let edit = |seed: i64| {
        move |v: &mut toml::Value| {
            set(v, "seed", seed);
            set(v, "web.browse.connections", 2);
            set(v, "web.browse.think_time", false);
            set(v, "time_limit_s", 200.0);
            set(v, "web.browse.duration_s", 200.0);
        }
    };
    let a = web_run(edit(5)).0;
    let b = web_run(edit(5)).0;
    assert_eq!(a, b);
    let c = web_run(edit(6)).0;
    assert_ne!(a.families.web, c.families.web);
}

#[test]
fn a_browsing_time_beyond_the_time_limit_is_rejected() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/web.toml")).unwrap();
    let e = Scenario::from_str(&text.replace("time_limit_s = 1000", "time_limit_s = 600"), "x.toml").unwrap_err();
    assert!(e.to_string().contains("web.browse.duration_s") && e.to_string().contains("line"), "{e}");
    let e = Scenario::from_str(&text.replace("connections = 1 ", "connections = 5 "), "x.toml").unwrap_err();
    assert!(e.to_string().contains("1 to 4"), "{e}");
}

#[test]
fn requests_cross_the_lossy_hop_and_are_resent_when_lost() {
    // Balakrishnan 1998 §4's channel loses frames both ways: some requests from the mobile are lost and resent, and
    // every object still arrives intact.
    let (r, lossy) = web_run(|v| {
        set(v, "web.browse.think_time", false);
        set(v, "time_limit_s", 200.0);
        set(v, "web.browse.duration_s", 200.0);
    });
    assert_intact(&lossy, "lossy");
    assert!(lossy.request_retransmissions > 0, "{lossy:?}");
    assert!(lossy.request_retransmissions < lossy.objects_requested / 4, "{lossy:?}");
    assert!(r.undeliverable_packets * 20 < lossy.objects_requested, "{r:?}");
    // An error-free hop: no request is ever resent.
    let (_, clean) = web_run(|v| {
        set(v, "web.browse.think_time", false);
        set(v, "time_limit_s", 200.0);
        set(v, "web.browse.duration_s", 200.0);
        set(v, "links.wavelan.error", toml::Value::Table(toml::toml! { model = "none" }));
    });
    assert_intact(&clean, "clean");
    assert_eq!(clean.request_retransmissions, 0);
    assert!(clean.downloads_completed > lossy.downloads_completed, "{clean:?} vs {lossy:?}");
}

#[test]
fn snoop_completes_more_persistent_downloads_than_reno_on_the_empirical_channel() {
    // Balakrishnan 1998 §5's comparison, short: P-HTTP without think times, 300 s. Snoop recovers the replies' losses
    // locally; Reno's short replies wait for timeouts.
    let edit = |agent: &'static str| {
        move |v: &mut toml::Value| {
            set(v, "nodes.bs.agent", agent);
            set(v, "web.browse.persistent", true);
            set(v, "web.browse.think_time", false);
            set(v, "time_limit_s", 300.0);
            set(v, "web.browse.duration_s", 300.0);
        }
    };
    let (_, reno) = web_run(edit("none"));
    let (_, snoop) = web_run(edit("snoop"));
    assert_intact(&reno, "reno");
    assert_intact(&snoop, "snoop");
    assert!(snoop.downloads_completed * 2 > reno.downloads_completed * 3, "{snoop:?} vs {reno:?}");
    assert!(snoop.sender_timeouts * 3 < reno.sender_timeouts, "{snoop:?} vs {reno:?}");
    assert!(snoop.local_retransmissions > 0 && reno.local_retransmissions == 0);
}

// ---- ns's one-way agents (examples/web-ns.toml) ------------------------------------------------------

fn ns_run(edit: impl FnOnce(&mut toml::Value)) -> (RunResult, WebMetrics) {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/web-ns.toml")).unwrap();
    let mut v: toml::Value = toml::from_str(&text).unwrap();
    edit(&mut v);
    let r = run(&Scenario::from_toml(v, "web-ns.toml").unwrap(), &RunOptions::default()).unwrap();
    let w = r.families.web[0].clone();
    (r, w)
}

#[test]
fn one_way_connections_send_no_handshake_and_deliver_every_byte() {
    // HTTP/1.0 over an error-free hop: every object is read, every byte verified, and the wireless hop
    // carries per object only the request, the reply's data and the ACKs: no SYN, no SYN-ACK.
    let clean = |handshake: bool| {
        ns_run(move |v| {
            set(v, "web.browse.think_time", false);
            set(v, "web.browse.handshake", handshake);
            set(v, "time_limit_s", 100.0);
            set(v, "web.browse.duration_s", 100.0);
            set(v, "nodes.bs.agent", "none");
            set(v, "links.wavelan.error", toml::Value::Table(toml::toml! { model = "none" }));
        })
    };
    let (r, w) = clean(false);
    assert_intact(&w, "one-way");
    assert_eq!(w.connections_opened, w.objects_requested, "one connection per object");
    assert_eq!(w.request_retransmissions, 0);
    assert_eq!(w.segments_retransmitted, 0, "{w:?}");
    assert_eq!(w.duplicate_segments_received, 0, "{w:?}");
    // Every object that completed was delivered whole: the bytes add up to what was read.
    assert!(w.downloads_completed + 1 >= w.objects_requested, "{w:?}");
    let down = r.links.iter().find(|l| l.name == "wavelan" && l.direction == "bs->mh").unwrap();
    // With the handshake, one more frame each way per connection: the server's SYN down, the SYN-ACK up.
    let (rh, wh) = clean(true);
    assert_intact(&wh, "handshake");
    // ns's constants have no minimum RTO: the request timer still waits a real RTO, never resends early.
    assert_eq!(wh.request_retransmissions, 0, "{wh:?}");
    let down_h = rh.links.iter().find(|l| l.name == "wavelan" && l.direction == "bs->mh").unwrap();
    let per_conn = |frames: u64, conns: u64| frames as f64 / conns as f64;
    assert!(
        per_conn(down_h.frames_sent, wh.connections_opened) > per_conn(down.frames_sent, w.connections_opened) + 0.9,
        "{down_h:?} vs {down:?}"
    );
    // The one-way run is faster per object: no round trip for the handshake.
    assert!(w.mean_download_time_s.unwrap() < wh.mean_download_time_s.unwrap(), "{w:?} vs {wh:?}");
}

#[test]
fn snoop_beats_reno_with_ns_agents_on_the_empirical_channel() {
    // Balakrishnan 1998 §5 as ns ran it, short: HTTP/1.0 without think times, 300 s, Balakrishnan 1998 §4's channel.
    let edit = |agent: &'static str| {
        move |v: &mut toml::Value| {
            set(v, "nodes.bs.agent", agent);
            set(v, "web.browse.think_time", false);
            set(v, "time_limit_s", 300.0);
            set(v, "web.browse.duration_s", 300.0);
        }
    };
    let (_, reno) = ns_run(edit("none"));
    let (_, snoop) = ns_run(edit("snoop"));
    assert_intact(&reno, "reno");
    assert_intact(&snoop, "snoop");
    assert!(reno.request_retransmissions > 0, "requests cross the lossy hop: {reno:?}");
    assert!(snoop.downloads_completed > 2 * reno.downloads_completed, "{snoop:?} vs {reno:?}");
    assert!(snoop.sender_timeouts * 3 < reno.sender_timeouts, "{snoop:?} vs {reno:?}");
    // Same seed, same run.
    assert_eq!(ns_run(edit("snoop")).1, snoop);
}

#[test]
fn a_full_duplex_hop_without_mac_overhead_delivers_every_byte() {
    // The `ns-full` stack of experiments/web.toml: ns's agents on a full-duplex lossy hop (ns's `duplex-link`
    // with an error model), where requests and ACKs never wait behind the base station's data frames.
    for (agent, persistent) in [("none", false), ("snoop", false), ("snoop", true)] {
        let what = format!("{agent}/{persistent}");
        let edit = |duplex: &'static str, overhead: f64| {
            move |v: &mut toml::Value| {
                set(v, "time_limit_s", 200.0);
                set(v, "web.browse.duration_s", 200.0);
                set(v, "nodes.bs.agent", agent);
                set(v, "web.browse.persistent", persistent);
                set(v, "web.browse.think_time", false);
                set(v, "links.wavelan.duplex", duplex);
                set(v, "links.wavelan.mac_overhead_us", overhead);
            }
        };
        let (rf, full) = ns_run(edit("full", 0.0));
        let (_, half) = ns_run(edit("half", 800.0));
        assert_intact(&full, &what);
        assert_intact(&half, &what);
        assert_ne!(full.bytes_delivered, half.bytes_delivered, "{what}: the hop's duplex changes the run");
        // Each direction has its own transmitter, busy exactly for its own frames' bits at 2 Mb/s.
        for l in rf.links.iter().filter(|l| l.name == "wavelan") {
            let own = l.bytes_sent as f64 * 8.0 / 2e6 / rf.sim_time_s;
            assert!((l.utilisation - own).abs() < 1e-6 + own * 1e-3, "{what} {}: {l:?} vs {own}", l.direction);
            assert!(l.frames_sent > 0 && l.frames_lost_to_errors > 0, "{what}: the lossy hop carries both ways: {l:?}");
        }
    }
}
