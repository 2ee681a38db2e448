//! The simulator's core: one run's event queue, nodes, links and media, routing, delivery to endpoints and
//! agents, and the metrics they yield. Everything else a run does (the bulk flows, the Web workload, mobility
//! and handoff, Mobile IP, node failure, the split connection, link-level ARQ) is a
//! [`Feature`](crate::feature::Feature) that the core drives through the seam in [`crate::feature`] (it hands
//! each hook a [`crate::context::Cx`] and carries out its requests); the core names no feature.
//!
//! [`World`] is the run: the [`Core`] and the features, in a plain list. The core never calls a feature: what
//! it must ask of one (a packet for a feature's endpoint, an offer to the features' hooks, a notice of a
//! reassociation) it queues as [`Work`], which the world carries out once the event, or the hook whose
//! requests queued it, is done (`work.rs`).
//!
//! A run goes on until every feature that holds it ([`Feature::holds_run`]: the bulk flows, until each has
//! delivered its bytes) is finished and every feature's
//! [`runs_until`](crate::feature::Feature::runs_until) time has passed, or the time limit is reached.

use crate::agents::build_agent;
use crate::engine::Scheduler;
use crate::feature::{Feature, FeatureId};
use crate::link::{Link, Medium, Transmission};
use crate::metrics::{LinkMetrics, RunResult};
use crate::registered::DynFeature;
use crate::routes::Routes;
use crate::scenario::{LinkKind, Scenario};
use crate::{rng, RunOptions, SimError};
use bytes::Bytes;
use lasthop_agents::flow::FlowKey;
use lasthop_agents::{Action, Agent, Side};
use lasthop_channel::key_index::KeyIndex;
use lasthop_wire::ipv4::{Ipv4Packet, PROTO_TCP};
use lasthop_wire::pcap::PcapWriter;
use lasthop_wire::{Headers, Time};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::{Ipv4Addr, SocketAddrV4};

/// A map looked up on every packet routed or delivered: foldhash with a fixed seed (a lookup costs a few ns
/// where SipHash or a B-tree over 10,000 addresses cost tens; no random state, so no run depends on one).
type FastMap<K, V> = HashMap<K, V, foldhash::fast::FixedState>;

pub(crate) enum Event {
    /// A packet reaches `node` over direction `dir` of `link`.
    Arrive {
        node: usize,
        link: usize,
        dir: usize,
        packet: Bytes,
    },
    /// The transmitter of `dir` of `link` (or its shared medium) is free.
    TxDone {
        link: usize,
        dir: usize,
    },
    AgentTimer {
        node: usize,
    },
    /// The timer of endpoint `ep` (the core's index), held by the core for its owner
    /// ([`Feature::endpoint_timeout`](crate::feature::Feature::endpoint_timeout)), may be due.
    EndpointTimer {
        ep: usize,
    },
    /// One of a feature's own events, parked in its queue at `slot` (see [`crate::registered::Registered`]).
    /// A `usize`, as the other variants' fields: a `u32` would share the word of the enum's tag.
    Feature {
        feature: FeatureId,
        slot: usize,
    },
}

pub(crate) struct Node {
    pub name: String,
    pub addr: Ipv4Addr,
    /// Next hop toward each node (`routes[to]`): (link, direction), `None` for itself or unreachable.
    pub routes: Routes,
    /// A default gateway that overrides `routes` for every destination but the node itself (a mobile host's
    /// current cell, set by mobility).
    pub gateway: Option<(usize, usize)>,
    pub agent: Option<Box<dyn Agent>>,
    agent_timer: Option<Time>,
    /// The node's open endpoints, in the order they were added.
    pub endpoints: Vec<usize>,
    /// The first of `endpoints` for each (local port, remote address, remote port), for nodes with many
    /// endpoints (a fixed host serving thousands of flows), where scanning the list would cost per packet.
    by_key: FastMap<EndpointKey, usize>,
}

/// What a packet arriving at a node names its endpoint by: (local port, remote address, remote port).
type EndpointKey = (u16, Ipv4Addr, u16);

/// Nodes with at most this many endpoints find one by scanning the list (cheaper than hashing for a few).
const SCAN_ENDPOINTS_UP_TO: usize = 8;

