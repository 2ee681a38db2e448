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
