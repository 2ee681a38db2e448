//! A packet's way through the core: onto a link or medium, through the air, into a node, past its agent
//! and the features' hooks, on by the routing table.

use super::*;

/// A packet for a node itself, with its headers as read on arrival.
pub(super) type Delivery = (Bytes, Headers);

impl Core {
    /// Captures `packet` in the pcap of `end` of `link`, if it has one; a write error is kept for the end of
    /// the run and stops that capture. Inlined down to the check, which every frame makes twice and which
    /// a run without captures always fails.
    #[inline(always)]
    pub(super) fn capture(&mut self, now: Time, link: usize, end: usize, packet: &[u8]) {
        if self.links[link].pcap[end].is_some() {
            self.write_capture(now, link, end, packet);
        }
    }

    #[inline(never)]
    pub(super) fn write_capture(&mut self, now: Time, link: usize, end: usize, packet: &[u8]) {
        let slot = &mut self.links[link].pcap[end];
        if let Some(p) = slot.as_mut() {
            if let Err(source) = p.writer.write(now, packet) {
                let path = slot.take().expect("checked").path;
                self.pcap_error.get_or_insert(SimError::Io { path, source });
            }
        }
    }

    /// A packet reaches `node` over direction `dir` of `link`: captured and read; `None` when it goes no
    /// further (unreadable, or lost out of range), else its headers, for the features' arrival hooks and then
    /// [`Core::arrived`].
    pub(super) fn receive(&mut self, now: Time, link: usize, dir: usize, packet: &Bytes) -> Option<Headers> {
        self.capture(now, link, 1 - dir, packet);
        // Read once here: routing, delivery and the endpoint's TCP read these headers, not the bytes again
        // (the TCP header only when the packet is delivered here: a router does not read it).
        let Ok(headers) = Headers::parse_ipv4(packet) else {
            self.undeliverable += 1;
            return None;
        };
        if self.links[link].out_of_range {
            // In flight when the far end moved out of range.
            self.lose_out_of_range(packet);
            return None;
        }
        Some(headers)
    }

    /// A packet that reached `node` and that no feature consumed: forwarded through the node's agent or by
    /// its routes; returned, its TCP header read, when it is for `node` itself (to be delivered).
    pub(super) fn arrived(&mut self, now: Time, node: usize, packet: Bytes, mut headers: Headers) -> Option<Delivery> {
        let dst = headers.dst;
        if dst == self.nodes[node].addr {
            headers.read_tcp(&packet);
            return Some((packet, headers));
        }
        let Some(out) = self.next_hop(node, dst) else {
            self.undeliverable += 1;
            return None;
        };
        if self.nodes[node].agent.is_some() {
            let side = if self.links[out.0].kind == LinkKind::Wireless { Side::ToMobile } else { Side::ToWired };
            let occupancy = self.links[out.0].occupancy(out.1);
            let agent = self.nodes[node].agent.as_mut().expect("checked");
            agent.handle_queue_occupancy(side, occupancy);
            agent.handle_packet(now, side, packet, &mut self.actions);
            self.apply_actions_routed(now, node, None, Some((dst, out)));
        } else {
            self.send(now, out, packet, false);
        }
        None
    }

    /// Hands `packet` to the agent at `node` as if it had arrived travelling toward `side`, and carries out
    /// what the agent asks for (for feature `from`, which is not offered what the agent passes on).
    pub(crate) fn hand_to_agent(&mut self, now: Time, from: FeatureId, node: usize, side: Side, packet: Bytes) {
        let agent = self.nodes[node].agent.as_mut().expect("the node has an agent");
        agent.handle_packet(now, side, packet, &mut self.actions);
        self.apply_actions(now, node, Some(from));
    }

    /// Lets `node`'s agent (if any) act on a host event outside a packet, then carries out what it asks for.
    pub(crate) fn tell_agent(
        &mut self,
        now: Time,
        from: FeatureId,
        node: usize,
        event: impl FnOnce(&mut dyn Agent, &mut Vec<Action>),
    ) {
        let Some(agent) = self.nodes[node].agent.as_mut() else { return };
        event(agent.as_mut(), &mut self.actions);
        self.apply_actions(now, node, Some(from));
    }

