//! Throughput of the forwarding path, with and without agents, by the same code that `lasthop bs` runs
//! ([`Forwarder`]), minus the socket system calls: a synthetic bulk TCP flow (full-size data segments from
//! the wired side, a cumulative ACK from the wireless side every second segment), no rate limit, no
//! errors. `cargo bench -p lasthop-bench --bench forward` runs it under criterion; [`bench_forward`] is for a
//! quick figure from the command line. Frames are built before the clock starts, so only forwarding is timed.

use crate::agents::AgentKind;
use crate::forward::{frames, Forwarder, Mac, Port};
use crate::hop::HopConfig;
use crate::NetError;
use bytes::Bytes;
use lasthop_wire::{TcpFlags, Time};
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

const FH_MAC: Mac = [2, 0, 0, 0, 0, 1];
const MH_MAC: Mac = [2, 0, 0, 0, 0, 2];
const FH: (Ipv4Addr, u16) = (Ipv4Addr::new(10, 0, 0, 1), 5001);
const MH: (Ipv4Addr, u16) = (Ipv4Addr::new(10, 0, 0, 2), 40000);
pub const MSS: usize = 1460;

/// A bulk transfer FH → MH as frames arriving at the base station, in order.
pub struct SyntheticFlow {
    seq: u32,
    acked: u32,
    payload: Vec<u8>,
}

impl Default for SyntheticFlow {
    fn default() -> Self {
        Self::new()
    }
}

impl SyntheticFlow {
    pub fn new() -> Self {
        SyntheticFlow { seq: 1000, acked: 1000, payload: (0..MSS).map(|i| i as u8).collect() }
    }

    /// ARP both ways and the three-way handshake.
    pub fn handshake(&mut self) -> Vec<(Port, Vec<u8>)> {
        let isn = self.seq - 1;
        vec![
            (Port::Wired, frames::arp_request(FH_MAC, FH.0, MH.0)),
            (Port::Wireless, frames::arp_request(MH_MAC, MH.0, FH.0)),
            (Port::Wired, frames::tcp(MH_MAC, FH_MAC, FH, MH, isn, None, TcpFlags::SYN, &[])),
            (Port::Wireless, frames::tcp(FH_MAC, MH_MAC, MH, FH, 7, Some(self.seq), TcpFlags::SYN, &[])),
            (Port::Wired, frames::tcp(MH_MAC, FH_MAC, FH, MH, self.seq, Some(8), TcpFlags::default(), &[])),
        ]
    }

    /// `segments` data frames, each second one followed by the mobile's cumulative ACK.
    pub fn batch(&mut self, segments: usize, out: &mut Vec<(Port, Vec<u8>)>) {
        for i in 0..segments {
            out.push((
                Port::Wired,
                frames::tcp(MH_MAC, FH_MAC, FH, MH, self.seq, Some(8), TcpFlags::PSH, &self.payload),
            ));
            self.seq = self.seq.wrapping_add(MSS as u32);
            if i % 2 == 1 {
                self.acked = self.seq;
                out.push((
                    Port::Wireless,
                    frames::tcp(FH_MAC, MH_MAC, MH, FH, 8, Some(self.acked), TcpFlags::default(), &[]),
                ));
            }
        }
    }
}

/// A forwarder and a flow, handshake done, ready to time.
pub struct Bench {
    pub fwd: Forwarder,
    pub flow: SyntheticFlow,
    now: Time,
    out: Vec<(Port, Bytes)>,
}

impl Bench {
    /// A bench of the agents of `kind`; a kind the real base station does not run is refused.
    pub fn new(agent: AgentKind) -> Result<Bench, NetError> {
        let mut b = Bench {
            fwd: Forwarder::new(agent, &HopConfig::default(), [[2, 0, 0, 0, 1, 1], [2, 0, 0, 0, 1, 2]])?,
            flow: SyntheticFlow::new(),
            now: Time::ZERO,
            out: Vec::new(),
        };
        let hs = b.flow.handshake();
        b.feed(&hs);
        Ok(b)
    }

