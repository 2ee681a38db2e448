//! End-to-end runs of the Web workload (seed 002 §5, `examples/web.toml`): every byte of every object is
//! verified, downloads happen, persistent and parallel connections behave, and runs are deterministic.

use lasthop_sim::{run, RunOptions, RunResult, Scenario, WebMetrics};

fn scenario(edit: impl FnOnce(&mut toml::Value)) -> Scenario {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/web.toml")).unwrap();
    let mut v: toml::Value = toml::from_str(&text).unwrap();
    edit(&mut v);
    Scenario::from_toml(v, "web.toml").unwrap()
}

fn set(v: &mut toml::Value, path: &str, value: impl Into<toml::Value>) {
    let mut cur = v;
    let parts: Vec<&str> = path.split('.').collect();
    for p in &parts[..parts.len() - 1] {
        cur = cur.get_mut(*p).unwrap();
    }
    cur.as_table_mut().unwrap().insert(parts[parts.len() - 1].to_string(), value.into());
}

fn web_run(edit: impl FnOnce(&mut toml::Value)) -> (RunResult, WebMetrics) {
    let r = run(&scenario(edit), &RunOptions::default()).unwrap();
    let w = r.web[0].clone();
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
    assert_ne!(a.web, c.web);
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
    // Seed 002 §4's channel loses frames both ways: some requests from the mobile are lost and resent, and
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
    // seed 002 §5's comparison, short: P-HTTP without think times, 300 s. Snoop recovers the replies' losses
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