    /// Carries out what the node's agent asked for (at the request of feature `from`, if any), then re-arms
    /// its timer.
    pub(super) fn apply_actions(&mut self, now: Time, node: usize, from: Option<FeatureId>) {
        self.apply_actions_routed(now, node, from, None);
    }

    /// [`Core::apply_actions`], with the next hop toward one destination already found (the packet the
    /// agent was handed, which it usually passes on): sending changes no route, so it is not looked up again.
    /// When features watch an agent's output, each packet is queued for them ([`Work::AgentOutput`]).
    pub(super) fn apply_actions_routed(
        &mut self,
        now: Time,
        node: usize,
        from: Option<FeatureId>,
        known: Option<(Ipv4Addr, (usize, usize))>,
    ) {
        let mut actions = std::mem::take(&mut self.actions);
        for action in actions.drain(..) {
            let (packet, priority) = match action {
                Action::Forward(_, p) | Action::Inject(_, p) => (p, false),
                Action::ForwardPriority(_, p) => (p, true),
                Action::Drop(_) => continue,
            };
            let dst = match Ipv4Packet::new_checked(&packet[..]) {
                Ok(ip) => ip.dst_addr(),
                Err(_) => {
                    self.undeliverable += 1;
                    continue;
                }
            };
            if self.hooks.agent_output {
                self.work.push_back(Work::AgentOutput { from, node, dst, packet, priority });
                continue;
            }
            match known {
                Some((to, out)) if to == dst => self.send(now, out, packet, priority),
                _ => self.route(now, node, dst, packet, priority),
            }
        }
        self.actions = actions;
        let want = self.nodes[node].agent.as_ref().and_then(|a| a.poll_timeout());
        let n = &mut self.nodes[node];
        if let Some(t) = want {
            if n.agent_timer.is_none_or(|s| t < s) {
                n.agent_timer = Some(t);
                self.sched.schedule(t, Event::AgentTimer { node });
            }
        }
    }

    /// Where `node` sends a packet for `dst`: its default gateway if it has one (a mobile host), else its route.
    pub(crate) fn next_hop(&self, node: usize, dst: Ipv4Addr) -> Option<(usize, usize)> {
        let n = &self.nodes[node];
        if let Some(gateway) = n.gateway.filter(|_| dst != n.addr) {
            return Some(gateway);
        }
        let to = self.addr_index.get(u64::from(u32::from(dst)))?;
        n.routes[to]
    }

    /// Sends `packet` from `node` toward `dst` by the routing table, or counts it undeliverable.
    pub(crate) fn route(&mut self, now: Time, node: usize, dst: Ipv4Addr, packet: Bytes, priority: bool) {
        match self.next_hop(node, dst) {
            Some(out) => self.send(now, out, packet, priority),
            None => self.undeliverable += 1,
        }
    }

    /// Queues `packet` on direction `dir` of `link` and starts what can start.
    pub(crate) fn send(&mut self, now: Time, (link, dir): (usize, usize), packet: Bytes, priority: bool) {
        if self.links[link].enqueue(dir, packet, priority) {
            self.settle_unqueued_done(link, dir);
            self.medium_update(link);
            self.kick(now, link);
        }
    }

    /// A frame now waits on direction `dir` of `link`, whose transmitter (or medium) may have a frame's end
    /// that was left without an event (see [`Core::launch`]): the transmitter is free if that end would have
    /// played already, else the end is queued now, under the sequence number it would have had, to run
    /// exactly where it would have run.
    fn settle_unqueued_done(&mut self, link: usize, dir: usize) {
        let (unqueued, m) = match self.links[link].medium {
            Some(m) => (self.media_unqueued_done[m].take(), Some(m)),
            None => (self.links[link].dirs[dir].unqueued_done.take().map(|(at, seq)| (at, seq, link, dir)), None),
        };
        let Some((at, seq, link, dir)) = unqueued else { return };
        if !self.sched.would_have_run(at, seq) {
            self.sched.schedule_reserved(at, seq, Event::TxDone { link, dir });
        } else if let Some(m) = m {
            self.media[m].finish();
        } else {
            self.links[link].finish(dir);
        }
    }

