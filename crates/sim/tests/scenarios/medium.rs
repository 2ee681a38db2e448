//! Links sharing one half-duplex medium (`medium = "NAME"`): two mobiles in one cell, each with its own link
//! from the base station, get one channel between them when the links share a medium, two otherwise.

use lasthop_sim::{run, RunOptions, Scenario};

fn two_mobiles(shared: bool) -> Scenario {
    let medium = if shared { "medium = \"air\"\n" } else { "" };
    let text = format!(
        r#"
[nodes.fh]
addr = "10.0.0.1"
[nodes.bs]
addr = "10.0.0.2"
[nodes.mh1]
addr = "10.1.0.1"
[nodes.mh2]
addr = "10.1.0.2"
[links.ether]
ends = ["fh", "bs"]
kind = "wired"
rate_mbps = 100.0
delay_ms = 1.0
[links.w1]
ends = ["bs", "mh1"]
kind = "wireless"
rate_mbps = 2.0
mac_overhead_us = 800.0
{medium}
[links.w2]
ends = ["bs", "mh2"]
kind = "wireless"
rate_mbps = 2.0
mac_overhead_us = 800.0
{medium}
[flows.a]
from = "fh"
to = "mh1"
bytes = 1_000_000
[flows.b]
from = "fh"
to = "mh2"
bytes = 1_000_000
"#
    );
    Scenario::from_str(&text, "two-mobiles.toml").unwrap()
}

#[test]
fn a_shared_medium_is_one_channel_for_both_links() {
    let own = run(&two_mobiles(false), &RunOptions::default()).unwrap();
    let shared = run(&two_mobiles(true), &RunOptions::default()).unwrap();
    for r in [&own, &shared] {
        assert!(r.flows.iter().all(|f| f.completed && f.corrupt_bytes == 0), "{:?}", r.flows);
    }
    let total = |r: &lasthop_sim::RunResult| r.flows.iter().map(|f| f.goodput_mbps).sum::<f64>();
    // Own media: each flow about 1.6 Mb/s. One medium: about 1.6 Mb/s between them, shared fairly.
    assert!(total(&own) > 3.0, "{}", total(&own));
    assert!(total(&shared) < 1.7, "{}", total(&shared));
    let (a, b) = (shared.flows[0].goodput_mbps, shared.flows[1].goodput_mbps);
    assert!((a - b).abs() < 0.15 * a.max(b), "{a} vs {b}");
    // Busy time of the two links never overlaps: their utilisations add up to at most one.
    let util: f64 = shared.links.iter().filter(|l| l.name != "ether").map(|l| l.utilisation).sum();
    assert!(util <= 1.0 + 1e-9, "{util}");
}
