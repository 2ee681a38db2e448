//! `lasthop twin`: one scenario on both faces, the simulator and kernel TCP on the namespace testbed through
//! the real base station on the same emulated hop, side by side; and the runs of `runner = "twin"` experiments.
//!
//! The scenario is a simulator scenario. [`testbed_of`] reads from it the one transfer the testbed can build
//! (a fixed host, a base station, a mobile; a wired link and a wireless one; one bulk flow to the mobile)
//! and refuses, naming the field, anything the testbed cannot do. Or it is the handoff testbed's
//! configuration (`TestbedConfig` with `handoff` set), and [`handoff::scenario_of`] goes the other way: the
//! simulator's scenario of two cells, the same hop and the same handoffs.

pub mod handoff;

use crate::runner::{RunRequest, Runner, ScenarioSource};
use anyhow::{anyhow, bail, Context, Result};
use lasthop_net::channel::ErrorModelConfig;
use lasthop_net::tcp_info::CwndSample;
use lasthop_net::testbed::TransferProgress;
use lasthop_net::{AgentKind, TestbedConfig, TestbedResult};
use lasthop_sim::scenario::{Duplex, LinkConfig, LinkKind};
use lasthop_sim::{RunResult, Scenario};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// The target both faces must meet on a run, from the project's issue for the twin: the simulator's goodput
/// within 15 % of the kernel's ...
pub const GOODPUT_TOLERANCE: f64 = 0.15;
/// ... and its sender retransmissions within 25 % of the kernel's, where the kernel's exceed 20.
pub const RETRANSMISSIONS_TOLERANCE: f64 = 0.25;
pub const RETRANSMISSIONS_FLOOR: u64 = 20;

/// How often the kernel sender's window is read from `TCP_INFO` under `--trace`.
pub const CWND_SAMPLE_EVERY: Duration = Duration::from_millis(5);

/// One scenario run on both faces.
#[derive(Debug, Clone)]
pub struct TwinRun {
    pub sim: RunResult,
    /// The testbed configuration the scenario became.
    pub testbed: TestbedConfig,
    pub kernel: TestbedResult,
    /// The kernel sender's window over time (empty unless traced).
    pub kernel_cwnd: Vec<CwndSample>,
    /// The simulator's sender's MSS (its window is counted in bytes, the kernel's in segments).
    pub sim_mss: u16,
    /// What the testbed leaves out of the scenario ([`unemulated`]).
    pub notes: Vec<String>,
}

impl TwinRun {
    /// The simulator's flow (the scenario has exactly one).
    pub fn sim_flow(&self) -> Result<&lasthop_sim::FlowMetrics> {
        self.sim.flows.first().ok_or_else(|| anyhow!("the simulator reported no flow"))
    }
}

/// Runs the scenario of `req` on both faces: the simulator through `runner`, then the testbed (root, network
/// namespaces, real time). `req.trace` also samples the kernel sender's window.
pub fn run(runner: &(impl Runner + ?Sized), req: &RunRequest<'_>) -> Result<TwinRun> {
    let checked = check(req)?;
    let sim = runner.run(&checked.sim_request(req)).with_context(|| format!("{}: the simulator", checked.origin))?;
    let Checked { testbed, origin, scenario, .. } = checked;
    let progress = Arc::new(TransferProgress::default());
    if req.trace {
        progress.cwnd.enable(CWND_SAMPLE_EVERY);
    }
    let kernel = lasthop_net::run_testbed_transfer_observed(&testbed, &progress)
        .map_err(|e| anyhow!("{origin}: the testbed: {e}"))?;
    Ok(TwinRun {
        sim,
        testbed,
        kernel,
        kernel_cwnd: progress.cwnd.samples(),
        sim_mss: scenario.flows.keys().next().and_then(|f| scenario.flow_tcp(f).ok()).map_or(1460, |t| t.mss),
        notes: unemulated(&scenario),
    })
}

