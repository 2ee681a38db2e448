//! The real base station from the command line: argument errors, the `testbed-ber` experiment file, testbed
//! experiments through `reproduce` with a fake testbed, and (as root, with network namespaces) real runs of
//! `lasthop testbed` and of a one-point testbed experiment.

use anyhow::Result;
use lasthop::cli::main_with;
use lasthop::experiment::{Experiment, RunnerKind};
use lasthop::reproduce::{reproduce, testbed_config, ReproduceOptions};
use lasthop::runner::{RunRequest, Runner};
use lasthop_net::{AgentKind, Counters, TestbedConfig, TestbedResult};
use lasthop_sim::RunResult;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn no_sim(_: &RunRequest<'_>) -> Result<RunResult> {
    anyhow::bail!("no simulator in this test")
}

fn cli(args: &[&str]) -> Result<ExitCode> {
    let mut v = vec!["lasthop"];
    v.extend_from_slice(args);
    main_with(v, &no_sim)
}

#[test]
fn argument_errors() {
    // clap's own errors: exit code 2 with a usage message
    for args in [
        &["testbed", "--agent", "bogus"][..],
        &["testbed", "--sack", "maybe"],
        &["testbed", "--cc", "vegas"],
        &["testbed", "--bytes", "many"],
        &["bs", "--wired", "eth0"],
        &["bs", "--wired", "a", "--wireless", "b", "--ber", "1e-6", "--loss", "0.1"],
        &["bench", "forward", "--packets", "0"],
        &["bench", "backward"],
        &["bench", "sockets", "--segments", "0"],
        &["bench", "sockets", "--window", "-1"],
        &["testbed", "--port", "0"],
        &["testbed", "--agent", "split", "--split-ports", "5001,0"],
        &["testbed", "--agent", "split", "--split-ports", "5001,http"],
    ] {
        assert_eq!(cli(args).unwrap(), ExitCode::from(2), "{args:?}");
    }
    // ours: clear errors before anything is touched
    let err = |args: &[&str]| format!("{:#}", cli(args).unwrap_err());
    let e = err(&["bs", "--wired", "lo", "--wireless", "lo"]);
    assert!(e.contains("both lo"), "{e}");
    let e = err(&["bs", "--wired", "nosuchif0", "--wireless", "lo"]);
    assert!(e.contains("--wired nosuchif0: no such network interface"), "{e}");
    let e = err(&["bs", "--wired", "lo", "--wireless", "nosuchif1"]);
    assert!(e.contains("--wireless nosuchif1: no such network interface"), "{e}");
    let e = err(&["bs", "--wired", "lo", "--wireless", "nosuchif1", "--ber", "2"]);
    assert!(e.contains("emulated hop") && e.contains("ber"), "{e}");
    let e = err(&["testbed", "--bytes", "0"]);
    assert!(e.contains("bytes must be at least 1"), "{e}");
    let e = err(&["testbed", "--ber", "1.5"]);
    assert!(e.contains("ber"), "{e}");
    let e = err(&["testbed", "--rate-mbps=-1"]);
    assert!(e.contains("rate_mbps"), "{e}");
    let e = err(&["testbed", "--agent", "split", "--split-buffer-bytes", "100"]);
    assert!(e.contains("split buffer_bytes must be in 2048..=67108864, got 100"), "{e}");
    let e = err(&["testbed", "--agent", "split", "--port", "8080", "--split-ports", "5001,443"]);
    assert!(e.contains("split ports [5001, 443] must include the transfer's port 8080"), "{e}");
    let e = err(&["testbed", "--agent", "split", "--split-ports", "5001,443,5001"]);
    assert!(e.contains("split ports: port 5001 is given twice"), "{e}");
    // checked before any namespace is made, root or not
    let e = err(&["bench", "sockets", "--window", "1000"]);
    assert!(e.contains("window must be between 1460 B"), "{e}");
    let e = err(&["bench", "sockets", "--rto-ms", "0"]);
    assert!(e.contains("rto_ms"), "{e}");
}

/// `lasthop bench sockets` end to end (as root with network namespaces; otherwise it must refuse clearly).
#[test]
fn bench_sockets_runs_or_refuses_clearly() {
    match cli(&["bench", "sockets", "--segments", "2000", "--repetitions", "2", "--json"]) {
        Ok(code) => assert_eq!(code, ExitCode::SUCCESS),
        Err(e) => {
            let e = format!("{e:#}");
            assert!(e.contains("must run as root") || e.contains("network namespaces are not available"), "{e}");
            lasthop_net::testbed::skip_or_fail(e);
        }
    }
}

