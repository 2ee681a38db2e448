//! `lasthop reproduce` and `lasthop run` end to end with a fake runner (a formula instead of the simulator):
//! the experiment files of the repository, output files, deterministic order, claim checking, exit codes.

use anyhow::{anyhow, Result};
use lasthop::cli::main_with;
use lasthop::reproduce::{reproduce, ReproduceOptions};
use lasthop::runner::{RunRequest, ScenarioSource};
use lasthop_sim::{FlowMetrics, FlowSeries, RunResult};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

fn repo_experiments() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments")
}

fn get<'a>(v: &'a toml::Value, path: &str) -> Option<&'a toml::Value> {
    path.split('.').try_fold(v, |v, k| v.get(k))
}

/// A made-up model of Balakrishnan 1995 Fig. 7: Snoop at 95 % of the ideal goodput, Reno falling off as BER².
fn fake(req: &RunRequest<'_>) -> Result<RunResult> {
    let owned;
    let doc = match req.scenario {
        ScenarioSource::Value { value, .. } => value,
        ScenarioSource::File(p) => {
            owned = toml::from_str::<toml::Value>(&std::fs::read_to_string(p)?)?;
            &owned
        }
    };
    let agent = get(doc, "nodes.bs.agent").and_then(|v| v.as_str()).ok_or_else(|| anyhow!("no agent"))?;
    let ber = get(doc, "links.wavelan.error.ber").and_then(|v| v.as_float()).ok_or_else(|| anyhow!("no ber"))?;
    let bytes = get(doc, "flows.bulk.bytes").and_then(|v| v.as_integer()).ok_or_else(|| anyhow!("no bytes"))? as u64;
    let seed = req.seed.unwrap_or(1);
    let per = 1.0 - (1.0 - ber).powi(1500 * 8);
    let ideal = 1.6 * (1.0 - per);
    let noise = 1.0 + 0.01 * ((seed % 3) as f64 - 1.0);
    let snoop = 0.95 * ideal * noise;
    let goodput = if agent == "snoop" { snoop } else { snoop / (1.0 + (ber / 2.5e-6).powi(2)) };
    let duration = bytes as f64 * 8.0 / (goodput * 1e6);
    let completed = duration < 600.0;
    let series = req.trace.then(|| {
        let n = 50u64;
        let pts: Vec<(f64, u64)> = (0..n).map(|i| (duration * i as f64 / n as f64, bytes * i / n)).collect();
        vec![FlowSeries {
            name: "bulk".into(),
            sent: pts.clone(),
            received: pts.clone(),
            acked: pts,
            cwnd: vec![(0.0, 2920)],
            handoffs: vec![],
        }]
    });
    Ok(RunResult {
        seed,
        sim_time_s: duration.min(600.0),
        hit_time_limit: !completed,
        events: 1000 + seed,
        flows: vec![FlowMetrics {
            name: "bulk".into(),
            tcp: "reno".into(),
            bytes_total: bytes,
            bytes_delivered: if completed { bytes } else { (goodput * 1e6 * 600.0 / 8.0) as u64 },
            completed,
            duration_s: duration.min(600.0),
            completion_time_s: completed.then_some(duration),
            goodput_mbps: goodput,
            ideal_goodput_mbps: Some(ideal),
            sender_timeouts: if agent == "snoop" { 0 } else { (ber * 1e6) as u64 },
            fast_retransmits: 0,
            segments_sent: bytes / 1460,
            segments_retransmitted: 0,
            local_retransmissions: if agent == "snoop" { (ber * 1e7) as u64 } else { 0 },
            dupacks_suppressed: 0,
            corrupt_bytes: 0,
            ..FlowMetrics::default()
        }],
        links: vec![],
        agents: BTreeMap::new(),
        undeliverable_packets: 0,
        series,
        families: Default::default(),
    })
}

fn opts(dir: &Path, out: &Path, ids: &[&str], jobs: usize) -> ReproduceOptions {
    ReproduceOptions {
        ids: ids.iter().map(|s| s.to_string()).collect(),
        quick: true,
        jobs,
        out: out.to_path_buf(),
        experiments_dir: dir.to_path_buf(),
        progress: false,
    }
}