/// A scenario the testbed can run.
#[derive(Debug)]
pub struct Checked {
    pub testbed: TestbedConfig,
    /// The scenario's name in messages.
    pub origin: String,
    pub scenario: Scenario,
    /// The simulator's scenario document when it was made from the handoff testbed's configuration
    /// ([`handoff::scenario_of`]); `None`: the request's own scenario.
    pub translated: Option<toml::Value>,
}

impl Checked {
    /// The simulator's face of the request: the request itself, or its scenario translated from the
    /// testbed configuration.
    pub fn sim_request<'a>(&'a self, req: &RunRequest<'a>) -> RunRequest<'a> {
        match &self.translated {
            None => *req,
            Some(doc) => RunRequest {
                scenario: ScenarioSource::Value { value: doc, origin: &self.origin, base_dir: Path::new("") },
                ..*req
            },
        }
    }
}

/// The testbed configuration of the request's scenario (with the request's seed), or why the testbed cannot
/// run it: what [`run`] checks before it runs either face.
pub fn check(req: &RunRequest<'_>) -> Result<Checked> {
    let (doc, origin, base_dir) = match req.scenario {
        ScenarioSource::File(path) => {
            let origin = path.display().to_string();
            let text = std::fs::read_to_string(path).with_context(|| format!("reading {origin}"))?;
            let doc: toml::Value = toml::from_str(&text).map_err(|e| anyhow!("{origin}: {e}"))?;
            (doc, origin, path.parent().unwrap_or(Path::new("")))
        }
        ScenarioSource::Value { value, origin, base_dir } => (value.clone(), origin.to_string(), base_dir),
    };
    if handoff::is_handoff_testbed(&doc) {
        return check_handoff_testbed(&doc, origin, req.seed);
    }
    let mut s = Scenario::from_toml_in(doc.clone(), &origin, base_dir).map_err(|e| anyhow!("{e}"))?;
    if let Some(seed) = req.seed {
        s.set_seed(seed);
    }
    let testbed = testbed_of(&s, &doc).map_err(|e| anyhow!("{origin}: {e}"))?;
    if let Err(e) = testbed.validate() {
        bail!("{origin}: the testbed refuses the configuration it became: {e}");
    }
    Ok(Checked { testbed, origin, scenario: s, translated: None })
}

/// [`check`] of a handoff testbed configuration: the configuration (with the seed) and its simulator twin.
fn check_handoff_testbed(doc: &toml::Value, origin: String, seed: Option<u64>) -> Result<Checked> {
    let mut testbed: TestbedConfig = doc
        .clone()
        .try_into()
        .map_err(|e: toml::de::Error| anyhow!("{origin}: not a testbed configuration: {}", e.message()))?;
    if let Some(seed) = seed {
        testbed.seed = seed;
    }
    testbed.validate().map_err(|e| anyhow!("{origin}: {e}"))?;
    let translated =
        handoff::scenario_of(&testbed).map_err(|e| anyhow!("{origin}: the simulator cannot mirror it: {e}"))?;
    let scenario = Scenario::from_toml_in(translated.clone(), &origin, Path::new(""))
        .map_err(|e| anyhow!("{origin}: the simulator refuses the scenario the testbed configuration became: {e}"))?;
    Ok(Checked { testbed, origin, scenario, translated: Some(translated) })
}

/// The kernel congestion control that runs the simulator's sender `variant`: Linux's `reno` recovers as
/// NewReno (RFC 6582) with SACK off and by SACK (RFC 6675) with it on, so reno, newreno and sack all map to
/// it; today's controls map to the module of the same name. Tahoe has no kernel counterpart.
pub fn kernel_cc(variant: &str) -> Result<String, String> {
    match variant {
        "tahoe" => Err("the Linux kernel has no Tahoe (its `reno` is the nearest: set variant = \"newreno\")".into()),
        "reno" | "newreno" | "sack" => Ok("reno".into()),
        other => Ok(other.to_string()),
    }
}