#[test]
fn bench_forward_runs() {
    assert_eq!(cli(&["bench", "forward", "--packets", "2000", "--repetitions", "3"]).unwrap(), ExitCode::SUCCESS);
}

#[test]
fn the_testbed_experiment_loads_and_its_grid_expands() {
    let e = Experiment::load(&repo().join("experiments/testbed-ber.toml")).unwrap();
    assert_eq!(e.runner, RunnerKind::Testbed);
    assert!(!e.default, "needs root: must not be in the default set");
    assert_eq!(e.grid_columns(), ["agent", "cc", "sack", "wired_delay_ms", "ber"]);
    let cols = e.columns();
    for c in ["agent", "cc", "sack", "ber", "seed", "goodput_mbps", "hash_ok"] {
        assert!(cols.iter().any(|k| k == c), "no column {c} in {cols:?}");
    }
    let full = e.points(false).unwrap();
    assert_eq!(full.len(), 3 * 3 * 2 * 2 * 3);
    let quick = e.points(true).unwrap();
    assert_eq!(quick.len(), 3 * 2 * 3, "quick: reno only, SACK off, both wired paths");
    let agents: Vec<AgentKind> = quick.iter().map(|p| testbed_config(p, 1).unwrap().agent).collect();
    for a in [AgentKind::None, AgentKind::Snoop, AgentKind::Split] {
        assert!(agents.contains(&a), "quick runs {a} too: {agents:?}");
    }
    assert!(e.seed_list(true).len() <= 2);
    for p in &quick {
        let c = testbed_config(p, 7).unwrap();
        assert_eq!(c.cc, "reno");
        assert!(!c.sack);
        assert_eq!(c.seed, 7);
        assert_eq!(c.rate_mbps, 2.0);
        assert_eq!(c.max_window, 65535, "Balakrishnan 1995 §7's 64 KB window");
        assert!(c.report_transmissions);
        assert!(c.bytes < 1_048_576, "quick transfers are shorter");
    }
    let c = testbed_config(&full[full.len() - 1], 1).unwrap();
    assert_eq!(
        (c.agent, c.cc.as_str(), c.sack, c.wired_delay_ms, c.ber, c.bytes),
        (AgentKind::Split, "bbr", true, 20.0, 1.6e-5, 1_048_576)
    );
    assert!(e.claims.len() >= 2);
}

#[test]
fn the_handoff_experiment_loads_with_its_handoff_columns() {
    let e = Experiment::load(&repo().join("experiments/testbed-handoff.toml")).unwrap();
    assert_eq!(e.runner, RunnerKind::Twin, "the kernel face beside its simulator twin");
    assert!(!e.default, "needs root: must not be in the default set");
    assert_eq!(e.grid_columns(), ["scheme", "handoff_interval_s", "hop"]);
    let cols = e.columns();
    for c in [
        "face",
        "point",
        "agent",
        "ber",
        "cc",
        "seed",
        "goodput_mbps",
        "hash_ok",
        "handoffs",
        "handoff_latency_ms",
        "handoff_packets_lost",
    ] {
        assert!(cols.iter().any(|k| k == c), "no column {c} in {cols:?}");
    }
    assert_eq!(e.points(false).unwrap().len(), 3 * 5 * 4);
    assert_eq!(e.points(true).unwrap().len(), 3 * 3 * 2, "quick: the two hops the claims read");
    assert_eq!(e.seed_list(false).len(), 3);
    let full = e.points(false).unwrap();
    let never = testbed_config(&full[4 * 4], 1).unwrap();
    assert_eq!((never.agent, never.ber), (AgentKind::None, 0.0), "hop clean");
    assert_eq!(never.handoff, Some(lasthop_net::handoff::HandoffScheme::Multicast));
    assert!(never.handoff_every_s.is_infinite(), "the fifth interval is never: {}", never.handoff_every_s);
    let last = testbed_config(&full[full.len() - 1], 1).unwrap();
    assert_eq!(
        (last.handoff, last.agent, last.ber, last.cc.as_str(), last.handoff_buffer_packets),
        (Some(lasthop_net::handoff::HandoffScheme::FastRexmit), AgentKind::Snoop, 3.9e-6, "reno", 12)
    );
    assert!(last.validate().is_ok());
}

