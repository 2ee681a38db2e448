//! The seam between the simulator's core ([`crate::world`]) and its features: the protocol families and
//! workloads that a scenario switches on, six of them, registered in [`build_all`]: the Web workload
//! ([`crate::web`]), mobility and handoff ([`crate::mobility`]), Mobile IP ([`crate::mobile_ip`]), a node that
//! fails ([`crate::failure`]), I-TCP's split connection ([`crate::split`]) and link-level ARQ ([`crate::arq`]).
//! A feature owns its state, its events and its metrics; the core owns the event queue, links and media,
//! routing, delivery to endpoints and agents, the bulk flows and their metrics, and calls a feature only
//! through [`Feature`].
//!
//! # Adding a protocol family
//!
//! A family is a module of its own (as `crate::mobile_ip` is) plus its registration here; the core is not
//! edited.
//!
//! 1. **Scenario section.** Its table in the scenario file (`[mobile_ip]`) is a field of
//!    [`crate::Scenario`] with a `Deserialize` config type that lives in the family's module.
//! 2. **State and set-up.** A type that implements [`Feature`], built from the scenario by a
//!    `build(scenario, world, id) -> Result<Option<..>, SimError>` in the family's module (`id` is
//!    [`World::next_feature_id`], the [`FeatureId`] its events and endpoints carry), and registered by two
//!    lines in [`build_all`] (`if let Some(f) = ..::build(..)? { world.add_feature(Box::new(f)) }`). `build` runs after the topology is in
//!    place and before the bulk flows: it may install agents (`world.nodes[n].agent`), recompute routes
//!    ([`World::recompute_routes`]), join media ([`World::share_medium`]), set a node's default gateway
//!    (`world.nodes[n].gateway`), and mark its control protocol ([`World::add_control_protocol`]).
//! 3. **Events.** One variant of [`FeatureEvent`] wrapping the family's own event enum. The family schedules
//!    them with [`World::schedule`]`(at, id, FeatureEvent::MobileIp(..))`; the core hands each back to [`Feature::on_event`]. Timers are events: schedule one
//!    for the deadline and, when it fires, check that it is still wanted (as the Web workload's request
//!    timer does with its attempt number).
//! 4. **Per-node hooks**, each optional, asked for through [`Feature::hooks`] where they cost per packet:
//!    - arrival: [`Feature::on_arrive`] sees every packet that reaches any node, before the core delivers or
//!      forwards it, and may consume it (a home agent that tunnels, a relay that splits a connection, a
//!      mobile host that reads control messages);
//!    - sending: [`Feature::on_host_send`] sees every packet a host's own TCP endpoint sends (a bulk flow's
//!      or a feature's), before the core routes it, and may take it, to send it itself (a mobile host's
//!      agent that keeps its own last data packets, Eom 2002 §4.2). A packet that reaches a node over a link
//!      passes `on_arrive` instead; one a feature sends with [`World::route`] or [`World::send`] passes
//!      neither (the link layer at a mobile host takes its own packets here too, `arq.rs`);
//!    - forwarding: a node's agent (`lasthop_agents::Agent`) sees what the node forwards; a feature hands a
//!      packet to it with [`World::hand_to_agent`], and sends its own with [`World::route`] (by the routing
//!      table) or [`World::send`] (on a given link and direction, priority queue or not); what an agent
//!      passes on or makes is offered to [`Feature::on_agent_output`] before the core routes it (the link
//!      layer taking what a base station's handoff agent forwards to the mobile, `arq.rs`);
//!    - association: [`World::reassociate`] tells every other feature, through [`Feature::on_reassociate`],
//!      that the mobile associated with a cell's link (mobility's handoffs), so link-layer state restarts;
//!    - delivery: [`Feature::on_datagram`] gets the non-TCP packets addressed to a node; TCP goes to the
//!      endpoints, and a feature's own endpoints ([`World::add_endpoint`] with
//!      [`Owner::Feature`](crate::world::Owner)) come back to [`Feature::after_endpoint`] whenever the core
//!      ran them; [`Feature::after_flow_endpoint`] follows every bulk-flow endpoint.
//! 5. **Metrics.** [`Feature::finish`] writes the family's own entries into the [`RunResult`] (a field of
//!    its own there, serialised only when present).
//!
//! # Same-instant order
//!
//! Events run in time order; events at the same instant run in the order they were scheduled (the engine's
//! insertion sequence, [`crate::engine`]), whichever feature or part of the core scheduled them. So the order
//! in which things are scheduled at set-up decides the order at time zero: features' `build` in
//! registration order (mobility's first motion and beacon events), then the bulk flows' starts in the
//! scenario's order of flow names, then features' [`Feature::start`] in registration order (the Web
//! workloads' first pages). Within one event, hooks run synchronously in registration order, and whatever
//! they schedule takes its place in the sequence there and then. A hook is never re-entered: while a feature
//! runs, the core does not call it again (its slot is empty), so a feature that sends or runs an endpoint on
//! its own behalf does its own follow-up (mobility checks its pause after the endpoints it drives).