/// The testbed configuration of `s` (its document `doc`, for the tables the parsed scenario does not keep
/// apart from their defaults), or what the testbed cannot build, naming the field.
pub fn testbed_of(s: &Scenario, doc: &toml::Value) -> Result<TestbedConfig, String> {
    let cannot = |field: &str, what: &str| Err(format!("`{field}`: the testbed cannot run {what}"));
    if !s.web.is_empty() {
        return cannot("web", "a Web workload (it has one bulk transfer)");
    }
    if s.mobility.is_some() {
        return cannot("mobility", "cells, motion or handoffs (it has one base station and one hop)");
    }
    if s.mobile_ip.is_some() {
        return cannot("mobile_ip", "Mobile IP (it has no home or foreign agents)");
    }
    if s.failure.is_some() {
        return cannot("failure", "a node failure");
    }
    for table in ["snoop", "split", "eln", "nack"] {
        if doc.get(table).and_then(|t| t.as_table()).is_some_and(|t| !t.is_empty()) {
            return cannot(table, "agent settings: its base station runs each agent with its defaults");
        }
    }
    if s.flows.len() != 1 {
        return cannot("flows", &format!("{} flows (it has exactly one bulk transfer)", s.flows.len()));
    }
    let (flow_name, flow) = s.flows.iter().next().expect("one flow");
    if s.nodes.len() != 3 || s.links.len() != 2 {
        return cannot(
            "nodes",
            &format!(
                "{} nodes and {} links: it has three hosts, fixed, base station, mobile, joined by a wired link and a wireless one",
                s.nodes.len(),
                s.links.len()
            ),
        );
    }
    let (wl_name, wireless) = match s.links.iter().find(|(_, l)| l.kind == LinkKind::Wireless) {
        Some(l) => l,
        None => return cannot("links", "a path with no wireless link"),
    };
    let (wd_name, wired) = s.links.iter().find(|(n, _)| *n != wl_name).expect("two links");
    if wired.kind != LinkKind::Wired {
        return cannot(&format!("links.{wd_name}.kind"), "two wireless links (it has one emulated hop)");
    }
    let mobile = &flow.to;
    let Some(bs) = wireless.ends.iter().find(|e| *e != mobile) else {
        return cannot(&format!("links.{wl_name}.ends"), "a wireless link that does not reach the flow's receiver");
    };
    if !wireless.ends.contains(mobile)
        || !wired.ends.contains(bs)
        || !wired.ends.contains(&flow.from)
        || flow.from == *bs
    {
        return cannot(
            &format!("flows.{flow_name}"),
            &format!(
                "a transfer from {} to {}: its transfer runs from the fixed host over the wired link, through the \
                 base station, over the wireless link to the mobile",
                flow.from, flow.to
            ),
        );
    }
    let agent = match s.nodes[bs].agent.0.as_slice() {
        [] => AgentKind::None,
        [AgentKind::Snoop] => AgentKind::Snoop,
        _ => return cannot(&format!("nodes.{bs}.agent"), "this agent (twin compares \"none\" and \"snoop\")"),
    };
    if s.nodes[&flow.from].agent.0.len() + s.nodes[mobile].agent.0.len() > 0 {
        return cannot("nodes", "agents at the hosts (only its base station runs one)");
    }
    let hop = format!("links.{wl_name}");
    if wireless.arq.is_some() {
        return cannot(&format!("{hop}.arq"), "link-level ARQ");
    }
    if wired.error != Default::default() || wired.error_reverse.is_some() || wired.arq.is_some() {
        return cannot(&format!("links.{wd_name}.error"), "errors or ARQ on the wired link");
    }
    // The scenario's a→b error model is the base station's downlink when the link is written [bs, mobile].
    let forward = wireless.ends[0] == *bs;
    let ab = wireless.error.clone();
    let ba = wireless.error_reverse.clone().unwrap_or_else(|| ab.clone());
    let (down, up) = if forward { (ab, ba) } else { (ba, ab) };
    let ber = match (&down, &up) {
        (ErrorModelConfig::None, ErrorModelConfig::None) => 0.0,
        (ErrorModelConfig::Ber { ber: d }, ErrorModelConfig::Ber { ber: u }) if d == u => *d,
        _ => {
            return cannot(
                &format!("{hop}.error"),
                "this error model: its configuration takes one bit error rate for both directions (model \"ber\" or \"none\")",
            )
        }
    };
    let tcp = s.flow_tcp(flow_name).map_err(|e| format!("`tcp`: {e}"))?;
    let variant = tcp.variant.as_str();
    let cc = kernel_cc(variant).map_err(|e| format!("`tcp.variant` = \"{variant}\": {e}"))?;
    if tcp.mss != 1460 {
        return cannot("tcp.mss", &format!("MSS {}: the kernel's is the veth MTU's, 1460", tcp.mss));
    }
    Ok(TestbedConfig {
        agent,
        cc,
        sack: tcp.sack || variant == "sack",
        ber,
        seed: s.seed,
        bytes: flow.bytes,
        rate_mbps: wireless.rate_mbps,
        delay_ms: wireless.delay_ms,
        mac_overhead_us: wireless.mac_overhead_us,
        queue_packets: wireless.queue_packets,
        duplex: match wireless.duplex() {
            Duplex::Half => lasthop_net::Duplex::Half,
            Duplex::Full => lasthop_net::Duplex::Full,
        },
        access: wireless.access(),
        wired_delay_ms: wired.delay_ms,
        max_window: tcp.max_window,
        timeout_s: s.time_limit_s,
        ..TestbedConfig::default()
    })
}