#[test]
fn the_rtt_experiment_loads_and_its_grid_expands() {
    let e = Experiment::load(&repo().join("experiments/testbed-rtt.toml")).unwrap();
    assert_eq!(e.runner, RunnerKind::Testbed);
    assert!(!e.default, "needs root: must not be in the default set");
    assert_eq!(e.grid_columns(), ["agent", "wired_delay_ms", "ber"]);
    let cols = e.columns();
    for c in ["cc", "sack", "seed", "goodput_mbps", "ideal_goodput_mbps", "hash_ok", "sender_timeouts"] {
        assert!(cols.iter().any(|k| k == c), "no column {c} in {cols:?}");
    }
    let full = e.points(false).unwrap();
    assert_eq!(full.len(), 2 * 6 * 3);
    assert_eq!(e.seed_list(false).len(), 3);
    let delays: Vec<f64> = full.iter().map(|p| testbed_config(p, 1).unwrap().wired_delay_ms).collect();
    assert_eq!(delays.iter().copied().fold(0.0, f64::max), 50.0);
    for p in &full {
        let c = testbed_config(p, 2).unwrap();
        assert_eq!((c.cc.as_str(), c.sack, c.max_window, c.bytes), ("reno", false, 65535, 1_048_576));
        assert_eq!(c.rate_mbps, 2.0);
        assert!(c.ideal_goodput_mbps().is_some(), "a rate-limited hop has a bound");
    }
    let quick = e.points(true).unwrap();
    assert_eq!(quick.len(), 2 * 2 * 3, "quick: the LAN and 20 ms, every BER");
    assert_eq!(e.seed_list(true).len(), 1);
    assert!(quick.iter().all(|p| testbed_config(p, 1).unwrap().bytes < 1_048_576));
    // per-delay claims on both error rates, the no-harm claim, the LAN bound, Snoop's target, the hashes
    let per_delay = e.claims.iter().filter(|c| c.for_each.as_deref() == Some("wired_delay_ms")).count();
    assert_eq!(per_delay, 4);
    assert_eq!(e.claims.len(), 6);
}

/// A testbed that answers with goodputs from a formula of the configuration (no kernel, no namespaces).
struct FormulaTestbed<F: Fn(&TestbedConfig) -> f64 + Sync>(F);

/// What a fake testbed reports for `cfg`: an intact transfer at `goodput` Mb/s.
fn fake_result(cfg: &TestbedConfig, goodput: f64) -> TestbedResult {
    TestbedResult {
        goodput_mbps: goodput,
        hash_ok: true,
        bytes: cfg.bytes,
        duration_s: cfg.bytes as f64 * 8.0 / goodput / 1e6,
        cc: cfg.cc.clone(),
        sack: cfg.sack,
        agent: cfg.agent,
        counters: Counters::default(),
        sender: Default::default(),
        split: None,
        handoff: None,
    }
}

impl<F: Fn(&TestbedConfig) -> f64 + Sync> Runner for FormulaTestbed<F> {
    fn run(&self, _: &RunRequest<'_>) -> Result<RunResult> {
        anyhow::bail!("no simulator here")
    }
    fn run_testbed(&self, cfg: &TestbedConfig) -> Result<TestbedResult> {
        Ok(fake_result(cfg, (self.0)(cfg)))
    }
}

