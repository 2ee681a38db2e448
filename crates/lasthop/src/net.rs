//! The real base station from the command line: `lasthop bs`, `lasthop testbed`, `lasthop bench forward` and
//! `lasthop bench sockets`, thin wrappers over `lasthop_net` (Linux only).

use anyhow::{anyhow, bail, Context, Result};
use clap::ValueEnum;
use lasthop_net::channel::ErrorModelConfig;
use lasthop_net::handoff::{HandoffBy, HandoffScheme, HandoffSummary};
use lasthop_net::{Access, AgentKind, BsConfig, Duplex, HopConfig, NetError, TestbedConfig, TestbedResult};
use std::path::PathBuf;
use std::process::ExitCode;

/// `--agent`
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AgentArg {
    /// plain forwarding
    None,
    /// Berkeley Snoop
    Snoop,
}

impl From<AgentArg> for AgentKind {
    fn from(a: AgentArg) -> AgentKind {
        match a {
            AgentArg::None => AgentKind::None,
            AgentArg::Snoop => AgentKind::Snoop,
        }
    }
}

/// `lasthop testbed --agent`: the bridging base station's agents, or the split connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SchemeArg {
    /// plain forwarding
    None,
    /// Berkeley Snoop
    Snoop,
    /// I-TCP's split connection: a transparent proxy in the base station's kernel
    Split,
}

impl From<SchemeArg> for AgentKind {
    fn from(a: SchemeArg) -> AgentKind {
        match a {
            SchemeArg::None => AgentKind::None,
            SchemeArg::Snoop => AgentKind::Snoop,
            SchemeArg::Split => AgentKind::Split,
        }
    }
}

/// `--sack`
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnOff {
    On,
    Off,
}

/// `--duplex`
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DuplexArg {
    Half,
    Full,
}

impl From<DuplexArg> for Duplex {
    fn from(d: DuplexArg) -> Duplex {
        match d {
            DuplexArg::Half => Duplex::Half,
            DuplexArg::Full => Duplex::Full,
        }
    }
}

/// `--access`
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AccessArg {
    Turns,
    Fifo,
}

impl From<AccessArg> for Access {
    fn from(a: AccessArg) -> Access {
        match a {
            AccessArg::Turns => Access::Turns,
            AccessArg::Fifo => Access::Fifo,
        }
    }
}

/// The emulated wireless hop, shared by `bs` and `testbed`.
#[derive(Debug, clap::Args)]
pub struct HopArgs {
    /// Emulated hop rate, Mb/s (bs: 0 = unlimited, no emulation)
    #[arg(long, value_name = "R")]
    pub rate_mbps: Option<f64>,
    /// One-way propagation delay of the emulated hop, ms
    #[arg(long, value_name = "D")]
    pub delay_ms: Option<f64>,
    /// Bit error rate of the emulated hop, both directions (0: no errors)
    #[arg(long, value_name = "B")]
    pub ber: Option<f64>,
    /// Drop-tail capacity of each of the hop's queues, frames
    #[arg(long, value_name = "N")]
    pub queue_packets: Option<usize>,
    /// Shared half-duplex medium (data and ACKs contend) or one transmitter per direction
    #[arg(long, value_enum)]
    pub duplex: Option<DuplexArg>,
    /// Half duplex: base station and mobile take turns frame by frame when both have frames waiting
    /// (CSMA/CA-like, default), or one first-come first-served queue over both (the simulator's)
    #[arg(long, value_enum)]
    pub access: Option<AccessArg>,
    /// Seeds the error model (testbed: also the payload)
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// One-way delay added on the wired side, each way, ms (emulates a wide-area path to the fixed host)
    #[arg(long, value_name = "D")]
    pub wired_delay_ms: Option<f64>,
    /// Tell the agents when each of their frames goes on the air (default: on)
    #[arg(long, value_enum, value_name = "ON|OFF")]
    pub report_transmissions: Option<OnOff>,
}

