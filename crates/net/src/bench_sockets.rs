//! What `lasthop bs` costs on real sockets, without kernel TCP anywhere: the base station's own I/O loop
//! ([`run_bs_with`](crate::bs::run_bs_with): AF_PACKET, `recvmmsg`/`sendmmsg`, `ppoll`) in the testbed's
//! BS namespace, between a raw-frame traffic generator in FH and a raw-frame reflector in MH.
//!
//! [`crate::bench`] times the forwarding core in memory; an unlimited-rate kernel-TCP transfer on the
//! testbed (`lasthop testbed --rate-mbps 0`) times the loop, but veth runs both hosts' TCP work inside the
//! base station's own `send`/`recv` calls (5–7 µs of its thread's CPU per frame, and a run-to-run varying
//! ACK ratio). Here the hosts run no TCP (and the loop still costs 4–5 µs per frame on the project's VM:
//! most of it is the AF_PACKET/veth path; numbers in the crate README):
//!
//! - the **generator** (on FH's veth; its sender is `SendWindow`, sans-IO) sends one bulk flow of
//!   full-size data frames, keeping at most `window` bytes beyond the highest cumulative ACK it has read
//!   back (default 64 KB, the window of Balakrishnan 1995 §7), and goes back to the ACK point when the ACK has not
//!   advanced for `rto_ms` (at an unlimited rate a full socket buffer may drop a frame; every frame sent
//!   again is counted);
//! - the **reflector** (on MH's veth; its receiver is `AckPolicy`, sans-IO) answers like a delayed-ACK
//!   receiver: a cumulative ACK for every second in-order segment (or after `delayed_ack_ms` with one
//!   waiting), the cumulative ACK at once for a segment out of order or already received.
//!
//! The flow runs between addresses no namespace owns (10.99.0.1 → 10.99.0.2), with the hosts' real MACs:
//! the hosts' kernels drop the frames as not for them (their `ip_forward` is 0, so silently) instead of
//! answering with a RST that would end Snoop's connection. The kernels' cheap IP-layer drop and the
//! AF_PACKET delivery to the other end's socket still run inside the base station's `sendmmsg` on veth, so
//! the base station's CPU per frame is the loop's cost plus that. Both ends send an ARP request first
//! and the generator opens with a three-way handshake, so the base station learns both MACs and Snoop
//! sees a connection open, as with real hosts.
//!
//! Each measurement starts a fresh base station in the same namespaces (so the plain and Snoop runs of a
//! repetition see the same veth set-up), runs `segments` data segments to their last ACK, stops the base
//! station and reads its counters: CPU of its thread (`Counters::cpu_s`) per frame received, and
//! [`SocketRun::verify`] checks that every segment reached the mobile side and that Snoop held the
//! connection all along.

use crate::agents::AgentKind;
use crate::bs::BsConfig;
use crate::counters::Counters;
use crate::forward::{frames, Mac};
use crate::hop::HopConfig;
use crate::sys::{self, PacketSocket, RxBatch};
use crate::testbed::{Node, Testbed, FH_IF, MH_IF};
use crate::NetError;
use lasthop_agents::snoop::SnoopConfig;
use lasthop_wire::ipv4::Ipv4Packet;
use lasthop_wire::tcp::TcpPacket;
use lasthop_wire::TcpFlags;
use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// The generator's address: on no interface, so FH's kernel drops the ACKs sent to it.
pub const GEN_IP: Ipv4Addr = Ipv4Addr::new(10, 99, 0, 1);
/// The reflector's address: on no interface, so MH's kernel drops the data sent to it.
pub const REFL_IP: Ipv4Addr = Ipv4Addr::new(10, 99, 0, 2);
pub const REFL_PORT: u16 = 5001;
/// Payload of every data segment (full-size Ethernet frames, as in [`crate::bench`]).
pub const MSS: usize = crate::bench::MSS;
/// Frames per `recvmmsg`/`sendmmsg` at either end (the base station's own batch).
const BATCH: usize = 64;
const ETH: usize = 14;
/// Offsets in the frames built here (IPv4 and TCP headers without options, see [`frames::tcp`]).
const TCP_AT: usize = ETH + 20;
const SEQ_AT: usize = TCP_AT + 4;
const ACK_AT: usize = TCP_AT + 8;
const TCP_CSUM_AT: usize = TCP_AT + 16;

/// One socket benchmark (`lasthop bench sockets`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SocketBenchConfig {
    /// Data segments (of [`MSS`] bytes) per measurement.
    pub segments: u64,
    /// Most bytes the generator keeps beyond the highest cumulative ACK. Default 65536: Balakrishnan 1995 §7, "the
    /// maximum possible window size for the connection was 64 KBytes".
    pub window: u32,
    /// The generator goes back to the ACK point when the ACK has not advanced for this long, ms. Not from
    /// a paper: long enough not to fire while the base station is merely descheduled on a loaded machine,
    /// short enough that a lost frame costs little of a 1–2 s measurement.
    pub rto_ms: f64,
    /// The reflector acknowledges a lone in-order segment after this long, ms (a delayed-ACK timer; every
    /// second segment is acknowledged at once). Only the last segment of an odd-length burst waits for it.
    pub delayed_ack_ms: f64,
    /// Give up on one measurement after this many seconds.
    pub timeout_s: f64,
}

impl Default for SocketBenchConfig {
    fn default() -> Self {
        SocketBenchConfig { segments: 100_000, window: 65_536, rto_ms: 20.0, delayed_ack_ms: 2.0, timeout_s: 60.0 }
    }
}

impl SocketBenchConfig {
    pub fn validate(&self) -> Result<(), NetError> {
        let bad = |m: String| Err(NetError::Config(m));
        if self.segments == 0 {
            return bad("segments must be at least 1".into());
        }
        if self.segments > (u32::MAX as u64 / 2) / MSS as u64 {
            return bad(format!(
                "segments must be at most {} (2 GB per measurement)",
                (u32::MAX as u64 / 2) / MSS as u64
            ));
        }
        if (self.window as usize) < MSS || self.window > 1 << 30 {
            return bad(format!("window must be between {MSS} B (one segment) and 1 GiB, got {}", self.window));
        }
        for (name, v, max) in [
            ("rto_ms", self.rto_ms, 10_000.0),
            ("delayed_ack_ms", self.delayed_ack_ms, 10_000.0),
            ("timeout_s", self.timeout_s, 86_400.0),
        ] {
            if !(v.is_finite() && v > 0.0 && v <= max) {
                return bad(format!("{name} must be positive and at most {max}, got {v}"));
            }
        }
        Ok(())
    }
}

