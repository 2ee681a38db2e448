//! The core's own tests: the stall backstop and the endpoint index.

use super::*;

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
