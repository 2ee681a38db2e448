//! Wall time and events per second of the simulator on Balakrishnan 1995's 10 MB transfer at BER 1.6e-5, with
//! Snoop at the base station and with plain Reno (target: ≤ 5 ms per run each on one core, release build; the
//! user guide's docs/src/dev/performance.md, "The simulator: one 10 MB run", has the medians measured and
//! where the time goes).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use lasthop_sim::{run, RunOptions, Scenario};

fn scenario(agent: &str, ber: f64) -> Scenario {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/snoop.toml")).unwrap();
    let mut value: toml::Value = toml::from_str(&text).unwrap();
    value["nodes"]["bs"]["agent"] = toml::Value::String(agent.into());
    value["links"]["wavelan"]["error"]["ber"] = toml::Value::Float(ber);
    Scenario::from_toml(value, "bench").unwrap()
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("sim");
    group.sample_size(20);
    for (name, agent, ber) in [("snoop_10MB_ber1.6e-5", "snoop", 1.6e-5), ("reno_10MB_ber1.6e-5", "none", 1.6e-5)] {
        let s = scenario(agent, ber);
        let events = run(&s, &RunOptions::default()).unwrap().events;
        group.throughput(Throughput::Elements(events));
        group.bench_function(name, |b| b.iter(|| run(&s, &RunOptions::default()).unwrap()));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
