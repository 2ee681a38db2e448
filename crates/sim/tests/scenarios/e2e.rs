//! End-to-end runs of whole scenarios: integrity of every byte for every TCP variant with and without Snoop,
//! determinism of metrics and pcap bytes, and the scenario file's error messages.

use crate::support;
use crate::support::set;
use lasthop_sim::{run, RunOptions, RunResult, Scenario};
use proptest::prelude::*;

fn scenario(edit: impl FnOnce(&mut toml::Value)) -> Scenario {
    let mut v = support::example("snoop.toml");
    edit(&mut v);
    Scenario::from_toml(v, "test").unwrap()
}

fn packet_loss(agent: &str, variant: &str, loss: f64, seed: i64, bytes: i64) -> Scenario {
    scenario(|v| {
        set(v, "seed", seed);
        // Integrity is the point, not speed: give plain TCP at 30 % loss (backed-off timeouts of up to 64 s)
        // all the simulated time it needs to finish.
        set(v, "time_limit_s", 36_000.0);
        set(v, "nodes.bs.agent", agent);
        set(v, "tcp.variant", variant);
        if variant == "sack" {
            set(v, "tcp.sack", true);
        }
        set(v, "flows.bulk.bytes", bytes);
        let mut err = toml::Table::new();
        err.insert("model".into(), "packet".into());
        err.insert("loss".into(), loss.into());
        set(v, "links.wavelan.error", toml::Value::Table(err));
    })
}

/// Every `[tcp] variant` name.
const VARIANTS: [&str; 9] = ["tahoe", "reno", "newreno", "sack", "cubic", "westwood", "veno", "vegas", "bbr"];

fn assert_intact(r: &RunResult, what: &str) {
    let f = &r.flows[0];
    assert_eq!(f.corrupt_bytes, 0, "{what}: corrupt bytes delivered");
    assert!(f.completed, "{what}: did not complete: {f:?}");
    assert_eq!(f.bytes_delivered, f.bytes_total, "{what}");
}

#[test]
fn every_variant_delivers_every_byte_with_and_without_snoop() {
    for agent in ["none", "snoop"] {
        for variant in VARIANTS {
            let s = packet_loss(agent, variant, 0.05, 3, 300_000);
            let r = run(&s, &RunOptions::default()).unwrap();
            assert_intact(&r, &format!("{agent}/{variant}"));
        }
    }
}

/// Today's senders complete the 10 MB transfer of `examples/snoop.toml` (Balakrishnan 1995's bit-error
/// rate, 3.9e-6, on the WaveLAN hop both ways) with and without Snoop, every byte delivered intact.
#[test]
fn todays_senders_complete_the_snoop_example_with_and_without_snoop() {
    for agent in ["none", "snoop"] {
        for variant in ["cubic", "westwood", "veno", "vegas", "bbr"] {
            let s = scenario(|v| {
                set(v, "nodes.bs.agent", agent);
                set(v, "tcp.variant", variant);
            });
            let r = run(&s, &RunOptions::default()).unwrap();
            assert_eq!(r.flows[0].bytes_total, 10_000_000);
            assert_intact(&r, &format!("{agent}/{variant}"));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    #[test]
    fn random_loss_never_corrupts_or_loses_data(
        seed in 1i64..10_000,
        loss in 0.0f64..0.3,
        variant in prop::sample::select(VARIANTS.to_vec()),
        agent in prop::sample::select(vec!["none", "snoop"]),
        bytes in 1i64..200_000,
    ) {
        let s = packet_loss(agent, variant, loss, seed, bytes);
        let r = run(&s, &RunOptions::default()).unwrap();
        assert_intact(&r, &format!("{agent}/{variant} loss {loss} seed {seed} bytes {bytes}"));
    }
}

#[test]
fn same_seed_same_metrics_and_pcap_bytes() {
    let s = scenario(|v| set(v, "flows.bulk.bytes", 500_000i64));
    let dirs = [tempdir("a"), tempdir("b")];
    let runs: Vec<RunResult> =
        dirs.iter().map(|d| run(&s, &RunOptions { trace: true, pcap_dir: Some(d.clone()) }).unwrap()).collect();
    assert_eq!(runs[0], runs[1]);
    for name in ["wavelan-bs.pcap", "wavelan-mh.pcap"] {
        let a = std::fs::read(dirs[0].join(name)).unwrap();
        let b = std::fs::read(dirs[1].join(name)).unwrap();
        assert!(a.len() > 1000, "{name} is nearly empty");
        assert_eq!(a, b, "{name} differs between identical runs");
    }
    let other = run(
        &{
            let mut s2 = s.clone();
            s2.set_seed(2);
            s2
        },
        &RunOptions::default(),
    )
    .unwrap();
    assert_ne!(other.flows[0].duration_s, runs[0].flows[0].duration_s, "a different seed should change the run");
}

#[test]
fn snoop_beats_reno_on_a_lossy_hop_and_never_hurts_on_a_clean_one() {
    let goodput = |agent: &str, ber: f64| {
        let s = scenario(|v| {
            set(v, "nodes.bs.agent", agent);
            set(v, "links.wavelan.error.ber", ber);
            set(v, "flows.bulk.bytes", 2_000_000i64);
        });
        run(&s, &RunOptions::default()).unwrap().flows[0].goodput_mbps
    };
    let (reno, snoop) = (goodput("none", 1.6e-5), goodput("snoop", 1.6e-5));
    assert!(snoop > 2.0 * reno, "snoop {snoop} vs reno {reno} at BER 1.6e-5");
    let (reno0, snoop0) = (goodput("none", 0.0), goodput("snoop", 0.0));
    assert!(snoop0 >= 0.98 * reno0, "snoop {snoop0} vs reno {reno0} without errors");
}

#[test]
fn time_limit_reports_partial_goodput() {
    let s = scenario(|v| {
        set(v, "time_limit_s", 2.0);
        set(v, "flows.bulk.bytes", 100_000_000i64);
    });
    let r = run(&s, &RunOptions::default()).unwrap();
    assert!(r.hit_time_limit);
    let f = &r.flows[0];
    assert!(!f.completed && f.bytes_delivered > 0 && f.goodput_mbps > 0.1, "{f:?}");
    assert!((r.sim_time_s - 2.0).abs() < 1e-9 || r.sim_time_s <= 2.0);
}

fn tempdir(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("lasthop-e2e-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}