#[test]
fn the_rtt_experiment_reports_from_which_delay_the_gain_holds() {
    // Snoop at 97 % of the bound everywhere; plain Reno at 86 % of it on the LAN at BER 0 and 3.9e-6,
    // falling as the wired delay grows (and faster at the higher BER): the 2× claims must fail on the LAN
    // and name every delay's ratio.
    let fake = FormulaTestbed(|c: &TestbedConfig| {
        let ideal = c.ideal_goodput_mbps().unwrap();
        match c.agent {
            AgentKind::Snoop => 0.97 * ideal,
            _ if c.ber == 0.0 => 0.99 * ideal,
            _ => 0.86 * ideal / (1.0 + c.wired_delay_ms * c.ber / 1e-5 / 4.0),
        }
    });
    let out = tempfile::tempdir().unwrap();
    let opts = ReproduceOptions {
        ids: vec!["testbed-rtt".into()],
        quick: false,
        jobs: 2,
        out: out.path().to_path_buf(),
        experiments_dir: repo().join("experiments"),
        progress: false,
    };
    let summary = reproduce(&opts, &fake).unwrap();
    let e = &summary.experiments[0];
    assert!(e.failed_runs.is_empty(), "{:?}", e.failed_runs);
    assert_eq!(e.runs, 2 * 6 * 3 * 3);
    let claim = |start: &str| &e.claims.iter().find(|c| c.0.contains(start)).unwrap_or_else(|| panic!("{start}")).2;
    // 3.9e-6: ratio 0.97/0.86 × (1 + 0.0975 d): 1.13 on the LAN, 1.68 at 5 ms, 2.23 at 10 ms
    let c = claim("at BER 3.9e-6, per wired delay");
    assert!(!c.holds, "{c:?}");
    assert_eq!(c.detail.len(), 6, "{c:?}");
    assert!(c.detail[0].starts_with("1.13") && c.detail[0].ends_with("wired_delay_ms=0.0"), "{:?}", c.detail);
    assert!(c.ours.contains("wired_delay_ms=0.0") && c.ours.contains("worst of 6"), "{}", c.ours);
    let ratio = |d: &str| d.split_whitespace().next().unwrap().parse::<f64>().unwrap();
    assert!(ratio(&c.detail[1]) < 2.0 && ratio(&c.detail[2]) >= 2.0, "{:?}", c.detail);
    assert!(c.detail.windows(2).all(|w| ratio(&w[0]) < ratio(&w[1])), "{:?}", c.detail);
    // no harm at BER 0 (0.97 / 0.99 ≈ 0.98), the LAN bound (plain at 86 %), Snoop's 90 % target, the hashes
    for start in ["Snoop never hurts", "The bound on the LAN", "Target: Snoop reaches", "Every transfer arrives"] {
        assert!(claim(start).holds, "{start}: {:?}", claim(start));
    }
    let csv = std::fs::read_to_string(out.path().join("testbed-rtt/results.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    assert!(header.contains(&"ideal_goodput_mbps"), "{header:?}");
    let report = std::fs::read_to_string(out.path().join("testbed-rtt/report.md")).unwrap();
    assert!(report.contains("goodput_mbps/ideal_goodput_mbps"), "{report}");
    assert!(out.path().join("testbed-rtt/figure.svg").is_file());
}

/// A temporary directory with `experiments/NAME.toml` and the repository's `examples/testbed.toml`.
fn experiment_dir(name: &str, text: &str) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(d.path().join("experiments")).unwrap();
    std::fs::create_dir_all(d.path().join("examples")).unwrap();
    std::fs::copy(repo().join("examples/testbed.toml"), d.path().join("examples/testbed.toml")).unwrap();
    std::fs::write(d.path().join(format!("experiments/{name}.toml")), text).unwrap();
    d
}

const TINY: &str = r#"
id = "tiny-tb"
title = "one testbed run"
paper = "-"
runner = "testbed"
scenario = "../examples/testbed.toml"
[set]
bytes = 300_000
[grid.agent]
path = "agent"
values = ["snoop"]
[grid.ber]
path = "ber"
values = [3.9e-6]
[figure]
kind = "line"
x = "ber"
y = "goodput_mbps"
series = "agent"
[[claims]]
text = "intact"
paper = "-"
kind = "all"
metric = "hash_ok"
"#;

#[test]
fn testbed_experiment_mistakes_are_named() {
    let err = |from: &str, to: &str| {
        assert!(TINY.contains(from), "{from}");
        let d = experiment_dir("tiny-tb", &TINY.replacen(from, to, 1));
        Experiment::load(&d.path().join("experiments/tiny-tb.toml")).unwrap_err()
    };
    let e = err("bytes = 300_000", "bites = 300_000");
    assert!(e.field.contains("bites") && e.message.contains("no field"), "{e}");
    let e = err("path = \"ber\"", "path = \"links.wavelan.error.ber\"");
    assert!(e.field.starts_with("grid.ber"), "{e}");
    let e = err("scenario = \"../examples/testbed.toml\"", "scenario = \"../examples/testbed.toml\"\nflow = \"bulk\"");
    assert!(e.field == "flow" && e.message.contains("testbed"), "{e}");
    let e = err("[set]\nbytes = 300_000", "[set]\nbytes = 300_000\n[quick]\ngrid = { agent = [\"none\"] }");
    assert!(e.field == "quick.grid.agent" && e.message.contains("not a value"), "{e}");
    let e = err("[set]\nbytes = 300_000", "[set]\nbytes = 300_000\n[quick]\ngrid = { cc = [\"reno\"] }");
    assert!(e.field == "quick.grid.cc" && e.message.contains("not a grid axis"), "{e}");
    let e = err("kind = \"line\"\nx = \"ber\"\ny = \"goodput_mbps\"", "kind = \"sequence\"");
    assert!(e.field == "figure.kind", "{e}");
    let e = err("[grid.ber]", "[grid.goodput_mbps]");
    assert!(e.field == "grid.goodput_mbps" && e.message.contains("results column"), "{e}");
}

/// A fake testbed: Snoop's goodput flat, plain falling with BER; counts runs in flight at once.
struct FakeTestbed {
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    runs: AtomicUsize,
}

impl Runner for FakeTestbed {
    fn run(&self, _: &RunRequest<'_>) -> Result<RunResult> {
        anyhow::bail!("no simulator here")
    }
    fn run_testbed(&self, cfg: &TestbedConfig) -> Result<TestbedResult> {
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_in_flight.fetch_max(now, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(5));
        self.runs.fetch_add(1, Ordering::SeqCst);
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        let snoop = 1.7 * (1.0 - cfg.ber * 1e4);
        let goodput = if cfg.agent == AgentKind::Snoop { snoop } else { snoop / (1.0 + cfg.ber / 2e-6) };
        Ok(fake_result(cfg, goodput))
    }
}

#[test]
fn testbed_experiment_through_reproduce_with_a_fake_testbed_runs_one_at_a_time() {
    let out = tempfile::tempdir().unwrap();
    let fake =
        FakeTestbed { in_flight: AtomicUsize::new(0), max_in_flight: AtomicUsize::new(0), runs: AtomicUsize::new(0) };
    let opts = ReproduceOptions {
        ids: vec!["testbed-ber".into()],
        quick: true,
        jobs: 4,
        out: out.path().to_path_buf(),
        experiments_dir: repo().join("experiments"),
        progress: false,
    };
    let summary = reproduce(&opts, &fake).unwrap();
    assert_eq!(fake.max_in_flight.load(Ordering::SeqCst), 1, "testbed runs must not overlap, whatever --jobs");
    let e = &summary.experiments[0];
    assert!(e.failed_runs.is_empty(), "{:?}", e.failed_runs);
    assert_eq!(fake.runs.load(Ordering::SeqCst), e.runs);
    // the fake makes Snoop ≥ 2× at the high BERs and equal at 0: the claims hold
    assert!(e.claims.iter().all(|c| c.2.holds), "{:?}", e.claims);
    let dir = out.path().join("testbed-ber");
    let csv = std::fs::read_to_string(dir.join("results.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    for c in ["agent", "cc", "sack", "ber", "seed", "goodput_mbps", "hash_ok", "cc_used", "local_retransmissions"] {
        assert!(header.contains(&c), "no {c} in {header:?}");
    }
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), e.runs);
    assert!(rows[0].starts_with("none,reno,false,0.0,0.0,1,"), "{}", rows[0]);
    for f in ["figure.svg", "figure.png", "report.md"] {
        assert!(dir.join(f).is_file(), "{f}");
    }
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(report.contains("goodput_mbps"), "{report}");
}

