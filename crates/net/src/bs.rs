//! The real base station: a userspace forwarding loop between a wired-side and a wireless-side
//! interface, running the agents on every packet and emulating the wireless hop.
//!
//! # Why AF_PACKET, not TUN
//!
//! The base station is a transparent bridge (see [`crate::forward`]): two AF_PACKET raw sockets, one
//! bound to each interface, with the kernel's own forwarding off in the base station's namespace
//! (`ip_forward = 0`, no addresses on either interface). We chose it over TUN because:
//!
//! - *No routing set-up and no ARP proxying.* With TUN the kernel routes into the tunnel, so the
//!   hosts need routes via the base station and the base station must answer ARP for the far side (or
//!   run two TUNs plus policy routing). With AF_PACKET the hosts' kernels ARP for each other across the
//!   bridge and need nothing but an address in one subnet.
//! - *One copy per direction, same as TUN,* and batched system calls: `recvmmsg` takes up to 64 waiting
//!   frames at once and `sendmmsg` sends what they produced, where TUN needs one `read` and one `write`
//!   per packet and adds a trip through the base station's routing and the TUN device's queue.
//! - *It works unchanged on real NICs*: `lasthop bs --wired eth0 --wireless wlan0` needs no virtual
//!   devices.
//!
//! Measured on the project's 2-core VM (numbers in the crate README): the in-memory forwarding core
//! ([`crate::bench`]) costs 0.5–0.8 µs per frame plain and 0.1–0.2 µs more with Snoop, while the
//! whole loop on the veth testbed costs about 7 µs of CPU per frame — the system calls and, on veth, the
//! receiving host's TCP processing that the kernel runs inside our send. So the sockets, not the agents,
//! bound the rate; they are batched (`recvmmsg`/`sendmmsg`; numbers in the crate README).
//!
//! The loop needs wire-sized frames from the interfaces: GRO off on the base station's interfaces,
//! which [`run_bs`] switches off itself, and TSO/GSO off at senders on the same machine (veth peers),
//! which the testbed does. Frames whose TCP checksum a local sender left to an offload (the kernel's
//! `TP_STATUS_CSUMNOTREADY`, read from `PACKET_AUXDATA`) get their checksum finished here, so TX
//! checksum offload may stay on.
//!
//! # The loop
//!
//! Single-threaded: `ppoll` on both sockets with a nanosecond timeout set by the earliest agent timer
//! or hop event (capped at 100 ms so stop and report requests are noticed promptly even when no
//! signal reaches this thread); take up to a batch of frames from each readable socket with one
//! `recvmmsg` into the [`Forwarder`] (all stamped with one clock reading); send what they produced with
//! one `sendmmsg` per port; run timeouts when due. Time is [`Time`] since the first base
//! station started in this process, from the monotonic clock.

use crate::agents::AgentKind;
use crate::counters::Counters;
use crate::forward::{Forwarder, Port};
use crate::hop::HopConfig;
use crate::sys::{self, Offload, PacketSocket, RxBatch};
use crate::NetError;
use bytes::Bytes;
use lasthop_wire::pcap::PcapWriter;
use lasthop_wire::Time;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Everything `lasthop bs` needs.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BsConfig {
    /// The interface toward the fixed host (packets arriving here travel `ToMobile`).
    pub wired_if: String,
    /// The interface toward the mobile host, behind the emulated hop.
    pub wireless_if: String,
    pub agent: AgentKind,
    pub hop: HopConfig,
    /// Switch GRO off on both interfaces at start, so frames arrive wire-sized.
    pub disable_gro: bool,
    /// Write the IPv4 packets the wired interface receives and sends to this pcap file (LINKTYPE_RAW).
    pub pcap_wired: Option<PathBuf>,
    /// The same for the wireless interface: what the mobile host sends, and what reaches it after the
    /// emulated hop (frames the hop corrupted on the way down are not in it).
    pub pcap_wireless: Option<PathBuf>,
}

impl Default for BsConfig {
    fn default() -> Self {
        BsConfig {
            wired_if: "eth0".into(),
            wireless_if: "eth1".into(),
            agent: AgentKind::None,
            hop: HopConfig::default(),
            disable_gro: true,
            pcap_wired: None,
            pcap_wireless: None,
        }
    }
}