/// The stall backstop: a run that plays this many events without simulated time advancing by
/// [`STALL_SPAN_NS`] ends with [`SimError::Stalled`] instead of spinning until killed. The scenario's floors
/// (`crate::floors`) keep every duration it names from doing this; the backstop catches what they cannot
/// (a combination of settings, a defect). No run of `examples/` or `experiments/` comes near it: the most
/// events at one instant are a few per flow when thousands of flows start together.
pub(crate) const STALL_EVENTS: u64 = 10_000_000;
/// The span of simulated time within which [`STALL_EVENTS`] events trip the backstop (1 µs).
pub(crate) const STALL_SPAN_NS: u64 = 1_000;

/// Whose an endpoint is: the feature that opened it, with the key it opened it with.
#[derive(Clone, Copy)]
pub(crate) struct Owner {
    pub feature: FeatureId,
    pub key: usize,
}

/// A TCP endpoint as the core knows it: where it is and what it is called, to hand it its packets; its
/// owner keeps its state and runs it.
pub(crate) struct Endpoint {
    owner: Owner,
    node: usize,
    local: SocketAddrV4,
    remote: SocketAddrV4,
    /// Not closed yet ([`Core::close_endpoint`]).
    open: bool,
    /// The earliest time its timer event is queued for, if its owner has the core hold its timer.
    timer: Option<Time>,
}

impl Endpoint {
    fn key(&self) -> EndpointKey {
        (self.local.port(), *self.remote.ip(), self.remote.port())
    }
}

/// Which hooks at least one feature asked for, so that a run without them pays nothing per packet.
#[derive(Clone, Copy, Default)]
pub(crate) struct HookSet {
    pub arrive: bool,
    pub after_flow_endpoint: bool,
    /// [`Feature::on_host_send`]: a host's own outgoing packets.
    pub host_send: bool,
    /// [`Feature::on_agent_output`]: the packets a node's agent passes on or makes.
    pub agent_output: bool,
}

/// A run: its core and its features, in registration order (a feature's [`FeatureId`] is its index).
pub struct World {
    pub(crate) core: Core,
    features: Vec<Box<dyn DynFeature>>,
}

/// Everything of a run but its features: the event queue, nodes, links and media, routing, endpoints, and the
/// work queued for the features ([`Work`]). What a feature's [`crate::context::View`] shows and its requests
/// change.
pub(crate) struct Core {
    sched: Scheduler<Event>,
    pub(crate) nodes: Vec<Node>,
    pub(crate) links: Vec<Link>,
    /// Half-duplex media; each half-duplex link sends on one (`Link::medium`).
    media: Vec<Medium>,
    /// Per medium, the end of its frame on the air when it has no end event queued (see `Core::launch`):
    /// when, under which reserved sequence number, on which link and direction.
    media_unqueued_done: Vec<Option<(Time, u64, usize, usize)>>,
    endpoints: Vec<Endpoint>,
    /// The bulk flows' progress, for the features that watch it ([`crate::context::FlowProgress`]).
    pub(crate) flow_progress: Vec<crate::context::FlowProgress>,
    /// The times (s) of the handoffs noted ([`crate::context::Request::NoteHandoff`]).
    pub(crate) handoffs_noted: Vec<f64>,
    /// Node by address (`u32::from`), on every packet routed (the scenario checks that no two nodes share one).
    addr_index: KeyIndex,
    actions: Vec<Action>,
    /// Features that hold the run open ([`Feature::holds_run`]) and have not said they are finished.
    holding: usize,
    time_limit: Time,
    /// The stall backstop (see [`STALL_EVENTS`]): the end of the current span of simulated time, the events
    /// played within it, and, once it tripped, when and what likely caused it.
    stall_until: u64,
    stall_events: u64,
    stalled: Option<(Time, String)>,
    pub(crate) seed: u64,
    pub(crate) trace: bool,
    /// Packets no node could route or deliver (no route, no endpoint, unparsable at a host).
    pub(crate) undeliverable: u64,
    /// Which hooks at least one feature asked for.
    pub(crate) hooks: HookSet,
    /// What the core must ask of the features, in the order it arose ([`Work`]): carried out by
    /// [`World::drain`] after each event and after each feature's set-up and start.
    work: VecDeque<Work>,
    /// The features' continuations, each a feature's event parked at a slot ([`Core::then`]): taken by
    /// [`World::drain`] whenever `work` is empty.
    continuations: VecDeque<(FeatureId, usize)>,
    /// The latest of the features' `runs_until`: the run goes on until then.
    run_until: Option<Time>,
    /// IP protocols whose packets are a feature's control messages, not data (not counted by
    /// [`Core::out_of_range_losses`]).
    control_protocols: Vec<u8>,
    out_of_range_losses: u64,
    /// The first error writing a pcap file (the run fails with it at the end).
    pcap_error: Option<SimError>,
}