// ------------------------------------------------------------------------------------------------------
// Real runs: root and network namespaces.

/// Runs the `lasthop` binary; None (with the reason printed) when this machine cannot build a testbed.
fn run_real(args: &[&str]) -> Option<std::process::Output> {
    let out = Command::new(env!("CARGO_BIN_EXE_lasthop")).args(args).output().expect("running lasthop");
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success()
        && (stderr.contains("must run as root") || stderr.contains("network namespaces are not available"))
    {
        lasthop_net::testbed::skip_or_fail(stderr.trim());
        return None;
    }
    Some(out)
}

#[test]
fn lasthop_testbed_end_to_end() {
    let bytes = 300_000u64;
    let Some(out) =
        run_real(&["testbed", "--agent", "snoop", "--ber", "3.9e-6", "--bytes", &bytes.to_string(), "--seed", "2"])
    else {
        return;
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    // goodput 0.849 Mb/s (300000 of 300000 B in 2.83 s, cc reno), hash ok
    let line = stdout.lines().find(|l| l.starts_with("goodput ")).unwrap_or_else(|| panic!("{stdout}"));
    assert!(line.ends_with("hash ok"), "{line}");
    assert!(line.contains(&format!("{bytes} of {bytes} B")), "{line}");
    assert!(line.contains("cc reno"), "{line}");
    let w: Vec<&str> = line.split_whitespace().collect();
    let goodput: f64 = w[1].parse().unwrap();
    let secs: f64 = w[w.iter().position(|x| *x == "in").unwrap() + 1].parse().unwrap();
    assert!(goodput > 0.05 && goodput <= 2.0, "a 2 Mb/s hop: {line}");
    let implied = bytes as f64 * 8.0 / secs / 1e6;
    assert!((implied / goodput - 1.0).abs() < 0.05, "goodput {goodput} vs {bytes} B in {secs} s: {line}");
    assert!(stdout.contains("local_retransmissions"), "Snoop's counters are printed:\n{stdout}");

    // the same as JSON
    let Some(out) = run_real(&["testbed", "--bytes", "100000", "--json", "--rate-mbps", "0"]) else { return };
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["result"]["hash_ok"], true, "{v}");
    assert_eq!(v["result"]["bytes"], 100000, "{v}");
    assert_eq!(v["config"]["agent"], "none", "{v}");
}

