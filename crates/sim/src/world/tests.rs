//! The core's own tests: the stall backstop, the endpoint index, the frames' ends left without an event, and
//! the order in which the work queue carries out what features ask of one another.

use super::*;
use crate::context::Cx;

fn node() -> Node {
    Node {
        name: "fh".into(),
        addr: Ipv4Addr::new(10, 0, 0, 1),
        routes: Routes::default(),
        gateway: None,
        agent: None,
        agent_timer: None,
        endpoints: Vec::new(),
        by_key: FastMap::default(),
    }
}

fn endpoint(local_port: u16, remote_port: u16) -> Endpoint {
    Endpoint {
        owner: Owner { feature: FeatureId(0), key: 0 },
        node: 0,
        local: SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), local_port),
        remote: SocketAddrV4::new(Ipv4Addr::new(10, 1, 0, 1), remote_port),
        open: true,
        timer: None,
    }
}

/// An agent whose timer is always due: every expiry asks for another at once, so simulated time never
/// advances (what a timer of a few nanoseconds amounts to).
struct AlwaysDue;

impl Agent for AlwaysDue {
    fn handle_packet(&mut self, _now: Time, side: lasthop_agents::Side, packet: Bytes, out: &mut Vec<Action>) {
        out.push(Action::Forward(side, packet));
    }
    fn handle_timeout(&mut self, _now: Time, _out: &mut Vec<Action>) {}
    fn poll_timeout(&self) -> Option<Time> {
        Some(Time::ZERO)
    }
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}

/// A run whose simulated time stops advancing ends with an error naming the likely fields, instead of
/// spinning until killed.
#[test]
fn a_run_that_stops_advancing_time_ends_with_an_error_naming_the_likely_field() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/snoop.toml")).unwrap();
    let s = Scenario::from_str(&text, "snoop.toml").unwrap();
    let mut w = World::build(&s, &RunOptions::default()).unwrap();
    let bs = w.core.node_index("bs");
    w.core.nodes[bs].agent = Some(Box::new(AlwaysDue));
    w.core.sched.schedule(Time::ZERO, Event::AgentTimer { node: bs });
    let e = w.run().unwrap_err().to_string();
    assert!(e.contains("stopped advancing simulated time at 0 s"), "{e}");
    assert!(e.contains("node `bs`") && e.contains("snoop.persist_timeout_ms"), "{e}");
}

/// The scan (few endpoints) and the map (many) find the same endpoint: the first open one with the key,
/// also after the first of two with one key closed.
#[test]
fn endpoint_lookup_by_key_finds_what_the_scan_finds() {
    for count in [4usize, 40] {
        let mut n = node();
        // Every key twice: endpoints 2k and 2k + 1 share key k.
        let eps: Vec<Endpoint> = (0..count).map(|i| endpoint(20_000 + (i / 2) as u16, 5001)).collect();
        for (i, e) in eps.iter().enumerate() {
            n.add_endpoint(i, e.key());
        }
        let scan = |n: &Node, key| n.endpoints.iter().copied().find(|&e| eps[e].key() == key);
        for k in 0..count / 2 {
            let key = eps[2 * k].key();
            assert_eq!(n.find_endpoint(key, &eps), Some(2 * k));
            assert_eq!(n.find_endpoint(key, &eps), scan(&n, key));
        }
        n.remove_endpoint(0, eps[0].key(), &eps);
        assert_eq!(n.find_endpoint(eps[0].key(), &eps), Some(1), "the second with the key takes over");
        n.remove_endpoint(1, eps[1].key(), &eps);
        assert_eq!(n.find_endpoint(eps[0].key(), &eps), None);
        assert_eq!(n.find_endpoint((9, Ipv4Addr::new(10, 1, 0, 1), 5001), &eps), None);
        assert_eq!(n.by_key.len(), count / 2 - 1);
    }
}

/// What the probes of the work-queue test did, in order, and whether one of their hooks is running.
#[derive(Clone, Default)]
struct Log {
    lines: std::rc::Rc<std::cell::RefCell<Vec<String>>>,
    in_hook: std::rc::Rc<std::cell::Cell<bool>>,
}

impl Log {
    /// Notes `what` of probe `name`, and fails if another hook is running (a hook called from inside one).
    fn note(&self, name: &str, what: &str) {
        assert!(!self.in_hook.get(), "{name}: {what} was called while another hook ran");
        self.in_hook.set(true);
        self.lines.borrow_mut().push(format!("{name}: {what}"));
    }

    fn done(&self) {
        self.in_hook.set(false);
    }
}

/// A probe feature: `a` starts a chain at time zero (a reassociation, then a continuation); `b` answers
/// the reassociation with a datagram for node 0 and a continuation of its own; `c` only watches.
struct Probe {
    name: &'static str,
    log: Log,
}

impl Probe {
    fn datagram(cx: &Cx<'_, u8>) -> Bytes {
        let (src, dst) = (cx.nodes()[1].addr, cx.nodes()[0].addr);
        lasthop_wire::udp::UdpRepr { src_port: 9, dst_port: 9 }.emit_ipv4(src, dst, 1, 64, b"probe")
    }
}