#[test]
fn repository_experiments_quick_with_a_fake_simulator() {
    let out = tempfile::tempdir().unwrap();
    // LASTHOP_TEST_OUT=DIR keeps a copy of the outputs to look at
    if let Ok(keep) = std::env::var("LASTHOP_TEST_OUT") {
        reproduce(&opts(&repo_experiments(), Path::new(&keep), &["snoop-ber", "snoop-seq"], 4), &fake).unwrap();
    }
    // The fake knows Balakrishnan 1995's scenario only: the Snoop experiments.
    let summary = reproduce(&opts(&repo_experiments(), out.path(), &["snoop-ber", "snoop-seq"], 4), &fake).unwrap();
    let ids: Vec<&str> = summary.experiments.iter().map(|e| e.id.as_str()).collect();
    assert!(ids.contains(&"snoop-ber") && ids.contains(&"snoop-seq"), "{ids:?}");
    assert_eq!(summary.failed_runs(), 0);
    // the fake model is built to satisfy every claim recorded to hold (those recorded as divergences of our
    // simulator from the paper it may or may not meet)
    let failing = summary.failing_claims();
    assert!(failing.iter().all(|(_, _, o)| !o.expect.holds()), "{failing:#?}");

    let d = out.path().join("snoop-ber");
    let csv = std::fs::read_to_string(d.join("results.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    for c in [
        "agent",
        "ber",
        "seed",
        "goodput_mbps",
        "ideal_goodput_mbps",
        "ideal_ratio",
        "completed",
        "sim_time_s",
        "events",
        "hit_time_limit",
    ] {
        assert!(header.contains(&c), "missing column {c} in {header:?}");
    }
    assert_eq!(&header[..3], &["agent", "ber", "seed"]);
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 2 * 11 * 5, "agents × BERs × quick seeds");
    assert!(rows[0].starts_with("none,5.96e-8,1,"), "{}", rows[0]);
    assert!(rows[1].starts_with("none,5.96e-8,2,"), "{}", rows[1]);
    assert!(rows[109].starts_with("snoop,6.1e-5,5,"), "{}", rows[109]);
    for f in ["figure.svg", "figure.png", "report.md"] {
        assert!(d.join(f).is_file(), "{f}");
    }
    let report = std::fs::read_to_string(d.join("report.md")).unwrap();
    assert!(
        report.contains("Balakrishnan 1995 Fig. 7")
            && report.contains("✅ holds")
            && report.contains("![")
            && report.contains("±")
    );
    let svg = std::fs::read_to_string(d.join("figure.svg")).unwrap();
    assert!(svg.contains("16M") && svg.contains("16K") && svg.contains("Reno + Snoop"));

    let s = out.path().join("snoop-seq");
    for f in ["series-none.csv", "series-snoop.csv", "figure.svg", "figure.png", "report.md", "results.csv"] {
        assert!(s.join(f).is_file(), "{f}");
    }
    let series = std::fs::read_to_string(s.join("series-snoop.csv")).unwrap();
    assert!(series.starts_with("kind,time_s,value\nsent,"));
    assert!(series.contains("\nreceived,") && series.contains("\nacked,") && series.contains("\ncwnd,"));
    let summary_md = std::fs::read_to_string(out.path().join("summary.md")).unwrap();
    assert!(summary_md.contains("snoop-ber") && summary_md.contains("snoop-seq"));
    assert!(!summary_md.contains("differs: recorded to hold"), "{summary_md}");
}

#[test]
fn row_order_does_not_depend_on_completion_order() {
    // runs finish in a scrambled order: later seeds and snoop runs first
    let slow = |req: &RunRequest<'_>| {
        let seed = req.seed.unwrap_or(1);
        let is_none = matches!(req.scenario, ScenarioSource::Value { value, .. } if get(value, "nodes.bs.agent").and_then(|v| v.as_str()) == Some("none"));
        std::thread::sleep(std::time::Duration::from_millis((3 - seed.min(3)) * 3 + if is_none { 4 } else { 0 }));
        fake(req)
    };
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    reproduce(&opts(&repo_experiments(), a.path(), &["snoop-ber"], 1), &fake).unwrap();
    reproduce(&opts(&repo_experiments(), b.path(), &["snoop-ber"], 8), &slow).unwrap();
    for f in ["snoop-ber/results.csv", "snoop-ber/report.md", "summary.md"] {
        let x = std::fs::read(a.path().join(f)).unwrap();
        let y = std::fs::read(b.path().join(f)).unwrap();
        assert!(x == y, "{f} differs between 1 and 8 workers");
    }
}

