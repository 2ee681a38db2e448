//! The core's work queue: what the core must ask of the features. The core never calls a feature; a hook
//! runs with only its own feature borrowed and fills its outbox, and the core's part of each request is done
//! as soon as the hook returns. What a request (or an event) needs of a feature's hook (a packet for a
//! feature's endpoint, an offer to the features' send, agent-output or datagram hooks, a notice of a
//! reassociation, a purge or a flow's progress, a poke) becomes a [`Work`] item at the back of one queue,
//! which [`World::drain`] carries out in FIFO order until it is empty, after each event and after each
//! feature's set-up and start. An item's hooks may queue more work, behind what is queued already: no hook
//! runs inside another, and no feature is ever held out of the list.
//!
//! A continuation ([`crate::context::Request::Then`]) waits in a queue of its own, taken in FIFO order
//! whenever the work queue is empty: it runs after everything the requests before it caused, however
//! indirectly (a reassociation's notice, the packets the link layer then hands up, their delivery), and so
//! reads the core as they left it.
//!
//! A feature is never offered nor told what its own requests caused: each offer and notice remembers the
//! feature whose request queued it (`from`) and skips it. What a request addresses to an endpoint (a
//! delivery, a poke) reaches the endpoint's owner whoever asked, after the asking hook has returned.

use super::*;
use crate::context::EndpointPoke;
use crate::registered::EndpointAt;

/// One thing the core asks of the features, queued until the hook or event that caused it is done.
pub(crate) enum Work {
    /// A packet for `node` itself: to its endpoint's owner ([`Feature::on_endpoint_packet`]), or, if not TCP,
    /// offered to the datagram hooks of the features but `from`.
    Deliver { from: Option<FeatureId>, node: usize, packet: Bytes, headers: Headers },
    /// A packet `node`'s endpoint sent for feature `from`: offered to the others' [`Feature::on_host_send`],
    /// else routed toward `dst`.
    HostSend { from: FeatureId, node: usize, dst: Ipv4Addr, packet: Bytes },
    /// A packet `node`'s agent passed on or made (at the request of `from`, if any): offered to the other
    /// features' [`Feature::on_agent_output`], else routed toward `dst`.
    AgentOutput { from: Option<FeatureId>, node: usize, dst: Ipv4Addr, packet: Bytes, priority: bool },
    /// Every feature but `from`: the mobile reassociated with `link` ([`Feature::on_reassociate`]).
    Reassociate { from: FeatureId, link: usize },
    /// Every feature but `from`: direction `dir` of `link` was purged ([`Feature::on_link_purge`]).
    LinkPurge { from: FeatureId, link: usize, dir: usize },
    /// Every feature but `from`: a bulk flow's endpoint ran ([`Feature::after_flow_endpoint`]).
    FlowProgress { from: FeatureId },
    /// Every open endpoint at `node`, in the order opened: its owner applies `poke` and runs it.
    Poke { node: usize, poke: EndpointPoke },
}

impl World {
    /// Carries out the queued work, first in first out, until none is left (see the module docs).
    pub(crate) fn drain(&mut self, now: Time) {
        loop {
            while let Some(work) = self.core.work.pop_front() {
                self.carry_out(now, work);
            }
            let Some((feature, slot)) = self.core.continuations.pop_front() else { break };
            self.features[feature.0].on_event(&mut self.core, now, slot);
        }
    }

    fn carry_out(&mut self, now: Time, work: Work) {
        match work {
            Work::Deliver { from, node, packet, headers } => self.deliver(now, from, node, packet, headers),
            Work::HostSend { from, node, dst, packet } => {
                if !self.offer(Some(from), |f, core| f.on_host_send(core, now, node, &packet)) {
                    self.core.route(now, node, dst, packet, false);
                }
            }
            Work::AgentOutput { from, node, dst, packet, priority } => {
                if !self.offer(from, |f, core| f.on_agent_output(core, now, node, &packet)) {
                    self.core.route(now, node, dst, packet, priority);
                }
            }
            Work::Reassociate { from, link } => self.tell_others(from, |f, core| f.on_reassociate(core, now, link)),
            Work::LinkPurge { from, link, dir } => self.tell_others(from, |f, _| f.on_link_purge(link, dir)),
            Work::FlowProgress { from } => self.tell_others(from, |f, core| f.after_flow_endpoint(core, now)),
            Work::Poke { node, poke } => {
                for ep in self.core.nodes[node].endpoints.clone() {
                    let Endpoint { open, owner: Owner { feature, key }, .. } = self.core.endpoints[ep];
                    if open {
                        self.features[feature.0].on_endpoint_poke(&mut self.core, now, key, &poke);
                    }
                }
            }
        }
    }

    /// Offers something to every feature but `from`, in registration order, until one takes it (`hook`
    /// returns true); whether one did. Each feature's requests are carried out before the next is offered.
    fn offer(&mut self, from: Option<FeatureId>, mut hook: impl FnMut(&mut dyn DynFeature, &mut Core) -> bool) -> bool {
        let others = self.features.iter_mut().enumerate().filter(|(i, _)| from != Some(FeatureId(*i)));
        for (_, f) in others {
            if hook(f.as_mut(), &mut self.core) {
                return true;
            }
        }
        false
    }

    /// Tells every feature but `from`, in registration order, with each one's requests carried out before
    /// the next is told.
    fn tell_others(&mut self, from: FeatureId, mut hook: impl FnMut(&mut dyn DynFeature, &mut Core)) {
        self.offer(Some(from), |f, core| {
            hook(f, core);
            false
        });
    }

    /// A packet reaches `node` over direction `dir` of `link`: offered to the features' arrival hooks, in
    /// registration order, until one consumes it; else the core delivers or forwards it.
    pub(super) fn arrive(&mut self, now: Time, node: usize, link: usize, dir: usize, packet: Bytes) {
        let Some(headers) = self.core.receive(now, link, dir, &packet) else { return };
        if self.core.hooks.arrive && self.offer(None, |f, core| f.on_arrive(core, now, node, link, &packet)) {
            return;
        }
        if let Some((packet, headers)) = self.core.arrived(now, node, packet, headers) {
            if self.core.work.is_empty() {
                // What queuing it would do, as it would be next: most packets go this way, without the queue.
                self.deliver(now, None, node, packet, headers);
            } else {
                self.core.deliver_parsed(None, node, packet, headers);
            }
        }
    }

    /// A packet for `node` itself (a request of `from`, if any): to its endpoint's owner, or, if not TCP,
    /// offered to the datagram hooks of the features but `from`; else it counts as undeliverable.
    fn deliver(&mut self, now: Time, from: Option<FeatureId>, node: usize, packet: Bytes, headers: Headers) {
        if headers.protocol != PROTO_TCP {
            if !self.offer(from, |f, core| f.on_datagram(core, now, node, &packet)) {
                self.core.undeliverable += 1;
            }
        } else if let Some((Owner { feature, key }, at)) = self.core.endpoint_for(node, &headers) {
            self.features[feature.0].on_endpoint_packet(&mut self.core, now, key, at, &packet, &headers);
        }
    }

    /// Endpoint `ep`'s timer event is due: its owner fires the endpoint's timeout if that is due and runs it.
    pub(super) fn endpoint_timer(&mut self, now: Time, ep: usize) {
        let (Owner { feature, key }, at): (Owner, EndpointAt) = self.core.endpoint_timer_due(now, ep);
        self.features[feature.0].on_endpoint_timer(&mut self.core, now, key, at);
    }
}