use crate::metrics::RunResult;
use crate::world::World;
use crate::{Scenario, SimError};
use bytes::Bytes;
use lasthop_wire::Time;

pub(crate) use crate::world::HookSet;

/// A feature's index in the world's registration order; its events and endpoints carry it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FeatureId(pub(crate) usize);

/// The events of every feature, one variant per family (the only place the core's event type names them).
pub(crate) enum FeatureEvent {
    Web(crate::web::feature::WebEvent),
    Mobility(crate::mobility::feature::MobilityEvent),
    MobileIp(crate::mobile_ip::feature::MobileIpEvent),
    Failure(crate::failure::FailureEvent),
    Split(crate::split::SplitEvent),
    Arq(crate::arq::ArqEvent),
    /// The tests' probe feature.
    #[cfg(test)]
    Probe(u32),
}

/// Builds and registers every feature the scenario asks for, in the order that fixes same-instant ties.
pub(crate) fn build_all(s: &Scenario, world: &mut World) -> Result<(), SimError> {
    // Before the split relays, so that a failed node drops packets before a relay could take them.
    if let Some(f) = crate::failure::Failure::build(s, world, world.next_feature_id()) {
        world.add_feature(Box::new(f));
    }
    // Before mobility, so that a split base station takes its connections' packets out of the home agent's
    // tunnel before the handoff agent would forward them (`crate::split`).
    if let Some(f) = crate::split::Split::build(s, world, world.next_feature_id())? {
        world.add_feature(Box::new(f));
    }
    if let Some(m) = crate::mobility::feature::Mobility::build(s, world, world.next_feature_id()) {
        world.add_feature(Box::new(m));
    }
    if let Some(w) = crate::web::feature::WebWorkloads::build(s, world, world.next_feature_id())? {
        world.add_feature(Box::new(w));
    }
    if let Some(m) = crate::mobile_ip::feature::MobileIp::build(s, world, world.next_feature_id()) {
        world.add_feature(Box::new(m));
    }
    if let Some(f) = crate::arq::Arq::build(s, world, world.next_feature_id()) {
        world.add_feature(Box::new(f));
    }
    Ok(())
}

/// What the core calls on a feature. Every hook but `on_event` and `finish` has a default that does nothing.
pub(crate) trait Feature {
    /// Which per-packet hooks this feature wants called.
    fn hooks(&self) -> HookSet {
        HookSet::default()
    }

    /// Called once, after the bulk flows are set up, to schedule the feature's first events.
    fn start(&mut self, _world: &mut World) {}

    /// The run must go on at least until this time even when every bulk flow is done.
    fn runs_until(&self) -> Option<Time> {
        None
    }

    /// One of this feature's own events is due.
    fn on_event(&mut self, world: &mut World, now: Time, event: FeatureEvent);

    /// A packet reached `node` over `link` (already captured and parsed as IPv4, link in range); true when the
    /// feature consumed it (the core then neither delivers nor forwards it). Needs `hooks().arrive`.
    fn on_arrive(&mut self, _world: &mut World, _now: Time, _node: usize, _link: usize, _packet: &Bytes) -> bool {
        false
    }

    /// A TCP endpoint at `node` (a bulk flow's or a feature's) sends `packet`, its own, not one it forwards;
    /// true when the feature took it (the core then does not route it; the feature sends it, now or later, or
    /// drops it). Needs `hooks().host_send`. A packet sent while a feature runs (an endpoint answering what that
    /// feature delivered) is offered once no feature runs any more, so every feature sees every such packet.
    fn on_host_send(&mut self, _world: &mut World, _now: Time, _node: usize, _packet: &Bytes) -> bool {
        false
    }

    /// A packet `node`'s agent passes on or makes (a base station's handoff agent forwarding to the mobile),
    /// before the core routes it; true when the feature took it (the link layer sends it in its own frames).
    /// Needs `hooks().agent_output`.
    fn on_agent_output(&mut self, _world: &mut World, _now: Time, _node: usize, _packet: &Bytes) -> bool {
        false
    }

    /// The mobile (re)associated with the cell of wireless `link` (a handoff to it, or back in its range):
    /// link-layer state for that link starts afresh, as a real reassociation resets it ([`World::reassociate`]).
    fn on_reassociate(&mut self, _world: &mut World, _now: Time, _link: usize) {}

    /// The core purged direction `dir` of `link` ([`World::purge_link`]: a failed node, or a base station told
    /// to discard what it queued for the mobile): the feature's own link layer drops what it holds to send that
    /// way.
    fn on_link_purge(&mut self, _world: &mut World, _link: usize, _dir: usize) {}