impl Feature for Probe {
    type Event = u8;
    fn set_up(&mut self, cx: &mut Cx<'_, u8>) {
        if self.name == "a" {
            cx.schedule(Time::ZERO, 0);
        }
    }
    fn runs_until(&self) -> Option<Time> {
        Some(Time(1_000_000))
    }
    fn on_event(&mut self, cx: &mut Cx<'_, u8>, event: u8) {
        self.log.note(self.name, if event == 0 { "event" } else { "continuation" });
        if event == 0 {
            cx.request(crate::context::Request::Reassociate { link: 0 });
            cx.then(1);
        }
        self.log.done();
    }
    fn on_reassociate(&mut self, cx: &mut Cx<'_, u8>, _link: usize) {
        self.log.note(self.name, "reassociate");
        if self.name == "b" {
            let packet = Self::datagram(cx);
            cx.deliver_local(0, packet);
            cx.then(1);
        }
        self.log.done();
    }
    fn on_datagram(&mut self, _cx: &mut Cx<'_, u8>, _node: usize, _packet: &Bytes) -> bool {
        self.log.note(self.name, "datagram");
        self.log.done();
        false
    }
    fn finish(self, _view: crate::context::View<'_>, _result: &mut crate::RunResult) {}
}

/// A feature's request that calls other features' hooks (a reassociation) is carried out after its hook
/// returns, each hook of the others in registration order; what those hooks ask for (a delivery) is queued
/// behind, first in first out; continuations run once nothing else is queued, in the order asked for. No
/// hook runs inside another, and no feature is offered or told what its own request caused: `a` hears of
/// no reassociation, `b` is not offered its own datagram.
#[test]
fn work_a_request_causes_runs_after_the_hook_in_fifo_order_never_back_to_its_origin() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/snoop.toml")).unwrap();
    let s = Scenario::from_str(&text, "snoop.toml").unwrap();
    let log = Log::default();
    let world = World::build_with(&s, &RunOptions::default(), |_, world| {
        for name in ["a", "b", "c"] {
            world.register(Probe { name, log: log.clone() });
        }
        Ok(())
    })
    .unwrap();
    let r = world.run().unwrap();
    let lines = log.lines.borrow();
    assert_eq!(
        *lines,
        [
            "a: event",
            "b: reassociate",
            "c: reassociate",
            "a: datagram",
            "c: datagram",
            "a: continuation",
            "b: continuation"
        ],
    );
    assert_eq!(r.undeliverable_packets, 1, "a datagram no feature takes is undeliverable");
}

/// The core's world for `examples/snoop.toml`, built and not run, with a 1,000-byte frame sent at 0 on
/// direction 0 of link `name`: the core, the link's index, and a 1,000-byte frame's airtime and the link's
/// delay (ns).
fn one_frame_sent(name: &str) -> (Core, usize, u64, u64) {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/snoop.toml")).unwrap();
    let s = Scenario::from_str(&text, "snoop.toml").unwrap();
    let mut core = World::build(&s, &RunOptions::default()).unwrap().core;
    let link = core.links.iter().position(|l| l.name == name).unwrap();
    let (air, delay) = (core.links[link].airtime_ns(1000), core.links[link].delay_ns());
    core.send(Time::ZERO, (link, 0), Bytes::from(vec![0; 1000]), false);
    (core, link, air, delay)
}

/// The next frame's event, played as the event loop plays it, its time and what it is: `true` a frame's
/// end, `false` an arrival (the features' events, queued by the build, are passed over).
fn next_event(core: &mut Core) -> Option<(Time, bool)> {
    while let Some((at, ev)) = core.sched.pop() {
        match ev {
            Event::TxDone { link, dir } => {
                core.tx_done(at, link, dir);
                return Some((at, true));
            }
            Event::Arrive { .. } => return Some((at, false)),
            _ => {}
        }
    }
    None
}

/// A frame with nothing queued behind it ends without an event; a frame sent after that end starts at
/// once, on the wired (full-duplex) hop and on the wireless (half-duplex) one alike.
#[test]
fn a_frame_sent_after_an_idle_end_without_an_event_starts_at_once() {
    for name in ["ether", "wavelan"] {
        let (mut core, link, air, delay) = one_frame_sent(name);
        assert_eq!(next_event(&mut core), Some((Time(air + delay), false)), "{name}: the arrival, no end event");
        assert_eq!(next_event(&mut core), None, "{name}");
        let later = Time(air + delay);
        core.send(later, (link, 0), Bytes::from(vec![1; 1000]), false);
        assert_eq!(next_event(&mut core), Some((Time(later.0 + air + delay), false)), "{name}: started at once");
    }
}

/// A frame queued behind one whose end had no event queues that end, which then runs where it would have
/// run and starts the frame.
#[test]
fn a_frame_queued_behind_an_end_without_an_event_queues_the_end() {
    for name in ["ether", "wavelan"] {
        let (mut core, link, air, delay) = one_frame_sent(name);
        core.send(Time::ZERO, (link, 0), Bytes::from(vec![1; 1000]), false);
        let mut events = std::iter::from_fn(|| next_event(&mut core)).collect::<Vec<_>>();
        events.sort();
        let first_end = Time(air);
        assert_eq!(
            events,
            [(first_end, true), (Time(air + delay), false), (Time(2 * air + delay), false)],
            "{name}: the first frame's end, both arrivals (the second frame's end had nothing behind it)"
        );
    }
}
