//! `lasthop twin`: the scenarios the testbed cannot build are refused by name; a `runner = "twin"` experiment
//! through `reproduce` with a fake twin, on one base station and on the handoff testbed (its simulator face
//! real); and (as root, with network namespaces) short transfers on both faces
//! that fail when the simulator and the kernel part by more than the target.

use anyhow::Result;
use lasthop::experiment::{Experiment, RunnerKind};
use lasthop::reproduce::{reproduce, ReproduceOptions, Summary};
use lasthop::runner::{RunRequest, Runner, ScenarioSource, SimRunner};
use lasthop::twin::{self, TwinRun};
use lasthop_net::testbed::skip_or_fail;
use lasthop_net::{Counters, TestbedResult};
use lasthop_sim::RunResult;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The twin example with these overrides.
fn twin_example(set: &[(&str, toml::Value)]) -> toml::Value {
    let text = std::fs::read_to_string(repo().join("examples/twin.toml")).unwrap();
    let mut doc: toml::Value = toml::from_str(&text).unwrap();
    for (path, v) in set {
        lasthop::experiment::apply_override(&mut doc, path, v).unwrap();
    }
    doc
}

fn request<'a>(doc: &'a toml::Value, origin: &'a str, trace: bool) -> RunRequest<'a> {
    RunRequest {
        scenario: ScenarioSource::Value { value: doc, origin, base_dir: Path::new("") },
        seed: None,
        trace,
        pcap_dir: None,
    }
}

#[test]
fn the_example_becomes_the_testbed_configuration_of_the_same_hop() {
    let doc = twin_example(&[]);
    let c = twin::check(&request(&doc, "twin.toml", false)).unwrap().testbed;
    assert_eq!((c.agent.to_string().as_str(), c.cc.as_str(), c.sack), ("snoop", "reno", false));
    assert_eq!((c.ber, c.rate_mbps, c.delay_ms, c.queue_packets), (3.9e-6, 2.0, 1.0, 100));
    assert_eq!((c.wired_delay_ms, c.max_window, c.bytes, c.timeout_s), (0.0, 65535, 1_048_576, 120.0));
    let cubic = twin_example(&[("tcp.variant", "cubic".into()), ("links.ether.delay_ms", 20.0.into())]);
    let c = twin::check(&request(&cubic, "twin.toml", false)).unwrap().testbed;
    assert_eq!((c.cc.as_str(), c.wired_delay_ms), ("cubic", 20.0));
    let sack = twin_example(&[("tcp.variant", "sack".into())]);
    let c = twin::check(&request(&sack, "twin.toml", false)).unwrap().testbed;
    assert_eq!((c.cc.as_str(), c.sack), ("reno", true), "SACK recovery is the kernel's reno with SACK on");
}

#[test]
fn what_the_testbed_cannot_build_is_refused_by_name() {
    for (file, says) in [
        ("examples/mobile-ip.toml", "Mobile IP"),
        ("examples/web.toml", "a Web workload"),
        ("examples/handoff.toml", "handoffs"),
        ("examples/eln.toml", "eln"),
    ] {
        let path = repo().join(file);
        let req = RunRequest { scenario: ScenarioSource::File(&path), seed: None, trace: false, pcap_dir: None };
        let e = format!("{:#}", twin::check(&req).err().unwrap_or_else(|| panic!("{file} was accepted")));
        assert!(e.contains("the testbed cannot run") && e.contains(says), "{file}: {e}");
    }
    for (path, value, says) in [
        ("tcp.variant", toml::Value::from("tahoe"), "no Tahoe"),
        ("nodes.bs.agent", "eln".into(), "`nodes.bs.agent`"),
        ("links.wavelan.error.model", "packet".into(), "`links.wavelan.error`"),
        ("tcp.mss", 536.into(), "`tcp.mss`"),
    ] {
        let mut doc = twin_example(&[]);
        lasthop::experiment::apply_override(&mut doc, path, &value).unwrap();
        if path.ends_with("model") {
            let error = doc["links"]["wavelan"]["error"].as_table_mut().unwrap();
            error.remove("ber");
            error.insert("loss".into(), 0.01.into());
        }
        let e = format!("{:#}", twin::check(&request(&doc, "twin.toml", false)).unwrap_err());
        assert!(e.starts_with("twin.toml: ") && e.contains(says), "{path}: {e}");
    }
}

/// A twin that runs the simulator and makes up a kernel face, for the experiment pipeline without root.
struct FakeKernel;

impl Runner for FakeKernel {
    fn run(&self, req: &RunRequest<'_>) -> Result<RunResult> {
        SimRunner.run(req)
    }

