//! The network-namespace testbed: a fixed host (FH), a base station (BS) and a mobile host (MH), each a
//! Linux network namespace, joined by veth pairs:
//!
//! ```text
//!   FH: fh0 10.77.0.1/24 ── w0 :BS: m0 ── mh0 10.77.0.2/24 :MH
//!                          (no addresses, ip_forward = 0; the base station bridges in userspace)
//! ```
//!
//! With `agent = "split"` the base station's own kernel sits in the middle instead, with two more veth
//! pairs inside its namespace and a forwarding loop on each side ([`Testbed::prepare_split`]).
//!
//! The base station runs in-process, on a thread that has entered the BS namespace (`setns` moves only
//! the calling thread), so a test can stop and restart it mid-transfer. The bulk transfer is built in:
//! a sender thread in FH and a receiver thread in MH using ordinary std sockets, with the congestion
//! control set per socket (`TCP_CONGESTION`) and SACK per namespace (`net.ipv4.tcp_sack`, written
//! through `/proc/sys` by a thread inside the namespace). The payload is a seeded ChaCha8 stream; both
//! ends hash what they sent and received, so any corruption or loss the base station caused shows.
//!
//! Namespace names carry the process id and a counter (`lh<pid>n<k>-fh`), so parallel tests and runs do
//! not collide, and namespaces left by a killed run are recognised (dead pid) and removed by the next
//! one. A [`Testbed`] removes its namespaces when dropped — on success, on error, on panic — and the
//! transfer loops watch SIGINT/SIGTERM ([`crate::sys::STOP_REQUESTED`]) so Ctrl-C ends in the same drop.

use crate::agents::AgentKind;
use crate::bs::{run_bs_with, BsConfig};
use crate::channel::ErrorModelConfig;
use crate::counters::Counters;
use crate::hop::{Access, Duplex, HopConfig};
use crate::split::{SplitConfig, SplitCounters, SplitProxy};
use crate::sys::{self, Offload};
use crate::NetError;
use rand::RngCore;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub const FH_IP: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 1);
pub const MH_IP: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 2);
pub const FH_IF: &str = "fh0";
pub const MH_IF: &str = "mh0";
pub const BS_WIRED_IF: &str = "w0";
pub const BS_WIRELESS_IF: &str = "m0";
/// The split connection's interfaces inside the base station's namespace (see [`Testbed::prepare_split`]):
/// the kernel's side toward the fixed host and the forwarding loop's peer of it, then the kernel's side
/// toward the mobile and the peer the wireless-hop loop forwards from.
pub const SPLIT_WIRED_IF: &str = "sw0";
pub const SPLIT_WIRED_LOOP_IF: &str = "sw1";
pub const SPLIT_WIRELESS_IF: &str = "sm0";
pub const SPLIT_WIRELESS_LOOP_IF: &str = "sm1";
/// The base station's own addresses on [`SPLIT_WIRED_IF`] and [`SPLIT_WIRELESS_IF`] (/32, so they add no
/// subnet route): the source of its ARP requests.
pub const SPLIT_WIRED_IP: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 253);
pub const SPLIT_WIRELESS_IP: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 254);
/// The routing table whose only route is `local 0.0.0.0/0`: TCP from either host is delivered to the proxy.
pub const SPLIT_TABLE: &str = "100";
/// The default port of the built-in transfer (and the one the split proxy terminates by default).
pub const TRANSFER_PORT: u16 = 5001;

/// A full data segment of the kernel sender on the testbed, as the emulated hop counts it (the IP packet):
/// the veth MTU, 1500 bytes, carrying [`IDEAL_PAYLOAD_BYTES`] of payload (20 bytes of IP header, 20 of TCP
/// header, 12 of timestamp option; Linux sends timestamps by default, `net.ipv4.tcp_timestamps = 1`).
pub const IDEAL_DATA_IP_BYTES: usize = 1500;
/// Payload of a full data segment: MSS 1460 less the 12-byte timestamp option.
pub const IDEAL_PAYLOAD_BYTES: usize = 1448;
/// A pure ACK with timestamps: 20 + 20 + 12 bytes.
pub const IDEAL_ACK_IP_BYTES: usize = 52;
/// Data segments per ACK in [`TestbedConfig::ideal_goodput_mbps`]: Linux delays ACKs to one per two full
/// segments (RFC 1122 §4.2.3.2, RFC 5681 §4.2); its quick-ACK phase at the start acknowledges every one, so
/// a measured transfer sends a few more ACKs than this (about 0.6 per segment for 1 MB at BER 0).
pub const IDEAL_ACK_EVERY: u32 = 2;

/// One of the three namespaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Node {
    Fh,
    Bs,
    Mh,
}

/// One run of the testbed, as the CLI's `lasthop testbed` and the `testbed-ber` experiment describe it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TestbedConfig {
    pub agent: AgentKind,
    /// Congestion control of the sender: "reno", "cubic", "bbr" (any the kernel offers).
    pub cc: String,
    /// SACK on both hosts (`net.ipv4.tcp_sack`).
    pub sack: bool,
    /// Bit error rate of the wireless hop, both directions (0: no errors).
    pub ber: f64,
    /// Seeds the error model and the payload.
    pub seed: u64,
    pub bytes: u64,
    /// Wireless hop rate, Mb/s (0: unlimited).
    pub rate_mbps: f64,
    /// Wireless hop one-way propagation delay, ms.
    pub delay_ms: f64,
    /// Medium time added to every frame on the hop, µs (preamble, contention, MAC header); default 0.
    pub mac_overhead_us: f64,
    pub queue_packets: usize,
    pub duplex: Duplex,
    /// Half duplex: how the base station and the mobile share the medium (`HopConfig::access`): `turns`
    /// (default, CSMA/CA-like) or `fifo`.
    pub access: Access,
    /// One-way delay of the wired path between the fixed host and the base station, ms, emulated by the
    /// base station on its wired side (no netem here). 0: the testbed's LAN (well under a millisecond).
    /// Balakrishnan 1995 names wide-area connections (tens of ms) as the case where end-to-end recovery is slow
    /// and local recovery matters most (§1, §7 "wide-area connections").
    pub wired_delay_ms: f64,
    /// Largest window the receiver offers, bytes (`TCP_WINDOW_CLAMP` on the receiving socket). Default
    /// 65535: Balakrishnan 1995 §7, "the maximum possible window size for the connection was 64 KBytes" (BSD/OS
    /// without window scaling). 0: the kernel's own (autotuned, window-scaled, megabytes).
    pub max_window: u32,
    /// Tell Snoop when each of its frames goes on the air (`HopConfig::report_transmissions`).
    pub report_transmissions: bool,
    /// Give up on the transfer after this many seconds.
    pub timeout_s: f64,
    /// Where to write `wired.pcap` and `wireless.pcap` of the base station's interfaces (none: no capture).
    pub pcap_dir: Option<PathBuf>,
    /// `agent = "split"`: I-TCP's socket buffer at the base station, bytes ([`SplitConfig::buffer_bytes`];
    /// default 65536, Balakrishnan 1995 §2). Ignored by the other agents.
    pub split_buffer_bytes: u32,
    /// The TCP port the mobile listens on for the transfer. Default [`TRANSFER_PORT`] (5001).
    pub port: u16,
    /// `agent = "split"`: the ports the proxy terminates ([`SplitConfig::ports`]); empty (the default):
    /// the transfer's `port` alone. When given, they must include `port`, or the transfer itself would be
    /// reset by the base station. Ignored by the other agents.
    pub split_ports: Vec<u16>,
    /// Two base stations and a moving mobile instead of one base station (`crate::handoff`): the handoff
    /// scheme. None (the default): the one-station testbed.
    pub handoff: Option<crate::handoff::HandoffScheme>,
    /// With `handoff`: seconds between the mobile's handoffs (`inf`: never).
    pub handoff_every_s: f64,
    /// With `handoff`: packets each base station's handoff buffer keeps (Balakrishnan 1995 §6: 12).
    pub handoff_buffer_packets: usize,
    /// With `handoff`: the mobile stops moving after this many scheduled handoffs (none: it never stops).
    pub handoff_limit: Option<u32>,
    /// With `handoff`: what makes the mobile hand off, its schedule or beacon strength.
    pub handoff_by: crate::handoff::HandoffBy,
    /// With `handoff_by = beacons`: the mobile's walking speed between the base stations (at 0 and 50 m,
    /// the simulator's `[mobility]` defaults), back and forth, m/s.
    pub walk_speed_mps: f64,
    /// With `handoff_by = beacons`: the hysteresis margin, dB (the simulator's default, 6).
    pub hysteresis_db: f64,
    /// With `handoff`: seconds between a base station's beacons (Balakrishnan 1995 §6: one per second; 0: none).
    pub beacon_every_s: f64,
}