#[test]
fn a_one_point_testbed_experiment_end_to_end() {
    let d = experiment_dir("tiny-tb", TINY);
    let outdir = d.path().join("out");
    let exp = d.path().join("experiments");
    let Some(out) = run_real(&[
        "reproduce",
        "tiny-tb",
        "--experiments",
        exp.to_str().unwrap(),
        "--out",
        outdir.to_str().unwrap(),
        "--check",
    ]) else {
        return;
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}\n{stderr}", String::from_utf8_lossy(&out.stdout));
    let csv = std::fs::read_to_string(outdir.join("tiny-tb/results.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let row: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert!(lines.next().is_none(), "one run: {csv}");
    let get = |c: &str| row[header.iter().position(|h| *h == c).unwrap_or_else(|| panic!("no {c}: {csv}"))];
    assert_eq!(get("agent"), "snoop");
    assert_eq!(get("cc"), "reno");
    assert_eq!(get("sack"), "false");
    assert_eq!(get("hash_ok"), "true");
    assert_eq!(get("bytes_delivered"), "300000");
    assert!(get("goodput_mbps").parse::<f64>().unwrap() > 0.05, "{csv}");
    assert!(outdir.join("tiny-tb/figure.svg").is_file());
}

/// `lasthop testbed --agent split --bytes 200000 ARGS --json` on the real testbed: the transfer hashes right
/// and the proxy terminated it; the JSON output, or None where the testbed cannot run.
fn split_transfer_json(args: &[&str]) -> Option<serde_json::Value> {
    let mut all = vec!["testbed", "--agent", "split", "--bytes", "200000", "--json"];
    all.extend_from_slice(args);
    let out = run_real(&all)?;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["config"]["agent"], "split", "{v}");
    assert_eq!(v["result"]["hash_ok"], true, "{v}");
    assert_eq!(v["result"]["bytes"], 200000, "{v}");
    assert_eq!(v["result"]["split"]["connections"], 1, "the proxy terminated the transfer: {v}");
    assert_eq!(v["result"]["split"]["bytes_down"], 200000, "{v}");
    Some(v)
}

#[test]
fn lasthop_testbed_split_end_to_end() {
    let Some(v) = split_transfer_json(&["--ber", "3.9e-6", "--split-buffer-bytes", "32768"]) else { return };
    // the kernel reports twice the buffer it was given
    assert_eq!(v["result"]["split"]["rcvbuf_bytes"], 65536, "{v}");
    assert_eq!(v["result"]["sender"]["bytes_acked"], 200000, "{v}");
}

#[test]
fn lasthop_testbed_split_on_a_port_of_its_own() {
    let Some(v) = split_transfer_json(&["--port", "8080", "--split-ports", "8080,5001"]) else { return };
    assert_eq!(
        (&v["config"]["port"], &v["config"]["split_ports"]),
        (&8080.into(), &serde_json::json!([8080, 5001])),
        "{v}"
    );
}
