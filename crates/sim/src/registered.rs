//! How the core holds a feature: [`Registered`] keeps it with its pending events (the core's event names only
//! their place) and its outbox, hands each hook a [`Cx`], and carries out the requests once the hook
//! returns; [`DynFeature`] is its object-safe face, the one the world calls. Part of the core: it takes the
//! [`Core`], which no feature does; what a request needs of another feature's hook the core queues as work
//! (`crate::world::Work`).

use crate::context::{Cx, Request, Role, View};
use crate::feature::{Feature, FeatureId, HookSet};
use crate::metrics::RunResult;
use crate::world::{Core, Owner};
use bytes::Bytes;
use lasthop_wire::{Headers, Time};
use std::net::Ipv4Addr;

/// A [`Feature`] as the core holds it: the feature, the queue of its pending events (the core's event names
/// only their place here), and its outbox, carried out on the [`Core`] after each hook.
pub(crate) struct Registered<F: Feature> {
    id: FeatureId,
    feature: F,
    pending: Vec<Option<F::Event>>,
    free: Vec<usize>,
    outbox: Vec<Request<F::Event>>,
    /// The outbox of the hooks called while the outbox's requests are carried out ([`Registered::carry_out`]).
    spare: Vec<Request<F::Event>>,
    /// The core's index of each endpoint the feature opened, by the feature's key.
    endpoints: std::collections::BTreeMap<usize, usize>,
}

impl<F: Feature> Registered<F> {
    pub(crate) fn new(id: FeatureId, feature: F) -> Registered<F> {
        Registered {
            id,
            feature,
            pending: Vec::new(),
            free: Vec::new(),
            outbox: Vec::new(),
            spare: Vec::new(),
            endpoints: Default::default(),
        }
    }

