//! The split connection (I-TCP, Balakrishnan 1995 §2) on the namespace testbed: kernel TCP from the fixed host
//! terminated by a transparent proxy in the base station's namespace, whose own connection to the mobile
//! crosses the emulated hop; and what a base-station failure costs under split and under Snoop.
//! They need root and network namespaces; where those are missing they print why and pass without
//! running, unless `LASTHOP_NO_SKIP=1`.

use lasthop_net::split::Held;
use lasthop_net::testbed::{testbed_or_skip, Node, TransferProgress, FH_IP, MH_IP, TRANSFER_PORT};
use lasthop_net::{AgentKind, TestbedConfig};
use std::io::Read;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One split transfer; checks the hash, the proxy's counts and that the mobile saw the fixed host.
fn split_transfer(cfg: TestbedConfig) -> Option<f64> {
    let tb = testbed_or_skip()?;
    tb.set_sack(cfg.sack).unwrap();
    let bs = tb.start_station(&cfg).unwrap();
    let t = tb.transfer(&cfg.transfer(), &AtomicBool::new(false)).unwrap();
    let (c, split) = bs.stop().unwrap();
    let split = split.expect("a split station reports its proxy");
    eprintln!(
        "split ber {:e} wired delay {} ms: {:.3} Mb/s in {:.2} s, peer {}\n{split:?}\n{c}",
        cfg.ber,
        cfg.wired_delay_ms,
        t.goodput_mbps(),
        t.duration.as_secs_f64(),
        t.peer
    );
    assert!(
        t.hash_ok(),
        "received {} of {} bytes, hashes {:x} vs {:x}",
        t.bytes_received,
        t.bytes_sent,
        t.recv_hash,
        t.sent_hash
    );
    assert_eq!(t.peer.ip(), std::net::IpAddr::V4(FH_IP), "the mobile must see the fixed host's address");
    assert_eq!((split.connections, split.connect_failures, split.resets), (1, 0, 0), "{split:?}");
    assert_eq!(split.bytes_down, cfg.bytes);
    // Linux doubles the buffer size it is given (half for its bookkeeping)
    assert_eq!(split.rcvbuf_bytes, 2 * u64::from(cfg.split_buffer_bytes));
    assert_eq!(split.sndbuf_bytes, 2 * u64::from(cfg.split_buffer_bytes));
    // the proxy's connection to the mobile crossed the emulated hop
    assert!(c.wireless.frames_out * 1448 >= cfg.bytes, "{c}");
    if cfg.ber > 0.0 {
        assert!(c.hop_down.frames_lost > 0, "the error model never fired: {c}");
    }
    Some(t.goodput_mbps())
}

#[test]
fn split_carries_kernel_tcp_intact_over_a_lossy_hop() {
    let cfg =
        TestbedConfig { agent: AgentKind::Split, ber: 1.6e-5, bytes: 1 << 20, seed: 3, ..TestbedConfig::default() };
    split_transfer(cfg);
}

#[test]
fn split_over_a_wide_area_path_with_sack() {
    let cfg = TestbedConfig {
        agent: AgentKind::Split,
        ber: 3.9e-6,
        sack: true,
        wired_delay_ms: 20.0,
        split_buffer_bytes: 32 << 10,
        bytes: 1 << 20,
        seed: 2,
        ..TestbedConfig::default()
    };
    split_transfer(cfg);
}

#[test]
fn split_terminates_a_transfer_on_a_non_default_port_among_several() {
    // The mobile listens on 8080; the proxy terminates 8080 and two other ports.
    let cfg = TestbedConfig {
        agent: AgentKind::Split,
        port: 8080,
        split_ports: vec![5001, 8080, 443],
        ber: 3.9e-6,
        bytes: 1 << 20,
        seed: 4,
        ..TestbedConfig::default()
    };
    cfg.validate().unwrap();
    assert_eq!(cfg.split().ports, [5001, 8080, 443]);
    split_transfer(cfg);
}

/// What a base-station failure mid-transfer cost: bytes the sender saw acknowledged that the mobile
/// never received, and what the split proxy said it held when it died.
struct Failure {
    acked: u64,
    received: u64,
    held: Option<Held>,
}

impl Failure {
    fn acked_not_delivered(&self) -> u64 {
        self.acked.saturating_sub(self.received)
    }
}