/// What the testbed leaves out of the scenario, for the reader of the table: the wired link's rate (veth
/// has none to speak of).
pub fn unemulated(s: &Scenario) -> Vec<String> {
    s.links
        .iter()
        .filter(|(_, l)| l.kind == LinkKind::Wired)
        .map(|(n, l): (&String, &LinkConfig)| {
            format!(
                "links.{n}: the testbed's wired path has the link's delay but not its {} Mb/s rate (veth)",
                crate::table::fmt_num(l.rate_mbps)
            )
        })
        .collect()
}

/// One line of the side-by-side table: a measure, the simulator's number, the kernel's.
pub struct Line {
    pub what: &'static str,
    pub sim: f64,
    pub kernel: f64,
}

/// The measures both faces report, in table order.
pub fn lines(r: &TwinRun) -> Result<Vec<Line>> {
    let f = r.sim_flow()?;
    let k = &r.kernel;
    let line = |what, sim: u64, kernel: u64| Line { what, sim: sim as f64, kernel: kernel as f64 };
    let mut out = vec![
        Line { what: "goodput (Mb/s)", sim: f.goodput_mbps, kernel: k.goodput_mbps },
        line("sender retransmissions", f.segments_retransmitted, k.sender.retrans_segs),
        line("sender timeouts", f.sender_timeouts, k.sender.timeouts),
        line("fast retransmits", f.fast_retransmits, k.sender.fast_retrans),
        line("local retransmissions", f.local_retransmissions, k.counters.agent_counter("local_retransmissions")),
        line("bytes delivered", f.bytes_delivered, k.bytes),
    ];
    // A handoff testbed's run adds its handoffs: how many, their mean latency (the mobile's request to the first
    // packet through the new base station, on both faces) and what the buffering base station resent.
    if let Some(h) = &k.handoff {
        let sim = &r.sim.families.handoffs;
        out.push(line("handoffs", sim.len() as u64, h.handoffs.len() as u64));
        let sim_latency: Vec<f64> = sim.iter().filter_map(|h| h.completion_s).collect();
        if let (false, Some(kernel_ms)) = (sim_latency.is_empty(), h.mean_latency_ms()) {
            let sim_ms = sim_latency.iter().sum::<f64>() / sim_latency.len() as f64 * 1e3;
            out.push(Line { what: "handoff latency (ms)", sim: sim_ms, kernel: kernel_ms });
        }
        out.push(line(
            "resent from the buffer",
            sim.iter().map(|h| h.resent_from_buffer).sum(),
            h.handoffs.iter().map(|h| h.resent_from_buffer).sum(),
        ));
    }
    Ok(out)
}