    /// Runs `hook` with a context, then carries out what it asked for, in order: the core's part at once,
    /// what needs another feature's hook queued as work, a [`Request::Then`] queued as a continuation.
    pub(crate) fn call<R>(
        &mut self,
        core: &mut Core,
        now: Time,
        hook: impl FnOnce(&mut F, &mut Cx<'_, F::Event>) -> R,
    ) -> R {
        let r = hook(&mut self.feature, &mut Cx::new(now, View::new(core), &mut self.outbox));
        if !self.outbox.is_empty() {
            self.carry_out(core, now);
        }
        r
    }

    /// Carries out the requests in the outbox, in order.
    fn carry_out(&mut self, core: &mut Core, now: Time) {
        // The one hook called while they are carried out, an endpoint's follow-up (`Request::RunEndpoint`),
        // fills the spare outbox, kept from call to call so that it allocates once.
        let spare = std::mem::take(&mut self.spare);
        let mut out = std::mem::replace(&mut self.outbox, spare);
        for request in out.drain(..) {
            self.apply(core, now, request);
        }
        self.spare = std::mem::replace(&mut self.outbox, out);
    }

    /// Runs endpoint `key` (the core's `ep`), at `node` and talking to `peer`: sends what it sends, then its
    /// follow-up, then has the core queue its timer if the feature has the core hold it.
    fn run_endpoint(&mut self, core: &mut Core, now: Time, key: usize, (ep, (node, peer)): EndpointAt) {
        while let Some(packet) = self.feature.endpoint_transmit(View::new(core), now, key) {
            core.send_own(now, self.id, node, peer, packet);
        }
        self.call(core, now, |f, cx| f.after_endpoint_transmit(cx, key));
        core.arm_endpoint_timer(ep, self.feature.endpoint_timeout(key));
    }

    fn apply(&mut self, core: &mut Core, now: Time, request: Request<F::Event>) {
        match request {
            Request::Schedule { at, event } => {
                let slot = self.park(event);
                core.schedule(at, self.id, slot);
            }
            Request::ScheduleReserved { at, seq, event } => {
                let slot = self.park(event);
                core.schedule_reserved(at, seq, self.id, slot);
            }
            Request::Finished => core.release_run(),
            Request::FlowProgress { flow, delivered, snd_max } => core.flow_progress(self.id, flow, delivered, snd_max),
            Request::Then(event) => {
                let slot = self.park(event);
                core.then(self.id, slot);
            }
            Request::Send { out, packet, priority } => core.send(now, out, packet, priority),
            Request::Route { node, dst, packet, priority } => core.route(now, node, dst, packet, priority),
            Request::DeliverLocal { node, packet } => core.deliver_local(Some(self.id), node, packet),
            Request::HandToAgent { node, side, packet } => core.hand_to_agent(now, self.id, node, side, packet),
            Request::Purge { link, dir, matches } => {
                let frames = core.purge_link(self.id, link, dir, matches);
                self.feature.on_purged(link, dir, frames);
            }
            Request::SetAgent { node, agent } => core.nodes[node].agent = agent,
            Request::AddControlProtocol(p) => core.add_control_protocol(p),
            Request::SetOutOfRange { link, out } => core.links[link].out_of_range = out,
            Request::SetGateway { node, gateway } => core.nodes[node].gateway = gateway,
            Request::NoteHandoff => core.note_handoff(now),
            Request::Reassociate { link } => core.reassociate(self.id, link),
            Request::TellAgent { node, tell } => core.tell_agent(now, self.id, node, tell),
            Request::QueueOccupancy { node, side, occupancy } => {
                if let Some(a) = core.nodes[node].agent.as_mut() {
                    a.handle_queue_occupancy(side, occupancy);
                }
            }
            Request::PokeEndpoints { node, poke } => core.poke_endpoints(node, poke),
            Request::OpenEndpoint { key, node, local, remote } => {
                let ep = core.add_endpoint(Owner { feature: self.id, key }, node, local, remote);
                self.endpoints.insert(key, ep);
            }
            Request::CloseEndpoint { key } => {
                if let Some(ep) = self.endpoints.remove(&key) {
                    core.close_endpoint(ep);
                }
            }
            Request::RunEndpoint { key } => {
                let ep = self.endpoints[&key];
                self.run_endpoint(core, now, key, (ep, core.endpoint_peer(ep)));
            }
            Request::SendOwn { node, dst, packet } => core.send_own(now, self.id, node, dst, packet),
        }
    }

    /// Keeps `event` until it is due; returns its place.
    fn park(&mut self, event: F::Event) -> usize {
        match self.free.pop() {
            Some(slot) => {
                self.pending[slot] = Some(event);
                slot
            }
            None => {
                self.pending.push(Some(event));
                self.pending.len() - 1
            }
        }
    }
}

impl<F: Feature> DynFeature for Registered<F> {
    fn hooks(&self) -> HookSet {
        self.feature.hooks()
    }
    fn start(&mut self, core: &mut Core) {
        self.call(core, Time::ZERO, |f, cx| f.start(cx));
    }
    fn runs_until(&self) -> Option<Time> {
        self.feature.runs_until()
    }
    fn holds_run(&self) -> bool {
        self.feature.holds_run()
    }
    fn stall_cause(&self, slot: usize) -> Option<String> {
        self.pending[slot].as_ref().and_then(|event| self.feature.stall_cause(event))
    }
    fn on_event(&mut self, core: &mut Core, now: Time, slot: usize) {
        let event = self.pending[slot].take().expect("a pending event");
        self.free.push(slot);
        self.call(core, now, |f, cx| f.on_event(cx, event));
    }
    fn on_arrive(&mut self, core: &mut Core, now: Time, node: usize, link: usize, packet: &Bytes) -> bool {
        self.call(core, now, |f, cx| f.on_arrive(cx, node, link, packet))
    }
    fn on_host_send(&mut self, core: &mut Core, now: Time, node: usize, packet: &Bytes) -> bool {
        self.call(core, now, |f, cx| f.on_host_send(cx, node, packet))
    }
    fn on_agent_output(&mut self, core: &mut Core, now: Time, node: usize, packet: &Bytes) -> bool {
        self.call(core, now, |f, cx| f.on_agent_output(cx, node, packet))
    }
    fn on_reassociate(&mut self, core: &mut Core, now: Time, link: usize) {
        self.call(core, now, |f, cx| f.on_reassociate(cx, link));
    }
    fn on_link_purge(&mut self, link: usize, dir: usize) {
        self.feature.on_link_purge(link, dir);
    }
    fn after_flow_endpoint(&mut self, core: &mut Core, now: Time) {
        self.call(core, now, |f, cx| f.after_flow_endpoint(cx));
    }
    fn on_datagram(&mut self, core: &mut Core, now: Time, node: usize, packet: &Bytes) -> bool {
        self.call(core, now, |f, cx| f.on_datagram(cx, node, packet))
    }
    fn on_endpoint_packet(
        &mut self,
        core: &mut Core,
        now: Time,
        key: usize,
        at: EndpointAt,
        packet: &Bytes,
        headers: &Headers,
    ) {
        self.call(core, now, |f, cx| f.on_endpoint_packet(cx, key, packet, headers));
        self.run_endpoint(core, now, key, at);
    }
    fn on_endpoint_timer(&mut self, core: &mut Core, now: Time, key: usize, at: EndpointAt) {
        if self.feature.on_endpoint_timer(now, key) {
            self.run_endpoint(core, now, key, at);
        } else {
            // Nothing fired: only the timer, for the deadline the endpoint wants now.
            core.arm_endpoint_timer(at.0, self.feature.endpoint_timeout(key));
        }
    }
    fn on_endpoint_poke(&mut self, core: &mut Core, now: Time, key: usize, poke: &dyn Fn(&mut Role, Time)) {
        self.call(core, now, |f, cx| f.on_endpoint_poke(cx, key, poke));
    }
    fn finish(self: Box<Self>, core: &Core, result: &mut RunResult) {
        self.feature.finish(View::new(core), result);
    }
}

/// Where an endpoint is: the core's index for it, its node and its peer's address.
pub(crate) type EndpointAt = (usize, (usize, Ipv4Addr));

/// The object-safe face of a [`Registered`] feature: what the core calls, with the world in hand (see
/// [`Feature`] for each hook). Only [`Registered`] implements it.
pub(crate) trait DynFeature {
    fn hooks(&self) -> HookSet;
    fn start(&mut self, core: &mut Core);
    fn runs_until(&self) -> Option<Time>;
    fn holds_run(&self) -> bool;
    /// Why the feature's event parked at `slot` may repeat without end ([`Feature::stall_cause`]).
    fn stall_cause(&self, slot: usize) -> Option<String>;
    /// The feature's event parked at `slot` is due.
    fn on_event(&mut self, core: &mut Core, now: Time, slot: usize);
    fn on_arrive(&mut self, core: &mut Core, now: Time, node: usize, link: usize, packet: &Bytes) -> bool;
    fn on_host_send(&mut self, core: &mut Core, now: Time, node: usize, packet: &Bytes) -> bool;
    fn on_agent_output(&mut self, core: &mut Core, now: Time, node: usize, packet: &Bytes) -> bool;
    fn on_reassociate(&mut self, core: &mut Core, now: Time, link: usize);
    fn on_link_purge(&mut self, link: usize, dir: usize);
    fn after_flow_endpoint(&mut self, core: &mut Core, now: Time);
    fn on_datagram(&mut self, core: &mut Core, now: Time, node: usize, packet: &Bytes) -> bool;
    /// A packet for the feature's endpoint `key` (see [`EndpointAt`] for `at`).
    fn on_endpoint_packet(
        &mut self,
        core: &mut Core,
        now: Time,
        key: usize,
        at: EndpointAt,
        packet: &Bytes,
        headers: &Headers,
    );
    /// The core-held timer of the feature's endpoint `key` is due ([`Feature::on_endpoint_timer`]).
    fn on_endpoint_timer(&mut self, core: &mut Core, now: Time, key: usize, at: EndpointAt);
    fn on_endpoint_poke(&mut self, core: &mut Core, now: Time, key: usize, poke: &dyn Fn(&mut Role, Time));
    fn finish(self: Box<Self>, core: &Core, result: &mut RunResult);
}
