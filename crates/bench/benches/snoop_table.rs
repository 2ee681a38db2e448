//! Snoop's per-packet cost against the number of live connections in its table: 1, 64, 10,000 and 100,000
//! connections with state, and one data packet toward the mobile and its ACK per step, each step on a
//! different connection in a scattered order (a stride coprime with the count), so that neither the
//! last-lookup shortcut nor the processor's caches favour the large tables. With one connection every
//! packet takes the shortcut: the best case the others are measured against. With 64 every data packet
//! goes through the index (its ACK, next, takes the shortcut, as at every count) but the whole table stays
//! in the first-level caches: the difference from 1 is the lookup and the touch, the difference from 64 to
//! 100,000 what the memory hierarchy adds.
//!
//! `data_and_ack_batched` hands the same steps over as a receiving base station does (`lasthop bs` reads up
//! to 64 frames per system call): [`Agent::prefetch`] with the next 16 steps' packets, then each packet to
//! `handle_packet` as before. Same packets, same work per packet; what changes is that 16 lookups wait for
//! memory together instead of one after another. (The hint lists are built outside the timed region: a
//! host has its batch as an array already.)
//!
//! Time is the bench thread's CPU time, so other processes' time slices on a shared machine are not
//! counted (their use of the shared caches still is).
//!
//! Every connection has state but nothing cached between steps (each data packet is acknowledged at once),
//! as in a base station serving many mostly idle mobiles. Packets are built outside the timed region; the
//! harness keeps a reference to each, so freeing them is never timed. Before measuring, the bench prints the
//! table's own accounting of its memory (`Snoop::table_bytes`) per connection and the `size_of` of one
//! connection's inline state.
//!
//! It also prints what one load costs when its line is anywhere in memory of the table's size (a chase
//! through that many bytes, allocated as the slots are): the least a step on a connection whose state is not
//! in the caches can wait, so the floor under the ratio to one connection on the machine at hand (user guide,
//! docs/src/dev/performance.md, "Snoop's cost per packet"); and the same over 1 to 64 MB, where the caches
//! end.

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use lasthop_agents::snoop::{Snoop, SnoopConfig};
use lasthop_agents::{Action, Agent, Side, Time};
use lasthop_wire::{SeqNum, TcpFlags, TcpRepr};
use std::hint::black_box;
use std::net::Ipv4Addr;
use std::time::Duration;

const FH: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const MSS: u32 = 1460;
/// Steps per batch of packets built ahead of timing.
const BATCH: usize = 256;
/// Steps per `Agent::prefetch` hint in the batched variant.
const BURST: usize = 16;
/// Visits connections in a scattered order: a prime that divides none of the counts measured.
const STRIDE: usize = 7919;

/// Connection `c`'s mobile: 10.64.0.0 + c (one mobile per connection, one port each).
fn mobile(c: usize) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(Ipv4Addr::new(10, 64, 0, 0)) + c as u32)
}

fn data_packet(c: usize, seq: u32, payload: &[u8]) -> Bytes {
    let repr = TcpRepr {
        src_port: 5001,
        dst_port: 40000,
        seq: SeqNum(seq),
        ack: Some(SeqNum(1)),
        flags: TcpFlags::PSH,
        window: 65535,
        ..TcpRepr::default()
    };
    repr.emit_ipv4(FH, mobile(c), 1, 64, payload)
}

fn ack_packet(c: usize, ack: u32) -> Bytes {
    let repr = TcpRepr {
        src_port: 40000,
        dst_port: 5001,
        seq: SeqNum(1),
        ack: Some(SeqNum(ack)),
        window: 65535,
        ..TcpRepr::default()
    };
    repr.emit_ipv4(mobile(c), FH, 1, 64, &[])
}

/// The calling thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`): on a machine shared with other work, wall time
/// counts the time slices other processes take, CPU time does not (their effect on the caches remains).
fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec to write to; the clock id is a constant Linux defines.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Nanoseconds of CPU time per load in a chase through `bytes` of memory backed as Snoop's slots are
/// ([`lasthop_wire::hugepages::push`]): the 64-byte lines are visited in one random cycle and each load's
/// address is the previous load's value, so no two loads overlap and the prefetchers cannot guess the next.
/// Over a few kilobytes this is the first-level cache's latency; over more than the last-level cache holds,
/// the memory's.
fn chased_load_ns(bytes: usize) -> f64 {
    let lines = (bytes / 64).max(2);
    let mut chain: Vec<[u64; 8]> = Vec::new();
    for _ in 0..lines {
        lasthop_wire::hugepages::push(&mut chain, [0; 8]);
    }
    // Fisher-Yates with a fixed xorshift, then each line points at the next in that order: one cycle.
    let mut order: Vec<usize> = (0..lines).collect();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for i in (1..lines).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        order.swap(i, (x % (i as u64 + 1)) as usize);
    }
    for (k, &line) in order.iter().enumerate() {
        chain[line][0] = order[(k + 1) % lines] as u64;
    }
    let chase = |at: usize, loads: usize| (0..loads).fold(at, |at, _| chain[at][0] as usize);
    let warm = chase(order[0], lines);
    assert_eq!(warm, order[0], "the chase is one cycle through every line");
    const LOADS: usize = 2_000_000;
    let start = thread_cpu_time();
    black_box(chase(warm, LOADS));
    (thread_cpu_time() - start).as_nanos() as f64 / LOADS as f64
}