#[derive(Debug, clap::Args)]
pub struct BsArgs {
    /// Interface toward the fixed host (the wired network)
    #[arg(long, value_name = "IF")]
    pub wired: String,
    /// Interface toward the mobile host (behind the emulated hop)
    #[arg(long, value_name = "IF")]
    pub wireless: String,
    /// Agent run on every TCP packet
    #[arg(long, value_enum, default_value = "none")]
    pub agent: AgentArg,
    #[command(flatten)]
    pub hop: HopArgs,
    /// Per-frame MAC overhead of the emulated hop, µs
    #[arg(long, value_name = "US", default_value_t = 0.0)]
    pub mac_overhead_us: f64,
    /// Each frame lost with this probability (instead of --ber)
    #[arg(long, value_name = "P", conflicts_with = "ber")]
    pub loss: Option<f64>,
    /// Leave GRO on the two interfaces as it is (by default it is switched off so frames arrive wire-sized)
    #[arg(long)]
    pub keep_gro: bool,
    /// Print the counters as JSON (on SIGUSR1 to stderr, at exit to stdout)
    #[arg(long)]
    pub json: bool,
    /// Write wired.pcap and wireless.pcap (the IPv4 packets of each interface) into this directory
    #[arg(long, value_name = "DIR")]
    pub pcap_dir: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct TestbedArgs {
    /// Agent at the base station, or the split connection
    #[arg(long, value_enum, default_value = "none")]
    pub agent: SchemeArg,
    /// Congestion control of the sender (kernel TCP)
    #[arg(long, default_value = "reno", value_parser = ["reno", "cubic", "bbr"])]
    pub cc: String,
    /// SACK on both hosts
    #[arg(long, value_enum, default_value = "off")]
    pub sack: OnOff,
    /// Application bytes to transfer
    #[arg(long, value_name = "N")]
    pub bytes: Option<u64>,
    #[command(flatten)]
    pub hop: HopArgs,
    /// Largest receive window the mobile host offers, bytes (TCP_WINDOW_CLAMP; 0: the kernel's own)
    #[arg(long, value_name = "BYTES")]
    pub max_window: Option<u32>,
    /// Give up after this many seconds
    #[arg(long, value_name = "S")]
    pub timeout_s: Option<f64>,
    /// --agent split: the socket buffer at the base station, bytes (SO_RCVBUF toward the fixed host,
    /// SO_SNDBUF toward the mobile) [default: 65536, I-TCP's, Balakrishnan 1995 §2]
    #[arg(long, value_name = "BYTES")]
    pub split_buffer_bytes: Option<u32>,
    /// The TCP port the mobile listens on for the transfer [default: 5001]
    #[arg(long, value_name = "PORT", value_parser = clap::value_parser!(u16).range(1..))]
    pub port: Option<u16>,
    /// --agent split: the TCP ports the proxy terminates, comma-separated (e.g. 5001,8080), at most 1024,
    /// each once; they must include the transfer's port [default: the transfer's port]
    #[arg(long, value_name = "PORTS", value_delimiter = ',', value_parser = clap::value_parser!(u16).range(1..))]
    pub split_ports: Vec<u16>,
    /// Write wired.pcap and wireless.pcap of the base station's interfaces into this directory
    #[arg(long, value_name = "DIR")]
    pub pcap_dir: Option<PathBuf>,
    /// Two base stations and a moving mobile host (home agent, FH — HA — BS1, BS2 — MH): the mobile hands
    /// off between them every S seconds (`inf`: never) [default with --scheme: inf]
    #[arg(long, value_name = "S")]
    pub handoff_every: Option<f64>,
    /// The handoff scheme of the two-base-station testbed: Balakrishnan 1995's multicast with buffering,
    /// plain break-before-make (Caceres 1995), or plain with Caceres 1995's fast retransmit after handoff
    /// (three copies of the mobile's last ACK through the new cell) [default with --handoff-every: multicast]
    #[arg(long, value_enum)]
    pub scheme: Option<HandoffSchemeArg>,
    /// With --handoff-every or --scheme: packets each base station's handoff buffer keeps [default: 12,
    /// Balakrishnan 1995 §6]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub handoff_buffer: Option<u64>,
    /// With --handoff-every: the mobile stops moving after N handoffs (it never comes back after the
    /// last) [default: no limit]
    #[arg(long, value_name = "N")]
    pub handoff_limit: Option<u32>,
    /// What makes the mobile hand off: its schedule (--handoff-every), or beacon strength with hysteresis as
    /// it walks between the base stations at 0 and 50 m (Balakrishnan 1995 §4, §6; the simulator's radio
    /// model) [default: schedule]
    #[arg(long, value_enum)]
    pub handoff_by: Option<HandoffByArg>,
    /// --handoff-by beacons: the mobile's walking speed, back and forth between the base stations [default: 1]
    #[arg(long, value_name = "M/S")]
    pub walk_speed: Option<f64>,
    /// --handoff-by beacons: hand off only to a base station this much stronger than the current one
    /// [default: 6]
    #[arg(long, value_name = "DB")]
    pub hysteresis: Option<f64>,
    /// With a handoff: seconds between each base station's beacons [default: 1, Balakrishnan 1995 §6]
    #[arg(long, value_name = "S")]
    pub beacon_every: Option<f64>,
    /// Print the result (configuration, goodput, hash check, counters) as JSON
    #[arg(long)]
    pub json: bool,
}

/// `lasthop testbed --handoff-by`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum HandoffByArg {
    Schedule,
    Beacons,
}