    /// Tells the medium of `link` (if it sends on one) what the link would send next, after its queues
    /// changed (see [`Medium::update`]).
    #[inline]
    pub(super) fn medium_update(&mut self, link: usize) {
        if let Some(m) = self.links[link].medium {
            if self.media[m].is_indexed() {
                let next = self.links[link].next_on_medium();
                self.media[m].update(link, next);
            }
        }
    }

    /// Takes out of both transmit queues of direction `dir` of `link` every frame not yet on the air for which
    /// `matches` holds; returns how many (see [`Link::purge`]).
    /// Every feature but `from`, the one that asked, drops what its link layer holds for that direction too
    /// ([`Feature::on_link_purge`], queued as [`Work::LinkPurge`]; counted there, not here).
    pub(crate) fn purge_link(
        &mut self,
        from: FeatureId,
        link: usize,
        dir: usize,
        matches: impl Fn(&[u8]) -> bool,
    ) -> u64 {
        let purged = self.links[link].purge(dir, matches);
        self.medium_update(link);
        self.work.push_back(Work::LinkPurge { from, link, dir });
        purged
    }

    /// Starts whatever transmissions the link (or the medium it sends on) can start now.
    pub(super) fn kick(&mut self, now: Time, link: usize) {
        match self.links[link].medium {
            Some(m) => {
                let links = &self.links;
                if let Some((l, dir)) = self.media[m].acquire(|l| links[l].next_on_medium()) {
                    let t = self.links[l].start(now, dir);
                    self.medium_update(l);
                    self.launch(now, l, t);
                }
            }
            None => {
                while let Some(t) = self.links[link].start_next(now) {
                    self.launch(now, link, t);
                }
            }
        }
    }

    /// A frame went on the air on `link`: capture it, tell the sender's agent, schedule its end and arrival.
    pub(super) fn launch(&mut self, now: Time, link: usize, t: Transmission) {
        let Transmission { dir, packet, done_at, arrives_at, corrupted } = t;
        self.capture(now, link, dir, &packet);
        let from = self.links[link].ends[dir];
        if let Some(agent) = self.nodes[from].agent.as_mut() {
            let side = if self.links[link].kind == LinkKind::Wireless { Side::ToMobile } else { Side::ToWired };
            agent.handle_transmit(now, side, &packet);
        }
        // With no frame waiting for the transmitter (or the medium), the end of this frame changes nothing
        // unless one is queued before it, and on a hop that is not the bottleneck most are not: the event is
        // left out, and `Core::send` queues it if a frame comes first. (A medium shared by several links
        // always has the event: asking each of them whether a frame waits costs more than the event.)
        let seq = self.sched.reserve();
        let l = &mut self.links[link];
        match l.medium {
            Some(m) if self.media[m].links.len() == 1 && !l.has_frame(0) && !l.has_frame(1) => {
                self.media_unqueued_done[m] = Some((done_at, seq, link, dir));
            }
            None if !l.has_frame(dir) => l.dirs[dir].unqueued_done = Some((done_at, seq)),
            _ => self.sched.schedule_reserved(done_at, seq, Event::TxDone { link, dir }),
        }
        if self.links[link].out_of_range {
            self.lose_out_of_range(&packet);
            return;
        }
        if !corrupted {
            let node = self.links[link].ends[1 - dir];
            self.sched.schedule(arrives_at, Event::Arrive { node, link, dir, packet });
        }
    }

    pub(super) fn lose_out_of_range(&mut self, packet: &[u8]) {
        if Ipv4Packet::new_checked(packet).is_ok_and(|ip| !self.control_protocols.contains(&ip.protocol())) {
            self.out_of_range_losses += 1;
        }
    }
}