struct Bench {
    snoop: Snoop,
    out: Vec<Action>,
    next_seq: Vec<u32>,
    step: usize,
    now: Time,
    payload: Vec<u8>,
}

impl Bench {
    fn new(conns: usize) -> Bench {
        let mut b = Bench {
            snoop: Snoop::new(SnoopConfig { max_connections: conns, ..SnoopConfig::default() }),
            out: Vec::with_capacity(8),
            next_seq: vec![1; conns],
            step: 0,
            now: Time::ZERO,
            payload: vec![0x5a; MSS as usize],
        };
        // Every connection gets state: its first data packet, acknowledged.
        for c in 0..conns {
            let (d, a) = b.packets(c);
            b.feed(&[(d, a)], false);
        }
        assert_eq!(b.snoop.connections(), conns);
        b
    }

    /// The next data packet of connection `c` and the ACK that acknowledges it.
    fn packets(&mut self, c: usize) -> (Bytes, Bytes) {
        let seq = self.next_seq[c];
        self.next_seq[c] = seq.wrapping_add(MSS);
        (data_packet(c, seq, &self.payload), ack_packet(c, self.next_seq[c]))
    }

    fn batch(&mut self) -> Vec<(Bytes, Bytes)> {
        let n = self.next_seq.len();
        (0..BATCH)
            .map(|_| {
                let c = (self.step * STRIDE) % n;
                self.step += 1;
                self.packets(c)
            })
            .collect()
    }

    fn feed(&mut self, steps: &[(Bytes, Bytes)], batched: bool) -> Duration {
        let hints: Vec<Vec<(Side, &[u8])>> = match batched {
            true => steps
                .chunks(BURST)
                .map(|c| c.iter().flat_map(|(d, a)| [(Side::ToMobile, &d[..]), (Side::ToWired, &a[..])]).collect())
                .collect(),
            false => Vec::new(),
        };
        let start = thread_cpu_time();
        for (i, (d, a)) in steps.iter().enumerate() {
            if batched && i % BURST == 0 {
                self.snoop.prefetch(&hints[i / BURST]);
            }
            self.now = Time(self.now.0 + 10_000);
            self.snoop.handle_packet(self.now, Side::ToMobile, d.clone(), &mut self.out);
            black_box(&self.out);
            self.out.clear();
            self.now = Time(self.now.0 + 10_000);
            self.snoop.handle_packet(self.now, Side::ToWired, a.clone(), &mut self.out);
            black_box(&self.out);
            self.out.clear();
        }
        thread_cpu_time() - start
    }

    fn run(&mut self, iters: u64, batched: bool) -> Duration {
        let mut total = Duration::ZERO;
        let mut done = 0u64;
        while done < iters {
            let steps = self.batch();
            let n = ((iters - done) as usize).min(BATCH);
            total += self.feed(&steps[..n], batched);
            done += n as u64;
        }
        total
    }
}

fn live_connections(c: &mut Criterion) {
    // The machine's cache levels as this bench meets them (the last level is shared with other tenants).
    let sizes_mb = [1usize, 4, 8, 16, 64];
    let loads: Vec<String> = sizes_mb.iter().map(|&mb| format!("{:.1}", chased_load_ns(mb << 20))).collect();
    eprintln!("snoop_table: a load anywhere in {:?} MB: {} ns", sizes_mb, loads.join(" / "));
    let mut g = c.benchmark_group("snoop_table");
    // One step is a data packet and its ACK: report per packet.
    g.throughput(Throughput::Elements(2));
    for conns in [1usize, 64, 10_000, 100_000] {
        let mut b = Bench::new(conns);
        eprintln!(
            "snoop_table/{conns}: table {} bytes, {:.0} bytes per connection; inline state {} bytes; \
             a load anywhere in as many bytes: {:.1} ns",
            b.snoop.table_bytes(),
            b.snoop.table_bytes() as f64 / conns as f64,
            Snoop::connection_state_size(),
            chased_load_ns(b.snoop.table_bytes())
        );
        g.bench_function(format!("data_and_ack/{conns}conn"), |bch| bch.iter_custom(|iters| b.run(iters, false)));
        g.bench_function(format!("data_and_ack_batched/{conns}conn"), |bch| {
            bch.iter_custom(|iters| b.run(iters, true))
        });
    }
    g.finish();
}

criterion_group!(benches, live_connections);
criterion_main!(benches);