/// Where the run misses the target ([`GOODPUT_TOLERANCE`], [`RETRANSMISSIONS_TOLERANCE`] above
/// [`RETRANSMISSIONS_FLOOR`]): one sentence per miss, empty when it meets it.
pub fn misses(r: &TwinRun) -> Result<Vec<String>> {
    let f = r.sim_flow()?;
    let k = &r.kernel;
    let mut out = Vec::new();
    let off = |sim: f64, kernel: f64| (sim / kernel - 1.0).abs();
    if k.goodput_mbps > 0.0 && off(f.goodput_mbps, k.goodput_mbps) > GOODPUT_TOLERANCE {
        out.push(format!(
            "goodput: the simulator's {:.3} Mb/s is {:+.0} % of the kernel's {:.3} (target within {:.0} %)",
            f.goodput_mbps,
            (f.goodput_mbps / k.goodput_mbps - 1.0) * 100.0,
            k.goodput_mbps,
            GOODPUT_TOLERANCE * 100.0
        ));
    }
    let (sr, kr) = (f.segments_retransmitted, k.sender.retrans_segs);
    if kr > RETRANSMISSIONS_FLOOR && off(sr as f64, kr as f64) > RETRANSMISSIONS_TOLERANCE {
        out.push(format!(
            "sender retransmissions: the simulator's {sr} against the kernel's {kr} (target within {:.0} % where the \
             kernel's exceed {RETRANSMISSIONS_FLOOR})",
            RETRANSMISSIONS_TOLERANCE * 100.0
        ));
    }
    Ok(out)
}

/// The side-by-side table as text.
pub fn table_text(r: &TwinRun) -> Result<String> {
    let mut t = format!("{:<24} {:>12} {:>12} {:>10}\n", "", "simulator", "kernel", "sim/kernel");
    for l in lines(r)? {
        let ratio = if l.kernel > 0.0 { format!("{:.2}", l.sim / l.kernel) } else { "-".into() };
        let num = |x: f64| if x.fract() == 0.0 { format!("{x}") } else { format!("{x:.3}") };
        t += &format!("{:<24} {:>12} {:>12} {:>10}\n", l.what, num(l.sim), num(l.kernel), ratio);
    }
    t += &format!("{:<24} {:>12} {:>12}\n", "sender", r.sim_flow()?.tcp, r.kernel.cc);
    Ok(t)
}

/// The two windows against time for `--trace`: the simulator's (bytes, shown in segments of its MSS) and the
/// kernel's (`tcpi_snd_cwnd`), as (label, points).
pub fn cwnd_curves(r: &TwinRun) -> Vec<(String, Vec<(f64, f64)>)> {
    let mut sim: Vec<(f64, f64)> = r
        .sim
        .series
        .iter()
        .flatten()
        .take(1)
        .flat_map(|s| s.cwnd.iter().map(|&(t, w)| (t, w as f64 / f64::from(r.sim_mss))))
        .collect();
    // The simulator records changes only: hold the last window to the end of the transfer, as the kernel's
    // samples do.
    let end = r.sim.flows.first().and_then(|f| f.completion_time_s).unwrap_or(r.sim.sim_time_s);
    if let Some(&(t, w)) = sim.last() {
        if end > t {
            sim.push((end, w));
        }
    }
    let kernel = r.kernel_cwnd.iter().map(|s| (s.time_s, f64::from(s.cwnd_segments))).collect();
    vec![("simulator".to_string(), sim), ("kernel".to_string(), kernel)]
}