impl Default for TestbedConfig {
    fn default() -> Self {
        TestbedConfig {
            agent: AgentKind::None,
            cc: "reno".into(),
            sack: false,
            ber: 0.0,
            seed: 1,
            bytes: 2 << 20,
            rate_mbps: 2.0,
            delay_ms: 1.0,
            mac_overhead_us: 0.0,
            queue_packets: 100,
            duplex: Duplex::Half,
            access: Access::default(),
            wired_delay_ms: 0.0,
            max_window: 65535,
            report_transmissions: HopConfig::default().report_transmissions,
            timeout_s: 120.0,
            pcap_dir: None,
            split_buffer_bytes: SplitConfig::default().buffer_bytes,
            port: TRANSFER_PORT,
            split_ports: Vec::new(),
            handoff: None,
            handoff_every_s: f64::INFINITY,
            handoff_buffer_packets: 12,
            handoff_limit: None,
            handoff_by: crate::handoff::HandoffBy::Schedule,
            walk_speed_mps: 1.0,
            hysteresis_db: 6.0,
            beacon_every_s: 1.0,
        }
    }
}

impl TestbedConfig {
    pub fn hop(&self) -> HopConfig {
        let err = if self.ber > 0.0 { ErrorModelConfig::Ber { ber: self.ber } } else { ErrorModelConfig::None };
        HopConfig {
            rate_mbps: self.rate_mbps,
            delay_ms: self.delay_ms,
            mac_overhead_us: self.mac_overhead_us,
            queue_packets: self.queue_packets,
            duplex: self.duplex,
            access: self.access,
            down: err.clone(),
            up: err,
            seed: self.seed,
            wired_delay_ms: self.wired_delay_ms,
            report_transmissions: self.report_transmissions,
        }
    }

    pub fn transfer(&self) -> TransferConfig {
        TransferConfig {
            bytes: self.bytes,
            cc: self.cc.clone(),
            seed: self.seed,
            timeout: Duration::from_secs_f64(self.timeout_s.max(1.0)),
            max_window: self.max_window,
            port: self.port,
        }
    }

    /// The best goodput any base-station scheme could reach on this hop, Mb/s: C·(1 − PER), as the
    /// simulator's `ideal_goodput_mbps` (Balakrishnan 1995 §5.1 compares Snoop with this bound). C counts the air time of
    /// a full data frame and, on a half-duplex hop, of one ACK per [`IDEAL_ACK_EVERY`] data frames; PER is the
    /// analytic loss probability of a full data frame in the data direction. Lost ACKs and the transfer's
    /// start (slow start, the handshake) are not counted, so measured goodput stays (slightly) below it.
    /// None when the hop is not rate-limited (`rate_mbps = 0`).
    pub fn ideal_goodput_mbps(&self) -> Option<f64> {
        if !(self.rate_mbps.is_finite() && self.rate_mbps > 0.0) {
            return None;
        }
        let hop = self.hop();
        let air_ns = |len: usize| (len as f64 * 8.0 * 1e3 / self.rate_mbps).round() + hop.mac_overhead_us * 1e3;
        let mut per_segment_ns = air_ns(IDEAL_DATA_IP_BYTES);
        if self.duplex == Duplex::Half {
            per_segment_ns += air_ns(IDEAL_ACK_IP_BYTES) / IDEAL_ACK_EVERY as f64;
        }
        let capacity = IDEAL_PAYLOAD_BYTES as f64 * 8.0 / per_segment_ns * 1e3;
        let per = hop.down.frame_loss_probability(IDEAL_DATA_IP_BYTES as u64 * 8)?;
        Some(capacity * (1.0 - per))
    }

    pub fn validate(&self) -> Result<(), NetError> {
        crate::agents::check_real(self.agent)?;
        if self.bytes == 0 {
            return Err(NetError::Config("bytes must be at least 1".into()));
        }
        if !(self.timeout_s.is_finite() && self.timeout_s > 0.0) {
            return Err(NetError::Config(format!("timeout_s must be positive, got {}", self.timeout_s)));
        }
        if self.cc.is_empty() || self.cc.len() >= 16 || !self.cc.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        {
            return Err(NetError::Config(format!("bad congestion control name {:?}", self.cc)));
        }
        self.hop().validate().map_err(NetError::Config)?;
        if self.port == 0 {
            return Err(NetError::Config("port must be in 1..=65535, got 0".into()));
        }
        if !self.split_ports.is_empty() {
            crate::split::validate_ports(&self.split_ports)?;
        }
        if self.handoff.is_some() {
            if self.agent == AgentKind::Split {
                return Err(NetError::Config("the handoff testbed runs agent none or snoop, not split".into()));
            }
            if self.handoff_every_s.is_nan() || self.handoff_every_s < 0.1 {
                return Err(NetError::Config(format!(
                    "handoff_every_s must be at least 0.1 (or inf: never), got {}",
                    self.handoff_every_s
                )));
            }
            if !(self.beacon_every_s.is_finite() && self.beacon_every_s >= 0.0) {
                return Err(NetError::Config(format!("beacon_every_s must be 0 or more, got {}", self.beacon_every_s)));
            }
            if self.handoff_by == crate::handoff::HandoffBy::Beacons {
                if self.beacon_every_s <= 0.0 {
                    return Err(NetError::Config("handoff_by beacons needs beacons (beacon_every_s > 0)".into()));
                }
                if !(self.walk_speed_mps.is_finite() && self.walk_speed_mps >= 0.0) {
                    return Err(NetError::Config(format!(
                        "walk_speed_mps must be 0 or more, got {}",
                        self.walk_speed_mps
                    )));
                }
                if !(self.hysteresis_db.is_finite() && self.hysteresis_db >= 0.0) {
                    return Err(NetError::Config(format!(
                        "hysteresis_db must be 0 or more, got {}",
                        self.hysteresis_db
                    )));
                }
            }
            if self.handoff_buffer_packets == 0 {
                return Err(NetError::Config("handoff_buffer_packets must be at least 1".into()));
            }
            if self.pcap_dir.is_some() {
                return Err(NetError::Config("the handoff testbed does not capture (pcap_dir)".into()));
            }
        }
        if self.agent == AgentKind::Split {
            self.split().validate()?;
            if !self.split_ports.is_empty() && !self.split_ports.contains(&self.port) {
                return Err(NetError::Config(format!(
                    "split ports {:?} must include the transfer's port {} (the base station would reset it)",
                    self.split_ports, self.port
                )));
            }
        }
        Ok(())
    }