/// What the generator did in one measurement.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct GeneratorStats {
    /// Data frames handed to the socket, first sends and resends.
    pub frames_sent: u64,
    /// ARP, SYN and ACK frames of the handshake handed to the socket.
    pub handshake_frames: u64,
    /// Data frames sent again after going back to the ACK point.
    pub resends: u64,
    /// Times the ACK stalled for `rto_ms` and the generator went back.
    pub go_backs: u64,
    /// Frames the generator's own socket refused (full send buffer); lost, and sent again later.
    pub send_refused: u64,
    /// ACK frames read back.
    pub acks_read: u64,
    /// From the first data frame sent to the last segment acknowledged, s.
    pub elapsed_s: f64,
    /// CPU of the generator's thread, s.
    pub cpu_s: f64,
}

/// What the reflector saw in one measurement.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ReflectorStats {
    /// Data segments accepted in order (each segment of the flow once).
    pub in_order: u64,
    /// Data segments beyond the next expected byte (one before them was lost); answered by a duplicate ACK.
    pub out_of_order: u64,
    /// Data segments already received (resent); answered by an ACK at once.
    pub duplicates: u64,
    /// Cumulative ACKs sent for new data.
    pub acks: u64,
    /// Duplicate ACKs sent.
    pub dupacks: u64,
    /// ACKs sent by the delayed-ACK timer (included in `acks`).
    pub delayed_acks: u64,
    /// Every frame handed to the socket: ARP, SYN-ACKs, ACKs.
    pub frames_sent: u64,
    /// CPU of the reflector's thread, s.
    pub cpu_s: f64,
}

/// One measurement: one agent, one fresh base station, `segments` segments.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SocketRun {
    pub agent: AgentKind,
    pub segments: u64,
    /// The generator's window, bytes.
    pub window: u32,
    pub generator: GeneratorStats,
    pub reflector: ReflectorStats,
    /// The base station's counters over its whole run (handshake included).
    pub counters: Counters,
}

impl SocketRun {
    /// Frames the base station received on both ports (data, ACKs, handshake).
    pub fn frames_in(&self) -> u64 {
        self.counters.wired.frames_in + self.counters.wireless.frames_in
    }
    /// CPU of the base station's thread per frame received, ns.
    pub fn cpu_ns_per_frame(&self) -> f64 {
        self.counters.cpu_s * 1e9 / self.frames_in().max(1) as f64
    }
    /// Data segments delivered per second (first send to last ACK).
    pub fn data_frames_per_s(&self) -> f64 {
        self.segments as f64 / self.generator.elapsed_s.max(1e-9)
    }
    /// TCP payload delivered, Gb/s.
    pub fn goodput_gbps(&self) -> f64 {
        self.data_frames_per_s() * MSS as f64 * 8.0 / 1e9
    }

    /// Checks that the measurement measured what it claims: every segment reached the reflector once in
    /// order, the base station forwarded at least that many frames toward the mobile, and (Snoop) the
    /// agent opened exactly one connection and handled every segment. Within Snoop's high-water mark
    /// (64 KiB, Balakrishnan 1995 §6; the default window) it caches every segment; beyond it, new segments pass
    /// uncached by design (`packets_uncached_high_water`), so then cached and uncached together must
    /// cover them.
    pub fn verify(&self) -> Result<(), String> {
        let c = &self.counters;
        if self.reflector.in_order != self.segments {
            return Err(format!("the reflector accepted {} of {} segments", self.reflector.in_order, self.segments));
        }
        // Handshake: ARP and SYN/ACK toward the mobile come on top.
        if c.wireless.frames_out < self.segments {
            return Err(format!(
                "the base station sent {} frames toward the mobile for {} segments",
                c.wireless.frames_out, self.segments
            ));
        }
        // Anything more came from the hosts' kernels (a RST would end Snoop's connection).
        let (gen_sent, refl_sent) =
            (self.generator.frames_sent + self.generator.handshake_frames, self.reflector.frames_sent);
        if c.wired.frames_in > gen_sent || c.wireless.frames_in > refl_sent {
            return Err(format!(
                "the base station received {} frames from the fixed side and {} from the mobile side, but the generator sent {gen_sent} and the reflector {refl_sent}",
                c.wired.frames_in, c.wireless.frames_in
            ));
        }
        if c.agent_panics > 0 {
            return Err(format!("the agent panicked {} times", c.agent_panics));
        }
        if self.agent == AgentKind::Snoop {
            let created = c.agent_counter("connections_created");
            if created != 1 {
                return Err(format!("Snoop created {created} connections (1 expected: it lost its state)"));
            }
            let cached = c.agent_counter("packets_cached");
            let uncached = c.agent_counter("packets_uncached_high_water");
            if self.window as usize <= SnoopConfig::default().high_water_bytes {
                if cached < self.segments {
                    return Err(format!("Snoop cached {cached} of {} segments", self.segments));
                }
            } else if cached == 0 || cached + uncached < self.segments {
                return Err(format!(
                    "Snoop cached {cached} and passed {uncached} uncached of {} segments",
                    self.segments
                ));
            }
        }
        Ok(())
    }
}

/// Medians over repetitions, and the medians of the per-repetition Snoop/plain ratios.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct SocketBenchSummary {
    pub repetitions: usize,
    /// [plain, Snoop] base-station CPU per frame received, ns.
    pub cpu_ns_per_frame: [f64; 2],
    pub goodput_gbps: [f64; 2],
    pub data_frames_per_s: [f64; 2],
    /// Data frames the generator sent again, per measurement.
    pub resends: [f64; 2],
    /// Snoop/plain of CPU per frame.
    pub cpu_ratio: f64,
    /// Snoop/plain of throughput.
    pub throughput_ratio: f64,
}

pub fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