/// `cwnd.csv`: face, time_s, cwnd_segments, one row per change (simulator) or sample (kernel).
pub fn cwnd_csv(curves: &[(String, Vec<(f64, f64)>)]) -> String {
    let header = ["face".to_string(), "time_s".into(), "cwnd_segments".into()];
    crate::table::csv_text(
        std::iter::once(header.to_vec()).chain(
            curves.iter().flat_map(|(face, pts)| {
                pts.iter().map(move |(t, w)| vec![face.clone(), format!("{t}"), format!("{w}")])
            }),
        ),
    )
}

#[derive(Debug, clap::Args)]
pub struct TwinArgs {
    /// Scenario file (TOML): a fixed host, a base station (agent none or snoop), a mobile, one bulk flow
    pub scenario: std::path::PathBuf,
    /// Replace the scenario's seed (both faces: the simulator's streams, the testbed's error model and payload)
    #[arg(long)]
    pub seed: Option<u64>,
    /// Record both senders' congestion windows (the kernel's sampled from TCP_INFO every 5 ms) and draw
    /// them in one figure: cwnd.csv, figure.svg and figure.png in --out
    #[arg(long, requires = "out")]
    pub trace: bool,
    /// Output directory (created): twin.json, and with --trace the window traces and their figure
    #[arg(long)]
    pub out: Option<std::path::PathBuf>,
    /// Override a scenario field, as `lasthop run --set` (repeatable)
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub set: Vec<String>,
}

/// `lasthop twin`.
pub fn twin_cmd(a: TwinArgs, runner: &dyn Runner) -> Result<std::process::ExitCode> {
    let origin = a.scenario.display().to_string();
    let doc = crate::cli::scenario_with_sets(&a.scenario, &a.set)?;
    let req = RunRequest {
        scenario: crate::cli::scenario_source(&a.scenario, &doc, &origin),
        seed: a.seed,
        trace: a.trace,
        pcap_dir: None,
    };
    eprintln!("lasthop twin: {} (simulator, then the testbed)", crate::net::describe(&check(&req)?.testbed));
    let r = run(runner, &req)?;
    print!("{}", table_text(&r)?);
    if let Some(out) = &a.out {
        std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
        let json =
            serde_json::json!({ "testbed": r.testbed, "sim": r.sim, "kernel": r.kernel, "kernel_cwnd": r.kernel_cwnd });
        crate::runner::write_file(&out.join("twin.json"), serde_json::to_string_pretty(&json)? + "\n")?;
        if a.trace {
            let curves = cwnd_curves(&r);
            crate::runner::write_file(&out.join("cwnd.csv"), cwnd_csv(&curves))?;
            let plot = crate::figure::Plot::Sequence {
                curves,
                marks: Vec::new(),
                events: Vec::new(),
                x_label: "time (s)".into(),
                y_label: "congestion window (segments)".into(),
            };
            crate::figure::write(&plot, &format!("cwnd, simulator and kernel: {origin}"), out)?;
        }
        eprintln!("-> {}", out.display());
    }
    let missed = misses(&r)?;
    if missed.is_empty() {
        println!(
            "within the target: goodput within {:.0} %, sender retransmissions within {:.0} % (where the kernel's exceed {RETRANSMISSIONS_FLOOR})",
            GOODPUT_TOLERANCE * 100.0,
            RETRANSMISSIONS_TOLERANCE * 100.0
        );
    }
    for m in &missed {
        println!("OUTSIDE the target: {m}");
    }
    for note in &r.notes {
        eprintln!("note: {note}");
    }
    if !r.kernel.hash_ok {
        eprintln!("error: the received bytes differ from the sent ones (hash mismatch)");
        return Ok(std::process::ExitCode::FAILURE);
    }
    Ok(std::process::ExitCode::SUCCESS)
}
