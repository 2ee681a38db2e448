//! The handoff testbed: five network namespaces, a mobile that moves between two cells, and one kernel-TCP
//! transfer from the fixed host to the mobile's home address.
//!
//! ```text
//!   FH: fh0 10.77.0.1 ── f0 :HA: b1 ── w0 :BS1: m0 ── c1
//!                            (router,   b2 ── w0 :BS2: m0 ── c2 :MH: r0 ── mh0 10.77.0.2
//!                             home agent)      (hop)          (radio, controller)  (kernel)
//! ```
//!
//! Every box but the hosts' kernels is a driver of this module on a thread in its namespace: the home agent
//! and router ([`super::ha`]), two base stations ([`super::bs`], each emulating its own cell's hop), and the
//! mobile's radio and controller ([`super::mh`]). Addresses on the wired side are the drivers' own (no
//! kernel addresses, `ip_forward = 0`), so the only kernel TCP is the fixed host's and the mobile's; their
//! neighbour entries are static, so no ARP crosses the drivers. The wired links between the home agent and
//! the base stations carry tunnelled packets 20 bytes longer than the hosts' 1500-byte MTU, so their MTU is
//! 1600 (a tunnel's overhead has to go somewhere; here it is not taken from the mobile's segments).
//!
//! Teardown: [`HandoffTestbed`] removes its namespaces when dropped (success, error, panic), and the
//! drivers and the transfer stop on SIGINT/SIGTERM, ending in the same drop.

use super::bs::{HandoffBsConfig, HandoffBsNode, Promotion};
use super::ha::HaNode;
use super::mh::BeaconDriven;
use super::mh::{HandoffRecord, MhNode};
use super::node::{run_node, Link, Node};
use super::{HandoffBy, HandoffScheme, HandoffSummary};
use crate::counters::Counters;
use crate::forward::Mac;
use crate::hop::HopCounters;
use crate::sys;
use crate::testbed::{
    add_namespaces, ip, remove_stale_namespaces, run_in_namespace, sender_offloads_off, spawn_in_namespace,
};
use crate::testbed::{transfer_between, TestbedConfig, TestbedResult, TransferProgress, TransferResult};
use crate::testbed::{FH_IP, MH_IP};
use crate::NetError;
use lasthop_agents::handoff::Role;
use lasthop_agents::Agent;
use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

pub const HA_IP: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 3);
pub const BS1_IP: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 11);
pub const BS2_IP: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 12);
/// MTU of the wired links that carry tunnelled packets.
pub const TUNNEL_MTU: u32 = 1600;

/// The five namespaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Host {
    Fh,
    Ha,
    Bs1,
    Bs2,
    Mh,
}

const HOSTS: [Host; 5] = [Host::Fh, Host::Ha, Host::Bs1, Host::Bs2, Host::Mh];