impl SocketBenchSummary {
    /// From repetitions of `[plain, snoop]`, each pair measured back to back.
    pub fn from_pairs(pairs: &[[SocketRun; 2]]) -> SocketBenchSummary {
        let each = |f: &dyn Fn(&SocketRun) -> f64| -> [f64; 2] {
            [0, 1].map(|i| median(&pairs.iter().map(|p| f(&p[i])).collect::<Vec<_>>()))
        };
        let ratio =
            |f: &dyn Fn(&SocketRun) -> f64| median(&pairs.iter().map(|p| f(&p[1]) / f(&p[0])).collect::<Vec<_>>());
        SocketBenchSummary {
            repetitions: pairs.len(),
            cpu_ns_per_frame: each(&|r| r.cpu_ns_per_frame()),
            goodput_gbps: each(&|r| r.goodput_gbps()),
            data_frames_per_s: each(&|r| r.data_frames_per_s()),
            resends: each(&|r| r.generator.resends as f64),
            cpu_ratio: ratio(&|r| r.cpu_ns_per_frame()),
            throughput_ratio: ratio(&|r| r.goodput_gbps()),
        }
    }
}

/// The testbed's namespaces and the two hosts' MACs, reused by every measurement.
pub struct SocketBench {
    tb: Testbed,
    fh_mac: Mac,
    mh_mac: Mac,
    cfg: SocketBenchConfig,
    /// A new generator port per measurement, so no frame of an earlier one is taken for this one's.
    next_port: u16,
}

impl SocketBench {
    /// Builds the namespaces (needs root; refuses clearly otherwise, as the testbed does).
    pub fn new(cfg: SocketBenchConfig) -> Result<SocketBench, NetError> {
        cfg.validate()?;
        if !sys::is_root() {
            return Err(NetError::NotRoot("the socket benchmark (network namespaces, AF_PACKET sockets)"));
        }
        sys::install_signal_handlers().map_err(|e| NetError::io("installing signal handlers", e))?;
        let tb = Testbed::create()?;
        let mac_of = |node, dev: &'static str| -> Result<Mac, NetError> {
            tb.run_in(node, move || sys::if_mac(dev))?.map_err(|e| NetError::io(format!("reading the MAC of {dev}"), e))
        };
        let fh_mac = mac_of(Node::Fh, FH_IF)?;
        let mh_mac = mac_of(Node::Mh, MH_IF)?;
        Ok(SocketBench { tb, fh_mac, mh_mac, cfg, next_port: 40_000 })
    }

    pub fn config(&self) -> &SocketBenchConfig {
        &self.cfg
    }

    /// Changes the configuration of the measurements to come (checked by [`measure`](Self::measure)).
    pub fn config_mut(&mut self) -> &mut SocketBenchConfig {
        &mut self.cfg
    }

    /// One measurement of `segments` segments through a fresh base station running `agent`.
    pub fn measure(&mut self, agent: AgentKind, segments: u64) -> Result<SocketRun, NetError> {
        let cfg = SocketBenchConfig { segments, ..self.cfg.clone() };
        cfg.validate()?;
        let port = self.next_port;
        self.next_port = if port >= 60_000 { 40_000 } else { port + 1 };
        let flow = Flow { fh_mac: self.fh_mac, mh_mac: self.mh_mac, gen_port: port, gen_isn: 1_000, refl_isn: 7 };

        // `lasthop bs` as it runs: no emulation, no rate limit, no errors.
        let bs = self.tb.start_bs_with(BsConfig { agent, hop: HopConfig::default(), ..BsConfig::default() })?;
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = mpsc::channel();
        let (s, c) = (stop.clone(), cfg.clone());
        let reflector = self.tb.spawn_in(Node::Mh, move || -> Result<ReflectorStats, NetError> {
            let r = Reflector::open(flow, &c).and_then(|mut r| {
                r.announce()?;
                let _ = ready_tx.send(());
                r.run(&s)
            });
            // The generator would otherwise wait for ACKs until its timeout.
            s.store(true, Ordering::Relaxed);
            r
        })?;
        let started = ready_rx.recv_timeout(Duration::from_secs(10)).is_ok();
        let generated = if started {
            let (s, c) = (stop.clone(), cfg.clone());
            self.tb
                .spawn_in(Node::Fh, move || -> Result<GeneratorStats, NetError> {
                    let r = Generator::open(flow, &c).and_then(|mut g| g.run(&s));
                    s.store(true, Ordering::Relaxed);
                    r
                })?
                .join()
                .map_err(|_| NetError::Transfer("the generator panicked".into()))
        } else {
            Err(NetError::Transfer("the reflector did not start".into()))
        };
        stop.store(true, Ordering::Relaxed);
        let reflected = reflector.join().map_err(|_| NetError::Transfer("the reflector panicked".into()));
        let counters = bs.stop();
        if sys::STOP_REQUESTED.load(Ordering::Relaxed) {
            return Err(NetError::Interrupted);
        }
        // A failed reflector stops the generator: its error is the cause, the generator's the consequence.
        let reflector = reflected??;
        let generator = generated??;
        Ok(SocketRun { agent, segments, window: cfg.window, generator, reflector, counters: counters? })
    }
}

/// The flow's fixed parts, shared by both ends.
#[derive(Debug, Clone, Copy)]
struct Flow {
    fh_mac: Mac,
    mh_mac: Mac,
    gen_port: u16,
    gen_isn: u32,
    refl_isn: u32,
}

impl Flow {
    fn gen(&self) -> (Ipv4Addr, u16) {
        (GEN_IP, self.gen_port)
    }
    fn refl() -> (Ipv4Addr, u16) {
        (REFL_IP, REFL_PORT)
    }
    /// The first data byte's sequence number.
    fn data_start(&self) -> u32 {
        self.gen_isn.wrapping_add(1)
    }
    /// A data frame (sequence number 0; [`set_u32`] writes the real one) with the generator's payload.
    fn data_template(&self) -> Vec<u8> {
        let payload: Vec<u8> = (0..MSS).map(|i| i as u8).collect();
        let ack = Some(self.refl_isn.wrapping_add(1));
        frames::tcp(self.mh_mac, self.fh_mac, self.gen(), Flow::refl(), 0, ack, TcpFlags::PSH, &payload)
    }
    /// An ACK frame from the reflector (ACK number 0; [`set_u32`] writes the real one).
    fn ack_template(&self) -> Vec<u8> {
        let seq = self.refl_isn.wrapping_add(1);
        frames::tcp(self.fh_mac, self.mh_mac, Flow::refl(), self.gen(), seq, Some(0), TcpFlags::NONE, &[])
    }
}