mod build;
mod endpoints;
mod finish;
mod packets;
mod run;
#[cfg(test)]
mod tests;
mod work;

pub(crate) use work::Work;

impl World {
    /// The id the next feature registered will have.
    pub(crate) fn next_feature_id(&self) -> FeatureId {
        FeatureId(self.features.len())
    }

    /// Registers `feature` (see [`crate::registry::build_all`]), runs its [`Feature::set_up`] and carries out
    /// what that queued.
    pub(crate) fn register<F: Feature>(&mut self, feature: F) {
        let mut registered = crate::registered::Registered::new(self.next_feature_id(), feature);
        registered.call(&mut self.core, Time::ZERO, |f, cx| f.set_up(cx));
        let h = registered.hooks();
        self.core.holding += usize::from(registered.holds_run());
        let hooks = &mut self.core.hooks;
        hooks.arrive |= h.arrive;
        hooks.after_flow_endpoint |= h.after_flow_endpoint;
        hooks.host_send |= h.host_send;
        hooks.agent_output |= h.agent_output;
        self.features.push(Box::new(registered));
        self.drain(Time::ZERO);
    }

    /// A read-only view of the core, for a family's build.
    pub(crate) fn view(&self) -> crate::context::View<'_> {
        crate::context::View::new(&self.core)
    }

    /// What a family's build may change in the core before the run starts.
    pub(crate) fn setup(&mut self) -> crate::context::Setup<'_> {
        crate::context::Setup::new(&mut self.core)
    }
}

impl Core {
    /// Schedules one of feature `feature`'s own events.
    pub(crate) fn schedule(&mut self, at: Time, feature: FeatureId, slot: usize) {
        self.sched.schedule(at, Event::Feature { feature, slot });
    }

    /// [`Core::schedule`] under `seq`, from [`Core::reserve_event`].
    pub(crate) fn schedule_reserved(&mut self, at: Time, seq: u64, feature: FeatureId, slot: usize) {
        self.sched.schedule_reserved(at, seq, Event::Feature { feature, slot });
    }

    /// Takes the next place among same-instant events (see [`crate::engine::Scheduler::reserve`]).
    pub(crate) fn reserve_event(&mut self) -> u64 {
        self.sched.reserve()
    }

    /// Queues feature `feature`'s event parked at `slot` as a continuation
    /// ([`crate::context::Request::Then`]): it runs once no work is queued.
    pub(crate) fn then(&mut self, feature: FeatureId, slot: usize) {
        self.continuations.push_back((feature, slot));
    }

    /// A feature that held the run open is finished with it.
    pub(crate) fn release_run(&mut self) {
        self.holding -= 1;
    }

    /// Bulk flow `flow` has come this far, as feature `from` says: noted for
    /// [`crate::context::View::flows`] at once, then every other feature's [`Feature::after_flow_endpoint`].
    pub(crate) fn flow_progress(&mut self, from: FeatureId, flow: usize, delivered: u64, snd_max: u64) {
        let p = &mut self.flow_progress[flow];
        (p.delivered, p.snd_max) = (delivered, snd_max);
        self.work.push_back(Work::FlowProgress { from });
    }

    /// Marks `protocol` as a feature's control traffic (not data, for [`Core::out_of_range_losses`]).
    pub(crate) fn add_control_protocol(&mut self, protocol: u8) {
        if !self.control_protocols.contains(&protocol) {
            self.control_protocols.push(protocol);
        }
    }

    /// Whether `protocol` is a feature's control traffic ([`Core::add_control_protocol`]).
    pub(crate) fn is_control_protocol(&self, protocol: u8) -> bool {
        self.control_protocols.contains(&protocol)
    }

    /// The mobile (re)associated with the cell of wireless `link`, as feature `from` says: every other
    /// feature restarts its link-layer state for that link ([`Feature::on_reassociate`]).
    pub(crate) fn reassociate(&mut self, from: FeatureId, link: usize) {
        self.work.push_back(Work::Reassociate { from, link });
    }

    /// Notes a handoff at `now` ([`crate::context::View::handoffs_noted`]).
    pub(crate) fn note_handoff(&mut self, now: Time) {
        self.handoffs_noted.push(now.as_secs_f64());
    }

    /// Data frames lost so far because their link was out of range (sent on it, or in flight when it went
    /// out of range); control frames of [`Core::add_control_protocol`] are not counted.
    pub(crate) fn out_of_range_losses(&self) -> u64 {
        self.out_of_range_losses
    }
}
