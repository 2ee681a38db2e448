//! Signals, in a test binary of their own (the flags are process-wide): SIGUSR1 makes `serve` report and go
//! on, SIGTERM stops it with its counters; SIGINT during a testbed transfer ends it with `Interrupted` and
//! leaves no namespace behind.

use lasthop_net::sys::{REPORT_REQUESTED, STOP_REQUESTED};
use lasthop_net::testbed::{skip_or_fail, Node, BS_WIRED_IF, BS_WIRELESS_IF};
use lasthop_net::{serve, AgentKind, BsConfig, HopConfig, NetError, Testbed, TestbedConfig};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

fn raise(sig: libc::c_int) {
    // SAFETY: sending a signal to our own process; the handlers installed by the library only set flags.
    unsafe { libc::kill(libc::getpid(), sig) };
}

fn our_namespaces() -> Vec<String> {
    let out = std::process::Command::new("ip").args(["netns", "list"]).output().expect("ip");
    let prefix = format!("lh{}n", std::process::id());
    String::from_utf8_lossy(&out.stdout).lines().filter(|l| l.starts_with(&prefix)).map(str::to_string).collect()
}

#[test]
fn sigusr1_reports_sigterm_stops_sigint_tears_the_testbed_down() {
    let tb = match Testbed::create() {
        Ok(tb) => tb,
        Err(e @ (NetError::NotRoot(_) | NetError::NamespacesUnavailable(_))) => return skip_or_fail(e),
        Err(e) => panic!("{e}"),
    };

    // `lasthop bs` as the CLI runs it, on a thread in the BS namespace.
    let cfg = BsConfig {
        wired_if: BS_WIRED_IF.into(),
        wireless_if: BS_WIRELESS_IF.into(),
        agent: AgentKind::Snoop,
        hop: HopConfig::default(),
        ..BsConfig::default()
    };
    let bs = tb.spawn_in(Node::Bs, move || serve(&cfg, true)).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    raise(libc::SIGUSR1);
    let t = Instant::now();
    while REPORT_REQUESTED.load(Ordering::SeqCst) && t.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(!REPORT_REQUESTED.load(Ordering::SeqCst), "SIGUSR1 was not served");
    assert!(!bs.is_finished(), "SIGUSR1 must not stop the base station");
    raise(libc::SIGTERM);
    let counters = bs.join().unwrap().expect("serve returns its counters on SIGTERM");
    assert!(counters.uptime_s >= 0.0);
    drop(tb);
    assert!(our_namespaces().is_empty(), "left behind: {:?}", our_namespaces());
    STOP_REQUESTED.store(false, Ordering::SeqCst);

    // Ctrl-C in the middle of a slow transfer: an error, and nothing left behind.
    let job = std::thread::spawn(run_testbed_transfer_slow);
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(our_namespaces().len(), 3, "the testbed is up");
    raise(libc::SIGINT);
    let r = job.join().unwrap();
    assert!(matches!(r, Err(NetError::Interrupted)), "{r:?}");
    assert!(our_namespaces().is_empty(), "left behind: {:?}", our_namespaces());
    STOP_REQUESTED.store(false, Ordering::SeqCst);
}

fn run_testbed_transfer_slow() -> Result<lasthop_net::TestbedResult, NetError> {
    let cfg = TestbedConfig { agent: AgentKind::None, rate_mbps: 1.0, bytes: 50 << 20, ..TestbedConfig::default() };
    lasthop_net::run_testbed_transfer(&cfg)
}