/// `lasthop testbed --scheme`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum HandoffSchemeArg {
    Multicast,
    Plain,
    FastRexmit,
}

impl From<HandoffSchemeArg> for HandoffScheme {
    fn from(a: HandoffSchemeArg) -> HandoffScheme {
        match a {
            HandoffSchemeArg::Multicast => HandoffScheme::Multicast,
            HandoffSchemeArg::Plain => HandoffScheme::Plain,
            HandoffSchemeArg::FastRexmit => HandoffScheme::FastRexmit,
        }
    }
}

#[derive(Debug, clap::Subcommand)]
pub enum BenchCommand {
    /// The base station's forwarding core in memory (no sockets, no rate limit, no errors): plain against
    /// Snoop on a synthetic bulk flow, in one process
    Forward {
        /// Full-size data segments per measurement (each second one followed by an ACK)
        #[arg(long, value_name = "N", default_value_t = 200_000, value_parser = clap::value_parser!(u64).range(1..))]
        packets: u64,
        /// Repetitions (each measures plain, then Snoop); medians are reported
        #[arg(long, value_name = "N", default_value_t = 7, value_parser = clap::value_parser!(u64).range(1..))]
        repetitions: u64,
    },
    /// The whole base station (`lasthop bs`'s I/O loop: AF_PACKET, recvmmsg/sendmmsg) on the testbed's veth,
    /// between a raw-frame generator and reflector (no kernel TCP): plain against Snoop, a fresh base
    /// station per measurement. Needs root
    Sockets {
        /// Full-size data segments per measurement
        #[arg(long, value_name = "N", default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..))]
        segments: u64,
        /// Repetitions (each measures plain, then Snoop); medians are reported
        #[arg(long, value_name = "N", default_value_t = 7, value_parser = clap::value_parser!(u64).range(1..))]
        repetitions: u64,
        /// Most bytes the generator keeps beyond the highest cumulative ACK (64 KB: Balakrishnan 1995's window)
        #[arg(long, value_name = "BYTES", default_value_t = 65_536)]
        window: u32,
        /// The generator goes back to the ACK point when the ACK has not advanced for this long
        #[arg(long, value_name = "MS", default_value_t = 20.0)]
        rto_ms: f64,
        /// The reflector acknowledges a lone in-order segment after this long (every second one at once)
        #[arg(long, value_name = "MS", default_value_t = 2.0)]
        delayed_ack_ms: f64,
        /// Print every measurement and the summary as JSON on stdout
        #[arg(long)]
        json: bool,
    },
}