    /// The split proxy of `agent = "split"`: the configured ports (or the transfer's), the configured buffer,
    /// the mobile's window clamp offered to the fixed host too (the base station answers for the mobile), and
    /// the sender's congestion control on the base station's own connection (the same TCP over the hop).
    pub fn split(&self) -> SplitConfig {
        SplitConfig {
            ports: if self.split_ports.is_empty() { vec![self.port] } else { self.split_ports.clone() },
            buffer_bytes: self.split_buffer_bytes,
            window_clamp: self.max_window,
            cc: self.cc.clone(),
        }
    }
}

/// What one testbed run measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TestbedResult {
    pub goodput_mbps: f64,
    pub hash_ok: bool,
    pub bytes: u64,
    pub duration_s: f64,
    /// The congestion control the sender's socket really used.
    pub cc: String,
    pub sack: bool,
    pub agent: AgentKind,
    pub counters: Counters,
    /// The sender's kernel TCP counters for the run (its namespace is fresh, so they are this run's).
    #[serde(default)]
    pub sender: SenderStats,
    /// The split proxy's counters (`agent = "split"` only).
    #[serde(default)]
    pub split: Option<SplitCounters>,
    /// The handoffs and the drivers' counters (the handoff testbed only).
    #[serde(default)]
    pub handoff: Option<crate::handoff::HandoffSummary>,
}

/// What the fixed host's kernel TCP did, from `/proc/net/snmp` and `/proc/net/netstat` in its namespace.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SenderStats {
    /// Segments retransmitted (`Tcp: RetransSegs`).
    pub retrans_segs: u64,
    /// Retransmission timeouts (`TcpExt: TCPTimeouts`).
    pub timeouts: u64,
    /// Fast retransmissions (`TcpExt: TCPFastRetrans`; SACK off, these are Reno's three-DUPACK ones).
    pub fast_retrans: u64,
    /// Payload bytes the sender saw acknowledged ([`TransferProgress::acked`]).
    #[serde(default)]
    pub bytes_acked: u64,
}

impl SenderStats {
    /// Reads the counters of the calling thread's network namespace.
    pub fn read_own_namespace() -> SenderStats {
        let snmp = std::fs::read_to_string("/proc/thread-self/net/snmp").unwrap_or_default();
        let netstat = std::fs::read_to_string("/proc/thread-self/net/netstat").unwrap_or_default();
        SenderStats {
            retrans_segs: proc_net_field(&snmp, "Tcp:", "RetransSegs").unwrap_or(0),
            timeouts: proc_net_field(&netstat, "TcpExt:", "TCPTimeouts").unwrap_or(0),
            fast_retrans: proc_net_field(&netstat, "TcpExt:", "TCPFastRetrans").unwrap_or(0),
            bytes_acked: 0,
        }
    }
}

/// A field of a `/proc/net/snmp`-style table: a line of names after `prefix`, then a line of values.
fn proc_net_field(text: &str, prefix: &str, name: &str) -> Option<u64> {
    let mut lines = text.lines().filter(|l| l.starts_with(prefix));
    while let (Some(names), Some(values)) = (lines.next(), lines.next()) {
        if let Some(i) = names.split_whitespace().position(|n| n == name) {
            return values.split_whitespace().nth(i)?.parse().ok();
        }
    }
    None
}

/// Builds the testbed, runs one transfer through a base station and tears everything down.
pub fn run_testbed_transfer(cfg: &TestbedConfig) -> Result<TestbedResult, NetError> {
    run_testbed_transfer_observed(cfg, &Arc::new(TransferProgress::default()))
}

/// [`run_testbed_transfer`], the transfer reporting into `progress` (and sampling the sender's window
/// when `progress.cwnd` is enabled).
pub fn run_testbed_transfer_observed(
    cfg: &TestbedConfig,
    progress: &Arc<TransferProgress>,
) -> Result<TestbedResult, NetError> {
    cfg.validate()?;
    sys::install_signal_handlers().map_err(|e| NetError::io("installing signal handlers", e))?;
    if let Some(scheme) = cfg.handoff {
        return crate::handoff::run_handoff_transfer(cfg, scheme);
    }
    let tb = Testbed::create()?;
    tb.set_sack(cfg.sack)?;
    let bs = tb.start_station(cfg)?;
    let transfer = tb.transfer_observed(&cfg.transfer(), &AtomicBool::new(false), progress);
    let stopped = bs.stop();
    let t = transfer?;
    let (counters, split) = stopped?;
    Ok(TestbedResult {
        goodput_mbps: t.goodput_mbps(),
        hash_ok: t.hash_ok(),
        bytes: t.bytes_received,
        duration_s: t.duration.as_secs_f64(),
        cc: t.cc,
        sack: cfg.sack,
        agent: cfg.agent,
        counters,
        sender: t.sender,
        split,
        handoff: None,
    })
}

/// Three namespaces and two veth pairs; removed on drop.
pub struct Testbed {
    names: [String; 3],
    torn_down: bool,
}

static SERIAL: AtomicU32 = AtomicU32::new(0);

