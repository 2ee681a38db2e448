//! A flood of SYNs with distinct 4-tuples through the real base station running Snoop: the agent's
//! connection table stays at its bound and the process's memory stops growing. Its own test binary, so
//! the resident-set measurement sees no other test's allocations.

use lasthop_net::forward::frames;
use lasthop_net::sys::{if_mac, PacketSocket};
use lasthop_net::testbed::{skip_or_fail, Node, TransferConfig, FH_IF, FH_IP};
use lasthop_net::{AgentKind, HopConfig, NetError, Testbed};
use lasthop_wire::TcpFlags;
use std::net::Ipv4Addr;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

fn rss_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// An address in the testbed's subnet that no host owns: nobody answers the SYNs with a RST, so every
/// connection stays half-open in the agent's table until evicted, the worst case for its bound.
const NOBODY: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 200);

/// Sends `n` SYNs from FH, the k-th with source port and destination port derived from `first + k`.
fn flood(tb: &Testbed, first: u32, n: u32) {
    tb.run_in(Node::Fh, move || {
        let s = PacketSocket::open(FH_IF).unwrap();
        let mac = if_mac(FH_IF).unwrap();
        for k in first..first + n {
            let (sport, dport) = (1024 + (k % 60_000) as u16, 1 + (k / 60_000) as u16);
            let f = frames::tcp([0xff; 6], mac, (FH_IP, sport), (NOBODY, dport), k, None, TcpFlags::SYN, &[]);
            // A full socket buffer just loses a SYN; wait a little and go on.
            while s.send(&f).is_err() {
                std::thread::sleep(Duration::from_micros(200));
            }
        }
    })
    .unwrap();
    std::thread::sleep(Duration::from_millis(300));
}

#[test]
fn syn_flood_keeps_the_connection_table_and_memory_bounded() {
    let tb = match Testbed::create() {
        Ok(tb) => tb,
        Err(e @ (NetError::NotRoot(_) | NetError::NamespacesUnavailable(_))) => return skip_or_fail(e),
        Err(e) => panic!("{e}"),
    };
    let bs = tb.start_bs(AgentKind::Snoop, HopConfig::default()).unwrap();
    // Warm up past the table's bound so the steady state is reached.
    flood(&tb, 0, 20_000);
    let before = rss_kib();
    flood(&tb, 20_000, 150_000);
    let after = rss_kib();
    // The base station still forwards a real connection.
    let t = tb
        .transfer(
            &TransferConfig {
                bytes: 1 << 20,
                cc: "cubic".into(),
                seed: 2,
                timeout: Duration::from_secs(30),
                max_window: 0,
                port: lasthop_net::testbed::TRANSFER_PORT,
            },
            &AtomicBool::new(false),
        )
        .unwrap();
    assert!(t.hash_ok());
    let c = bs.stop().unwrap();
    eprintln!("RSS {before} KiB → {after} KiB over 150k SYNs\n{c}");
    // The BS's receive buffer sheds part of a flood this fast; tens of thousands still reach Snoop.
    assert!(c.agent_counter("connections_created") > 20_000, "the SYNs reached the agent: {c}");
    assert!(c.agent_counter("connections_evicted") > 10_000, "the bound was reached and enforced: {c}");
    assert!(c.agent_counter("connections_active") <= 1024, "table above its bound: {c}");
    assert!(after < before + 16 * 1024, "RSS grew from {before} KiB to {after} KiB");
}