/// Writes `v` at `at` (a 32-bit field of a TCP header) and updates the TCP checksum at `csum_at` for the
/// change without summing the segment again (RFC 1624, eqn. 3: HC' = ~(~HC + ~m + m')).
pub fn set_u32(frame: &mut [u8], at: usize, csum_at: usize, v: u32) {
    let old = u32::from_be_bytes([frame[at], frame[at + 1], frame[at + 2], frame[at + 3]]);
    let hc = u16::from_be_bytes([frame[csum_at], frame[csum_at + 1]]);
    let mut sum = u32::from(!hc);
    for w in [(old >> 16) as u16, old as u16] {
        sum += u32::from(!w);
    }
    for w in [(v >> 16) as u16, v as u16] {
        sum += u32::from(w);
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    frame[csum_at..csum_at + 2].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    frame[at..at + 4].copy_from_slice(&v.to_be_bytes());
}

/// A TCP segment of the flow between `src` and `dst` in an Ethernet frame: (seq, ack, flags, payload length).
fn parse_tcp(frame: &[u8], src: Ipv4Addr, dst: Ipv4Addr) -> Option<(u32, u32, TcpFlags, usize)> {
    if frame.len() < ETH + 20 || frame[12..14] != [0x08, 0x00] {
        return None;
    }
    let ip = Ipv4Packet::new_checked(&frame[ETH..]).ok()?;
    if ip.protocol() != 6 || ip.src_addr() != src || ip.dst_addr() != dst {
        return None;
    }
    let tcp = TcpPacket::new_checked(ip.payload()).ok()?;
    Some((tcp.seq_number().0, tcp.ack_number().0, tcp.flags(), tcp.payload().len()))
}

/// Signed distance from `b` to `a` in sequence space.
fn seq_diff(a: u32, b: u32) -> i64 {
    i64::from(a.wrapping_sub(b) as i32)
}

fn elapsed_ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e3
}

/// An AF_PACKET socket on `ifname`, with an error that names the interface.
fn open_socket(ifname: &str) -> Result<PacketSocket, NetError> {
    PacketSocket::open(ifname).map_err(|e| NetError::io(format!("opening AF_PACKET socket on {ifname}"), e))
}

/// The fixed host's side: a windowed bulk sender with go-back-N, on raw frames.
struct Generator {
    sock: PacketSocket,
    flow: Flow,
    cfg: SocketBenchConfig,
    rx: RxBatch,
    stats: GeneratorStats,
}

impl Generator {
    fn open(flow: Flow, cfg: &SocketBenchConfig) -> Result<Generator, NetError> {
        let sock = open_socket(FH_IF)?;
        Ok(Generator { sock, flow, cfg: cfg.clone(), rx: RxBatch::new(BATCH, 2048), stats: GeneratorStats::default() })
    }

    fn deadline_passed(&self, deadline: Instant, stop: &AtomicBool, what: &str) -> Result<(), NetError> {
        if sys::STOP_REQUESTED.load(Ordering::Relaxed) {
            return Err(NetError::Interrupted);
        }
        if stop.load(Ordering::Relaxed) {
            return Err(NetError::Transfer(format!("generator stopped while {what}")));
        }
        if Instant::now() > deadline {
            return Err(NetError::Transfer(format!("generator timed out while {what}")));
        }
        Ok(())
    }

    /// ARP, SYN (again every 50 ms until the SYN-ACK is back), ACK: the base station learns the MAC and
    /// Snoop sees the connection open.
    fn handshake(&mut self, deadline: Instant, stop: &AtomicBool) -> Result<(), NetError> {
        let f = self.flow;
        let arp = frames::arp_request(f.fh_mac, GEN_IP, REFL_IP);
        let syn = frames::tcp(f.mh_mac, f.fh_mac, f.gen(), Flow::refl(), f.gen_isn, None, TcpFlags::SYN, &[]);
        let want_ack = f.data_start();
        loop {
            self.deadline_passed(deadline, stop, "waiting for the SYN-ACK")?;
            self.stats.handshake_frames += self.sock.send_batch(&[&arp, &syn]).0 as u64;
            let t = Instant::now();
            while elapsed_ms(t) < 50.0 {
                sys::wait_readable(&[self.sock.as_raw_fd()], Duration::from_millis(10))
                    .map_err(|e| NetError::io("waiting for the SYN-ACK", e))?;
                let n =
                    self.sock.recv_batch(&mut self.rx).map_err(|e| NetError::io(format!("receiving on {FH_IF}"), e))?;
                for k in 0..n {
                    let (frame, _) = self.rx.frame(k);
                    if let Some((_, ack, flags, _)) = parse_tcp(frame, REFL_IP, GEN_IP) {
                        if flags.contains(TcpFlags::SYN) && flags.contains(TcpFlags::ACK) && ack == want_ack {
                            let ack = Some(f.refl_isn.wrapping_add(1));
                            let a = frames::tcp(
                                f.mh_mac,
                                f.fh_mac,
                                f.gen(),
                                Flow::refl(),
                                want_ack,
                                ack,
                                TcpFlags::NONE,
                                &[],
                            );
                            self.sock.send(&a).map_err(|e| NetError::io("sending the handshake's ACK", e))?;
                            self.stats.handshake_frames += 1;
                            return Ok(());
                        }
                    }
                }
            }
        }
    }

    /// Reads every waiting ACK into `w`.
    fn read_acks(&mut self, w: &mut SendWindow, now: Instant) -> Result<(), NetError> {
        loop {
            let n = self.sock.recv_batch(&mut self.rx).map_err(|e| NetError::io(format!("receiving on {FH_IF}"), e))?;
            for k in 0..n {
                let (frame, _) = self.rx.frame(k);
                if let Some((_, ack, flags, _)) = parse_tcp(frame, REFL_IP, GEN_IP) {
                    if flags.contains(TcpFlags::ACK) && !flags.contains(TcpFlags::SYN) {
                        self.stats.acks_read += 1;
                        w.on_ack(ack, now);
                    }
                }
            }
            if n < self.rx.capacity() {
                return Ok(());
            }
        }
    }