    /// Forwards `frames`; returns the data bytes (TCP payload toward the mobile) they carried. Shaped like
    /// the I/O loop (`bs::run_bs_with`): frames come in batches of up to [`crate::bs::BATCH`]; before each
    /// batch the due timers run, and after it what the batch produced is sent (here: dropped) at once.
    pub fn feed(&mut self, frames: &[(Port, Vec<u8>)]) -> u64 {
        let mut payload = 0;
        for batch in frames.chunks(crate::bs::BATCH) {
            if self.fwd.poll_timeout().is_some_and(|t| t <= self.now) {
                self.fwd.handle_timeout(self.now, &mut self.out);
            }
            self.fwd.prefetch(Port::Wired, batch.iter().filter(|(p, _)| *p == Port::Wired).map(|(_, f)| &f[..]));
            for (port, f) in batch {
                // 1 µs per frame: about 12 Gb/s of 1500-byte frames, so no agent timer fires spuriously.
                self.now = Time(self.now.0 + 1_000);
                self.fwd.handle_frame(self.now, *port, f, &mut self.out);
                if *port == Port::Wired && f.len() > 54 {
                    payload += (f.len() - 54) as u64;
                }
            }
            self.out.clear();
        }
        payload
    }
}

#[derive(Debug, Clone, Copy)]
pub struct BenchResult {
    /// TCP payload forwarded toward the mobile per second of forwarding time, Gb/s.
    pub goodput_gbps: f64,
    /// Ethernet bytes (data and ACKs, both directions) per second, Gb/s.
    pub wire_gbps: f64,
    pub ns_per_frame: f64,
    /// CPU time of the forwarding thread per frame, ns: on a shared machine, unlike `ns_per_frame`, it
    /// leaves out the time the thread was descheduled (it still pays for caches other processes evict).
    pub cpu_ns_per_frame: f64,
}

/// CPU time consumed by the calling thread so far.
fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_THREAD_CPUTIME_ID exists on every Linux.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Forwards `segments` full-size segments (and their ACKs) and reports the rate; a kind the real base station
/// does not run is refused.
pub fn bench_forward(agent: AgentKind, segments: usize) -> Result<BenchResult, NetError> {
    let mut b = Bench::new(agent)?;
    let chunk = 4096;
    let (mut elapsed, mut payload, mut frames_n, mut wire) = (Duration::ZERO, 0u64, 0usize, 0u64);
    let mut cpu = Duration::ZERO;
    let mut frames = Vec::with_capacity(chunk * 3 / 2);
    let mut done = 0;
    while done < segments {
        frames.clear();
        let n = chunk.min(segments - done);
        b.flow.batch(n, &mut frames);
        frames_n += frames.len();
        wire += frames.iter().map(|(_, f)| f.len() as u64).sum::<u64>();
        let (t, c) = (Instant::now(), thread_cpu_time());
        payload += b.feed(&frames);
        elapsed += t.elapsed();
        cpu += thread_cpu_time().saturating_sub(c);
        done += n;
    }
    let s = elapsed.as_secs_f64().max(1e-9);
    Ok(BenchResult {
        goodput_gbps: payload as f64 * 8.0 / s / 1e9,
        wire_gbps: wire as f64 * 8.0 / s / 1e9,
        ns_per_frame: elapsed.as_nanos() as f64 / frames_n.max(1) as f64,
        cpu_ns_per_frame: cpu.as_nanos() as f64 / frames_n.max(1) as f64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_synthetic_flow_is_forwarded_whole_through_snoop() {
        let mut b = Bench::new(AgentKind::Snoop).unwrap();
        let mut frames = Vec::new();
        b.flow.batch(100, &mut frames);
        b.feed(&frames);
        let c = b.fwd.counters(Time::ZERO);
        assert_eq!(c.wireless.frames_out, 100 + 3, "every segment (and ARP, SYN, ACK) reaches the mobile: {c}");
        assert_eq!(c.wired.frames_out, 50 + 2, "every ACK (and ARP, SYN-ACK) reaches the fixed host: {c}");
        assert_eq!(c.agent_drops.values().sum::<u64>(), 0);
    }

    /// The comparison is fair only if plain forwarding does the same forwarding work: the same frames in,
    /// the same frames and bytes out on each port, the same classification. Snoop adds its own work only.
    #[test]
    fn plain_and_snoop_forward_the_same_frames() {
        let mut seen = Vec::new();
        for agent in [AgentKind::None, AgentKind::Snoop] {
            let mut b = Bench::new(agent).unwrap();
            let mut frames = Vec::new();
            b.flow.batch(1000, &mut frames);
            let payload = b.feed(&frames);
            let c = b.fwd.counters(Time::ZERO);
            assert_eq!(payload, 1000 * MSS as u64);
            seen.push((c.wired, c.wireless, c.tcp_packets, c.non_ipv4, c.hop_down.delivered, c.hop_up.delivered));
        }
        assert_eq!(seen[0], seen[1]);
    }
}
