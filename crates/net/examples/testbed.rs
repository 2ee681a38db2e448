//! One testbed run from the command line, until `lasthop testbed` wires the same API:
//! `testbed [none|snoop] [cc] [sack 0|1] [ber] [rate_mbps] [delay_ms] [bytes] [queue_packets] [seed]`;
//! `PCAP_DIR=dir` writes `wired.pcap` and `wireless.pcap` there, `VERBOSE=1` prints the counters.
use lasthop_net::{run_testbed_transfer, TestbedConfig};

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let d = TestbedConfig::default();
    let get = |i: usize| a.get(i).map(String::as_str);
    let cfg = TestbedConfig {
        agent: get(0).map_or(Ok(d.agent), str::parse).unwrap_or_else(|e| panic!("{e}")),
        cc: get(1).unwrap_or(&d.cc).to_string(),
        sack: get(2).map_or(d.sack, |s| s == "1"),
        ber: get(3).map_or(d.ber, |s| s.parse().expect("ber")),
        rate_mbps: get(4).map_or(d.rate_mbps, |s| s.parse().expect("rate")),
        delay_ms: get(5).map_or(d.delay_ms, |s| s.parse().expect("delay")),
        bytes: get(6).map_or(d.bytes, |s| s.parse().expect("bytes")),
        queue_packets: get(7).map_or(d.queue_packets, |s| s.parse().expect("queue")),
        seed: get(8).map_or(d.seed, |s| s.parse().expect("seed")),
        pcap_dir: std::env::var_os("PCAP_DIR").map(Into::into),
        ..d
    };
    match run_testbed_transfer(&cfg) {
        Ok(r) => {
            if std::env::var_os("VERBOSE").is_some() {
                eprintln!("{}", r.counters);
            }
            println!(
                "agent={} cc={} sack={} ber={:e} rate={} queue={} seed={}: goodput {:.3} Mb/s, {} B in {:.2} s, hash {}",
                r.agent, r.cc, r.sack, cfg.ber, cfg.rate_mbps, cfg.queue_packets, cfg.seed, r.goodput_mbps, r.bytes,
                r.duration_s, if r.hash_ok { "ok" } else { "MISMATCH" }
            );
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
