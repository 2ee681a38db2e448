//! Steady-state per-packet cost of Snoop: one data packet toward the mobile, then its ACK, over and over
//! on one connection (the common case of Balakrishnan 1995 §6: "an incoming packet is added to the cache without
//! copying it, and it is forwarded"; "when a new acknowledgment arrives ... we forward it ... and clean the
//! snoop cache").
//!
//! Packets are built outside the timed region (sequence numbers must keep increasing, so they cannot be a
//! fixed ring), in batches of `BATCH` data packets and their `BATCH` ACKs. `data_path` times only the data
//! packets of each batch, `transmit` only the link's report that each data packet started transmitting
//! (`Agent::handle_transmit`, made between the data and the ACKs, as the simulator does), `ack_path` only the
//! ACKs, so each reports nanoseconds per packet. The output
//! vector is reused; clearing it (dropping the forwarded `Bytes`) is inside the timed region. The harness
//! keeps its own reference to every packet, so the cache dropping a packet never frees memory in the timed
//! region (the last holder of a packet pays for freeing it, whoever that is).

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use lasthop_agents::snoop::{Snoop, SnoopConfig};
use lasthop_agents::{Action, Agent, Side, Time};
use lasthop_wire::{SeqNum, TcpFlags, TcpRepr};
use std::hint::black_box;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

const FH: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const MH: Ipv4Addr = Ipv4Addr::new(10, 1, 0, 1);
const MSS: u32 = 1460;
/// Data packets in flight per batch: under the 64 KiB high-water mark, so every one is cached.
const BATCH: usize = 8;

struct Bench {
    snoop: Snoop,
    out: Vec<Action>,
    /// Next sequence number of each measured connection; packets go round-robin over them.
    next_seq: Vec<u32>,
    rr: usize,
    now: Time,
    payload: Vec<u8>,
    data: Vec<Bytes>,
    acks: Vec<Bytes>,
}

impl Bench {
    fn new(conns: usize) -> Bench {
        let mut b = Bench {
            snoop: Snoop::new(SnoopConfig::default()),
            out: Vec::with_capacity(8),
            next_seq: vec![1; conns],
            rr: 0,
            now: Time::ZERO,
            payload: vec![0x5a; MSS as usize],
            data: Vec::with_capacity(BATCH),
            acks: Vec::with_capacity(BATCH),
        };
        // A few connections besides the measured one, so the table lookup is not trivially a one-entry map.
        for port in 1000..1064 {
            let p = b.data_packet(port, 1);
            b.snoop.handle_packet(b.now, Side::ToMobile, p, &mut b.out);
            b.out.clear();
        }
        b
    }

    fn data_packet(&self, mh_port: u16, seq: u32) -> Bytes {
        let repr = TcpRepr {
            src_port: 5001,
            dst_port: mh_port,
            seq: SeqNum(seq),
            ack: Some(SeqNum(1)),
            flags: TcpFlags::PSH,
            window: 65535,
            timestamps: Some((1, 2)),
            ..TcpRepr::default()
        };
        repr.emit_ipv4(FH, MH, 1, 64, &self.payload)
    }

    fn ack_packet(mh_port: u16, ack: u32) -> Bytes {
        let repr = TcpRepr {
            src_port: mh_port,
            dst_port: 5001,
            seq: SeqNum(1),
            ack: Some(SeqNum(ack)),
            window: 65535,
            timestamps: Some((3, 4)),
            ..TcpRepr::default()
        };
        repr.emit_ipv4(MH, FH, 1, 64, &[])
    }

    fn prepare(&mut self) {
        self.data.clear();
        self.acks.clear();
        for _ in 0..BATCH {
            let c = self.rr;
            self.rr = (self.rr + 1) % self.next_seq.len();
            let port = 40000 + c as u16;
            let seq = self.next_seq[c];
            self.next_seq[c] = seq.wrapping_add(MSS);
            self.data.push(self.data_packet(port, seq));
            self.acks.push(Bench::ack_packet(port, self.next_seq[c]));
        }
    }

    fn feed(&mut self, side: Side, which: fn(&Bench) -> &Vec<Bytes>, n: usize) -> Duration {
        let pkts: Vec<Bytes> = which(self)[..n].to_vec();
        let start = Instant::now();
        for p in pkts {
            self.now = Time(self.now.0 + 10_000);
            self.snoop.handle_packet(self.now, side, p, &mut self.out);
            black_box(&self.out);
            self.out.clear();
        }
        start.elapsed()
    }

    /// The link reports the transmission of the first `n` data packets of the batch (`Agent::handle_transmit`).
    fn transmit(&mut self, n: usize) -> Duration {
        let pkts: Vec<Bytes> = self.data[..n].to_vec();
        let start = Instant::now();
        for p in &pkts {
            self.now = Time(self.now.0 + 10_000);
            self.snoop.handle_transmit(self.now, Side::ToMobile, black_box(p));
        }
        start.elapsed()
    }

    /// Runs `iters` data packets, their transmissions and `iters` ACKs, returning the time spent in the
    /// chosen path.
    fn run(&mut self, iters: u64, path: Path) -> Duration {
        let mut total = Duration::ZERO;
        let mut done = 0u64;
        while done < iters {
            let n = (iters - done).min(BATCH as u64) as usize;
            self.prepare();
            let d = self.feed(Side::ToMobile, |b| &b.data, n);
            let t = self.transmit(n);
            // ACK the n packets just sent (the last of the n ACKs acknowledges all of them).
            let a = self.feed(Side::ToWired, |b| &b.acks, n);
            // Keep the unused tail of the batch from leaving a gap: rebuild the sequence state for next time.
            for _ in n..BATCH {
                self.rr = (self.rr + self.next_seq.len() - 1) % self.next_seq.len();
                let c = self.rr;
                self.next_seq[c] = self.next_seq[c].wrapping_sub(MSS);
            }
            total += match path {
                Path::Data => d,
                Path::Transmit => t,
                Path::Ack => a,
            };
            done += n as u64;
        }
        total
    }
}

#[derive(Clone, Copy)]
enum Path {
    Data,
    Transmit,
    Ack,
}

fn steady_state(c: &mut Criterion) {
    let mut g = c.benchmark_group("snoop");
    g.throughput(Throughput::Elements(1));
    // One busy connection (the last-lookup cache always hits), then four interleaved ones (it never does:
    // every packet pays the hash lookup).
    for conns in [1usize, 4] {
        g.bench_function(format!("data_path/{conns}conn"), |bch| {
            let mut b = Bench::new(conns);
            bch.iter_custom(|iters| b.run(iters, Path::Data));
        });
        g.bench_function(format!("transmit/{conns}conn"), |bch| {
            let mut b = Bench::new(conns);
            bch.iter_custom(|iters| b.run(iters, Path::Transmit));
        });
        g.bench_function(format!("ack_path/{conns}conn"), |bch| {
            let mut b = Bench::new(conns);
            bch.iter_custom(|iters| b.run(iters, Path::Ack));
        });
    }
    g.finish();
}

criterion_group!(benches, steady_state);
criterion_main!(benches);