    /// A non-TCP packet addressed to `node`; true when the feature took it (else it counts as undeliverable).
    fn on_datagram(&mut self, _world: &mut World, _now: Time, _node: usize, _packet: &Bytes) -> bool {
        false
    }

    /// The core ran endpoint `ep`, which this feature registered with `key` (a packet or timer reached it):
    /// send what it has, read what it got, re-arm its timer ([`World::arm_endpoint_timer`]).
    fn after_endpoint(&mut self, _world: &mut World, _now: Time, _ep: usize, _key: usize) {}

    /// A bulk flow's endpoint ran (bytes may have been delivered). Needs `hooks().after_flow_endpoint`.
    fn after_flow_endpoint(&mut self, _world: &mut World, _now: Time) {}

    /// The run is over: add this feature's metrics to `result` (the core's part is filled in).
    fn finish(self: Box<Self>, world: &World, result: &mut RunResult);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RunOptions;

    /// Records how many frames the links had sent when each of its events ran, and counts the packets it saw
    /// arrive; reports both as the counters of a pseudo-node "probe".
    struct Probe {
        id: FeatureId,
        counters: std::collections::BTreeMap<String, u64>,
        arrivals: u64,
        host_sends: u64,
    }

    fn frames(world: &World, f: impl Fn(&crate::link::Direction) -> u64) -> u64 {
        world.links.iter().flat_map(|l| l.dirs.iter()).map(f).sum()
    }

    impl Feature for Probe {
        fn hooks(&self) -> HookSet {
            HookSet { arrive: true, host_send: true, ..HookSet::default() }
        }
        fn start(&mut self, world: &mut World) {
            world.schedule(Time::ZERO, self.id, FeatureEvent::Probe(2));
        }
        fn on_event(&mut self, world: &mut World, _now: Time, event: FeatureEvent) {
            let FeatureEvent::Probe(tag) = event else { unreachable!("the probe's own events only") };
            self.counters.insert(format!("sent_before_event_{tag}"), frames(world, |d| d.frames_sent));
        }
        fn on_arrive(&mut self, _w: &mut World, _now: Time, _node: usize, _link: usize, _p: &Bytes) -> bool {
            self.arrivals += 1;
            false
        }
        fn on_host_send(&mut self, _w: &mut World, _now: Time, _node: usize, _p: &Bytes) -> bool {
            self.host_sends += 1;
            false
        }
        fn finish(mut self: Box<Self>, world: &World, result: &mut RunResult) {
            self.counters.insert("host_sends".into(), self.host_sends);
            let arrived = frames(world, |d| d.frames_sent - d.frames_lost);
            self.counters.insert("arrivals_missed".into(), arrived - self.arrivals);
            result.agents.insert("probe".into(), self.counters);
        }
    }

    #[test]
    fn same_instant_order_is_build_then_flows_then_start_and_every_arrival_reaches_the_hook() {
        let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/snoop.toml")).unwrap();
        let mut v: toml::Value = toml::from_str(&text).unwrap();
        v["flows"]["bulk"]["bytes"] = toml::Value::Integer(20_000);
        v["flows"]["bulk"]["start_s"] = toml::Value::Float(0.0);
        let s = Scenario::from_toml(v, "probe").unwrap();
        let world = World::build_with(&s, &RunOptions::default(), |s, world| {
            build_all(s, world)?;
            let id = world.next_feature_id();
            world.schedule(Time::ZERO, id, FeatureEvent::Probe(1));
            world.add_feature(Box::new(Probe { id, counters: Default::default(), arrivals: 0, host_sends: 0 }));
            Ok(())
        })
        .unwrap();
        let r = world.run().unwrap();
        assert!(r.flows[0].completed);
        let probe = &r.agents["probe"];
        // At time zero: the event scheduled at registration runs before the flow's SYN goes out, the one
        // scheduled by `start` after it.
        assert_eq!(probe["sent_before_event_1"], 0, "{probe:?}");
        assert_eq!(probe["sent_before_event_2"], 1, "{probe:?}");
        // Every frame that arrived passed the hook; the few not counted were still in the air when the flow's
        // last byte ended the run (at most one per link direction).
        assert!(probe["arrivals_missed"] <= 2 * s.links.len() as u64, "{probe:?}");
        assert!(r.links.iter().map(|l| l.frames_sent).sum::<u64>() > 20, "{probe:?}");
        // Every packet the two hosts' endpoints sent passed the send hook, which took none: the sender's
        // segments and the receiver's ACKs (at least one per two segments).
        let sent = r.flows[0].segments_sent;
        assert!(probe["host_sends"] > sent + sent / 3, "{probe:?} {sent}");
    }
}