/// One end of a veth pair: its host, interface and MAC.
type End = (Host, &'static str, Mac);

/// Each veth pair, both ends.
const LINKS: [(End, End); 6] = [
    ((Host::Fh, "fh0", mac(1)), (Host::Ha, "f0", mac(2))),
    ((Host::Ha, "b1", mac(3)), (Host::Bs1, "w0", mac(4))),
    ((Host::Ha, "b2", mac(5)), (Host::Bs2, "w0", mac(6))),
    ((Host::Bs1, "m0", mac(7)), (Host::Mh, "c1", mac(8))),
    ((Host::Bs2, "m0", mac(9)), (Host::Mh, "c2", mac(10))),
    ((Host::Mh, "r0", mac(11)), (Host::Mh, "mh0", mac(12))),
];

/// The interfaces of the hosts' kernels (the others are the drivers').
const KERNEL_IFS: [&str; 2] = ["fh0", "mh0"];

/// Fixed, locally administered MACs: each namespace sees only its own links.
const fn mac(n: u8) -> Mac {
    [0x02, 0x4c, 0x48, 0x00, 0x00, n]
}

/// The [`Link`] as seen from `host`'s interface `iface`.
fn link(host: Host, iface: &str) -> Link {
    for (a, b) in LINKS {
        if a.0 == host && a.1 == iface {
            return Link { own: a.2, peer: b.2 };
        }
        if b.0 == host && b.1 == iface {
            return Link { own: b.2, peer: a.2 };
        }
    }
    unreachable!("no link {iface} at {host:?}")
}

static SERIAL: AtomicU32 = AtomicU32::new(0);

/// The five namespaces and their links; removed on drop.
pub struct HandoffTestbed {
    names: [String; 5],
    torn_down: bool,
}

impl HandoffTestbed {
    /// Builds the namespaces and links. Refuses clearly when not root or when namespaces cannot be made.
    pub fn create() -> Result<HandoffTestbed, NetError> {
        if !sys::is_root() {
            return Err(NetError::NotRoot("building network namespaces"));
        }
        remove_stale_namespaces();
        // `lh<pid>n<k>-…` as the one-station testbed's, so a killed run's are removed the same way.
        let base = format!("lh{}n{}h", std::process::id(), SERIAL.fetch_add(1, Ordering::Relaxed));
        let names = HOSTS.map(|h| format!("{base}-{}", format!("{h:?}").to_lowercase()));
        let mut tb = HandoffTestbed { names, torn_down: false };
        add_namespaces(&tb.names)?;
        tb.build()?;
        Ok(tb)
    }

    pub fn name(&self, host: Host) -> &str {
        &self.names[host as usize]
    }

    pub fn ns_path(&self, host: Host) -> String {
        format!("/var/run/netns/{}", self.name(host))
    }

    fn build(&mut self) -> Result<(), NetError> {
        for ((ha, ia, ma), (hb, ib, mb)) in LINKS {
            let (na, nb) = (self.name(ha).to_string(), self.name(hb).to_string());
            ip(&["link", "add", ia, "netns", &na, "type", "veth", "peer", "name", ib, "netns", &nb])?;
            // Only the kernels' own interfaces take their MAC from the table. A driver's interface keeps
            // its random one, so the frames addressed to it by the table are "other host" to the kernel
            // of its namespace, which drops them, while the driver's promiscuous socket reads them: the
            // mobile's kernel must not take, through a cell's interface, what its radio did not receive.
            for (n, i, m) in [(&na, ia, ma), (&nb, ib, mb)] {
                if KERNEL_IFS.contains(&i) {
                    ip(&["-n", n, "link", "set", i, "address", &mac_text(m)])?;
                }
            }
        }
        for host in HOSTS {
            let n = self.name(host).to_string();
            self.in_ns(host, || {
                std::fs::write("/proc/sys/net/ipv6/conf/all/disable_ipv6", "1")?;
                std::fs::write("/proc/sys/net/ipv6/conf/default/disable_ipv6", "1")?;
                std::fs::write("/proc/sys/net/ipv4/ip_forward", "0")
            })?
            .map_err(|e| NetError::io(format!("setting sysctls in {n}"), e))?;
            ip(&["-n", &n, "link", "set", "lo", "up"])?;
        }
        for ((ha, ia, _), (hb, ib, _)) in LINKS {
            for (h, i) in [(ha, ia), (hb, ib)] {
                let n = self.name(h).to_string();
                if (h == Host::Ha && i.starts_with('b')) || ((h == Host::Bs1 || h == Host::Bs2) && i == "w0") {
                    ip(&["-n", &n, "link", "set", i, "mtu", &TUNNEL_MTU.to_string()])?;
                }
                ip(&["-n", &n, "link", "set", i, "up"])?;
            }
        }
        let (fh, mh) = (self.name(Host::Fh).to_string(), self.name(Host::Mh).to_string());
        ip(&["-n", &fh, "addr", "add", &format!("{FH_IP}/24"), "dev", "fh0"])?;
        ip(&["-n", &mh, "addr", "add", &format!("{MH_IP}/24"), "dev", "mh0"])?;
        // Static neighbours: the fixed host reaches everyone through the home agent's router, the mobile's
        // kernel reaches the fixed host through its radio.
        let f0 = mac_text(link(Host::Ha, "f0").own);
        for addr in [MH_IP, HA_IP, BS1_IP, BS2_IP] {
            ip(&["-n", &fh, "neigh", "replace", &addr.to_string(), "lladdr", &f0, "dev", "fh0", "nud", "permanent"])?;
        }
        let r0 = mac_text(link(Host::Mh, "r0").own);
        ip(&["-n", &mh, "neigh", "replace", &FH_IP.to_string(), "lladdr", &r0, "dev", "mh0", "nud", "permanent"])?;
        // The kernels send wire-sized frames with complete checksums (see `crate::bs`).
        for (host, dev) in [(Host::Fh, "fh0"), (Host::Mh, "mh0")] {
            self.in_ns(host, move || sender_offloads_off(dev))?
                .map_err(|e| NetError::io(format!("switching offloads off on {dev}"), e))?;
        }
        Ok(())
    }

    /// Runs `f` on a thread inside `host`'s namespace and waits for it.
    pub fn in_ns<T: Send + 'static>(&self, host: Host, f: impl FnOnce() -> T + Send + 'static) -> Result<T, NetError> {
        run_in_namespace(&self.ns_path(host), &format!("ns-{host:?}"), f)
    }

    /// Starts the drivers of `cfg`'s scheme; returns once every socket is open.
    pub fn start(&self, cfg: &TestbedConfig, scheme: HandoffScheme) -> Result<Drivers, NetError> {
        let multicast = scheme == HandoffScheme::Multicast;
        let every = (cfg.handoff_every_s.is_finite()).then(|| Duration::from_secs_f64(cfg.handoff_every_s));
        let beacon = (cfg.beacon_every_s > 0.0).then(|| Duration::from_secs_f64(cfg.beacon_every_s));
        let bs = |addr: Ipv4Addr, peer: Ipv4Addr, role: Role, k: u64| HandoffBsConfig {
            addr,
            home_agent: HA_IP,
            peers: vec![peer],
            mobile: MH_IP,
            role,
            buffer_packets: cfg.handoff_buffer_packets,
            snoop: cfg.agent == crate::AgentKind::Snoop,
            // Each cell its own error stream.
            hop: crate::hop::HopConfig { seed: cfg.seed.wrapping_mul(2).wrapping_add(k), ..cfg.hop() },
            beacon_every: beacon,
        };
        let second = if multicast { Role::Buffering } else { Role::Idle };
        let members = if multicast { vec![BS1_IP, BS2_IP] } else { vec![BS1_IP] };
        let routes = BTreeMap::from([(FH_IP, 0), (BS1_IP, 1), (BS2_IP, 2)]);
        let ha = HaNode::new(
            HA_IP,
            MH_IP,
            &members,
            vec![link(Host::Ha, "f0"), link(Host::Ha, "b1"), link(Host::Ha, "b2")],
            routes,
            vec![BS1_IP, BS2_IP],
        );
        let bs1 =
            HandoffBsNode::new(&bs(BS1_IP, BS2_IP, Role::Primary, 1), [link(Host::Bs1, "w0"), link(Host::Bs1, "m0")]);
        let bs2 = HandoffBsNode::new(&bs(BS2_IP, BS1_IP, second, 2), [link(Host::Bs2, "w0"), link(Host::Bs2, "m0")]);
        let mut mh = MhNode::new(
            MH_IP,
            scheme.agents(),
            vec![BS1_IP, BS2_IP],
            vec![link(Host::Mh, "r0"), link(Host::Mh, "c1"), link(Host::Mh, "c2")],
            every,
        );
        match (cfg.handoff_by, beacon) {
            (HandoffBy::Beacons, _) => mh = mh.deciding_by_beacons(beacon_driven(cfg)?),
            (HandoffBy::Schedule, Some(b)) => mh = mh.leaving_silent_cells(b),
            (HandoffBy::Schedule, None) => {}
        }
        if let Some(n) = cfg.handoff_limit {
            mh = mh.with_max_handoffs(n);
        }
        if scheme == HandoffScheme::FastRexmit {
            mh = mh.with_fast_retransmit();
        }
        let stops: [Arc<AtomicBool>; 5] = std::array::from_fn(|_| Arc::new(AtomicBool::new(false)));
        let mut d = Drivers { stops: stops.clone(), ha: None, bs1: None, bs2: None, mh: None };
        d.ha = Some(self.run(Host::Ha, ["f0", "b1", "b2"], ha, &stops[Host::Ha as usize])?);
        d.bs1 = Some(self.run(Host::Bs1, ["w0", "m0"], bs1, &stops[Host::Bs1 as usize])?);
        d.bs2 = Some(self.run(Host::Bs2, ["w0", "m0"], bs2, &stops[Host::Bs2 as usize])?);
        d.mh = Some(self.run(Host::Mh, ["r0", "c1", "c2"], mh, &stops[Host::Mh as usize])?);
        Ok(d)
    }

    /// Runs `node` on its interfaces on a thread in `host`'s namespace; returns once its sockets are open.
    fn run<const N: usize, T: Node + Send + 'static>(
        &self,
        host: Host,
        ifaces: [&'static str; N],
        mut node: T,
        stop: &Arc<AtomicBool>,
    ) -> Result<JoinHandle<Result<T, NetError>>, NetError> {
        let (tx, rx) = mpsc::channel();
        let s = stop.clone();
        let h = spawn_in_namespace(&self.ns_path(host), &format!("{host:?}"), move || {
            let r = run_node(ifaces, &mut node, &s, || {
                let _ = tx.send(());
            });
            r.map(|()| node)
        })?;
        match rx.recv_timeout(Duration::from_secs(10)) {
            Ok(()) => Ok(h),
            Err(_) => {
                stop.store(true, Ordering::Relaxed);
                Err(match h.join() {
                    Ok(Err(e)) => e,
                    _ => NetError::Transfer(format!("the {host:?} driver did not start")),
                })
            }
        }
    }

    /// Removes the namespaces. Idempotent; also done on drop.
    pub fn teardown(&mut self) {
        if std::mem::replace(&mut self.torn_down, true) {
            return;
        }
        for n in &self.names {
            let _ = ip(&["netns", "del", n]);
        }
    }
}