impl BsConfig {
    pub fn validate(&self) -> Result<(), NetError> {
        if self.wired_if == self.wireless_if {
            return Err(NetError::Config(format!("wired and wireless interface are both {:?}", self.wired_if)));
        }
        if crate::agents::check_real(self.agent)? == AgentKind::Split {
            return Err(NetError::Config(
                "agent split is not a forwarding agent: the split connection is a proxy in the base station's \
                 kernel, which the namespace testbed sets up (`lasthop testbed --agent split`)"
                    .into(),
            ));
        }
        self.hop.validate().map_err(NetError::Config)
    }
}

/// The base station's clock: nanoseconds since the first use in this process (monotonic).
pub fn now() -> Time {
    static START: OnceLock<Instant> = OnceLock::new();
    let start = *START.get_or_init(Instant::now);
    Time(start.elapsed().as_nanos().min(u64::MAX as u128) as u64)
}

/// Frames taken from one socket before looking at the other and at the timers: bounds how long one
/// busy side can starve the other.
pub(crate) const BATCH: usize = 64;
/// Longest sleep, so `stop` and `report` are seen even when no packet or signal wakes the loop.
const MAX_WAIT: Duration = Duration::from_millis(100);

/// Runs the base station until `stop` is set. Returns the final counters.
pub fn run_bs(cfg: &BsConfig, stop: &AtomicBool) -> Result<Counters, NetError> {
    let never = AtomicBool::new(false);
    run_bs_with(cfg, stop, &never, &mut |_| {}, &mut || {})
}

/// [`run_bs`] with a report hook: whenever `report` is set (the CLI sets it on SIGUSR1) the current
/// counters go to `on_report` and the flag is cleared. `on_ready` is called once the sockets are open,
/// i.e. from then on no frame is lost for want of a listener.
pub fn run_bs_with(
    cfg: &BsConfig,
    stop: &AtomicBool,
    report: &AtomicBool,
    on_report: &mut dyn FnMut(&Counters),
    on_ready: &mut dyn FnMut(),
) -> Result<Counters, NetError> {
    cfg.validate()?;
    if !sys::is_root() {
        return Err(NetError::NotRoot("opening AF_PACKET sockets"));
    }
    let open = |name: &str| -> Result<(PacketSocket, [u8; 6]), NetError> {
        if cfg.disable_gro {
            // Best effort: some drivers have no GRO switch; then frames are wire-sized anyway.
            let _ = sys::set_offload(name, Offload::Gro, false);
        }
        let s = PacketSocket::open(name).map_err(|e| NetError::io(format!("opening AF_PACKET socket on {name}"), e))?;
        let mac = sys::if_mac(name).map_err(|e| NetError::io(format!("reading the MAC of {name}"), e))?;
        Ok((s, mac))
    };
    let (wired, wired_mac) = open(&cfg.wired_if)?;
    let (wireless, wireless_mac) = open(&cfg.wireless_if)?;
    let mut fwd = Forwarder::new(cfg.agent, &cfg.hop, [wired_mac, wireless_mac])?;
    let open_pcap = |p: &Option<PathBuf>| -> Result<Option<Pcap>, NetError> {
        let Some(p) = p else { return Ok(None) };
        let f = File::create(p).map_err(|e| NetError::io(format!("creating {}", p.display()), e))?;
        let w = PcapWriter::new(BufWriter::new(f)).map_err(|e| NetError::io(format!("writing {}", p.display()), e))?;
        Ok(Some(w))
    };
    let mut pcaps = [open_pcap(&cfg.pcap_wired)?, open_pcap(&cfg.pcap_wireless)?];
    on_ready();

    let cpu0 = sys::thread_cpu_time();
    let cpu = || (sys::thread_cpu_time().saturating_sub(cpu0)).as_secs_f64();
    let socks = [&wired, &wireless];
    let fds = [wired.as_raw_fd(), wireless.as_raw_fd()];
    // Big enough for any frame the interfaces can hand us, GRO or not.
    let mut rx = RxBatch::new(BATCH, 65_536 + 64);
    let mut out: Vec<(Port, Bytes)> = Vec::with_capacity(256);
    let mut by_port: [Vec<Bytes>; 2] = [Vec::with_capacity(BATCH), Vec::with_capacity(BATCH)];
    // Sends what the forwarder emitted, one sendmmsg per port (in order within each port).
    let mut flush = |fwd: &mut Forwarder, out: &mut Vec<(Port, Bytes)>, pcaps: &mut [Option<Pcap>; 2]| {
        if out.is_empty() {
            return;
        }
        for (port, frame) in out.drain(..) {
            by_port[port as usize].push(frame);
        }
        for (i, port) in [Port::Wired, Port::Wireless].into_iter().enumerate() {
            if by_port[i].is_empty() {
                continue;
            }
            let frames: Vec<&[u8]> = by_port[i].iter().map(|f| &f[..]).collect();
            // A full send buffer drops a frame, like a full interface queue would; TCP recovers.
            let (_, failed) = socks[i].send_batch(&frames);
            for _ in 0..failed {
                fwd.count_send_error(port);
            }
            if pcaps[i].is_some() {
                for f in &by_port[i] {
                    capture(&mut pcaps[i], f);
                }
            }
            by_port[i].clear();
        }
    };

    while !stop.load(Ordering::Relaxed) {
        if report.swap(false, Ordering::Relaxed) {
            on_report(&Counters { cpu_s: cpu(), ..fwd.counters(now()) });
        }
        let t = now();
        if fwd.poll_timeout().is_some_and(|d| d <= t) {
            fwd.handle_timeout(t, &mut out);
            flush(&mut fwd, &mut out, &mut pcaps);
        }
        let wait = fwd.poll_timeout().map_or(MAX_WAIT, |d| (d - now()).min(MAX_WAIT));
        let ready = sys::wait_readable(&fds, wait).map_err(|e| NetError::io("waiting for frames", e))?;
        for (i, port) in [Port::Wired, Port::Wireless].into_iter().enumerate() {
            if !ready[i] {
                continue;
            }
            // One recvmmsg takes up to a batch; what it brought is forwarded, then sent with one sendmmsg
            // per port.
            let got = match socks[i].recv_batch(&mut rx) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => 0,
                Err(e) => {
                    let name = if port == Port::Wired { &cfg.wired_if } else { &cfg.wireless_if };
                    return Err(NetError::io(format!("receiving on {name}"), e));
                }
            };
            let t = now();
            fwd.prefetch(port, (0..got).map(|k| rx.frame(k).0));
            for k in 0..got {
                let (frame, meta) = rx.frame(k);
                capture(&mut pcaps[i], frame);
                fwd.handle_frame_meta(t, port, frame, meta.checksum_unfinished, &mut out);
            }
            flush(&mut fwd, &mut out, &mut pcaps);
        }
    }
    for (p, path) in pcaps.iter_mut().zip([&cfg.pcap_wired, &cfg.pcap_wireless]) {
        if let Some(w) = p.take() {
            w.into_inner().flush().map_err(|e| NetError::io(format!("writing {:?}", path), e))?;
        }
    }
    Ok(Counters { cpu_s: cpu(), ..fwd.counters(now()) })
}

