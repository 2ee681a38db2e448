//! Quick forwarding-path figure without criterion: plain vs Snoop, interleaved, best of several rounds
//! (best-of is robust to other load on the machine). `forward_bench [segments] [rounds]`.
use lasthop_net::bench::bench_forward;
use lasthop_net::AgentKind;

fn main() {
    let mut a = std::env::args().skip(1);
    let segments = a.next().and_then(|s| s.parse().ok()).unwrap_or(200_000);
    let rounds = a.next().and_then(|s| s.parse().ok()).unwrap_or(7);
    let mut best = [f64::MAX; 2];
    let mut gbps = [0.0f64; 2];
    for _ in 0..rounds {
        for (i, agent) in [AgentKind::None, AgentKind::Snoop].into_iter().enumerate() {
            let r = bench_forward(agent, segments).expect("the real base station runs plain forwarding and Snoop");
            if r.ns_per_frame < best[i] {
                best[i] = r.ns_per_frame;
                gbps[i] = r.goodput_gbps;
            }
        }
    }
    println!("plain: {:.0} ns/frame, {:.2} Gb/s of TCP payload", best[0], gbps[0]);
    println!("snoop: {:.0} ns/frame, {:.2} Gb/s of TCP payload", best[1], gbps[1]);
    println!("snoop overhead: {:+.1} % time per frame", (best[1] / best[0] - 1.0) * 100.0);
}