fn hop_error(ber: Option<f64>, loss: Option<f64>) -> ErrorModelConfig {
    match (ber, loss) {
        (Some(b), _) if b > 0.0 => ErrorModelConfig::Ber { ber: b },
        (_, Some(l)) if l > 0.0 => ErrorModelConfig::Packet { loss: l },
        _ => ErrorModelConfig::None,
    }
}

/// A clear error for an interface that does not exist here.
fn check_interface(flag: &str, name: &str) -> Result<()> {
    if name.is_empty() || name.len() >= libc_ifnamsiz() || name.contains(['/', ' ', '\0']) {
        bail!("{flag} {name:?}: not a valid interface name");
    }
    if lasthop_net::sys::if_index(name).is_err() {
        let have: Vec<String> = std::fs::read_dir("/sys/class/net")
            .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        let mut have = have;
        have.sort();
        bail!(
            "{flag} {name}: no such network interface here (have: {})",
            if have.is_empty() { "?".into() } else { have.join(", ") }
        );
    }
    Ok(())
}

const fn libc_ifnamsiz() -> usize {
    16
}

pub fn bs(a: BsArgs) -> Result<ExitCode> {
    if a.wired == a.wireless {
        bail!("--wired and --wireless are both {}; the base station forwards between two interfaces", a.wired);
    }
    let hop = HopConfig {
        rate_mbps: a.hop.rate_mbps.unwrap_or(0.0),
        delay_ms: a.hop.delay_ms.unwrap_or(0.0),
        mac_overhead_us: a.mac_overhead_us,
        queue_packets: a.hop.queue_packets.unwrap_or(100),
        duplex: a.hop.duplex.map(Duplex::from).unwrap_or_default(),
        access: a.hop.access.map(Access::from).unwrap_or_default(),
        down: hop_error(a.hop.ber, a.loss),
        up: hop_error(a.hop.ber, a.loss),
        seed: a.hop.seed.unwrap_or(1),
        wired_delay_ms: a.hop.wired_delay_ms.unwrap_or(0.0),
        report_transmissions: a
            .hop
            .report_transmissions
            .map_or(HopConfig::default().report_transmissions, |o| o == OnOff::On),
    };
    hop.validate().map_err(|e| anyhow!("emulated hop: {e}"))?;
    check_interface("--wired", &a.wired)?;
    check_interface("--wireless", &a.wireless)?;
    if let Some(note) = no_hop_note(&hop) {
        eprintln!("{note}");
    }
    if let Some(d) = &a.pcap_dir {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
    let cfg = BsConfig {
        wired_if: a.wired,
        wireless_if: a.wireless,
        agent: a.agent.into(),
        hop,
        disable_gro: !a.keep_gro,
        pcap_wired: a.pcap_dir.as_ref().map(|d| d.join("wired.pcap")),
        pcap_wireless: a.pcap_dir.as_ref().map(|d| d.join("wireless.pcap")),
    };
    lasthop_net::serve(&cfg, a.json).map_err(net_error)?;
    Ok(ExitCode::SUCCESS)
}

/// What `lasthop bs` says when it emulates no wireless hop: `--rate-mbps` defaults to 0 (unlimited), so a
/// base station started with only its interfaces and agent forwards at the interfaces' speed, which is easy
/// to mistake for a 2 Mb/s hop.
fn no_hop_note(hop: &HopConfig) -> Option<&'static str> {
    (hop.rate_mbps == 0.0).then_some(
        "lasthop bs: no wireless hop is emulated (--rate-mbps 0: frames take no air time and share no medium); \
         give --rate-mbps to emulate one",
    )
}

