//! The seam between the simulator's core ([`crate::world`]) and its features: the protocol families and
//! workloads that a scenario switches on, seven of them, listed in `registry.rs`: a node that fails
//! ([`crate::failure`]), I-TCP's split connection ([`crate::split`]), mobility and handoff
//! ([`crate::mobility`]), the Web workload ([`crate::web`]), Mobile IP ([`crate::mobile_ip`]), link-level
//! ARQ ([`crate::arq`]) and, last, the bulk flows (`crate::bulk`). A feature owns its state, its events and
//! its metrics; the core owns the event queue, links and media, routing, delivery to endpoints and agents,
//! and the links' and agents' metrics.
//!
//! A feature implements [`Feature`]: each hook is handed a [`Cx`] (`crate::context`): the time, a read-only
//! [`View`] of the nodes, links, routes and flows, the scheduling of the feature's own events (its
//! [`Feature::Event`] type, kept in its own queue by [`Registered`]; the core's event names only the place),
//! and an outbox of [`Request`]s (send on a link, route, deliver locally, hand to a node's agent, set a link's
//! range or a gateway, purge, reassociate, open and run endpoints of its own, ...) that the core carries out
//! after the hook returns. No feature takes `&mut World`: [`Registered`] (`registered.rs`) is the core's
//! side of the seam, which holds a feature, its pending events and its outbox, and carries the requests out.
//!
//! # Adding a protocol family
//!
//! A family is a module of its own (as `crate::mobile_ip` is) that declares itself once, as a
//! `crate::registry::Family` (its table, its validation and its rules on other families, its build, its
//! result columns), plus one line in the list of `registry.rs`, the one file that names the families; the
//! core is not edited. The guide's page "Adding a protocol family" walks through one.
//!
//! 1. **Scenario section.** Its table in the scenario file (`[mobile_ip]`) is a field of
//!    [`crate::Scenario`] with a `Deserialize` config type that lives in the family's module; its
//!    `Family::validate` checks it, and a rule involving another family is declared in `Family::together`.
//! 2. **State and set-up.** A type that implements [`Feature`], built from the scenario by a
//!    `build(scenario, setup) -> Option<..>` in the family's module and registered with
//!    `world.register(f)` in its `Family::build`. `build` runs after the topology is in place and after the
//!    families registered before it; through [`Setup`](crate::context::Setup) it may install agents, recompute routes, join media,
//!    set a node's default gateway or a link's range, and mark its control protocol; a family that only
//!    reads takes a [`View`]. [`Feature::set_up`] then schedules its first events.
//! 3. **Events.** The family's own enum is its [`Feature::Event`]; [`Cx::schedule`] queues one and the core
//!    hands it back to [`Feature::on_event`]. Timers are events: schedule one for the deadline and, when it
//!    fires, check that it is still wanted (as ARQ's timer asks its sender whether a timeout is due).
//! 4. **Per-node hooks**, each optional, asked for through [`Feature::hooks`] where they cost per packet:
//!    - arrival: [`Feature::on_arrive`] sees every packet that reaches any node, before the core delivers or
//!      forwards it, and may consume it (a home agent that tunnels, a relay that splits a connection, a
//!      mobile host that reads control messages);
//!    - sending: [`Feature::on_host_send`] sees every packet a host's own TCP endpoint sends, before the
//!      core routes it, and may take it, to send it itself (a mobile host's agent that keeps its own last
//!      data packets, Eom 2002 §4.2). A packet that reaches a node over a link passes `on_arrive` instead;
//!      one a feature sends ([`Cx::route`], [`Cx::send`]) passes neither;
//!    - forwarding: a node's agent (`lasthop_agents::Agent`) sees what the node forwards; a feature hands a
//!      packet to it with [`Request::HandToAgent`]; what an agent passes on or makes is offered to
//!      [`Feature::on_agent_output`] before the core routes it (the link layer taking what a base station's
//!      handoff agent forwards to the mobile, `arq.rs`);
//!    - association: [`Request::Reassociate`] tells every other feature, through
//!      [`Feature::on_reassociate`], that the mobile associated with a cell's link, so link-layer state
//!      restarts; [`Request::Purge`] likewise reaches the others' [`Feature::on_link_purge`] and the
//!      requester's [`Feature::on_purged`] with the count;
//!    - delivery: [`Feature::on_datagram`] gets the non-TCP packets addressed to a node; TCP goes to the
//!      endpoints: a feature's own ([`Request::OpenEndpoint`]) come to [`Feature::on_endpoint_packet`], and
//!      the feature runs them, or has the core send what they send ([`Feature::endpoint_transmit`], a direct
//!      call per segment); [`Feature::after_flow_endpoint`] follows every bulk-flow endpoint that ran.
//! 5. **Metrics.** [`Feature::finish`] writes the family's own entries into the [`RunResult`] (a section
//!    of its own in `RunResult::families`, serialised only when present), and `Family::columns` turns them
//!    into its result columns.
//!
//! # Same-instant order
//!
//! Events run in time order; events at the same instant run in the order they were scheduled (the engine's
//! insertion sequence, [`crate::engine`]), whichever feature or part of the core scheduled them. So the order
//! in which things are scheduled at set-up decides the order at time zero: features' [`Feature::set_up`] in
//! registration order (mobility's first motion and beacon events; last, the bulk flows' starts, whose places
//! are taken in the scenario's order of flow names), then features' [`Feature::start`] in registration order (the Web
//! workloads' first pages). Within one event, hooks run in registration order, and the requests of each are
//! carried out, in the order made, as soon as it returns, before the core goes on: so a request takes the
//! place in the sequence that the same call made inside the hook would take. What a request needs of a
//! feature's hook (a delivery to an endpoint, an offer to the features' `on_host_send`, `on_agent_output` or
//! `on_datagram`, a reassociation's, purge's or flow's notice, a poke) the core queues instead, and carries out
//! first in first out once the hook's requests are done (`crate::world::Work`): no hook ever runs inside
//! another, and every feature stays in the world's list. A hook sees the core as it was when the hook
//! began; one that must read what its own requests changed continues in a [`Cx::then`] event, handed back
//! at the same instant once nothing else is queued, so after everything those requests caused (mobility
//! measures a crossing's pause after the pokes it asked for have run the mobile's endpoints). A feature is
//! never offered nor told what its own requests caused (each queued offer and notice remembers the feature
//! that asked); what a request addresses to an endpoint reaches its owner, whoever asked.
//!
//! [`Registered`]: crate::registered::Registered
//! [`Request`]: crate::context::Request
//! [`Request::HandToAgent`]: crate::context::Request::HandToAgent
//! [`Request::Reassociate`]: crate::context::Request::Reassociate
//! [`Request::Purge`]: crate::context::Request::Purge
//! [`Request::OpenEndpoint`]: crate::context::Request::OpenEndpoint
//! [`Request::Finished`]: crate::context::Request::Finished
use crate::context::{Cx, Role, View};
use crate::metrics::RunResult;
use bytes::Bytes;
use lasthop_wire::{Headers, Time};