impl Drop for HandoffTestbed {
    fn drop(&mut self) {
        self.teardown();
    }
}

/// The mobile's walk and radio when it hands off by beacon strength: the simulator's `[mobility]` table
/// with `motion = "beacons"` and its defaults (base stations at 0 and 50 m, log-distance path loss with 4 dB
/// shadowing, 3 beacons averaged, forgotten after 3 periods), the walking speed and margin of `cfg`, and
/// the same shadowing streams as the simulator's for the run's seed.
fn beacon_driven(cfg: &TestbedConfig) -> Result<BeaconDriven, NetError> {
    let table = serde_json::json!({
        "mobile": "mh", "home_agent": "ha", "base_stations": ["bs1", "bs2"], "motion": "beacons",
        "speed_mps": cfg.walk_speed_mps, "hysteresis_db": cfg.hysteresis_db, "beacon_period_s": cfg.beacon_every_s,
    });
    let m: lasthop_sim::mobility::MobilityConfig =
        serde_json::from_value(table).map_err(|e| NetError::Config(format!("beacon mobility: {e}")))?;
    let monitor = lasthop_agents::handoff::BeaconMonitor::new(lasthop_agents::handoff::BeaconConfig {
        hysteresis_db: m.hysteresis_db,
        samples: m.beacon_samples,
        max_age: lasthop_wire::Time((m.beacon_period_s * 3.0 * 1e9).round() as u64),
        buffer_threshold_dbm: m.buffer_threshold_dbm,
    });
    Ok(BeaconDriven {
        walk: m.walk(),
        positions: m.positions(),
        radio: m.radio(),
        shadowing: m
            .base_stations
            .iter()
            .map(|n| lasthop_sim::rng::stream(cfg.seed, &format!("mobility.{n}"), "shadowing"))
            .collect(),
        monitor,
    })
}