pub(crate) fn ip(args: &[&str]) -> Result<String, NetError> {
    let out = Command::new("ip").args(args).output().map_err(|e| {
        if e.kind() == io::ErrorKind::NotFound {
            NetError::NamespacesUnavailable("the `ip` command (iproute2) is not installed".into())
        } else {
            NetError::io("running `ip`", e)
        }
    })?;
    if !out.status.success() {
        return Err(NetError::Command {
            command: format!("ip {}", args.join(" ")),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Adds the network namespaces `names`; a refusal from `ip` means this machine or user cannot make them.
pub(crate) fn add_namespaces(names: &[String]) -> Result<(), NetError> {
    for n in names {
        ip(&["netns", "add", n]).map_err(|e| match e {
            NetError::Command { stderr, .. } => NetError::NamespacesUnavailable(stderr),
            e => e,
        })?;
    }
    Ok(())
}

/// Removes namespaces a killed earlier run left behind (their pid no longer exists).
pub fn remove_stale_namespaces() {
    let Ok(list) = ip(&["netns", "list"]) else { return };
    for line in list.lines() {
        let name = line.split_whitespace().next().unwrap_or("");
        let Some(rest) = name.strip_prefix("lh") else { continue };
        let Some((pid, _)) = rest.split_once('n') else { continue };
        let Ok(pid) = pid.parse::<u32>() else { continue };
        if pid != std::process::id() && !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let _ = ip(&["netns", "del", name]);
        }
    }
}

/// Switches off, on the calling thread's namespace's interface `dev`, what would make a kernel sender's
/// frames longer than the wire or leave their checksums unfinished (see `crate::bs`).
pub(crate) fn sender_offloads_off(dev: &str) -> io::Result<()> {
    for o in [Offload::Tso, Offload::Gso, Offload::Gro, Offload::TxChecksum] {
        sys::set_offload(dev, o, false)?;
    }
    Ok(())
}

/// [`spawn_in_namespace`], waiting for `f`'s result.
pub(crate) fn run_in_namespace<T: Send + 'static>(
    path: &str,
    label: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, NetError> {
    spawn_in_namespace(path, label, f)?.join().map_err(|_| NetError::Transfer("a namespace thread panicked".into()))
}

/// Starts `f` on a new thread named `label` inside the network namespace at `path` (`/var/run/netns/…`);
/// fails, without running `f`, when the thread cannot enter it.
pub(crate) fn spawn_in_namespace<T: Send + 'static>(
    path: &str,
    label: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<JoinHandle<T>, NetError> {
    let path = path.to_string();
    // Enter first, on the thread itself, and report a failure before running `f`.
    let (tx, rx) = mpsc::channel();
    let p = path.clone();
    let h = std::thread::Builder::new()
        .name(label.to_string())
        .spawn(move || {
            let entered = sys::enter_netns(&p);
            let ok = entered.is_ok();
            let _ = tx.send(entered);
            if !ok {
                // The caller sees the error from the channel; `f` never runs outside the namespace.
                std::thread::park();
            }
            f()
        })
        .map_err(|e| NetError::io("spawning a thread", e))?;
    match rx.recv() {
        Ok(Ok(())) => Ok(h),
        Ok(Err(e)) => {
            h.thread().unpark();
            Err(NetError::io(format!("entering namespace {path}"), e))
        }
        Err(_) => Err(NetError::Transfer("namespace thread ended before entering".into())),
    }
}

impl Testbed {
    /// Builds FH, BS and MH. Refuses clearly when not root or when namespaces cannot be made.
    pub fn create() -> Result<Testbed, NetError> {
        if !sys::is_root() {
            return Err(NetError::NotRoot("building network namespaces"));
        }
        remove_stale_namespaces();
        let k = SERIAL.fetch_add(1, Ordering::Relaxed);
        let base = format!("lh{}n{}", std::process::id(), k);
        let names = [format!("{base}-fh"), format!("{base}-bs"), format!("{base}-mh")];
        let mut tb = Testbed { names, torn_down: false };
        add_namespaces(&tb.names)?;
        // From here on, an error drops `tb`, which removes whatever was made.
        tb.build()?;
        Ok(tb)
    }

    pub fn name(&self, node: Node) -> &str {
        &self.names[node as usize]
    }

    fn ns_path(&self, node: Node) -> String {
        format!("/var/run/netns/{}", self.name(node))
    }

    fn build(&mut self) -> Result<(), NetError> {
        let [fh, bs, mh] = self.names.clone();
        ip(&["link", "add", FH_IF, "netns", &fh, "type", "veth", "peer", "name", BS_WIRED_IF, "netns", &bs])?;
        ip(&["link", "add", MH_IF, "netns", &mh, "type", "veth", "peer", "name", BS_WIRELESS_IF, "netns", &bs])?;
        ip(&["-n", &fh, "addr", "add", &format!("{FH_IP}/24"), "dev", FH_IF])?;
        ip(&["-n", &mh, "addr", "add", &format!("{MH_IP}/24"), "dev", MH_IF])?;
        // Quiet links: no IPv6 router solicitations or DAD crossing the emulated hop.
        for node in [Node::Fh, Node::Bs, Node::Mh] {
            self.sysctl(node, "net/ipv6/conf/all/disable_ipv6", "1")?;
            self.sysctl(node, "net/ipv6/conf/default/disable_ipv6", "1")?;
        }
        // The base station's kernel must not forward: the userspace loop is the only path.
        self.sysctl(Node::Bs, "net/ipv4/ip_forward", "0")?;
        for (ns, dev) in [(&fh, FH_IF), (&mh, MH_IF), (&bs, BS_WIRED_IF), (&bs, BS_WIRELESS_IF)] {
            ip(&["-n", ns, "link", "set", dev, "up"])?;
        }
        for ns in [&fh, &bs, &mh] {
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
        }
        // Senders must emit wire-sized frames with complete checksums (see `crate::bs`).
        for (node, dev) in [(Node::Fh, FH_IF), (Node::Mh, MH_IF)] {
            self.run_in(node, move || sender_offloads_off(dev))?
                .map_err(|e| NetError::io(format!("switching offloads off on {dev}"), e))?;
        }
        Ok(())
    }

    /// Runs `f` on a new thread inside `node`'s namespace and waits for its result.
    pub fn run_in<T: Send + 'static>(&self, node: Node, f: impl FnOnce() -> T + Send + 'static) -> Result<T, NetError> {
        run_in_namespace(&self.ns_path(node), &format!("ns-{node:?}"), f)
    }

    /// Starts `f` on a new thread inside `node`'s namespace.
    pub fn spawn_in<T: Send + 'static>(
        &self,
        node: Node,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<JoinHandle<T>, NetError> {
        spawn_in_namespace(&self.ns_path(node), &format!("ns-{node:?}"), f)
    }

    /// Writes `/proc/sys/<key>` inside `node`'s namespace (`key` as a path: `net/ipv4/tcp_sack`).
    pub fn sysctl(&self, node: Node, key: &str, value: &str) -> Result<(), NetError> {
        let path = format!("/proc/sys/{key}");
        let v = value.to_string();
        let p = path.clone();
        self.run_in(node, move || std::fs::write(&p, v))?
            .map_err(|e| NetError::io(format!("writing {path} in {}", self.name(node)), e))
    }

    /// Reads `/proc/sys/<key>` inside `node`'s namespace.
    pub fn read_sysctl(&self, node: Node, key: &str) -> Result<String, NetError> {
        let path = format!("/proc/sys/{key}");
        let p = path.clone();
        self.run_in(node, move || std::fs::read_to_string(&p))?
            .map(|s| s.trim().to_string())
            .map_err(|e| NetError::io(format!("reading {path}"), e))
    }

    /// SACK on or off at both hosts, and at the base station (whose kernel is a TCP end under split).
    pub fn set_sack(&self, on: bool) -> Result<(), NetError> {
        for node in [Node::Fh, Node::Bs, Node::Mh] {
            self.sysctl(node, "net/ipv4/tcp_sack", if on { "1" } else { "0" })?;
        }
        Ok(())
    }

    /// Starts a base station on a thread in the BS namespace; returns once its sockets are open.
    pub fn start_bs(&self, agent: AgentKind, hop: HopConfig) -> Result<BsHandle, NetError> {
        self.start_bs_with(BsConfig { agent, hop, ..BsConfig::default() })
    }

    /// [`start_bs`](Self::start_bs) with every knob; the interface names are the testbed's own.
    pub fn start_bs_with(&self, cfg: BsConfig) -> Result<BsHandle, NetError> {
        self.start_loop(BsConfig { wired_if: BS_WIRED_IF.into(), wireless_if: BS_WIRELESS_IF.into(), ..cfg })
    }

    /// The base station `cfg` describes, whatever its agent: the forwarding loop between `w0` and `m0`,
    /// or for `split` the proxy and its two loops ([`Testbed::prepare_split`] is done here, once).
    pub fn start_station(&self, cfg: &TestbedConfig) -> Result<Station, NetError> {
        let pcap = |name: &str| cfg.pcap_dir.as_ref().map(|d| d.join(name));
        if cfg.agent != AgentKind::Split {
            let bs = self.start_bs_with(BsConfig {
                agent: cfg.agent,
                hop: cfg.hop(),
                pcap_wired: pcap("wired.pcap"),
                pcap_wireless: pcap("wireless.pcap"),
                ..BsConfig::default()
            })?;
            return Ok(Station::Bridge(bs));
        }
        cfg.split().validate()?;
        self.prepare_split()?;
        // The wired path: a loop that only delays (no rate, no errors), the same delay line the bridging
        // base station has on its wired port.
        let wired_hop = HopConfig {
            rate_mbps: 0.0,
            delay_ms: 0.0,
            down: ErrorModelConfig::None,
            up: ErrorModelConfig::None,
            ..cfg.hop()
        };
        let wired = self.start_loop(BsConfig {
            wired_if: BS_WIRED_IF.into(),
            wireless_if: SPLIT_WIRED_LOOP_IF.into(),
            agent: AgentKind::None,
            hop: wired_hop,
            pcap_wired: pcap("wired.pcap"),
            ..BsConfig::default()
        })?;
        let wireless = self.start_loop(BsConfig {
            wired_if: SPLIT_WIRELESS_LOOP_IF.into(),
            wireless_if: BS_WIRELESS_IF.into(),
            agent: AgentKind::None,
            hop: HopConfig { wired_delay_ms: 0.0, ..cfg.hop() },
            pcap_wireless: pcap("wireless.pcap"),
            ..BsConfig::default()
        })?;
        let proxy = SplitProxy::start(cfg.split(), Some(self.ns_path(Node::Bs)))?;
        Ok(Station::Split { wired, wireless, proxy })
    }

    /// Turns the base station's namespace into a split-connection base station (Balakrishnan 1995 §2, I-TCP),
    /// transparently, as PEPsal does (see [`crate::split`]):
    ///
    /// ```text
    ///   FH ── w0 [loop: wired delay] sw1 ── sw0 (kernel: proxy) sm0 ── sm1 [loop: wireless hop] m0 ── MH
    /// ```
    ///
    /// The kernel terminates TCP from either host (`ip rule iif sw0|sm0 ipproto tcp lookup 100`, table 100
    /// `local 0.0.0.0/0 dev lo`), forwards anything else (`ip_forward = 1`), and answers ARP for each host
    /// on the other's side (`proxy_arp` with a /32 route per host), so the hosts keep their one subnet and
    /// their configuration. The proxy's connection to the mobile leaves through `sm0` and crosses the
    /// emulated hop like any frame. Idempotent.
    pub fn prepare_split(&self) -> Result<(), NetError> {
        let bs = self.name(Node::Bs).to_string();
        if ip(&["-n", &bs, "link", "show", SPLIT_WIRED_IF]).is_ok() {
            return Ok(());
        }
        let run = |args: &[&str]| -> Result<String, NetError> {
            let mut all = vec!["-n", bs.as_str()];
            all.extend_from_slice(args);
            ip(&all)
        };
        for (kernel, looped) in [(SPLIT_WIRED_IF, SPLIT_WIRED_LOOP_IF), (SPLIT_WIRELESS_IF, SPLIT_WIRELESS_LOOP_IF)] {
            run(&["link", "add", kernel, "type", "veth", "peer", "name", looped])?;
        }
        for (dev, own, host) in [(SPLIT_WIRED_IF, SPLIT_WIRED_IP, FH_IP), (SPLIT_WIRELESS_IF, SPLIT_WIRELESS_IP, MH_IP)]
        {
            run(&["addr", "add", &format!("{own}/32"), "dev", dev])?;
            self.sysctl(Node::Bs, &format!("net/ipv4/conf/{dev}/proxy_arp"), "1")?;
            for d in [dev, if dev == SPLIT_WIRED_IF { SPLIT_WIRED_LOOP_IF } else { SPLIT_WIRELESS_LOOP_IF }] {
                run(&["link", "set", d, "up"])?;
            }
            run(&["route", "add", &format!("{host}/32"), "dev", dev])?;
        }
        self.sysctl(Node::Bs, "net/ipv4/ip_forward", "1")?;
        for (pref, dev) in [("100", SPLIT_WIRED_IF), ("101", SPLIT_WIRELESS_IF)] {
            run(&["rule", "add", "pref", pref, "iif", dev, "ipproto", "tcp", "lookup", SPLIT_TABLE])?;
        }
        run(&["route", "add", "local", "0.0.0.0/0", "dev", "lo", "table", SPLIT_TABLE])?;
        // The kernel's two interfaces send into forwarding loops: wire-sized frames with complete checksums.
        self.run_in(Node::Bs, || -> io::Result<()> {
            for dev in [SPLIT_WIRED_IF, SPLIT_WIRELESS_IF] {
                for o in [Offload::Tso, Offload::Gso, Offload::Gro, Offload::TxChecksum] {
                    sys::set_offload(dev, o, false)?;
                }
            }
            Ok(())
        })?
        .map_err(|e| NetError::io("switching offloads off on the split interfaces", e))
    }

    /// A forwarding loop on a thread in the BS namespace, between the interfaces `cfg` names.
    fn start_loop(&self, cfg: BsConfig) -> Result<BsHandle, NetError> {
        cfg.validate()?;
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = mpsc::channel();
        let s = stop.clone();
        let thread = self.spawn_in(Node::Bs, move || {
            let never = AtomicBool::new(false);
            let r = run_bs_with(&cfg, &s, &never, &mut |_| {}, &mut || {
                let _ = ready_tx.send(());
            });
            // Wake `start_bs` also when the base station failed before it was ready.
            drop(ready_tx);
            r
        })?;
        let handle = BsHandle { stop, thread: Some(thread) };
        match ready_rx.recv_timeout(Duration::from_secs(10)) {
            Ok(()) => Ok(handle),
            Err(_) => {
                Err(handle.stop().err().unwrap_or_else(|| NetError::Transfer("base station did not start".into())))
            }
        }
    }

    /// A bulk transfer FH → MH through whatever sits between them. `abort` (or SIGINT/SIGTERM) ends it.
    pub fn transfer(&self, cfg: &TransferConfig, abort: &AtomicBool) -> Result<TransferResult, NetError> {
        self.transfer_observed(cfg, abort, &Arc::new(TransferProgress::default()))
    }

    /// [`transfer`](Self::transfer), reporting its progress into `progress` as it goes.
    pub fn transfer_observed(
        &self,
        cfg: &TransferConfig,
        abort: &AtomicBool,
        progress: &Arc<TransferProgress>,
    ) -> Result<TransferResult, NetError> {
        transfer_between(&self.ns_path(Node::Fh), &self.ns_path(Node::Mh), cfg, abort, progress)
    }

    /// Removes the namespaces (and with them the veth pairs). Idempotent; also done on drop.
    pub fn teardown(&mut self) {
        if self.torn_down {
            return;
        }
        self.torn_down = true;
        for n in &self.names {
            let _ = ip(&["netns", "del", n]);
        }
    }
}

impl Drop for Testbed {
    fn drop(&mut self) {
        self.teardown();
    }
}

/// A base station running on a thread in the BS namespace.
pub struct BsHandle {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<Counters, NetError>>>,
}

impl BsHandle {
    /// Stops the base station (its state is lost, as when the process dies) and returns its counters.
    pub fn stop(mut self) -> Result<Counters, NetError> {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.take() {
            Some(t) => t.join().map_err(|_| NetError::Transfer("base station thread panicked".into()))?,
            None => Err(NetError::Transfer("base station already stopped".into())),
        }
    }
}

impl Drop for BsHandle {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A running base station of any agent: one bridging loop, or the split proxy and its two loops.
pub enum Station {
    Bridge(BsHandle),
    Split { wired: BsHandle, wireless: BsHandle, proxy: SplitProxy },
}

impl Station {
    /// Stops the base station at the end of a run; returns its counters (for split: the wireless-hop
    /// loop's, with the wired port of the wired loop, CPU time of both) and the proxy's.
    pub fn stop(self) -> Result<(Counters, Option<SplitCounters>), NetError> {
        match self {
            Station::Bridge(bs) => Ok((bs.stop()?, None)),
            Station::Split { wired, wireless, proxy } => {
                let p = proxy.stop();
                let (w, h) = (wired.stop(), wireless.stop());
                Ok((merge_split_counters(w?, h?), Some(p?)))
            }
        }
    }

    /// The base station fails, abruptly: its forwarding loops stop (frames in flight through it are lost
    /// and nothing more passes) and the split proxy, if any, measures what it held and closes every socket
    /// with a zero linger, discarding its buffers ([`SplitProxy::kill`]).
    pub fn kill(self) -> Result<(Counters, Option<SplitCounters>), NetError> {
        match self {
            Station::Bridge(bs) => Ok((bs.stop()?, None)),
            Station::Split { wired, wireless, proxy } => {
                let (w, h) = (wired.stop(), wireless.stop());
                let p = proxy.kill();
                Ok((merge_split_counters(w?, h?), Some(p?)))
            }
        }
    }
}

/// The split station's counters in the bridging station's shape: the hop and the wireless port from the
/// wireless loop, the wired port from the wired loop, the CPU of both.
fn merge_split_counters(wired: Counters, wireless: Counters) -> Counters {
    Counters { wired: wired.wired, cpu_s: wired.cpu_s + wireless.cpu_s, ..wireless }
}

/// A bulk transfer from a sender in the namespace at `fh` to a receiver on [`MH_IP`] in the namespace at
/// `mh`, through whatever sits between them; progress goes into `progress`. `abort` (or SIGINT/SIGTERM)
/// ends it.
pub(crate) fn transfer_between(
    fh: &str,
    mh: &str,
    cfg: &TransferConfig,
    abort: &AtomicBool,
    progress: &Arc<TransferProgress>,
) -> Result<TransferResult, NetError> {
    let abort_all = Arc::new(AtomicBool::new(false));
    let deadline = Instant::now() + cfg.timeout;
    let port = cfg.port;
    let (ready_tx, ready_rx) = mpsc::channel::<()>();

    let (a, total) = (abort_all.clone(), cfg.bytes);
    let clamp = cfg.max_window;
    let p = progress.clone();
    let receiver = spawn_in_namespace(mh, "ns-Mh", move || receive(port, total, clamp, &a, deadline, ready_tx, &p))?;
    if ready_rx.recv_timeout(Duration::from_secs(10)).is_err() {
        abort_all.store(true, Ordering::Relaxed);
        return Err(receiver
            .join()
            .ok()
            .and_then(|r| r.err())
            .unwrap_or(NetError::Transfer("receiver did not start".into())));
    }
    let (a, c, p) = (abort_all.clone(), cfg.clone(), progress.clone());
    let sender = spawn_in_namespace(fh, "ns-Fh", move || {
        let r = send(port, &c, &a, deadline, &p);
        if r.is_err() {
            // The receiver would otherwise wait for an end of stream that never comes.
            a.store(true, Ordering::Relaxed);
        }
        r
    })?;

    // Watch for the caller's abort and for signals while the two threads work.
    while !(sender.is_finished() && receiver.is_finished()) {
        if abort.load(Ordering::Relaxed) || sys::STOP_REQUESTED.load(Ordering::Relaxed) {
            abort_all.store(true, Ordering::Relaxed);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let sent = sender.join().map_err(|_| NetError::Transfer("sender panicked".into()));
    let received = receiver.join().map_err(|_| NetError::Transfer("receiver panicked".into()));
    if sys::STOP_REQUESTED.load(Ordering::Relaxed) {
        return Err(NetError::Interrupted);
    }
    let (sent_hash, cc, sender) = sent??;
    let (bytes_received, recv_hash, duration, peer) = received??;
    Ok(TransferResult { bytes_sent: cfg.bytes, bytes_received, sent_hash, recv_hash, duration, cc, sender, peer })
}

/// What a transfer has done so far, shared with the caller while it runs: so that a transfer cut short
/// (a base station killed mid-way) still tells how far each end got.
#[derive(Debug, Default)]
pub struct TransferProgress {
    /// Bytes the sender handed to its socket.
    pub written: AtomicU64,
    /// Payload bytes the sender saw acknowledged: its socket's `TCP_INFO` `tcpi_bytes_acked` (RFC 4898's
    /// HCThruOctetsAcked) less the SYN's one sequence number, at most `written`. Read when the sender
    /// ends, on every exit path.
    pub acked: AtomicU64,
    /// Bytes the receiving application read.
    pub received: AtomicU64,
    /// The sender's congestion window over time, from `TCP_INFO` (off unless enabled).
    pub cwnd: Arc<crate::tcp_info::CwndTrace>,
}

#[derive(Debug, Clone)]
pub struct TransferConfig {
    pub bytes: u64,
    pub cc: String,
    pub seed: u64,
    pub timeout: Duration,
    /// `TCP_WINDOW_CLAMP` of the receiving socket, bytes (0: the kernel's own window).
    pub max_window: u32,
    /// The port the mobile listens on ([`TRANSFER_PORT`] unless configured).
    pub port: u16,
}

#[derive(Debug, Clone)]
pub struct TransferResult {
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub sent_hash: u64,
    pub recv_hash: u64,
    /// From the receiver's accept to its end of stream.
    pub duration: Duration,
    /// The congestion control the sender's socket reported using.
    pub cc: String,
    pub sender: SenderStats,
    /// The address the mobile's receiver saw the connection come from.
    pub peer: SocketAddr,
}

impl TransferResult {
    pub fn hash_ok(&self) -> bool {
        self.bytes_received == self.bytes_sent && self.sent_hash == self.recv_hash
    }
    pub fn goodput_mbps(&self) -> f64 {
        self.bytes_received as f64 * 8.0 / self.duration.as_secs_f64().max(1e-9) / 1e6
    }
}

/// A streaming 64-bit hash, independent of how the stream is cut into reads (words are formed from a
/// carry buffer). Not cryptographic: it detects corruption, reordering and loss, not tampering.
#[derive(Debug, Clone)]
pub struct StreamHash {
    h: u64,
    pending: [u8; 8],
    npending: usize,
    len: u64,
}

impl Default for StreamHash {
    fn default() -> Self {
        StreamHash { h: 0x9e37_79b9_7f4a_7c15, pending: [0; 8], npending: 0, len: 0 }
    }
}

impl StreamHash {
    fn mix(&mut self, w: u64) {
        self.h = (self.h ^ w).wrapping_mul(0x0100_0000_01b3).rotate_left(29) ^ (self.h >> 17);
    }

    pub fn update(&mut self, mut data: &[u8]) {
        self.len += data.len() as u64;
        if self.npending > 0 {
            let take = (8 - self.npending).min(data.len());
            self.pending[self.npending..self.npending + take].copy_from_slice(&data[..take]);
            self.npending += take;
            data = &data[take..];
            if self.npending < 8 {
                return;
            }
            self.mix(u64::from_le_bytes(self.pending));
            self.npending = 0;
        }
        let mut chunks = data.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.mix(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        self.pending[..rest.len()].copy_from_slice(rest);
        self.npending = rest.len();
    }

    pub fn finish(mut self) -> u64 {
        let mut w = [0u8; 8];
        w[..self.npending].copy_from_slice(&self.pending[..self.npending]);
        self.mix(u64::from_le_bytes(w));
        self.mix(self.len);
        self.h
    }
}

fn timed_out(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted)
}

/// The receiver, in MH: accepts one connection, reads to end of stream, hashes.
fn receive(
    port: u16,
    expected: u64,
    window_clamp: u32,
    abort: &AtomicBool,
    deadline: Instant,
    ready: mpsc::Sender<()>,
    progress: &TransferProgress,
) -> Result<(u64, u64, Duration, SocketAddr), NetError> {
    let listener = TcpListener::bind((MH_IP, port)).map_err(|e| NetError::io(format!("binding {MH_IP}:{port}"), e))?;
    if window_clamp > 0 {
        // Set on the listener, the clamp is in place from the SYN-ACK on (the accepted socket inherits it).
        set_window_clamp(listener.as_raw_fd(), window_clamp)?;
    }
    listener.set_nonblocking(true).map_err(|e| NetError::io("set_nonblocking", e))?;
    let _ = ready.send(());
    let (mut stream, peer) = loop {
        match listener.accept() {
            Ok(accepted) => break accepted,
            Err(e) if timed_out(&e) => {
                if abort.load(Ordering::Relaxed) || Instant::now() > deadline {
                    return Err(NetError::Transfer("no connection reached the receiver".into()));
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(e) => return Err(NetError::io("accept", e)),
        }
    };
    let start = Instant::now();
    stream.set_nonblocking(false).map_err(|e| NetError::io("set_nonblocking", e))?;
    stream.set_read_timeout(Some(Duration::from_millis(100))).map_err(|e| NetError::io("set_read_timeout", e))?;
    let mut hash = StreamHash::default();
    let mut got = 0u64;
    let mut buf = vec![0u8; 256 << 10];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                hash.update(&buf[..n]);
                got += n as u64;
                progress.received.store(got, Ordering::Relaxed);
            }
            Err(e) if timed_out(&e) => {
                if abort.load(Ordering::Relaxed) {
                    return Err(NetError::Transfer(format!("aborted after {got} of {expected} bytes")));
                }
                if Instant::now() > deadline {
                    abort.store(true, Ordering::Relaxed);
                    return Err(NetError::Transfer(format!("timed out after {got} of {expected} bytes")));
                }
            }
            Err(e) => return Err(NetError::io(format!("receiving (after {got} bytes)"), e)),
        }
    }
    let duration = start.elapsed();
    Ok((got, hash.finish(), duration, peer))
}

/// The sender, in FH: connects, sets the congestion control, writes the seeded stream, closes.
fn send(
    port: u16,
    cfg: &TransferConfig,
    abort: &AtomicBool,
    deadline: Instant,
    progress: &TransferProgress,
) -> Result<(u64, String, SenderStats), NetError> {
    let addr = SocketAddr::from((MH_IP, port));
    let connecting = Instant::now();
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(10))
        .map_err(|e| NetError::io(format!("connecting to {addr}"), e))?;
    let sampler = progress.cwnd.start(&stream, connecting);
    let r = send_on(&mut stream, cfg, abort, deadline, progress);
    drop(sampler);
    // On every exit path, so that a transfer cut short still says what its sender saw acknowledged.
    let acked = payload_bytes_acked(&stream, progress.written.load(Ordering::Relaxed));
    progress.acked.store(acked, Ordering::Relaxed);
    let (hash, cc) = r?;
    Ok((hash, cc, SenderStats { bytes_acked: acked, ..SenderStats::read_own_namespace() }))
}

/// Payload bytes acknowledged to this socket: `tcpi_bytes_acked` counts every acknowledged sequence number,
/// the SYN's and the FIN's included, so it is less one and at most what was written.
fn payload_bytes_acked(s: &TcpStream, written: u64) -> u64 {
    // Kernels before 4.1 have no tcpi_bytes_acked (a shorter struct): then nothing is known to be acked.
    let have = std::mem::offset_of!(libc::tcp_info, tcpi_bytes_acked) + 8;
    match crate::tcp_info::tcp_info(s) {
        Some((info, len)) if len >= have => info.tcpi_bytes_acked.saturating_sub(1).min(written),
        _ => 0,
    }
}

/// The sender's work on a connected socket: returns the stream's hash and the congestion control used.
fn send_on(
    stream: &mut TcpStream,
    cfg: &TransferConfig,
    abort: &AtomicBool,
    deadline: Instant,
    progress: &TransferProgress,
) -> Result<(u64, String), NetError> {
    let cc = set_congestion_control(stream, &cfg.cc)?;
    stream.set_nodelay(false).ok();
    stream.set_write_timeout(Some(Duration::from_millis(100))).map_err(|e| NetError::io("set_write_timeout", e))?;
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
    let mut hash = StreamHash::default();
    let mut chunk = vec![0u8; 64 << 10];
    let mut left = cfg.bytes;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        rng.fill_bytes(&mut chunk[..n]);
        hash.update(&chunk[..n]);
        let mut off = 0;
        while off < n {
            match stream.write(&chunk[off..n]) {
                Ok(0) => return Err(NetError::Transfer("connection closed while sending".into())),
                Ok(k) => {
                    off += k;
                    progress.written.fetch_add(k as u64, Ordering::Relaxed);
                }
                Err(e) if timed_out(&e) => {
                    if abort.load(Ordering::Relaxed) || Instant::now() > deadline {
                        return Err(NetError::Transfer(format!("sender stopped with {left} bytes left")));
                    }
                }
                Err(e) => return Err(NetError::io("sending", e)),
            }
        }
        left -= n as u64;
    }
    stream.shutdown(Shutdown::Write).map_err(|e| NetError::io("shutdown", e))?;
    // Wait for the receiver to close, so the socket is not left lingering in a namespace being removed.
    stream.set_read_timeout(Some(Duration::from_millis(100))).ok();
    let mut b = [0u8; 64];
    loop {
        match stream.read(&mut b) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if timed_out(&e) => {
                if abort.load(Ordering::Relaxed) || Instant::now() > deadline {
                    break;
                }
            }
            Err(_) => break,
        }
    }
    Ok((hash.finish(), cc))
}

/// `TCP_WINDOW_CLAMP`: the receive window this socket will ever offer, at most `bytes`.
pub(crate) fn set_window_clamp(fd: std::os::fd::RawFd, bytes: u32) -> Result<(), NetError> {
    let v = bytes.min(i32::MAX as u32) as libc::c_int;
    // SAFETY: passes a c_int by pointer with its exact size; the kernel copies it.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_WINDOW_CLAMP,
            &v as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(NetError::io("setting TCP_WINDOW_CLAMP", io::Error::last_os_error()));
    }
    Ok(())
}