const TINY: &str = r#"
id = "tiny"
title = "Tiny"
paper = "none"
scenario = "../examples/snoop.toml"
seeds = 2

[grid.agent]
path = "nodes.bs.agent"
values = ["none", "snoop"]

[figure]
kind = "line"
x = "ber"
y = "goodput_mbps"
series = "agent"

[grid.ber]
path = "links.wavelan.error.ber"
values = [1e-6, 1e-5]

[[claims]]
text = "holds"
paper = "-"
kind = "all"
metric = "completed"
where = { agent = "snoop" }

[[claims]]
text = "fails: snoop 100x"
paper = "-"
kind = "ratio"
metric = "goodput_mbps"
numerator = { agent = "snoop" }
denominator = { agent = "none" }
op = ">="
value = 100
"#;

/// A temporary experiments dir holding `tiny.toml` (the base scenario is the repository's example).
fn tiny_dir(text: &str) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let exp = d.path().join("experiments");
    std::fs::create_dir_all(&exp).unwrap();
    std::fs::create_dir_all(d.path().join("examples")).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/snoop.toml"),
        d.path().join("examples/snoop.toml"),
    )
    .unwrap();
    std::fs::write(exp.join("tiny.toml"), text).unwrap();
    d
}

fn cli(args: &[&str], runner: &dyn lasthop::runner::Runner) -> Result<ExitCode> {
    let mut v = vec!["lasthop"];
    v.extend_from_slice(args);
    main_with(v, runner)
}

#[test]
fn check_exits_non_zero_on_failing_claims_and_grid_order_follows_the_file() {
    let d = tiny_dir(TINY);
    let exp = d.path().join("experiments");
    let out = d.path().join("out");
    let (e, o) = (exp.to_str().unwrap(), out.to_str().unwrap());
    // not default: must be named
    let err = cli(&["reproduce", "--experiments", e, "--out", o], &fake).unwrap_err();
    assert!(format!("{err:#}").contains("default = true"), "{err:#}");
    let err = cli(&["reproduce", "--experiments", e, "--out", o, "tiny2"], &fake).unwrap_err();
    assert!(format!("{err:#}").contains("unknown experiment `tiny2`"), "{err:#}");

    assert_eq!(cli(&["reproduce", "--experiments", e, "--out", o, "tiny"], &fake).unwrap(), ExitCode::SUCCESS);
    assert_eq!(cli(&["reproduce", "--all", "--experiments", e, "--out", o], &fake).unwrap(), ExitCode::SUCCESS);
    assert_eq!(
        cli(&["reproduce", "--check", "--experiments", e, "--out", o, "tiny"], &fake).unwrap(),
        ExitCode::FAILURE
    );
    let csv = std::fs::read_to_string(out.join("tiny/results.csv")).unwrap();
    assert!(csv.starts_with("agent,ber,seed,flow,tcp,"), "grid columns in file order: {csv}");
    assert_eq!(csv.lines().count(), 1 + 2 * 2 * 2);
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(summary.contains("fails: snoop 100x") && summary.contains("❌ fails") && summary.contains("✅ holds"));
    assert!(summary.contains("differs: recorded to hold"), "{summary}");

    // recorded as an expected divergence, the failing claim passes --check and is explained in the summary
    let recorded = TINY.replacen("value = 100\n", "value = 100\nexpect = \"fails\"\nwhy = \"the fake is 4x\"\n", 1);
    std::fs::write(exp.join("tiny.toml"), &recorded).unwrap();
    assert_eq!(
        cli(&["reproduce", "--check", "--experiments", e, "--out", o, "tiny"], &fake).unwrap(),
        ExitCode::SUCCESS
    );
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(summary.contains("1 fail as recorded") && summary.contains("expected divergence"), "{summary}");
    assert!(summary.contains("## Expected divergences") && summary.contains("the fake is 4x"), "{summary}");
    let report = std::fs::read_to_string(out.join("tiny/report.md")).unwrap();
    assert!(report.contains("the fake is 4x"), "{report}");

    // a recorded divergence that starts to hold is noticed too
    let stale = recorded.replacen("value = 100\n", "value = 2\n", 1);
    std::fs::write(exp.join("tiny.toml"), stale).unwrap();
    assert_eq!(
        cli(&["reproduce", "--check", "--experiments", e, "--out", o, "tiny"], &fake).unwrap(),
        ExitCode::FAILURE
    );
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(summary.contains("differs: recorded to fail") && summary.contains("record is out of date"), "{summary}");
}

