//! `access = "turns"` on a half-duplex wireless link: the mobile's ACKs go after at most one of the base
//! station's data frames instead of behind its whole queue (fifo). Measured on the mobile's pcap.

use lasthop_sim::{run, RunOptions, RunResult, Scenario};
use std::path::Path;

fn scenario(access: &str) -> Scenario {
    let text = format!(
        r#"
[nodes.fh]
addr = "10.0.0.1"
[nodes.bs]
addr = "10.0.0.2"
[nodes.mh]
addr = "10.1.0.1"
[links.ether]
ends = ["fh", "bs"]
kind = "wired"
rate_mbps = 100.0
delay_ms = 1.0
[links.wlan]
ends = ["bs", "mh"]
kind = "wireless"
rate_mbps = 2.0
mac_overhead_us = 100.0
queue_packets = 30
access = "{access}"
[flows.down]
from = "fh"
to = "mh"
bytes = 500_000
"#
    );
    Scenario::from_str(&text, "access.toml").unwrap()
}

/// Frames in a pcap written by the simulator (nanosecond timestamps, raw IPv4): (ns, packet).
fn frames(path: &Path) -> Vec<(u64, Vec<u8>)> {
    let b = std::fs::read(path).unwrap();
    let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
    assert_eq!(u32_at(0), 0xa1b2_3c4d, "nanosecond pcap, little endian");
    let (mut out, mut i) = (Vec::new(), 24);
    while i + 16 <= b.len() {
        let ns = u32_at(i) as u64 * 1_000_000_000 + u32_at(i + 4) as u64;
        let len = u32_at(i + 8) as usize;
        out.push((ns, b[i + 16..i + 16 + len].to_vec()));
        i += 16 + len;
    }
    out
}

/// (source address, TCP sequence number, ACK number, payload length) of a raw IPv4/TCP packet.
fn tcp(p: &[u8]) -> ([u8; 4], u32, u32, u32) {
    let ihl = (p[0] & 0x0f) as usize * 4;
    let total = u16::from_be_bytes([p[2], p[3]]) as usize;
    let t = &p[ihl..];
    let word = |i: usize| u32::from_be_bytes(t[i..i + 4].try_into().unwrap());
    let doff = (t[12] >> 4) as usize * 4;
    (p[12..16].try_into().unwrap(), word(4), word(8), (total - ihl - doff) as u32)
}

/// Runs the scenario with pcaps and returns, for every ACK the mobile put on the air, how long it waited for
/// the medium: from the data frame it acknowledges up to (the one ending at its ACK number) reaching the
/// mobile to the ACK's transmission start (the first ACK of each number only, not duplicates); sorted, in ms. And the run's result.
fn ack_waits_ms(access: &str) -> (Vec<f64>, RunResult) {
    let dir = std::env::temp_dir().join(format!("lasthop-access-{access}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let r = run(&scenario(access), &RunOptions { trace: false, pcap_dir: Some(dir.clone()) }).unwrap();
    let mh = [10, 1, 0, 1];
    let (mut waits, mut received) = (Vec::new(), std::collections::HashMap::new());
    for (ns, p) in frames(&dir.join("wlan-mh.pcap")) {
        let (src, seq, ack, len) = tcp(&p);
        if src != mh {
            received.entry(seq.wrapping_add(len)).or_insert(ns);
        } else if let Some(rx) = received.remove(&ack) {
            waits.push((ns - rx) as f64 / 1e6);
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
    waits.sort_by(f64::total_cmp);
    (waits, r)
}

#[test]
fn turns_lets_acks_past_the_base_stations_queue() {
    let (fifo, rf) = ack_waits_ms("fifo");
    let (turns, rt) = ack_waits_ms("turns");
    for r in [&rf, &rt] {
        assert!(r.flows[0].completed && r.flows[0].corrupt_bytes == 0, "{:?}", r.flows);
    }
    assert!(fifo.len() > 100 && turns.len() > 100, "{} {}", fifo.len(), turns.len());
    let median = |v: &[f64]| v[v.len() / 2];
    let (f, t) = (median(&fifo), median(&turns));
    let p90 = |v: &[f64]| v[v.len() * 9 / 10];
    eprintln!(
        "ACK wait for the medium, median / 90th percentile: fifo {f:.2} / {:.2} ms, turns {t:.2} / {:.2} ms",
        p90(&fifo),
        p90(&turns)
    );
    // A full data frame is 1500 B at 2 Mb/s + 100 µs = 6.1 ms: under turns nine ACKs in ten wait for at most
    // the data frame on the air and one 40 B ACK (6.36 ms; the rest are delayed ACKs and ACKs after a timeout); under fifo for the base station's queue.
    assert!(p90(&turns) <= 6.36 + 1e-9, "{turns:?}");
    assert!(f > 3.0 * t, "fifo {f} vs turns {t}");
    // Deterministic: the same scenario gives the same result.
    let (again, ra) = ack_waits_ms("turns");
    assert_eq!((again, ra.flows), (turns, rt.flows));
}