/// Sets TCP_CONGESTION on the socket and reads back what the kernel actually uses.
pub fn set_congestion_control(s: &TcpStream, cc: &str) -> Result<String, NetError> {
    let fd = s.as_raw_fd();
    // SAFETY: the name is passed with its exact length; the kernel copies it.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            cc.as_ptr() as *const libc::c_void,
            cc.len() as libc::socklen_t,
        )
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        let avail = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control").unwrap_or_default();
        return Err(NetError::Config(format!(
            "congestion control {cc:?} not available ({e}); the kernel offers: {}",
            avail.trim()
        )));
    }
    let mut buf = [0u8; 16];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: buf has `len` bytes of room; the kernel writes at most that and updates len.
    let r = unsafe {
        libc::getsockopt(fd, libc::IPPROTO_TCP, libc::TCP_CONGESTION, buf.as_mut_ptr() as *mut libc::c_void, &mut len)
    };
    if r < 0 {
        return Err(NetError::io("reading TCP_CONGESTION", io::Error::last_os_error()));
    }
    let used = &buf[..(len as usize).min(buf.len())];
    Ok(String::from_utf8_lossy(used).trim_end_matches('\0').to_string())
}

/// The environment variable that turns a skipped privileged test into a failure: `.ci/run` sets it, so
/// that CI fails when a test that needs root, `ip` or namespaces (or tshark) could not run.
pub const NO_SKIP_VAR: &str = "LASTHOP_NO_SKIP";