/// Starts a 4 MB transfer through `agent`'s base station, kills the base station once the mobile has
/// 256 KB, lets both ends see that nothing more comes, then ends the transfer.
fn kill_mid_transfer(agent: AgentKind) -> Option<Failure> {
    let tb = testbed_or_skip()?;
    tb.set_sack(false).unwrap();
    let cfg = TestbedConfig { agent, bytes: 4 << 20, timeout_s: 300.0, ..TestbedConfig::default() };
    let bs = tb.start_station(&cfg).unwrap();
    let progress = Arc::new(TransferProgress::default());
    let abort = AtomicBool::new(false);
    let (r, split) = std::thread::scope(|s| {
        let job = s.spawn(|| tb.transfer_observed(&cfg.transfer(), &abort, &progress));
        // Generous: the machine is shared. 256 KB take about 1 s on the 2 Mb/s hop.
        let deadline = Instant::now() + Duration::from_secs(120);
        while progress.received.load(Ordering::Relaxed) < 256 << 10 {
            assert!(Instant::now() < deadline && !job.is_finished(), "the transfer did not get going");
            std::thread::sleep(Duration::from_millis(20));
        }
        let (_, split) = bs.kill().unwrap();
        // Nothing passes a dead base station. The counts do not depend on how long this lasts: the
        // sender reads what it saw acknowledged when it stops, and the receiver reads everything its
        // kernel accepted (hence acknowledged) before it heeds the abort.
        std::thread::sleep(Duration::from_millis(500));
        abort.store(true, Ordering::Relaxed);
        (job.join().unwrap(), split)
    });
    assert!(r.is_err(), "a transfer through a killed base station cannot complete");
    let f = Failure {
        acked: progress.acked.load(Ordering::Relaxed),
        received: progress.received.load(Ordering::Relaxed),
        held: split.map(|s| s.held_at_kill),
    };
    eprintln!(
        "{agent}: base station killed after the sender wrote {} B; acknowledged to the sender {} B, received by the mobile {} B: {} B acknowledged and never delivered; held by the proxy {:?}",
        progress.written.load(Ordering::Relaxed),
        f.acked,
        f.received,
        f.acked_not_delivered(),
        f.held
    );
    assert!(f.received >= 256 << 10 && f.acked > 0);
    Some(f)
}

#[test]
fn a_base_station_failure_loses_acknowledged_bytes_under_split_and_none_under_snoop() {
    // Balakrishnan 1995 §2: under I-TCP "acknowledgments of TCP packets can arrive at the sender even before the
    // packet actually reaches the intended recipient"; Snoop "maintains the end-to-end semantics" (§6).
    let Some(split) = kill_mid_transfer(AgentKind::Split) else { return };
    let held = split.held.expect("the proxy reports what it held");
    let lost = split.acked_not_delivered();
    assert!(lost > 0, "split: the sender saw nothing acknowledged beyond what the mobile had");
    // The sender cannot have seen more acknowledged than the base station had received, nor the mobile
    // less than the base station saw it acknowledge: what was lost is at most what the proxy held.
    assert!(lost <= held.total(), "lost {lost} B, but the proxy held {held:?}");
    let Some(snoop) = kill_mid_transfer(AgentKind::Snoop) else { return };
    assert_eq!(snoop.acked_not_delivered(), 0, "Snoop never acknowledges what the mobile has not");
    assert!(snoop.held.is_none());
}

#[test]
fn a_complete_transfer_counts_every_byte_acknowledged() {
    // The accounting the failure test relies on: with nothing lost, what the sender saw acknowledged is
    // exactly what it wrote, under split as end to end.
    for agent in [AgentKind::None, AgentKind::Split] {
        let Some(tb) = testbed_or_skip() else { return };
        let cfg = TestbedConfig { agent, bytes: 300_000, rate_mbps: 8.0, ..TestbedConfig::default() };
        let bs = tb.start_station(&cfg).unwrap();
        let progress = Arc::new(TransferProgress::default());
        let t = tb.transfer_observed(&cfg.transfer(), &AtomicBool::new(false), &progress).unwrap();
        bs.stop().unwrap();
        assert!(t.hash_ok());
        assert_eq!(progress.written.load(Ordering::Relaxed), cfg.bytes);
        assert_eq!(progress.acked.load(Ordering::Relaxed), cfg.bytes, "{agent}");
        assert_eq!(progress.received.load(Ordering::Relaxed), cfg.bytes);
        assert_eq!(t.sender.bytes_acked, cfg.bytes);
    }
}

#[test]
fn a_connection_the_mobile_refuses_is_reset_at_the_fixed_host() {
    // Transparency includes failure: with no listener at the mobile, the fixed host must not be left
    // with a connection the base station accepted for nobody.
    let Some(tb) = testbed_or_skip() else { return };
    let cfg = TestbedConfig { agent: AgentKind::Split, ..TestbedConfig::default() };
    let bs = tb.start_station(&cfg).unwrap();
    let outcome = tb
        .run_in(Node::Fh, || -> std::io::Result<usize> {
            let addr = std::net::SocketAddr::from((MH_IP, TRANSFER_PORT));
            let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(10))?;
            // Generous under load; the reset comes after one round trip over the hop.
            s.set_read_timeout(Some(Duration::from_secs(30)))?;
            let mut b = [0u8; 16];
            s.read(&mut b)
        })
        .unwrap();
    let (_, split) = bs.stop().unwrap();
    let split = split.unwrap();
    match outcome {
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}"),
        Ok(n) => panic!("the fixed host read {n} bytes from a connection the mobile refused"),
    }
    assert_eq!((split.connections, split.connect_failures, split.resets), (1, 1, 0), "{split:?}");
}