fn mac_text(m: Mac) -> String {
    m.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")
}

/// The running drivers; stopped (and joined) on [`Drivers::stop`] or drop.
pub struct Drivers {
    /// Each driver's stop flag, by [`Host`] (the fixed host's is unused).
    stops: [Arc<AtomicBool>; 5],
    ha: Option<JoinHandle<Result<HaNode, NetError>>>,
    bs1: Option<JoinHandle<Result<HandoffBsNode, NetError>>>,
    bs2: Option<JoinHandle<Result<HandoffBsNode, NetError>>>,
    mh: Option<JoinHandle<Result<MhNode, NetError>>>,
}

/// The drivers' state at the end of a run.
pub struct Stopped {
    pub ha: HaNode,
    pub bs: [HandoffBsNode; 2],
    pub mh: MhNode,
}

fn join<T>(h: Option<JoinHandle<Result<T, NetError>>>) -> Result<T, NetError> {
    h.ok_or_else(|| NetError::Transfer("driver already stopped".into()))?
        .join()
        .map_err(|_| NetError::Transfer("a driver thread panicked".into()))?
}

/// Crashes one driver when pulled, from any thread: see [`Drivers::kill_switch`].
#[derive(Clone)]
pub struct KillSwitch(Arc<AtomicBool>);