/// The testbed configuration `lasthop testbed` runs (defaults: [`TestbedConfig::default`]).
pub fn testbed_config(a: &TestbedArgs) -> TestbedConfig {
    let d = TestbedConfig::default();
    TestbedConfig {
        agent: a.agent.into(),
        cc: a.cc.clone(),
        sack: a.sack == OnOff::On,
        ber: a.hop.ber.unwrap_or(d.ber),
        seed: a.hop.seed.unwrap_or(d.seed),
        bytes: a.bytes.unwrap_or(d.bytes),
        rate_mbps: a.hop.rate_mbps.unwrap_or(d.rate_mbps),
        delay_ms: a.hop.delay_ms.unwrap_or(d.delay_ms),
        mac_overhead_us: d.mac_overhead_us,
        queue_packets: a.hop.queue_packets.unwrap_or(d.queue_packets),
        duplex: a.hop.duplex.map(Duplex::from).unwrap_or(d.duplex),
        access: a.hop.access.map(Access::from).unwrap_or(d.access),
        wired_delay_ms: a.hop.wired_delay_ms.unwrap_or(d.wired_delay_ms),
        max_window: a.max_window.unwrap_or(d.max_window),
        report_transmissions: a.hop.report_transmissions.map_or(d.report_transmissions, |o| o == OnOff::On),
        timeout_s: a.timeout_s.unwrap_or(d.timeout_s),
        pcap_dir: a.pcap_dir.clone(),
        split_buffer_bytes: a.split_buffer_bytes.unwrap_or(d.split_buffer_bytes),
        port: a.port.unwrap_or(d.port),
        split_ports: a.split_ports.clone(),
        handoff: match (a.scheme, a.handoff_every.is_some() || a.handoff_by.is_some()) {
            (Some(s), _) => Some(s.into()),
            (None, true) => Some(HandoffScheme::Multicast),
            (None, false) => None,
        },
        handoff_every_s: a.handoff_every.unwrap_or(d.handoff_every_s),
        handoff_buffer_packets: a.handoff_buffer.map_or(d.handoff_buffer_packets, |n| n as usize),
        handoff_limit: a.handoff_limit.or(d.handoff_limit),
        handoff_by: match a.handoff_by {
            Some(HandoffByArg::Beacons) => HandoffBy::Beacons,
            Some(HandoffByArg::Schedule) | None => HandoffBy::Schedule,
        },
        walk_speed_mps: a.walk_speed.unwrap_or(d.walk_speed_mps),
        hysteresis_db: a.hysteresis.unwrap_or(d.hysteresis_db),
        beacon_every_s: a.beacon_every.unwrap_or(d.beacon_every_s),
    }
}