#[test]
fn failing_runs_are_reported_and_exit_2() {
    let d = tiny_dir(TINY);
    let exp = d.path().join("experiments");
    let out = d.path().join("out");
    let flaky = |req: &RunRequest<'_>| {
        if req.seed == Some(2) {
            if matches!(req.scenario, ScenarioSource::Value { value, .. } if get(value, "nodes.bs.agent").and_then(|v| v.as_str()) == Some("none"))
            {
                panic!("engine bug");
            }
            return Err(anyhow!("scenario: no such thing"));
        }
        fake(req)
    };
    let code =
        cli(&["reproduce", "--experiments", exp.to_str().unwrap(), "--out", out.to_str().unwrap(), "tiny"], &flaky)
            .unwrap();
    assert_eq!(code, ExitCode::from(2));
    let report = std::fs::read_to_string(out.join("tiny/report.md")).unwrap();
    assert!(
        report.contains("## Failed runs")
            && report.contains("panicked: engine bug")
            && report.contains("no such thing"),
        "{report}"
    );
    assert_eq!(std::fs::read_to_string(out.join("tiny/results.csv")).unwrap().lines().count(), 1 + 4);
}

#[test]
fn a_broken_experiment_file_is_an_error_naming_file_field_and_line() {
    let d = tiny_dir(&TINY.replace("path = \"links.wavelan.error.ber\"", "path = \"links.wavelan.error.bre\""));
    let exp = d.path().join("experiments");
    let err = cli(&["reproduce", "--experiments", exp.to_str().unwrap(), "tiny"], &fake).unwrap_err();
    let msg = format!("{err:#}");
    assert!(msg.contains("tiny.toml:") && msg.contains("grid.ber") && msg.contains("no field `bre`"), "{msg}");
    let line = TINY.lines().position(|l| l.starts_with("values = [1e-6")).unwrap() + 1;
    assert!(msg.contains(&format!("tiny.toml:{line}:")), "{msg}");
}

#[test]
fn run_writes_metrics_series_and_applies_overrides() {
    let d = tempfile::tempdir().unwrap();
    let scen = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/snoop.toml");
    let out = d.path().join("run");
    let code = cli(
        &[
            "run",
            scen.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--seed",
            "7",
            "--trace",
            "--set",
            "nodes.bs.agent=none",
            "--set",
            "links.wavelan.error.ber=6.1e-5",
        ],
        &fake,
    )
    .unwrap();
    assert_eq!(code, ExitCode::SUCCESS);
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("metrics.json")).unwrap()).unwrap();
    assert_eq!(m["seed"], 7);
    assert!(m["flows"][0]["goodput_mbps"].as_f64().unwrap() < 0.1, "override reached the runner: {m}");
    assert!(out.join("series-bulk.csv").is_file());
    let err =
        cli(&["run", scen.to_str().unwrap(), "--out", out.to_str().unwrap(), "--set", "nodes.bs.agnet=none"], &fake)
            .unwrap_err();
    assert!(format!("{err:#}").contains("no field `agnet`"), "{err:#}");
}