type Pcap = PcapWriter<BufWriter<File>>;

/// Records the IPv4 packet inside an Ethernet frame (a raw-IPv4 pcap has no room for ARP and the like).
fn capture(pcap: &mut Option<Pcap>, frame: &[u8]) {
    if let Some(w) = pcap {
        if frame.len() > 14 && frame[12..14] == [0x08, 0x00] {
            // A failing disk must not stop forwarding; the capture just stops growing.
            if w.write(now(), &frame[14..]).is_err() {
                *pcap = None;
            }
        }
    }
}

/// What `lasthop bs` does: installs the SIGINT/SIGTERM/SIGUSR1 handlers, runs until SIGINT or SIGTERM,
/// prints the counters to stderr on every SIGUSR1 and to stdout on exit — as a table, or as JSON when
/// `json` is set — and returns them.
pub fn serve(cfg: &BsConfig, json: bool) -> Result<Counters, NetError> {
    sys::install_signal_handlers().map_err(|e| NetError::io("installing signal handlers", e))?;
    let show = |c: &Counters| if json { c.to_json() } else { c.to_string() };
    let mut on_report = |c: &Counters| eprintln!("{}", show(c));
    let mut on_ready = || {
        eprintln!(
            "lasthop bs: forwarding {} <-> {} with agent {} (SIGUSR1: counters, SIGINT/SIGTERM: stop)",
            cfg.wired_if, cfg.wireless_if, cfg.agent
        )
    };
    let c = run_bs_with(cfg, &sys::STOP_REQUESTED, &sys::REPORT_REQUESTED, &mut on_report, &mut on_ready)?;
    println!("{}", show(&c));
    Ok(c)
}
