//! One Balakrishnan 1995 run from the command line, for tuning agents: `probe AGENT BER [BYTES] [SEED]` prints goodput,
//! its ratio to the ideal C·(1 − PER), timeouts, local retransmissions and wall time.
//! Run from the repository root: `cargo run --release -p lasthop-sim --example probe -- snoop 6.1e-5`.

use lasthop_sim::{run, RunOptions, Scenario};
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let agent = &args[1];
    let ber: f64 = args[2].parse().unwrap();
    let bytes: i64 = args.get(3).map(|s| s.parse().unwrap()).unwrap_or(10_000_000);
    let seed: i64 = args.get(4).map(|s| s.parse().unwrap()).unwrap_or(1);
    let text = std::fs::read_to_string("examples/snoop.toml").unwrap();
    let mut v: toml::Value = toml::from_str(&text).unwrap();
    v["nodes"]["bs"]["agent"] = toml::Value::String(agent.clone());
    v["links"]["wavelan"]["error"]["ber"] = toml::Value::Float(ber);
    v["flows"]["bulk"]["bytes"] = toml::Value::Integer(bytes);
    v["seed"] = toml::Value::Integer(seed);
    let s = Scenario::from_toml(v, "probe").unwrap();
    let t = std::time::Instant::now();
    let r = run(&s, &RunOptions::default()).unwrap();
    let el = t.elapsed();
    let f = &r.flows[0];
    println!("{agent} ber={ber} goodput={:.3} ideal={:.3} ratio={:.3} done={} t={:.1}s to={} frx={} rexmit={} local={} supp={} events={} wall={:?} undeliv={}",
        f.goodput_mbps, f.ideal_goodput_mbps.unwrap_or(0.0), f.goodput_mbps / f.ideal_goodput_mbps.unwrap_or(1.0), f.completed, f.duration_s,
        f.sender_timeouts, f.fast_retransmits, f.segments_retransmitted, f.local_retransmissions, f.dupacks_suppressed, r.events, el, r.undeliverable_packets);
}