impl KillSwitch {
    pub fn pull(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

impl Drivers {
    /// The switch that crashes `host`'s driver mid-run, what SIGKILL does to a process: its loop ends at
    /// once, its sockets close, and what it held (the hop's queue, the buffer, Snoop's cache, beacons to
    /// come) is gone; frames sent to it are dropped by its namespace's kernel. Its counters stay readable
    /// after [`Drivers::stop`], as they were when it died.
    pub fn kill_switch(&self, host: Host) -> KillSwitch {
        KillSwitch(self.stops[host as usize].clone())
    }

    fn stop_all(&self) {
        for s in &self.stops {
            s.store(true, Ordering::Relaxed);
        }
    }

    pub fn stop(mut self) -> Result<Stopped, NetError> {
        self.stop_all();
        let (ha, bs1, bs2, mh) =
            (join(self.ha.take()), join(self.bs1.take()), join(self.bs2.take()), join(self.mh.take()));
        Ok(Stopped { ha: ha?, bs: [bs1?, bs2?], mh: mh? })
    }
}

impl Drop for Drivers {
    fn drop(&mut self) {
        self.stop_all();
        let _ = (join(self.ha.take()), join(self.bs1.take()), join(self.bs2.take()), join(self.mh.take()));
    }
}

impl Stopped {
    /// The mobile's handoff records with each promotion's resent count from the base station it went to.
    pub fn handoffs(&self) -> Vec<HandoffRecord> {
        let promotions: Vec<(Ipv4Addr, Promotion)> = [BS1_IP, BS2_IP]
            .into_iter()
            .zip(&self.bs)
            .flat_map(|(a, b)| b.promotions().iter().map(move |p| (a, *p)))
            .collect();
        self.mh
            .records()
            .iter()
            .map(|r| {
                let resent = promotions.iter().find(|(a, p)| *a == r.to && p.seq == r.seq).map_or(0, |(_, p)| p.resent);
                HandoffRecord { resent_from_buffer: resent, ..r.clone() }
            })
            .collect()
    }

    /// The run's result: the transfer's measures, the base stations' agent and hop counters summed over both
    /// (as one base station reports them), and the handoffs.
    pub fn result(&self, cfg: &TestbedConfig, scheme: HandoffScheme, t: &TransferResult) -> TestbedResult {
        let mut c = Counters::default();
        let add = |a: &mut HopCounters, b: HopCounters| {
            a.frames_sent += b.frames_sent;
            a.bytes_sent += b.bytes_sent;
            a.frames_lost += b.frames_lost;
            a.queue_drops += b.queue_drops;
            a.delivered += b.delivered;
        };
        for b in &self.bs {
            let (down, up) = b.hop_counters();
            add(&mut c.hop_down, down);
            add(&mut c.hop_up, up);
            for (k, v) in b.agent().counters() {
                *c.agent.entry(k.to_string()).or_default() += v;
            }
        }
        TestbedResult {
            goodput_mbps: t.goodput_mbps(),
            hash_ok: t.hash_ok(),
            bytes: t.bytes_received,
            duration_s: t.duration.as_secs_f64(),
            cc: t.cc.clone(),
            sack: cfg.sack,
            agent: cfg.agent,
            counters: c,
            sender: t.sender,
            split: None,
            handoff: Some(HandoffSummary { scheme, handoffs: self.handoffs(), counters: self.counters() }),
        }
    }

    /// Every driver's counters, prefixed by its host (`bs1.local_retransmissions`).
    pub fn counters(&self) -> BTreeMap<String, u64> {
        let mut m = BTreeMap::new();
        let named = [
            ("ha", self.ha.counters()),
            ("bs1", self.bs[0].counters()),
            ("bs2", self.bs[1].counters()),
            ("mh", self.mh.counters()),
        ];
        for (host, cs) in named {
            for (k, v) in cs {
                m.insert(format!("{host}.{k}"), v);
            }
        }
        m
    }
}

/// Builds the handoff testbed, runs one transfer through it and tears everything down.
pub fn run_handoff_transfer(cfg: &TestbedConfig, scheme: HandoffScheme) -> Result<TestbedResult, NetError> {
    run_handoff_transfer_with(cfg, scheme, |_| ())
}

/// [`run_handoff_transfer`], calling `during` with the running drivers just before the transfer starts
/// (where a fault test takes a [`Drivers::kill_switch`] to pull mid-transfer).
pub fn run_handoff_transfer_with(
    cfg: &TestbedConfig,
    scheme: HandoffScheme,
    during: impl FnOnce(&Drivers),
) -> Result<TestbedResult, NetError> {
    let tb = HandoffTestbed::create()?;
    tb.in_ns(Host::Fh, {
        let on = cfg.sack;
        move || std::fs::write("/proc/sys/net/ipv4/tcp_sack", if on { "1" } else { "0" })
    })?
    .map_err(|e| NetError::io("setting tcp_sack", e))?;
    tb.in_ns(Host::Mh, {
        let on = cfg.sack;
        move || std::fs::write("/proc/sys/net/ipv4/tcp_sack", if on { "1" } else { "0" })
    })?
    .map_err(|e| NetError::io("setting tcp_sack", e))?;
    let drivers = tb.start(cfg, scheme)?;
    during(&drivers);
    let t = transfer_between(
        &tb.ns_path(Host::Fh),
        &tb.ns_path(Host::Mh),
        &cfg.transfer(),
        &AtomicBool::new(false),
        &Arc::new(TransferProgress::default()),
    );
    let stopped = drivers.stop();
    let t = t?;
    let s = stopped?;
    Ok(s.result(cfg, scheme, &t))
}