    fn run(&mut self, stop: &AtomicBool) -> Result<GeneratorStats, NetError> {
        let cpu0 = sys::thread_cpu_time();
        let deadline = Instant::now() + Duration::from_secs_f64(self.cfg.timeout_s);
        self.handshake(deadline, stop)?;
        let start = self.flow.data_start();
        let mut bufs: Vec<Vec<u8>> = vec![self.flow.data_template(); BATCH];
        let t0 = Instant::now();
        let mut w = SendWindow::new(&self.cfg, start, t0);
        while !w.done() {
            if let Err(e) = self.deadline_passed(deadline, stop, "sending") {
                return Err(match e {
                    NetError::Transfer(m) => {
                        NetError::Transfer(format!("{m}: {} of {} B acknowledged", w.acked, w.total))
                    }
                    e => e,
                });
            }
            self.read_acks(&mut w, Instant::now())?;
            if w.done() {
                break;
            }
            w.on_tick(Instant::now());
            let mut n = 0;
            while n < BATCH {
                let Some(seq) = w.next_segment() else { break };
                set_u32(&mut bufs[n], SEQ_AT, TCP_CSUM_AT, seq);
                n += 1;
            }
            if n > 0 {
                let out: Vec<&[u8]> = bufs[..n].iter().map(|b| &b[..]).collect();
                let (sent, refused) = self.sock.send_batch(&out);
                self.stats.frames_sent += sent as u64;
                self.stats.send_refused += refused as u64;
            } else {
                // Window full (or all sent): wait for an ACK, or for the go-back-N timer.
                let wait = w.until_go_back(Instant::now()).clamp(Duration::from_micros(50), Duration::from_millis(10));
                sys::wait_readable(&[self.sock.as_raw_fd()], wait).map_err(|e| NetError::io("waiting for ACKs", e))?;
            }
        }
        self.stats.elapsed_s = t0.elapsed().as_secs_f64();
        self.stats.cpu_s = sys::thread_cpu_time().saturating_sub(cpu0).as_secs_f64();
        self.stats.resends = w.resends;
        self.stats.go_backs = w.go_backs;
        Ok(self.stats)
    }
}

/// The generator's sender, sans-IO: what may be sent under the window, what the ACKs acknowledged, and when
/// to go back. Offsets are bytes from the first data byte (`start` on the wire), so a run may cross the
/// sequence-number wrap.
#[derive(Debug, Clone)]
struct SendWindow {
    start: u32,
    total: u64,
    window: u64,
    rto: Duration,
    /// Acknowledged, next to send, highest ever sent.
    acked: u64,
    next: u64,
    high: u64,
    /// When the ACK point last moved (or the generator last went back).
    progress: Instant,
    resends: u64,
    go_backs: u64,
}

impl SendWindow {
    fn new(cfg: &SocketBenchConfig, start: u32, now: Instant) -> SendWindow {
        SendWindow {
            start,
            total: cfg.segments * MSS as u64,
            window: u64::from(cfg.window),
            rto: Duration::from_secs_f64(cfg.rto_ms / 1e3),
            acked: 0,
            next: 0,
            high: 0,
            progress: now,
            resends: 0,
            go_backs: 0,
        }
    }

    fn done(&self) -> bool {
        self.acked >= self.total
    }

    /// A cumulative ACK `ack` (wire sequence number) read back. Old and duplicate ACKs change nothing; an
    /// ACK beyond what was sent is taken only up to it.
    fn on_ack(&mut self, ack: u32, now: Instant) {
        let ahead = seq_diff(ack, self.start.wrapping_add(self.acked as u32));
        if ahead > 0 {
            self.acked = (self.acked + ahead as u64).min(self.high);
            self.next = self.next.max(self.acked);
            self.progress = now;
        }
    }

    /// Go-back-N: when the ACK has not moved for `rto` with data outstanding, whatever is beyond the ACK
    /// point is taken as lost and sent again.
    fn on_tick(&mut self, now: Instant) {
        if self.next > self.acked && now.saturating_duration_since(self.progress) >= self.rto {
            self.go_backs += 1;
            self.next = self.acked;
            self.progress = now;
        }
    }

    /// How long until [`on_tick`](Self::on_tick) would go back (zero: due).
    fn until_go_back(&self, now: Instant) -> Duration {
        self.rto.saturating_sub(now.saturating_duration_since(self.progress))
    }

    /// The wire sequence number of the next segment to send, if the window and the flow's length allow one.
    fn next_segment(&mut self) -> Option<u32> {
        let mss = MSS as u64;
        if self.next >= self.total || self.next + mss > self.acked + self.window {
            return None;
        }
        if self.next < self.high {
            self.resends += 1;
        }
        let seq = self.start.wrapping_add(self.next as u32);
        self.next += mss;
        self.high = self.high.max(self.next);
        Some(seq)
    }
}

/// What the reflector answers to a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reply {
    /// Nothing yet (the first of two in-order segments, or not a segment of the flow).
    Hold,
    /// A SYN-ACK acknowledging this sequence number.
    SynAck(u32),
    /// A cumulative ACK of this sequence number.
    Ack(u32),
}

/// The reflector's receiver, sans-IO: the next byte expected, and the delayed-ACK rule (every second
/// in-order segment at once, a lone one after `delayed_ack`, anything out of order or old at once). It
/// keeps no out-of-order data, so after a loss the generator must go back.
#[derive(Debug, Clone)]
struct AckPolicy {
    rcv_nxt: Option<u32>,
    /// In-order segments not yet acknowledged, and since when.
    pending: u32,
    pending_since: Instant,
    delayed_ack: Duration,
    stats: ReflectorStats,
}

impl AckPolicy {
    fn new(delayed_ack: Duration, now: Instant) -> AckPolicy {
        AckPolicy { rcv_nxt: None, pending: 0, pending_since: now, delayed_ack, stats: ReflectorStats::default() }
    }