pub fn testbed(a: TestbedArgs) -> Result<ExitCode> {
    let cfg = testbed_config(&a);
    cfg.validate().map_err(net_error)?;
    if let Some(d) = &cfg.pcap_dir {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
    if !a.json {
        let hosts = if cfg.handoff.is_some() { "FH, HA, BS1, BS2, MH" } else { "FH, BS, MH" };
        eprintln!("lasthop testbed: {} (building namespaces {hosts})", describe(&cfg));
    }
    let r = lasthop_net::run_testbed_transfer(&cfg).map_err(net_error)?;
    if a.json {
        let v = serde_json::json!({ "config": cfg, "result": r });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!("{}", result_line(&r, cfg.bytes));
        println!(
            "sender: {} segments retransmitted, {} fast retransmits, {} timeouts",
            r.sender.retrans_segs, r.sender.fast_retrans, r.sender.timeouts
        );
        if let Some(s) = &r.split {
            println!(
                "split proxy: {} connection(s), {} B to the mobile, buffers {} B in / {} B out (as the kernel counts them), base station kernel: {} segments retransmitted, {} timeouts",
                s.connections, s.bytes_down, s.rcvbuf_bytes, s.sndbuf_bytes, s.kernel_retrans_segs, s.kernel_timeouts
            );
        }
        match &r.handoff {
            Some(h) => print!("{}", handoff_report(h)),
            None => print!("{}", r.counters),
        }
    }
    if !r.hash_ok {
        eprintln!("error: the received bytes differ from the sent ones (hash mismatch)");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// The handoffs of a run, one line each, then the drivers' counters.
pub fn handoff_report(h: &HandoffSummary) -> String {
    let mut s = format!("{} handoff(s), scheme {}:\n", h.handoffs.len(), h.scheme);
    let opt = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.1} ms"));
    for x in &h.handoffs {
        s += &format!(
            "  #{} at {:.2} s {} -> {}{}: latency {}, accepted {}, lost {}, resent from buffer {}, duplicated {}, missed in the old cell {}, duplicate ACKs sent {}\n",
            x.seq,
            x.requested_s,
            x.from,
            x.to,
            match (x.cell_lost, x.position_m) {
                (true, _) => " (cell lost)".to_string(),
                (false, Some(p)) => format!(" at {p:.1} m"),
                (false, None) => String::new(),
            },
            opt(x.latency_ms),
            opt(x.accepted_ms),
            x.lost.map_or("-".to_string(), |l| l.to_string()),
            x.resent_from_buffer,
            x.duplicated,
            x.missed_old_cell,
            x.dup_acks_sent
        );
    }
    for (k, v) in &h.counters {
        s += &format!("{k:<34} {v}\n");
    }
    s
}

/// `agent snoop, cc reno, SACK off, BER 3.9e-6, 2 Mb/s half-duplex (turns) hop, 1 ms, queue 100, 2097152 B, seed 1`
pub fn describe(c: &TestbedConfig) -> String {
    format!(
        "agent {}, cc {}, SACK {}, BER {:e}, {} hop, {} ms{}, queue {}, wired delay {} ms, window ≤ {}, reports {}, {} B, seed {}",
        c.agent,
        c.cc,
        if c.sack { "on" } else { "off" },
        c.ber,
        if c.rate_mbps > 0.0 {
            match c.duplex {
                Duplex::Half => format!(
                    "{} Mb/s half-duplex ({})",
                    c.rate_mbps,
                    if c.access == Access::Turns { "turns" } else { "fifo" }
                ),
                Duplex::Full => format!("{} Mb/s full-duplex", c.rate_mbps),
            }
        } else {
            "unlimited".into()
        },
        c.delay_ms,
        if c.mac_overhead_us > 0.0 { format!(", MAC overhead {} µs", c.mac_overhead_us) } else { String::new() },
        c.queue_packets,
        c.wired_delay_ms,
        if c.max_window == 0 { "kernel".to_string() } else { c.max_window.to_string() },
        if c.report_transmissions { "on" } else { "off" },
        c.bytes,
        c.seed
    ) + &if c.port != lasthop_net::testbed::TRANSFER_PORT { format!(", port {}", c.port) } else { String::new() }
        + &if c.agent == AgentKind::Split {
            format!(", split buffers {} B, ports {:?}", c.split_buffer_bytes, c.split().ports)
        } else {
            String::new()
        }
        + &c.handoff.map_or(String::new(), |h| match c.handoff_by {
            HandoffBy::Schedule => {
                format!(", handoff {h} every {} s, buffer {} packets", c.handoff_every_s, c.handoff_buffer_packets)
            }
            HandoffBy::Beacons => format!(
                ", handoff {h} by beacons (every {} s, walking {} m/s, hysteresis {} dB), buffer {} packets",
                c.beacon_every_s, c.walk_speed_mps, c.hysteresis_db, c.handoff_buffer_packets
            ),
        })
}

/// `goodput 1.613 Mb/s (2097152 of 2097152 B in 10.40 s, cc reno), hash ok`
pub fn result_line(r: &TestbedResult, asked: u64) -> String {
    format!(
        "goodput {:.3} Mb/s ({} of {asked} B in {:.2} s, cc {}), hash {}",
        r.goodput_mbps,
        r.bytes,
        r.duration_s,
        r.cc,
        if r.hash_ok { "ok" } else { "MISMATCH" }
    )
}

/// Keeps the library's own wording ("must run as root ...", "network namespaces are not available ...").
fn net_error(e: NetError) -> anyhow::Error {
    anyhow::Error::new(e)
}

/// Median of a non-empty list.
pub fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

pub fn bench(cmd: BenchCommand) -> Result<ExitCode> {
    let (packets, repetitions) = match cmd {
        BenchCommand::Forward { packets, repetitions } => (packets, repetitions),
        BenchCommand::Sockets { segments, repetitions, window, rto_ms, delayed_ack_ms, json } => {
            let cfg = lasthop_net::bench_sockets::SocketBenchConfig {
                segments,
                window,
                rto_ms,
                delayed_ack_ms,
                ..Default::default()
            };
            return bench_sockets(cfg, repetitions as usize, json);
        }
    };
    use lasthop_net::bench::bench_forward;
    eprintln!(
        "lasthop bench forward: {packets} segments (+ ACKs) per measurement, {repetitions} repetitions of plain then Snoop"
    );
    // [plain, snoop] wall-clock and thread-CPU ns per frame, Gb/s; ratios snoop/plain per repetition.
    let (mut ns, mut cpu, mut gbps) = ([Vec::new(), Vec::new()], [Vec::new(), Vec::new()], [Vec::new(), Vec::new()]);
    let (mut ratio, mut cpu_ratio) = (Vec::new(), Vec::new());
    // one untimed warm-up of each, so the first repetition does not pay for page faults
    for agent in [AgentKind::None, AgentKind::Snoop] {
        bench_forward(agent, (packets as usize / 10).max(1)).map_err(net_error)?;
    }
    for rep in 0..repetitions {
        let mut this = [(0.0, 0.0); 2];
        for (i, agent) in [AgentKind::None, AgentKind::Snoop].into_iter().enumerate() {
            let r = bench_forward(agent, packets as usize).map_err(net_error)?;
            ns[i].push(r.ns_per_frame);
            cpu[i].push(r.cpu_ns_per_frame);
            gbps[i].push(r.goodput_gbps);
            this[i] = (r.ns_per_frame, r.cpu_ns_per_frame);
        }
        ratio.push(this[1].0 / this[0].0);
        cpu_ratio.push(this[1].1 / this[0].1);
        eprintln!(
            "  repetition {}: plain {:.0} ns/frame ({:.0} CPU), snoop {:.0} ns/frame ({:.0} CPU)",
            rep + 1,
            this[0].0,
            this[0].1,
            this[1].0,
            this[1].1
        );
    }
    for (i, name) in ["plain", "snoop"].into_iter().enumerate() {
        println!(
            "{name:<6} median {:>6.0} ns/frame ({:>4.0} ns of thread CPU), {:>6.2} Gb/s of TCP payload",
            median(&ns[i]),
            median(&cpu[i]),
            median(&gbps[i])
        );
    }
    println!(
        "snoop overhead: {:+.1} % time per frame, {:+.1} % thread CPU per frame (medians over repetitions of the ratio snoop/plain, both measured back to back in one repetition)",
        (median(&ratio) - 1.0) * 100.0,
        (median(&cpu_ratio) - 1.0) * 100.0
    );
    Ok(ExitCode::SUCCESS)
}

/// `lasthop bench sockets`: repetitions of plain then Snoop through a fresh base station each, on one
/// testbed; per-repetition lines on stderr, medians and the medians of the Snoop/plain ratios on stdout.
fn bench_sockets(
    cfg: lasthop_net::bench_sockets::SocketBenchConfig,
    repetitions: usize,
    json: bool,
) -> Result<ExitCode> {
    use lasthop_net::bench_sockets::{SocketBench, SocketBenchSummary, SocketRun};
    let segments = cfg.segments;
    eprintln!(
        "lasthop bench sockets: {segments} segments per measurement through `lasthop bs` on veth (window {} B), {repetitions} repetitions of plain then Snoop",
        cfg.window
    );
    let mut b = SocketBench::new(cfg).map_err(net_error)?;
    let measure = |b: &mut SocketBench, agent: AgentKind, n: u64| -> Result<SocketRun> {
        let r = b.measure(agent, n).map_err(net_error)?;
        r.verify().map_err(|e| anyhow!("{agent} measurement is not valid: {e}\n{}", r.counters))?;
        Ok(r)
    };
    // one untimed warm-up of each
    for agent in [AgentKind::None, AgentKind::Snoop] {
        measure(&mut b, agent, (segments / 10).max(1))?;
    }
    let mut pairs = Vec::with_capacity(repetitions);
    for rep in 0..repetitions {
        let plain = measure(&mut b, AgentKind::None, segments)?;
        let snoop = measure(&mut b, AgentKind::Snoop, segments)?;
        let show = |r: &SocketRun| {
            format!(
                "{:.0} ns CPU/frame, {:.2} Gb/s, {:.0} kframes/s, {} resent",
                r.cpu_ns_per_frame(),
                r.goodput_gbps(),
                r.data_frames_per_s() / 1e3,
                r.generator.resends
            )
        };
        eprintln!("  repetition {}: plain {}; snoop {}", rep + 1, show(&plain), show(&snoop));
        pairs.push([plain, snoop]);
    }
    let s = SocketBenchSummary::from_pairs(&pairs);
    if json {
        let v = serde_json::json!({ "config": b.config(), "summary": s, "runs": pairs });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(ExitCode::SUCCESS);
    }
    for (i, name) in ["plain", "snoop"].into_iter().enumerate() {
        println!(
            "{name:<6} median {:>6.0} ns of base-station CPU per frame, {:>6.2} Gb/s of TCP payload ({:.0} data frames/s), {:.0} frames resent",
            s.cpu_ns_per_frame[i], s.goodput_gbps[i], s.data_frames_per_s[i], s.resends[i]
        );
    }
    println!(
        "snoop overhead: {:+.1} % base-station CPU per frame, {:+.1} % throughput (medians over repetitions of the ratio snoop/plain, both measured back to back in one repetition)",
        (s.cpu_ratio - 1.0) * 100.0,
        (s.throughput_ratio - 1.0) * 100.0
    );
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn error_model_choice() {
        assert_eq!(hop_error(None, None), ErrorModelConfig::None);
        assert_eq!(hop_error(Some(0.0), None), ErrorModelConfig::None);
        assert_eq!(hop_error(Some(1e-6), None), ErrorModelConfig::Ber { ber: 1e-6 });
        assert_eq!(hop_error(None, Some(0.1)), ErrorModelConfig::Packet { loss: 0.1 });
    }

    #[test]
    fn a_base_station_without_a_rate_says_it_emulates_no_hop() {
        let note = no_hop_note(&HopConfig::default()).expect("rate 0 is no hop");
        assert!(note.contains("no wireless hop is emulated"), "{note}");
        assert_eq!(no_hop_note(&HopConfig { rate_mbps: 2.0, ..HopConfig::default() }), None);
    }

    #[test]
    fn unknown_interfaces_are_named() {
        let e = check_interface("--wired", "nosuchif0").unwrap_err().to_string();
        assert!(e.contains("--wired nosuchif0: no such network interface"), "{e}");
        let e = check_interface("--wired", "a/b").unwrap_err().to_string();
        assert!(e.contains("not a valid interface name"), "{e}");
    }
}