/// A made-up Web model (Balakrishnan 1998 §5): Snoop 4× the downloads of the others.
fn fake_web(req: &RunRequest<'_>) -> Result<RunResult> {
    let ScenarioSource::Value { value: doc, .. } = req.scenario else { return Err(anyhow!("expected a value")) };
    let agent = get(doc, "nodes.bs.agent").and_then(|v| v.as_str()).ok_or_else(|| anyhow!("no agent"))?;
    let variant = get(doc, "tcp.variant").and_then(|v| v.as_str()).ok_or_else(|| anyhow!("no variant"))?;
    let conns = get(doc, "web.browse.connections").and_then(|v| v.as_integer()).ok_or_else(|| anyhow!("no conns"))?;
    let persistent = get(doc, "web.browse.persistent").and_then(|v| v.as_bool()).ok_or_else(|| anyhow!("no p"))?;
    let think = get(doc, "web.browse.think_time").and_then(|v| v.as_bool()).ok_or_else(|| anyhow!("no think"))?;
    // think times dominate; without them P-HTTP beats HTTP/1.0
    let base = if think {
        50
    } else if persistent {
        1000
    } else {
        500
    } + 10 * conns as u64;
    let downloads = if agent == "snoop" { 4 * base } else { base };
    Ok(RunResult {
        seed: req.seed.unwrap_or(1),
        sim_time_s: 1000.0,
        families: lasthop_sim::FamilyMetrics {
            web: vec![lasthop_sim::WebMetrics {
                name: "browse".into(),
                tcp: variant.into(),
                connections: conns as u32,
                persistent,
                think_time: think,
                downloads_completed: downloads,
                objects_requested: downloads + 1,
                ..Default::default()
            }],
            ..Default::default()
        },
        ..Default::default()
    })
}

#[test]
fn web_experiment_rows_come_from_the_web_workload() {
    let out = tempfile::tempdir().unwrap();
    let summary = reproduce(&opts(&repo_experiments(), out.path(), &["web"], 2), &fake_web).unwrap();
    assert_eq!(summary.failed_runs(), 0);
    assert!(summary.failing_claims().is_empty(), "{:#?}", summary.failing_claims());
    let csv = std::fs::read_to_string(out.path().join("web/results.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(&header[..7], &["scheme", "stack", "persistent", "think_time", "connections", "seed", "workload"]);
    assert!(header.contains(&"downloads") && header.contains(&"pages"));
    let first: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(&first[..5], &["reno", "bsd", "false", "true", "1"]);
    assert!(out.path().join("web/figure.svg").exists());
}

#[test]
fn mip_seq_marks_every_erroneous_fast_retransmit_the_results_count() {
    // The real simulator (four 1 MB runs): the crosses of the sequence figure (found in the sender's trace)
    // and the results column (found by the Mobile IP feature from what passes the correspondent's first hop)
    // are the same fast retransmits; Eom 2002's column contract names the TCP variant `tcp`, once.
    let out = tempfile::tempdir().unwrap();
    let summary =
        reproduce(&opts(&repo_experiments(), out.path(), &["mip-seq"], 1), &lasthop::runner::SimRunner).unwrap();
    assert_eq!(summary.experiments.len(), 1);
    let dir = out.path().join("mip-seq");
    let mut rows = csv::Reader::from_path(dir.join("results.csv")).unwrap();
    let header = rows.headers().unwrap().clone();
    assert_eq!(header.iter().filter(|c| *c == "tcp").count(), 1, "{header:?}");
    assert!(!header.iter().any(|c| c == "sender"));
    let col = |name: &str| header.iter().position(|c| c == name).unwrap();
    let mut marked_total = 0;
    for row in rows.records() {
        let row = row.unwrap();
        let (scheme, tcp) = (&row[col("scheme")], &row[col("tcp")]);
        let counted: usize = row[col("erroneous_fast_retransmits")].parse().unwrap();
        let series = std::fs::read_to_string(dir.join(format!("series-{scheme}-{tcp}.csv"))).unwrap();
        let marked = series.lines().filter(|l| l.starts_with("erroneous_fast_retransmit,")).count();
        assert_eq!(marked, counted, "{scheme}/{tcp}");
        marked_total += marked;
    }
    assert!(marked_total > 0, "route optimisation at 70 ms makes erroneous fast retransmits (Fig. 7)");
    let svg = std::fs::read_to_string(dir.join("figure.svg")).unwrap();
    assert!(svg.contains("erroneous fast retransmit"), "the crosses have a legend entry");
}