    /// A segment from the generator: sequence number, flags, payload length.
    fn on_segment(&mut self, seq: u32, flags: TcpFlags, len: usize, now: Instant) -> Reply {
        if flags.contains(TcpFlags::SYN) {
            let next = seq.wrapping_add(1);
            self.rcv_nxt = Some(next);
            self.pending = 0;
            return Reply::SynAck(next);
        }
        let (Some(nxt), true) = (self.rcv_nxt, len > 0) else { return Reply::Hold };
        let d = seq_diff(seq, nxt);
        if d == 0 {
            let nxt = nxt.wrapping_add(len as u32);
            self.rcv_nxt = Some(nxt);
            self.stats.in_order += 1;
            if self.pending == 0 {
                self.pending_since = now;
            }
            self.pending += 1;
            if self.pending < 2 {
                return Reply::Hold;
            }
            self.pending = 0;
            self.stats.acks += 1;
            return Reply::Ack(nxt);
        }
        if d > 0 {
            self.stats.out_of_order += 1;
        } else {
            self.stats.duplicates += 1;
        }
        // What a receiver without an out-of-order queue answers: the cumulative ACK, at once (a new one if
        // it covers a held segment, else a duplicate).
        if self.pending > 0 {
            self.pending = 0;
            self.stats.acks += 1;
        } else {
            self.stats.dupacks += 1;
        }
        Reply::Ack(nxt)
    }

    /// When the delayed-ACK timer is due, or None when no segment waits.
    fn ack_due(&self) -> Option<Instant> {
        (self.pending > 0).then(|| self.pending_since + self.delayed_ack)
    }

    /// The delayed ACK, if its timer has run out.
    fn on_tick(&mut self, now: Instant) -> Option<u32> {
        let nxt = self.rcv_nxt?;
        if self.ack_due().is_some_and(|due| due <= now) {
            self.pending = 0;
            self.stats.acks += 1;
            self.stats.delayed_acks += 1;
            return Some(nxt);
        }
        None
    }
}

/// The mobile host's side: [`AckPolicy`] on a socket.
struct Reflector {
    sock: PacketSocket,
    flow: Flow,
    policy: AckPolicy,
    rx: RxBatch,
    /// Every frame handed to the socket (ARP, SYN-ACKs, ACKs).
    frames_sent: u64,
}

impl Reflector {
    fn open(flow: Flow, cfg: &SocketBenchConfig) -> Result<Reflector, NetError> {
        let sock = open_socket(MH_IF)?;
        Ok(Reflector {
            sock,
            flow,
            policy: AckPolicy::new(Duration::from_secs_f64(cfg.delayed_ack_ms / 1e3), Instant::now()),
            rx: RxBatch::new(BATCH, 2048),
            frames_sent: 0,
        })
    }

    /// An ARP request, so the base station knows the reflector's MAC before the SYN comes.
    fn announce(&mut self) -> Result<(), NetError> {
        let arp = frames::arp_request(self.flow.mh_mac, REFL_IP, GEN_IP);
        self.sock.send(&arp).map_err(|e| NetError::io(format!("sending ARP on {MH_IF}"), e))?;
        self.frames_sent += 1;
        Ok(())
    }