pub(crate) use crate::world::HookSet;

/// A feature's index in the world's registration order; its events and endpoints carry it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FeatureId(pub(crate) usize);

/// What a feature implements: hooks that see a [`Cx`] (the time, a read-only view, its own events and an
/// outbox of requests), never the world. Every hook but `on_event` and `finish` has a default that does
/// nothing.
pub(crate) trait Feature: 'static {
    /// The feature's own events, handed back to [`Feature::on_event`] when due.
    type Event: 'static;

    /// Which per-packet hooks this feature wants called.
    fn hooks(&self) -> HookSet {
        HookSet::default()
    }

    /// Called once when the feature is registered (after the features registered before it): its first events and
    /// its set-up requests.
    fn set_up(&mut self, _cx: &mut Cx<'_, Self::Event>) {}

    /// Called once, after every feature is set up, to schedule the feature's first events.
    fn start(&mut self, _cx: &mut Cx<'_, Self::Event>) {}

    /// The run must go on at least until this time even when every feature that holds it is done.
    fn runs_until(&self) -> Option<Time> {
        None
    }

    /// Whether the run goes on, whatever the time, until this feature says [`Request::Finished`] (the bulk
    /// flows, until each has delivered its bytes).
    fn holds_run(&self) -> bool {
        false
    }

    /// The scenario fields that most likely made the run stall, when `event` repeats without simulated time
    /// advancing (the stall backstop's message); `None`: the core's generic words for a feature's event.
    fn stall_cause(&self, _event: &Self::Event) -> Option<String> {
        None
    }

    /// One of this feature's own events is due.
    fn on_event(&mut self, cx: &mut Cx<'_, Self::Event>, event: Self::Event);

    /// A packet reached `node` over `link` (already captured and parsed as IPv4, link in range); true when the
    /// feature consumed it (the core then neither delivers nor forwards it). Needs `hooks().arrive`.
    fn on_arrive(&mut self, _cx: &mut Cx<'_, Self::Event>, _node: usize, _link: usize, _packet: &Bytes) -> bool {
        false
    }

    /// A TCP endpoint at `node` sends `packet`, its own; true when the feature took it (the core then does not
    /// route it). Needs `hooks().host_send`. Offered through the core's work queue, after the hook that
    /// ran the endpoint returned, to every feature but the one whose endpoint sent it.
    fn on_host_send(&mut self, _cx: &mut Cx<'_, Self::Event>, _node: usize, _packet: &Bytes) -> bool {
        false
    }

    /// A packet `node`'s agent passes on or makes, before the core routes it; true when the feature took it.
    /// Needs `hooks().agent_output`.
    fn on_agent_output(&mut self, _cx: &mut Cx<'_, Self::Event>, _node: usize, _packet: &Bytes) -> bool {
        false
    }

    /// The mobile (re)associated with the cell of wireless `link`: link-layer state for it starts afresh.
    fn on_reassociate(&mut self, _cx: &mut Cx<'_, Self::Event>, _link: usize) {}

    /// Another feature had direction `dir` of `link` purged: this feature's own link layer drops what it holds
    /// to send that way.
    fn on_link_purge(&mut self, _link: usize, _dir: usize) {}

    /// A bulk flow's endpoint ran (bytes may have been delivered). Needs `hooks().after_flow_endpoint`.
    fn after_flow_endpoint(&mut self, _cx: &mut Cx<'_, Self::Event>) {}

    /// A non-TCP packet addressed to `node`; true when the feature took it (else it counts as undeliverable).
    fn on_datagram(&mut self, _cx: &mut Cx<'_, Self::Event>, _node: usize, _packet: &Bytes) -> bool {
        false
    }

    /// A TCP packet reached the endpoint the feature opened with `key` (`Request::OpenEndpoint`), with its
    /// headers as the core read them on arrival (hand both to the endpoint's `handle_parsed`): the
    /// feature runs it (and sends what it answers with `Request::SendOwn`, or lets the core run it after
    /// this hook, as for `Request::RunEndpoint`).
    fn on_endpoint_packet(&mut self, _cx: &mut Cx<'_, Self::Event>, _key: usize, _packet: &Bytes, _headers: &Headers) {}

    /// The core runs endpoint `key` (after [`Feature::on_endpoint_packet`], or on `Request::RunEndpoint`):
    /// the next packet it sends now, if any. The core sends each at once from the endpoint's node to its peer
    /// (as `Request::SendOwn` would) and asks again, so each reads the core as the one before it left it;
    /// the feature counts what it sends here. A direct call, without an outbox: it runs once per segment.
    fn endpoint_transmit(&mut self, _view: View<'_>, _now: Time, _key: usize) -> Option<Bytes> {
        None
    }

    /// Endpoint `key` has sent what it would ([`Feature::endpoint_transmit`]): what follows (what it reads).
    fn after_endpoint_transmit(&mut self, _cx: &mut Cx<'_, Self::Event>, _key: usize) {}

    /// When endpoint `key` wants its timer, for a feature that has the core hold its endpoints' timers:
    /// asked after every run of the endpoint, the core queues one event for the earliest time wanted and
    /// calls [`Feature::on_endpoint_timer`] then (no event of the feature's own, no outbox). `None`: no
    /// timer (the default: a feature that keeps its endpoints' timers itself).
    fn endpoint_timeout(&self, _key: usize) -> Option<Time> {
        None
    }

    /// Endpoint `key`'s timer event, held by the core ([`Feature::endpoint_timeout`]), is due: fire its
    /// timeout if that is due; true when the core is to run the endpoint now (as `Request::RunEndpoint`),
    /// false when nothing fired and the core only arms the timer again.
    fn on_endpoint_timer(&mut self, _now: Time, _key: usize) -> bool {
        false
    }

    /// Another feature asked for every endpoint at a node to be poked (`Request::PokeEndpoints`); this is
    /// the feature's endpoint `key` there: apply `poke` and run it.
    fn on_endpoint_poke(&mut self, _cx: &mut Cx<'_, Self::Event>, _key: usize, _poke: &dyn Fn(&mut Role, Time)) {}

    /// This feature's own `Request::Purge` of direction `dir` of `link` took `frames` frames.
    fn on_purged(&mut self, _link: usize, _dir: usize, _frames: u64) {}

    /// The run is over: add this feature's metrics to `result` (the core's part is filled in).
    fn finish(self, view: View<'_>, result: &mut RunResult);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::World;
    use crate::{RunOptions, Scenario};

    /// Records how many frames the links had sent when each of its events ran, and counts the packets it saw
    /// arrive; reports both as the counters of a pseudo-node "probe".
    struct Probe {
        counters: std::collections::BTreeMap<String, u64>,
        arrivals: u64,
        host_sends: u64,
    }

    fn frames(view: View<'_>, f: impl Fn(&crate::link::Direction) -> u64) -> u64 {
        view.links().iter().flat_map(|l| l.dirs.iter()).map(f).sum()
    }

    impl Feature for Probe {
        type Event = u32;
        fn hooks(&self) -> HookSet {
            HookSet { arrive: true, host_send: true, ..HookSet::default() }
        }
        fn set_up(&mut self, cx: &mut Cx<'_, u32>) {
            cx.schedule(Time::ZERO, 1);
        }
        fn start(&mut self, cx: &mut Cx<'_, u32>) {
            cx.schedule(Time::ZERO, 2);
        }
        fn on_event(&mut self, cx: &mut Cx<'_, u32>, tag: u32) {
            self.counters.insert(format!("sent_before_event_{tag}"), frames(cx.view(), |d| d.frames_sent));
        }
        fn on_arrive(&mut self, _cx: &mut Cx<'_, u32>, _node: usize, _link: usize, _p: &Bytes) -> bool {
            self.arrivals += 1;
            false
        }
        fn on_host_send(&mut self, _cx: &mut Cx<'_, u32>, _node: usize, _p: &Bytes) -> bool {
            self.host_sends += 1;
            false
        }
        fn finish(mut self, view: View<'_>, result: &mut RunResult) {
            self.counters.insert("host_sends".into(), self.host_sends);
            let arrived = frames(view, |d| d.frames_sent - d.frames_lost);
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
            crate::registry::build_features(s, world)?;
            world.register(Probe { counters: Default::default(), arrivals: 0, host_sends: 0 });
            crate::registry::build_flows(s, world)
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
