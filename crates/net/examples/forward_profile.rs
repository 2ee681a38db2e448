//! One agent's forwarding loop alone, for a profiler: `forward_profile none|snoop [segments]`.
use lasthop_net::bench::bench_forward;

fn main() {
    let mut a = std::env::args().skip(1);
    let agent = a.next().and_then(|s| s.parse().ok()).unwrap_or(lasthop_net::AgentKind::Snoop);
    let segments = a.next().and_then(|s| s.parse().ok()).unwrap_or(2_000_000);
    let r = bench_forward(agent, segments).unwrap_or_else(|e| panic!("{e}"));
    println!("{agent}: {:.0} ns/frame, {:.2} Gb/s of TCP payload", r.ns_per_frame, r.goodput_gbps);
}
