//! Forwarding-path throughput: plain forwarding vs Snoop, same process, no rate limit, no errors.
//! Criterion reports bytes/s of TCP payload; `lasthop_net::bench::bench_forward` gives the same figure
//! without criterion.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use lasthop_net::bench::{Bench, MSS};
use lasthop_net::AgentKind;
use std::time::{Duration, Instant};

fn forward(c: &mut Criterion) {
    const SEGMENTS: usize = 1024;
    let mut g = c.benchmark_group("forward");
    g.throughput(Throughput::Bytes((SEGMENTS * MSS) as u64));
    for agent in [AgentKind::None, AgentKind::Snoop] {
        g.bench_function(agent.to_string(), |bch| {
            let mut b = Bench::new(agent).expect("the real base station runs plain forwarding and Snoop");
            let mut frames = Vec::new();
            bch.iter_custom(|iters| {
                let mut t = Duration::ZERO;
                for _ in 0..iters {
                    frames.clear();
                    b.flow.batch(SEGMENTS, &mut frames);
                    let s = Instant::now();
                    std::hint::black_box(b.feed(&frames));
                    t += s.elapsed();
                }
                t
            });
        });
    }
    g.finish();
}

criterion_group!(benches, forward);
criterion_main!(benches);