/// Reports that a test cannot run on this machine (`why`): prints "SKIPPED" and returns, so the test
/// passes, unless [`NO_SKIP_VAR`] is set to `1`, in which case it panics with the reason.
pub fn skip_or_fail(why: impl std::fmt::Display) {
    if std::env::var(NO_SKIP_VAR).is_ok_and(|v| v == "1") {
        panic!("{NO_SKIP_VAR}=1, and this test cannot run here: {why}");
    }
    eprintln!("SKIPPED: {why}");
}

/// A testbed for a test, or None where this machine cannot make one (not root, no namespaces): then the
/// reason is reported by [`skip_or_fail`]. Any other failure panics.
pub fn testbed_or_skip() -> Option<Testbed> {
    match Testbed::create() {
        Ok(tb) => Some(tb),
        Err(e @ (NetError::NotRoot(_) | NetError::NamespacesUnavailable(_))) => {
            skip_or_fail(e);
            None
        }
        Err(e) => panic!("testbed: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_hash_ignores_how_the_stream_is_cut() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i * 7 + 3) as u8).collect();
        let mut a = StreamHash::default();
        a.update(&data);
        let mut b = StreamHash::default();
        for c in data.chunks(13) {
            b.update(c);
        }
        assert_eq!(a.clone().finish(), b.finish());
        let mut c = StreamHash::default();
        let mut d = data.clone();
        d[5000] ^= 1;
        c.update(&d);
        assert_ne!(a.finish(), c.finish());
    }

    #[test]
    fn config_is_checked() {
        assert!(TestbedConfig::default().validate().is_ok());
        let split = TestbedConfig { agent: AgentKind::Split, ..TestbedConfig::default() };
        assert_eq!(split.split().ports, [TRANSFER_PORT], "the transfer's port by default");
        let moved = TestbedConfig { port: 8080, ..split.clone() };
        assert_eq!(moved.split().ports, [8080], "the proxy follows the transfer's port");
        for (bad, says) in [
            (TestbedConfig { port: 0, ..split.clone() }, "port must be in 1..=65535"),
            (
                TestbedConfig { port: 8080, split_ports: vec![5001], ..split.clone() },
                "must include the transfer's port 8080",
            ),
            (TestbedConfig { split_ports: vec![5001, 5001], ..split.clone() }, "port 5001 is given twice"),
            (TestbedConfig { split_ports: vec![0, 5001], ..split.clone() }, "got 0"),
        ] {
            let e = bad.validate().unwrap_err().to_string();
            assert!(e.contains(says), "{e}");
        }
        let bad = TestbedConfig { cc: "re no".into(), ..TestbedConfig::default() };
        assert!(bad.validate().is_err());
        let bad = TestbedConfig { ber: 2.0, ..TestbedConfig::default() };
        assert!(bad.validate().is_err());
        for d in [-1.0, f64::NAN, 1e9] {
            let bad = TestbedConfig { wired_delay_ms: d, ..TestbedConfig::default() };
            assert!(bad.validate().is_err(), "wired_delay_ms {d}");
        }
    }

    #[test]
    fn ideal_goodput_is_capacity_times_frame_survival() {
        // 2 Mb/s half-duplex: a 1500-byte frame takes 6 ms, half a 52-byte ACK 0.104 ms; 1448 payload bytes
        let c = TestbedConfig::default();
        let clean = c.ideal_goodput_mbps().unwrap();
        assert!((clean - 1448.0 * 8.0 / 6104.0).abs() < 1e-9, "{clean}");
        // full duplex: the ACKs take no air time from the data
        let full = TestbedConfig { duplex: Duplex::Full, ..c.clone() };
        assert!((full.ideal_goodput_mbps().unwrap() - 1448.0 * 8.0 / 6000.0).abs() < 1e-9);
        // BER 3.9e-6 on 12000 bits: PER = 1 − e^(−0.0468) ≈ 4.57 %
        let lossy = TestbedConfig { ber: 3.9e-6, ..c.clone() };
        let per = 1.0 - lossy.ideal_goodput_mbps().unwrap() / clean;
        assert!((per - (1.0 - (-3.9e-6f64 * 12000.0).exp())).abs() < 1e-6, "{per}");
        assert!((0.045..0.046).contains(&per), "{per}");
        // the bound scales with the rate; an unlimited hop has none
        let fast = TestbedConfig { rate_mbps: 4.0, ..c.clone() };
        assert!((fast.ideal_goodput_mbps().unwrap() / clean - 2.0).abs() < 1e-9);
        assert_eq!(TestbedConfig { rate_mbps: 0.0, ..c }.ideal_goodput_mbps(), None);
    }

    #[test]
    fn proc_net_tables_are_read_by_name() {
        let snmp = "Ip: Forwarding DefaultTTL\nIp: 2 64\nTcp: RtoAlgorithm ActiveOpens RetransSegs\nTcp: 1 3 17\n";
        assert_eq!(proc_net_field(snmp, "Tcp:", "RetransSegs"), Some(17));
        assert_eq!(proc_net_field(snmp, "Tcp:", "Nope"), None);
        let netstat = "TcpExt: SyncookiesSent TCPTimeouts\nTcpExt: 0 4\nIpExt: InNoRoutes\nIpExt: 0\n";
        assert_eq!(proc_net_field(netstat, "TcpExt:", "TCPTimeouts"), Some(4));
        assert_eq!(proc_net_field("", "TcpExt:", "TCPTimeouts"), None);
    }
}