    fn run_twin(&self, req: &RunRequest<'_>) -> Result<TwinRun> {
        let checked = twin::check(req)?;
        let sim = self.run(&checked.sim_request(req))?;
        let f = sim.flows[0].clone();
        let sender = lasthop_net::testbed::SenderStats { retrans_segs: f.segments_retransmitted, ..Default::default() };
        let kernel = TestbedResult {
            goodput_mbps: f.goodput_mbps * 1.1,
            hash_ok: true,
            bytes: f.bytes_delivered,
            duration_s: 1.0,
            cc: checked.testbed.cc.clone(),
            sack: checked.testbed.sack,
            agent: checked.testbed.agent,
            counters: Counters::default(),
            sender,
            split: None,
            handoff: checked.testbed.handoff.map(|scheme| lasthop_net::handoff::HandoffSummary {
                scheme,
                handoffs: Vec::new(),
                counters: Default::default(),
            }),
        };
        Ok(TwinRun { sim, testbed: checked.testbed, kernel, kernel_cwnd: Vec::new(), sim_mss: 1460, notes: Vec::new() })
    }
}

/// Runs twin experiment `id` (its file in `experiments/`, its base scenario `base` in the repository, its text
/// passed through `edit`) quick through [`FakeKernel`]: the summary and the results CSV, every run completed.
fn reproduce_quick_with_fake_kernel(id: &str, base: &str, edit: impl Fn(String) -> String) -> (Summary, String) {
    let dir = tempfile::tempdir().unwrap();
    let exps = dir.path().join("experiments");
    std::fs::create_dir_all(&exps).unwrap();
    let text = std::fs::read_to_string(repo().join(format!("experiments/{id}.toml"))).unwrap();
    let text = text.replace(&format!("\"../{base}\""), &format!("{:?}", repo().join(base)));
    std::fs::write(exps.join(format!("{id}.toml")), edit(text)).unwrap();
    let e = Experiment::load(&exps.join(format!("{id}.toml"))).unwrap();
    assert_eq!(e.runner, RunnerKind::Twin);
    let opts = ReproduceOptions {
        ids: vec![id.into()],
        quick: true,
        jobs: 2,
        out: dir.path().join("out"),
        experiments_dir: exps,
        progress: false,
    };
    let summary = reproduce(&opts, &FakeKernel).unwrap();
    assert_eq!(summary.failed_runs(), 0);
    let csv = std::fs::read_to_string(opts.out.join(id).join("results.csv")).unwrap();
    (summary, csv)
}

#[test]
fn a_twin_experiment_has_a_row_per_face_and_compares_them_per_point() {
    let (summary, csv) = reproduce_quick_with_fake_kernel("twin-ber", "examples/twin.toml", |text| text);
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    for c in ["cc", "agent", "ber", "wired_delay_ms", "seed", "face", "goodput_mbps", "sender_retransmissions"] {
        assert!(header.contains(&c), "{c}: {header:?}");
    }
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    // quick: cc 3 × agent 2 × ber 3 points over the 20 ms path, one seed, two faces each
    assert_eq!(rows.len(), 2 * 18, "{csv}");
    assert!(rows.chunks(2).all(|p| p[0][col("face")] == "sim" && p[1][col("face")] == "kernel"));
    assert!(rows.iter().all(|r| r[col("cc")] != "reno" || r[col("sender")] != "cubic"));
    assert!(rows.iter().filter(|r| r[col("cc")] == "bbr").all(|r| r[col("sender")] == "bbr"), "BBR on both faces");
    assert_eq!(rows.iter().filter(|r| r[col("cc")] == "bbr").count(), 12);
    // the made-up kernel is 10 % faster: the goodput target (15 %) holds on these numbers
    let claims = &summary.experiments[0].claims;
    assert!(claims[0].2.holds, "{:?}", claims[0]);
}

/// The handoff testbed's base configuration with these fields.
fn handoff_config(set: &[(&str, toml::Value)]) -> toml::Value {
    let text = std::fs::read_to_string(repo().join("examples/testbed-handoff.toml")).unwrap();
    let mut doc: toml::Value = toml::from_str(&text).unwrap();
    for (path, v) in set {
        lasthop::experiment::apply_override(&mut doc, path, v).unwrap();
    }
    doc
}

#[test]
fn a_handoff_testbed_point_runs_on_the_simulators_face() {
    let doc = handoff_config(&[
        ("handoff", "plain".into()),
        ("handoff_every_s", 1.0.into()),
        ("bytes", 400_000.into()),
        ("seed", 3.into()),
    ]);
    let req = request(&doc, "testbed-handoff.toml", false);
    let checked = twin::check(&req).unwrap();
    assert!(checked.translated.is_some(), "a testbed configuration is translated for the simulator");
    assert_eq!(checked.testbed.handoff, Some(lasthop_net::handoff::HandoffScheme::Plain));
    let sim = SimRunner.run(&checked.sim_request(&req)).unwrap();
    assert_eq!(sim.seed, 3);
    let f = &sim.flows[0];
    assert!(f.completed && f.bytes_delivered == 400_000, "{f:?}");
    // a 2 Mb/s hop delivers 400 KB in about 1.7 s: a handoff at 1 s, breaking before making, from cell 1 to 2
    let h = &sim.families.handoffs;
    assert!(!h.is_empty() && (h[0].decided_s - 1.0).abs() < 1e-9, "{h:?}");
    assert_eq!((h[0].from.as_str(), h[0].to.as_str()), ("bs1", "bs2"));
    assert!(h[0].packets_lost > 0, "frames queued for the cell the mobile left are lost: {:?}", h[0]);
    assert!(f.goodput_mbps > 0.5 && f.goodput_mbps < 2.0, "{}", f.goodput_mbps);
    let e = format!(
        "{:#}",
        twin::check(&request(&handoff_config(&[("+handoff_limit", 2.into())]), "x.toml", false)).unwrap_err()
    );
    assert!(e.starts_with("x.toml: the simulator cannot mirror it: `handoff_limit`"), "{e}");
}