    fn run(&mut self, stop: &AtomicBool) -> Result<ReflectorStats, NetError> {
        let cpu0 = sys::thread_cpu_time();
        let f = self.flow;
        let mut tmpl = f.ack_template();
        let mut out: Vec<Vec<u8>> = Vec::with_capacity(BATCH);
        let mut ack = |out: &mut Vec<Vec<u8>>, v: u32| {
            set_u32(&mut tmpl, ACK_AT, TCP_CSUM_AT, v);
            out.push(tmpl.clone());
        };
        while !stop.load(Ordering::Relaxed) {
            let wait = self
                .policy
                .ack_due()
                .map_or(Duration::from_millis(10), |due| due.saturating_duration_since(Instant::now()));
            sys::wait_readable(&[self.sock.as_raw_fd()], wait).map_err(|e| NetError::io("waiting for data", e))?;
            loop {
                let n =
                    self.sock.recv_batch(&mut self.rx).map_err(|e| NetError::io(format!("receiving on {MH_IF}"), e))?;
                let now = Instant::now();
                for k in 0..n {
                    let (frame, _) = self.rx.frame(k);
                    let Some((seq, _, flags, len)) = parse_tcp(frame, GEN_IP, REFL_IP) else { continue };
                    match self.policy.on_segment(seq, flags, len, now) {
                        Reply::Hold => {}
                        Reply::Ack(v) => ack(&mut out, v),
                        Reply::SynAck(v) => out.push(frames::tcp(
                            f.fh_mac,
                            f.mh_mac,
                            Flow::refl(),
                            f.gen(),
                            f.refl_isn,
                            Some(v),
                            TcpFlags::SYN,
                            &[],
                        )),
                    }
                }
                if let Some(v) = self.policy.on_tick(Instant::now()) {
                    ack(&mut out, v);
                }
                if !out.is_empty() {
                    let frames: Vec<&[u8]> = out.iter().map(|a| &a[..]).collect();
                    // A refused ACK is a lost ACK: the next one covers it (cumulative), or the generator goes back.
                    self.frames_sent += self.sock.send_batch(&frames).0 as u64;
                    out.clear();
                }
                if n < self.rx.capacity() {
                    break;
                }
            }
        }
        Ok(ReflectorStats {
            frames_sent: self.frames_sent,
            cpu_s: sys::thread_cpu_time().saturating_sub(cpu0).as_secs_f64(),
            ..self.policy.stats
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow() -> Flow {
        Flow { fh_mac: [2, 0, 0, 0, 0, 1], mh_mac: [2, 0, 0, 0, 0, 2], gen_port: 40_000, gen_isn: 1_000, refl_isn: 7 }
    }

    fn tcp_checksum_ok(frame: &[u8], src: Ipv4Addr, dst: Ipv4Addr) -> bool {
        let ip = Ipv4Packet::new_checked(&frame[ETH..]).unwrap();
        TcpPacket::new_checked(ip.payload()).unwrap().verify_checksum(src, dst)
    }

    #[test]
    fn patched_sequence_numbers_keep_the_checksum_right() {
        let f = flow();
        let mut t = f.data_template();
        for seq in [0u32, 1, 0xffff, 0x1_0000, 0x8000_0000, 0xffff_ffff, 1_001, 123_456_789, 0xfffe_0001] {
            set_u32(&mut t, SEQ_AT, TCP_CSUM_AT, seq);
            assert!(tcp_checksum_ok(&t, GEN_IP, REFL_IP), "seq {seq:#x}");
            let built = frames::tcp(f.mh_mac, f.fh_mac, f.gen(), Flow::refl(), seq, Some(8), TcpFlags::PSH, &t[54..]);
            assert_eq!(&t[..TCP_CSUM_AT], &built[..TCP_CSUM_AT], "seq {seq:#x}");
            assert_eq!(parse_tcp(&t, GEN_IP, REFL_IP), Some((seq, 8, TcpFlags::PSH | TcpFlags::ACK, MSS)));
        }
        let mut a = f.ack_template();
        for v in [0u32, 1_001 + 2 * MSS as u32, u32::MAX] {
            set_u32(&mut a, ACK_AT, TCP_CSUM_AT, v);
            assert!(tcp_checksum_ok(&a, REFL_IP, GEN_IP), "ack {v:#x}");
            assert_eq!(parse_tcp(&a, REFL_IP, GEN_IP), Some((8, v, TcpFlags::ACK, 0)));
        }
    }

    #[test]
    fn frames_of_other_flows_are_not_taken_for_the_benchmarks() {
        let f = flow();
        let t = f.data_template();
        assert_eq!(parse_tcp(&t, REFL_IP, GEN_IP), None, "wrong direction");
        assert_eq!(parse_tcp(&frames::arp_request(f.fh_mac, GEN_IP, REFL_IP), GEN_IP, REFL_IP), None);
        assert_eq!(parse_tcp(&t[..30], GEN_IP, REFL_IP), None, "truncated");
    }

    fn window(segments: u64, window: u32) -> (SendWindow, Instant) {
        let t0 = Instant::now();
        let cfg = SocketBenchConfig { segments, window, rto_ms: 20.0, ..SocketBenchConfig::default() };
        (SendWindow::new(&cfg, u32::MAX - 2 * MSS as u32, t0), t0)
    }

    fn drain(w: &mut SendWindow) -> Vec<u32> {
        std::iter::from_fn(|| w.next_segment()).collect()
    }

    const M: u32 = MSS as u32;

    #[test]
    fn the_generator_keeps_at_most_a_window_beyond_the_ack() {
        // 64 KB holds 44 full segments; the start is just before the wrap, so sequence numbers cross it.
        let (mut w, t0) = window(100, 65_536);
        let s = w.start;
        let sent = drain(&mut w);
        assert_eq!(sent.len(), 44);
        assert_eq!(sent[3], M - 1, "wrapped");
        assert_eq!(sent[43], s.wrapping_add(43 * M));
        // Two segments acknowledged: two more may go, no more.
        w.on_ack(s.wrapping_add(2 * M), t0);
        assert_eq!(drain(&mut w), vec![s.wrapping_add(44 * M), s.wrapping_add(45 * M)]);
        // Old and duplicate ACKs change nothing; an ACK beyond what was sent counts only up to it.
        w.on_ack(s.wrapping_add(M), t0);
        w.on_ack(s.wrapping_add(2 * M), t0);
        assert!(drain(&mut w).is_empty());
        w.on_ack(s.wrapping_add(500 * M), t0);
        assert_eq!(w.acked, 46 * MSS as u64);
        assert_eq!((w.resends, w.go_backs), (0, 0));
        // The flow ends at its last segment.
        assert_eq!(drain(&mut w).len(), 44);
        w.on_ack(s.wrapping_add(90 * M), t0);
        assert_eq!(drain(&mut w).len(), 10);
        assert!(!w.done());
        w.on_ack(s.wrapping_add(100 * M), t0);
        assert!(w.done());
        assert!(drain(&mut w).is_empty());
    }

    #[test]
    fn the_generator_goes_back_to_the_ack_after_rto_and_counts_resends() {
        let (mut w, t0) = window(100, 10 * M);
        let s = w.start;
        assert_eq!(drain(&mut w).len(), 10);
        w.on_ack(s.wrapping_add(4 * M), t0 + Duration::from_millis(5));
        assert_eq!(drain(&mut w).len(), 4);
        // 19 ms after the last progress: not yet.
        w.on_tick(t0 + Duration::from_millis(24));
        assert_eq!(w.go_backs, 0);
        assert_eq!(w.until_go_back(t0 + Duration::from_millis(24)), Duration::from_millis(1));
        assert!(drain(&mut w).is_empty());
        // 20 ms: everything beyond the ACK point goes again, counted as resends.
        w.on_tick(t0 + Duration::from_millis(25));
        assert_eq!(w.go_backs, 1);
        let again = drain(&mut w);
        assert_eq!(again, (4..14).map(|k| s.wrapping_add(k * M)).collect::<Vec<_>>());
        assert_eq!(w.resends, 10);
        // An ACK arriving for the first copies moves on; only new data follows, not counted as resent.
        w.on_ack(s.wrapping_add(14 * M), t0 + Duration::from_millis(26));
        assert_eq!(drain(&mut w).first(), Some(&s.wrapping_add(14 * M)));
        assert_eq!(w.resends, 10);
        // Nothing outstanding: no going back however long it waits.
        let mut idle = window(2, 65_536).0;
        let (s2, t) = (idle.start, idle.progress);
        drain(&mut idle);
        idle.on_ack(s2.wrapping_add(2 * M), t);
        idle.on_tick(t + Duration::from_secs(10));
        assert_eq!(idle.go_backs, 0);
    }

    #[test]
    fn the_reflector_acks_every_second_segment_and_at_once_when_out_of_order() {
        let t0 = Instant::now();
        let mut p = AckPolicy::new(Duration::from_millis(2), t0);
        let isn = u32::MAX - 1;
        // Data before the SYN is not the flow's.
        assert_eq!(p.on_segment(5, TcpFlags::PSH, MSS, t0), Reply::Hold);
        assert_eq!(p.on_segment(isn, TcpFlags::SYN, 0, t0), Reply::SynAck(u32::MAX));
        let seg = |k: u32| u32::MAX.wrapping_add(k * M);
        assert_eq!(p.on_segment(seg(0), TcpFlags::PSH, MSS, t0), Reply::Hold);
        assert_eq!(p.on_segment(seg(1), TcpFlags::PSH, MSS, t0), Reply::Ack(seg(2)));
        // The bare ACK of the handshake carries no data: nothing to answer.
        assert_eq!(p.on_segment(seg(2), TcpFlags::ACK, 0, t0), Reply::Hold);
        // Segment 3 is lost: 4 is out of order, answered at once with the cumulative ACK (a duplicate).
        assert_eq!(p.on_segment(seg(2), TcpFlags::PSH, MSS, t0), Reply::Hold);
        assert_eq!(p.on_segment(seg(4), TcpFlags::PSH, MSS, t0), Reply::Ack(seg(3)), "covers the held 2");
        assert_eq!(p.on_segment(seg(5), TcpFlags::PSH, MSS, t0), Reply::Ack(seg(3)), "duplicate");
        // An old segment (resent) is answered at once too.
        assert_eq!(p.on_segment(seg(1), TcpFlags::PSH, MSS, t0), Reply::Ack(seg(3)));
        // After going back: 3, 4 in order again.
        assert_eq!(p.on_segment(seg(3), TcpFlags::PSH, MSS, t0), Reply::Hold);
        assert_eq!(p.on_segment(seg(4), TcpFlags::PSH, MSS, t0), Reply::Ack(seg(5)));
        let st = p.stats;
        assert_eq!((st.in_order, st.out_of_order, st.duplicates, st.acks, st.dupacks), (5, 2, 1, 3, 2));
    }

    #[test]
    fn a_lone_segment_is_acknowledged_by_the_delayed_ack_timer() {
        let t0 = Instant::now();
        let mut p = AckPolicy::new(Duration::from_millis(2), t0);
        assert_eq!(p.on_tick(t0 + Duration::from_secs(1)), None, "nothing before the SYN");
        p.on_segment(99, TcpFlags::SYN, 0, t0);
        assert_eq!(p.ack_due(), None);
        let t1 = t0 + Duration::from_millis(10);
        assert_eq!(p.on_segment(100, TcpFlags::PSH, MSS, t1), Reply::Hold);
        assert_eq!(p.ack_due(), Some(t1 + Duration::from_millis(2)));
        assert_eq!(p.on_tick(t1 + Duration::from_millis(1)), None);
        assert_eq!(p.on_tick(t1 + Duration::from_millis(2)), Some(100 + M));
        assert_eq!(p.on_tick(t1 + Duration::from_millis(9)), None, "once");
        assert_eq!(p.ack_due(), None);
        assert_eq!((p.stats.acks, p.stats.delayed_acks), (1, 1));
    }

    #[test]
    fn sequence_distances_wrap() {
        assert_eq!(seq_diff(5, 3), 2);
        assert_eq!(seq_diff(3, 5), -2);
        assert_eq!(seq_diff(1, u32::MAX), 2);
    }

    #[test]
    fn config_is_checked() {
        assert!(SocketBenchConfig::default().validate().is_ok());
        for bad in [
            SocketBenchConfig { segments: 0, ..Default::default() },
            SocketBenchConfig { segments: 10_000_000, ..Default::default() },
            SocketBenchConfig { window: 1000, ..Default::default() },
            SocketBenchConfig { rto_ms: 0.0, ..Default::default() },
            SocketBenchConfig { delayed_ack_ms: f64::NAN, ..Default::default() },
            SocketBenchConfig { timeout_s: -1.0, ..Default::default() },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
    }

    fn run(agent: AgentKind, cpu_s: f64, elapsed_s: f64, frames: u64) -> SocketRun {
        let mut counters = Counters { cpu_s, ..Counters::default() };
        counters.wired.frames_in = frames;
        SocketRun {
            agent,
            segments: 1000,
            window: 65_536,
            generator: GeneratorStats { elapsed_s, frames_sent: frames, ..Default::default() },
            reflector: ReflectorStats::default(),
            counters,
        }
    }

    #[test]
    fn the_summary_takes_medians_of_per_repetition_ratios() {
        let pairs = [
            [run(AgentKind::None, 1.0, 1.0, 1000), run(AgentKind::Snoop, 1.5, 2.0, 1000)],
            [run(AgentKind::None, 2.0, 1.0, 1000), run(AgentKind::Snoop, 2.2, 1.0, 1000)],
            [run(AgentKind::None, 4.0, 4.0, 1000), run(AgentKind::Snoop, 4.0, 4.0, 1000)],
        ];
        let s = SocketBenchSummary::from_pairs(&pairs);
        assert_eq!(s.repetitions, 3);
        assert_eq!(s.cpu_ns_per_frame, [2e6, 2.2e6]);
        // Ratios 1.5, 1.1, 1.0: median 1.1, not 2.2/2.0 of the medians.
        assert!((s.cpu_ratio - 1.1).abs() < 1e-12, "{}", s.cpu_ratio);
        // Throughput ratios 0.5, 1, 1.
        assert_eq!(s.throughput_ratio, 1.0);
        assert!((s.goodput_gbps[0] - 1000.0 * MSS as f64 * 8.0 / 1e9).abs() < 1e-12);
    }

    #[test]
    fn verify_names_what_is_missing() {
        let mut r = run(AgentKind::Snoop, 1.0, 1.0, 1500);
        r.reflector.in_order = 1000;
        r.reflector.frames_sent = 502;
        r.counters.wireless.frames_in = 502;
        r.counters.wireless.frames_out = 1003;
        r.counters.agent.insert("connections_created".into(), 1);
        r.counters.agent.insert("packets_cached".into(), 1000);
        assert_eq!(r.verify(), Ok(()));
        let mut lost_state = r.clone();
        lost_state.counters.agent.insert("connections_created".into(), 2);
        assert!(lost_state.verify().unwrap_err().contains("2 connections"));
        let mut uncached = r.clone();
        uncached.counters.agent.insert("packets_cached".into(), 900);
        assert!(uncached.verify().unwrap_err().contains("cached 900"));
        let mut wide = r.clone();
        wide.window = 1 << 20;
        wide.counters.agent.insert("packets_cached".into(), 400);
        assert!(wide.verify().unwrap_err().contains("passed 0 uncached"));
        wide.counters.agent.insert("packets_uncached_high_water".into(), 600);
        assert_eq!(wide.verify(), Ok(()), "past the high-water mark new segments pass uncached");
        let mut rst = r.clone();
        rst.counters.wireless.frames_in += 1;
        assert!(rst.verify().unwrap_err().contains("503 from the mobile side"));
        let mut short = r.clone();
        short.reflector.in_order = 999;
        assert!(short.verify().unwrap_err().contains("999 of 1000"));
        let plain = SocketRun {
            agent: AgentKind::None,
            counters: Counters { agent: Default::default(), ..r.counters.clone() },
            ..r
        };
        assert_eq!(plain.verify(), Ok(()));
    }
}