#[test]
fn the_handoff_testbed_experiment_has_a_row_per_face_with_the_handoff_columns() {
    // a shorter transfer: the pipeline, not the numbers
    let (_, csv) = reproduce_quick_with_fake_kernel("testbed-handoff", "examples/testbed-handoff.toml", |text| {
        text.replace("set = { bytes = 1_258_291 }", "set = { bytes = 400_000 }")
    });
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap_or_else(|| panic!("{name}: {header:?}"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    // quick: 3 schemes × 3 intervals × 2 hops, one seed, two faces each
    assert_eq!(rows.len(), 2 * 18, "{csv}");
    assert!(rows.chunks(2).all(|p| p[0][col("face")] == "sim" && p[1][col("face")] == "kernel"));
    assert!(rows.chunks(2).all(|p| p[0][col("point")] == p[1][col("point")]));
    for r in rows.iter().filter(|r| r[col("face")] == "sim") {
        let every = r[col("handoff_interval_s")];
        let handoffs: u64 = r[col("handoffs")].parse().unwrap();
        assert_eq!(handoffs > 0, every == "1.0", "400 KB take under 5 s: handoffs at 1 s only ({every}: {handoffs})");
        assert_eq!(r[col("cc_used")], "newreno");
        assert_eq!(r[col("hash_ok")], "true");
        assert_eq!(r[col("handoff_packets_lost")], "", "the simulator does not count the testbed's hole");
        if handoffs > 0 {
            assert!(r[col("handoff_latency_ms")].parse::<f64>().unwrap() > 0.0);
        }
    }
    assert!(rows.iter().all(|r| ["none", "snoop"].contains(&r[col("agent")])));
}

/// The short transfers CI runs on both faces: with Snoop on a lossy LAN hop, and without an agent on a clean
/// wide-area path. Each must meet the target; a run that misses it fails the test with the numbers.
#[test]
fn the_simulator_and_the_kernel_agree_on_short_transfers() {
    if !lasthop_net::sys::is_root() {
        skip_or_fail("lasthop twin needs root for the testbed's network namespaces");
        return;
    }
    let bytes = toml::Value::from(524_288);
    for (what, set) in [
        ("snoop, BER 3.9e-6, LAN", vec![("flows.bulk.bytes", bytes.clone())]),
        (
            "no agent, BER 0, 20 ms wired",
            vec![
                ("flows.bulk.bytes", bytes.clone()),
                ("nodes.bs.agent", "none".into()),
                ("links.wavelan.error.ber", 0.0.into()),
                ("links.ether.delay_ms", 20.0.into()),
            ],
        ),
    ] {
        let doc = twin_example(&set);
        let r = match twin::run(&SimRunner, &request(&doc, what, true)) {
            Ok(r) => r,
            Err(e) if format!("{e:#}").contains("network namespaces are not available") => {
                skip_or_fail(format!("{e:#}"));
                return;
            }
            Err(e) => panic!("{what}: {e:#}"),
        };
        assert!(r.kernel.hash_ok, "{what}: hash mismatch");
        assert!(r.kernel_cwnd.len() > 10, "{what}: the kernel's window was sampled: {:?}", r.kernel_cwnd.len());
        let missed = twin::misses(&r).unwrap();
        assert!(missed.is_empty(), "{what}:\n{}\n{}", twin::table_text(&r).unwrap(), missed.join("\n"));
    }
}

#[test]
fn the_side_by_side_table_of_a_handoff_run_shows_its_handoffs() {
    let doc =
        handoff_config(&[("handoff", "plain".into()), ("handoff_every_s", 1.0.into()), ("bytes", 400_000.into())]);
    let r = FakeKernel.run_twin(&request(&doc, "testbed-handoff.toml", false)).unwrap();
    let lines = twin::lines(&r).unwrap();
    let handoffs = lines.iter().find(|l| l.what == "handoffs").expect("a handoffs line");
    assert!(handoffs.sim > 0.0 && handoffs.sim == r.sim.families.handoffs.len() as f64, "{}", handoffs.sim);
    assert_eq!(handoffs.kernel, 0.0, "the made-up kernel face has no handoffs");
    assert!(lines.iter().any(|l| l.what == "resent from the buffer"));
    assert!(!lines.iter().any(|l| l.what == "handoff latency (ms)"), "no latency line without the kernel's");
    assert!(twin::table_text(&r).unwrap().contains("handoffs"));
    // one base station: no handoff lines
    let one = FakeKernel.run_twin(&request(&twin_example(&[]), "twin.toml", false)).unwrap();
    assert!(!twin::lines(&one).unwrap().iter().any(|l| l.what == "handoffs"));
}
