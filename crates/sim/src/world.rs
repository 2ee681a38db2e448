//! The simulator's core: one run's event queue, nodes, links and media, routing, delivery to endpoints and
//! agents, the bulk flows, and the metrics they yield. Everything else a run does (the Web workload, mobility
//! and handoff, Mobile IP, node failure, the split connection, link-level ARQ) is a
//! [`Feature`](crate::feature::Feature) that the core drives through the seam in [`crate::feature`] (it hands
//! each hook a [`crate::context::Cx`] and carries out its requests); the core names no feature.
//!
//! A run goes on until every bulk flow has delivered its bytes and every feature's
//! [`runs_until`](crate::feature::Feature::runs_until) time has passed, or the time limit is reached.

use crate::agents::build_agent;
use crate::context::Role;
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
use lasthop_wire::tcp::TcpPacket;
use lasthop_wire::Time;
use std::collections::{BTreeMap, HashMap};
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

impl Node {
    fn add_endpoint(&mut self, ep: usize, key: EndpointKey) {
        self.endpoints.push(ep);
        self.by_key.entry(key).or_insert(ep);
    }

    /// Endpoint `ep` (named by `key`) closed: the next open endpoint with the same key, if any, takes its
    /// place, as a scan of the list would find it.
    fn remove_endpoint(&mut self, ep: usize, key: EndpointKey, endpoints: &[Endpoint]) {
        self.endpoints.retain(|&e| e != ep);
        if self.by_key.get(&key) == Some(&ep) {
            match self.endpoints.iter().copied().find(|&e| endpoints[e].key() == key) {
                Some(next) => self.by_key.insert(key, next),
                None => self.by_key.remove(&key),
            };
        }
    }

    /// The first open endpoint named by `key`.
    fn find_endpoint(&self, key: EndpointKey, endpoints: &[Endpoint]) -> Option<usize> {
        if self.endpoints.len() <= SCAN_ENDPOINTS_UP_TO {
            self.endpoints.iter().copied().find(|&e| endpoints[e].key() == key)
        } else {
            self.by_key.get(&key).copied()
        }
    }
}

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
    /// Not closed yet ([`World::close_endpoint`]).
    open: bool,
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

pub struct World {
    sched: Scheduler<Event>,
    pub(crate) nodes: Vec<Node>,
    pub(crate) links: Vec<Link>,
    /// Half-duplex media; each half-duplex link sends on one (`Link::medium`).
    media: Vec<Medium>,
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
    /// The features in registration order. A slot is empty while its feature's hook and the requests it made
    /// run ([`crate::registered::Registered::call`] holds the world then): so a feature's own requests never
    /// come back to it.
    features: Vec<Option<Box<dyn DynFeature>>>,
    /// The hooks each feature asked for, and (`hooks`) which at least one did.
    feature_hooks: Vec<HookSet>,
    pub(crate) hooks: HookSet,
    /// Packets endpoints sent while a feature ran (its slot empty, so it could not be offered them): offered
    /// to [`Feature::on_host_send`] when no feature runs any more, in the order sent.
    sent_while_a_feature_ran: Vec<(Time, usize, Ipv4Addr, Bytes)>,
    /// The latest of the features' `runs_until`: the run goes on until then.
    run_until: Option<Time>,
    /// IP protocols whose packets are a feature's control messages, not data (not counted by
    /// [`World::out_of_range_losses`]).
    control_protocols: Vec<u8>,
    out_of_range_losses: u64,
    /// The first error writing a pcap file (the run fails with it at the end).
    pcap_error: Option<SimError>,
}

impl World {
    pub fn build(s: &Scenario, opts: &RunOptions) -> Result<World, SimError> {
        Self::build_with(s, opts, crate::registry::build_all)
    }

    /// [`World::build`] with `register` in place of [`crate::registry::build_all`] (the tests register probes).
    pub(crate) fn build_with(
        s: &Scenario,
        opts: &RunOptions,
        register: impl FnOnce(&Scenario, &mut World) -> Result<(), SimError>,
    ) -> Result<World, SimError> {
        let names: HashMap<&str, usize> = s.nodes.keys().enumerate().map(|(i, n)| (n.as_str(), i)).collect();
        let index = |n: &str| *names.get(n).expect("validated");
        let mut nodes: Vec<Node> = s
            .nodes
            .iter()
            .map(|(name, n)| Node {
                name: name.clone(),
                addr: n.addr,
                routes: Routes::default(),
                gateway: None,
                agent: build_agent(&n.agent, s),
                agent_timer: None,
                endpoints: Vec::new(),
                by_key: FastMap::default(),
            })
            .collect();
        let mut links = Vec::new();
        for (name, l) in &s.links {
            let ends = [index(&l.ends[0]), index(&l.ends[1])];
            let fwd = l.error.build(rng::stream(s.seed, &format!("link.{name}"), "error.0"));
            let rev = l.error_reverse.as_ref().unwrap_or(&l.error).build(rng::stream(
                s.seed,
                &format!("link.{name}"),
                "error.1",
            ));
            let mut link = Link::new(name.clone(), l, ends, [fwd, rev]);
            if let (Some(dir), LinkKind::Wireless) = (&opts.pcap_dir, l.kind) {
                for (i, &end) in ends.iter().enumerate() {
                    let path = dir.join(format!("{name}-{}.pcap", nodes[end].name));
                    let io = |source| SimError::Io { path: path.clone(), source };
                    let file = std::fs::File::create(&path).map_err(io)?;
                    let writer = PcapWriter::new(std::io::BufWriter::new(file)).map_err(io)?;
                    link.pcap[i] = Some(crate::link::Pcap { writer, path });
                }
            }
            links.push(link);
        }
        compute_routes(&mut nodes, &links, None);
        let media = build_media(s, &mut links);
        let addr_index = KeyIndex::new(&nodes.iter().map(|n| u64::from(u32::from(n.addr))).collect::<Vec<_>>());

        let mut world = World {
            sched: Scheduler::default(),
            nodes,
            links,
            media,
            endpoints: Vec::new(),
            flow_progress: Vec::new(),
            handoffs_noted: Vec::new(),
            addr_index,
            actions: Vec::with_capacity(16),
            holding: 0,
            time_limit: Time((s.time_limit_s * 1e9).round() as u64),
            stall_until: 0,
            stall_events: 0,
            stalled: None,
            seed: s.seed,
            trace: opts.trace,
            undeliverable: 0,
            features: Vec::new(),
            feature_hooks: Vec::new(),
            hooks: HookSet::default(),
            sent_while_a_feature_ran: Vec::new(),
            run_until: None,
            control_protocols: Vec::new(),
            out_of_range_losses: 0,
            pcap_error: None,
        };
        // Each feature sets up in registration order, then each starts: see "Same-instant order" in
        // `crate::feature`.
        register(s, &mut world)?;
        for id in 0..world.features.len() {
            world.with_feature(FeatureId(id), |f, w| f.start(w));
        }
        world.run_until = world.features.iter().flatten().filter_map(|f| f.runs_until()).max();
        Ok(world)
    }

    /// The id the next feature registered will have.
    pub(crate) fn next_feature_id(&self) -> FeatureId {
        FeatureId(self.features.len())
    }

    /// Registers a feature built with id [`World::next_feature_id`] (see [`crate::registry::build_all`]).
    pub(crate) fn add_feature(&mut self, feature: Box<dyn DynFeature>) {
        let h = feature.hooks();
        self.feature_hooks.push(h);
        self.holding += usize::from(feature.holds_run());
        self.hooks.arrive |= h.arrive;
        self.hooks.after_flow_endpoint |= h.after_flow_endpoint;
        self.hooks.host_send |= h.host_send;
        self.hooks.agent_output |= h.agent_output;
        self.features.push(Some(feature));
    }

    /// Registers `feature` (see [`crate::registry::build_all`]) and runs its [`Feature::set_up`].
    pub(crate) fn register<F: Feature>(&mut self, feature: F) {
        let mut registered = crate::registered::Registered::new(self.next_feature_id(), feature);
        registered.call(self, Time::ZERO, |f, cx| f.set_up(cx));
        self.add_feature(Box::new(registered));
    }

    /// Runs `f` on feature `id` with the world; `None` if that feature is the one running now (a hook never
    /// re-enters the feature it came from).
    fn with_feature<R>(&mut self, id: FeatureId, f: impl FnOnce(&mut dyn DynFeature, &mut World) -> R) -> Option<R> {
        let mut feature = self.features[id.0].take()?;
        let r = f(feature.as_mut(), self);
        self.features[id.0] = Some(feature);
        if !self.sent_while_a_feature_ran.is_empty() && self.features.iter().all(Option::is_some) {
            for (now, node, dst, packet) in std::mem::take(&mut self.sent_while_a_feature_ran) {
                self.send_own(now, None, node, dst, packet);
            }
        }
        Some(r)
    }

    /// Schedules one of feature `feature`'s own events.
    pub(crate) fn schedule(&mut self, at: Time, feature: FeatureId, slot: usize) {
        self.sched.schedule(at, Event::Feature { feature, slot });
    }

    /// [`World::schedule`] under `seq`, from [`World::reserve_event`].
    pub(crate) fn schedule_reserved(&mut self, at: Time, seq: u64, feature: FeatureId, slot: usize) {
        self.sched.schedule_reserved(at, seq, Event::Feature { feature, slot });
    }

    /// Takes the next place among same-instant events (see [`crate::engine::Scheduler::reserve`]).
    pub(crate) fn reserve_event(&mut self) -> u64 {
        self.sched.reserve()
    }

    /// A feature that held the run open is finished with it.
    pub(crate) fn release_run(&mut self) {
        self.holding -= 1;
    }

    /// Bulk flow `flow` has come this far: noted for [`crate::context::View::flows`], then every feature's
    /// [`Feature::after_flow_endpoint`].
    pub(crate) fn flow_progress(&mut self, now: Time, flow: usize, delivered: u64, snd_max: u64) {
        let p = &mut self.flow_progress[flow];
        (p.delivered, p.snd_max) = (delivered, snd_max);
        for i in 0..self.features.len() {
            self.with_feature(FeatureId(i), |f, w| f.after_flow_endpoint(w, now));
        }
    }

    /// Marks `protocol` as a feature's control traffic (not data, for [`World::out_of_range_losses`]).
    pub(crate) fn add_control_protocol(&mut self, protocol: u8) {
        if !self.control_protocols.contains(&protocol) {
            self.control_protocols.push(protocol);
        }
    }

    /// Whether `protocol` is a feature's control traffic ([`World::add_control_protocol`]).
    pub(crate) fn is_control_protocol(&self, protocol: u8) -> bool {
        self.control_protocols.contains(&protocol)
    }

    /// The mobile (re)associated with the cell of wireless `link`: every feature but the one calling restarts
    /// its link-layer state for that link ([`Feature::on_reassociate`]).
    pub(crate) fn reassociate(&mut self, now: Time, link: usize) {
        for i in 0..self.features.len() {
            self.with_feature(FeatureId(i), |f, w| f.on_reassociate(w, now, link));
        }
    }

    /// Has every open endpoint at `node` poked by its owner ([`Feature::on_endpoint_poke`]), in the order
    /// they were opened.
    pub(crate) fn poke_endpoints(&mut self, now: Time, node: usize, poke: impl Fn(&mut Role, Time)) {
        for ep in self.nodes[node].endpoints.clone() {
            let Endpoint { open, owner: Owner { feature, key }, .. } = self.endpoints[ep];
            if open {
                self.with_feature(feature, |f, w| f.on_endpoint_poke(w, now, key, &poke));
            }
        }
    }

    /// Notes a handoff at `now` ([`crate::context::View::handoffs_noted`]).
    pub(crate) fn note_handoff(&mut self, now: Time) {
        self.handoffs_noted.push(now.as_secs_f64());
    }

    /// Data frames lost so far because their link was out of range (sent on it, or in flight when it went
    /// out of range); control frames of [`World::add_control_protocol`] are not counted.
    pub(crate) fn out_of_range_losses(&self) -> u64 {
        self.out_of_range_losses
    }

    /// Recomputes every node's routes; `no_transit` is a node that originates and receives but never relays.
    pub(crate) fn recompute_routes(&mut self, no_transit: Option<usize>) {
        compute_routes(&mut self.nodes, &self.links, no_transit);
    }

    /// Node index by name (the scenario was validated, so the name exists).
    pub(crate) fn node_index(&self, name: &str) -> usize {
        self.nodes.iter().position(|x| x.name == name).expect("validated")
    }

    /// A TCP endpoint at `node` (packets from `remote` to `local` reach it); returns its index.
    pub(crate) fn add_endpoint(
        &mut self,
        owner: Owner,
        node: usize,
        local: SocketAddrV4,
        remote: SocketAddrV4,
    ) -> usize {
        let ep = self.endpoints.len();
        let e = Endpoint { owner, node, local, remote, open: true };
        self.nodes[node].add_endpoint(ep, e.key());
        self.endpoints.push(e);
        ep
    }

    /// Closes endpoint `ep`: no packet reaches it any more.
    pub(crate) fn close_endpoint(&mut self, ep: usize) {
        self.endpoints[ep].open = false;
        let (node, key) = (self.endpoints[ep].node, self.endpoints[ep].key());
        self.nodes[node].remove_endpoint(ep, key, &self.endpoints);
    }

    /// Nodes from `from` to `to` inclusive, following the routing tables.
    pub(crate) fn path(&self, from: usize, to: usize) -> Option<Vec<usize>> {
        let mut path = vec![from];
        let mut at = from;
        while at != to {
            let (link, dir) = self.nodes[at].routes[to]?;
            at = self.links[link].ends[1 - dir];
            path.push(at);
        }
        Some(path)
    }

    pub fn run(mut self) -> Result<RunResult, SimError> {
        self.play();
        self.finish()
    }

    /// Plays the events until the run is over (see the module docs); [`World::finish`] then collects the
    /// metrics.
    pub(crate) fn play(&mut self) {
        while let Some(at) = self.sched.peek_time() {
            if at > self.time_limit {
                break;
            }
            // Without features that keep it going this is `while holding > 0`.
            if self.holding == 0 && self.run_until.is_none_or(|u| at > u) {
                break;
            }
            let (now, ev) = self.sched.pop().expect("peeked");
            if now.0 >= self.stall_until {
                self.stall_until = now.0.saturating_add(STALL_SPAN_NS);
                self.stall_events = 0;
            } else {
                self.stall_events += 1;
                if self.stall_events >= STALL_EVENTS {
                    self.stalled = Some((now, self.likely_spinning(&ev)));
                    break;
                }
            }
            match ev {
                Event::Arrive { node, link, dir, packet } => self.arrive(now, node, link, dir, packet),
                Event::TxDone { link, dir } => {
                    match self.links[link].medium {
                        Some(m) => self.media[m].finish(),
                        None => self.links[link].finish(dir),
                    }
                    self.kick(now, link);
                }
                Event::AgentTimer { node } => {
                    if self.nodes[node].agent_timer.is_some_and(|t| t <= now) {
                        self.nodes[node].agent_timer = None;
                    }
                    if let Some(agent) = self.nodes[node].agent.as_mut() {
                        if agent.poll_timeout().is_some_and(|t| t <= now) {
                            agent.on_timeout(now, &mut self.actions);
                        }
                    }
                    self.apply_actions(now, node);
                }
                Event::Feature { feature, slot } => {
                    self.with_feature(feature, |f, w| f.on_event(w, now, slot));
                }
            }
        }
    }

    /// The scenario fields that most likely made the run stall, from the kind of event that was playing
    /// when the backstop tripped (in a stall, one kind of event repeats).
    #[cold]
    fn likely_spinning(&self, ev: &Event) -> String {
        match ev {
            Event::AgentTimer { node } => format!(
                "a timer of the agents at node `{}` (`snoop.min_rtx_timeout_ms`, `snoop.max_rtx_timeout_ms`, \
                 `snoop.initial_srtt_ms`, `snoop.persist_timeout_ms` or `nack.timeout_ms`)",
                self.nodes[*node].name
            ),
            Event::Arrive { link, .. } | Event::TxDone { link, .. } => {
                let name = &self.links[*link].name;
                format!("link `{name}` (`links.{name}.rate_mbps`, `delay_ms` or `mac_overhead_us`)")
            }
            Event::Feature { feature, slot } => {
                let cause = self.features[feature.0].as_ref().and_then(|f| f.stall_cause(*slot));
                cause.unwrap_or_else(|| {
                    "a feature's period (`mobility.interval_s`, `beacon_period_s`, \
                 `motion_step_s`, `[mobile_ip]`, `links.*.arq.timeout_ms`, `[web]`)"
                        .into()
                })
            }
        }
    }

    /// Captures `packet` in the pcap of `end` of `link`, if it has one; a write error is kept for the end of
    /// the run and stops that capture. Inlined down to the check, which every frame makes twice and which
    /// a run without captures always fails.
    #[inline(always)]
    fn capture(&mut self, now: Time, link: usize, end: usize, packet: &[u8]) {
        if self.links[link].pcap[end].is_some() {
            self.write_capture(now, link, end, packet);
        }
    }

    #[inline(never)]
    fn write_capture(&mut self, now: Time, link: usize, end: usize, packet: &[u8]) {
        let slot = &mut self.links[link].pcap[end];
        if let Some(p) = slot.as_mut() {
            if let Err(source) = p.writer.write(now, packet) {
                let path = slot.take().expect("checked").path;
                self.pcap_error.get_or_insert(SimError::Io { path, source });
            }
        }
    }

    fn arrive(&mut self, now: Time, node: usize, link: usize, dir: usize, packet: Bytes) {
        self.capture(now, link, 1 - dir, &packet);
        let Ok(ip) = Ipv4Packet::new_checked(&packet[..]) else {
            self.undeliverable += 1;
            return;
        };
        let dst = ip.dst_addr();
        if self.links[link].out_of_range {
            // In flight when the far end moved out of range.
            self.lose_out_of_range(&packet);
            return;
        }
        if self.hooks.arrive && self.offer_arrival(now, node, link, &packet) {
            return;
        }
        if dst == self.nodes[node].addr {
            self.deliver_local(now, node, packet);
            return;
        }
        let Some(out) = self.next_hop(node, dst) else {
            self.undeliverable += 1;
            return;
        };
        if self.nodes[node].agent.is_some() {
            let side = if self.links[out.0].kind == LinkKind::Wireless { Side::ToMobile } else { Side::ToWired };
            let occupancy = self.links[out.0].occupancy(out.1);
            let agent = self.nodes[node].agent.as_mut().expect("checked");
            agent.on_queue_occupancy(side, occupancy);
            agent.on_packet(now, side, packet, &mut self.actions);
            self.apply_actions_routed(now, node, Some((dst, out)));
        } else {
            self.send(now, out, packet, false);
        }
    }

    /// Offers an arriving packet to the features, in registration order, until one consumes it.
    fn offer_arrival(&mut self, now: Time, node: usize, link: usize, packet: &Bytes) -> bool {
        (0..self.features.len())
            .any(|i| self.with_feature(FeatureId(i), |f, w| f.on_arrive(w, now, node, link, packet)) == Some(true))
    }

    /// Offers a packet `node`'s agent passes on or makes to the features, in registration order, until one
    /// takes it.
    fn offer_agent_output(&mut self, now: Time, node: usize, packet: &Bytes) -> bool {
        (0..self.features.len())
            .any(|i| self.with_feature(FeatureId(i), |f, w| f.on_agent_output(w, now, node, packet)) == Some(true))
    }

    /// Hands `packet` to the agent at `node` as if it had arrived travelling toward `side`, and carries out
    /// what the agent asks for.
    pub(crate) fn hand_to_agent(&mut self, now: Time, node: usize, side: Side, packet: Bytes) {
        let agent = self.nodes[node].agent.as_mut().expect("the node has an agent");
        agent.on_packet(now, side, packet, &mut self.actions);
        self.apply_actions(now, node);
    }

    /// Lets `node`'s agent (if any) act on a host event outside a packet, then carries out what it asks for.
    pub(crate) fn tell_agent(&mut self, now: Time, node: usize, event: impl FnOnce(&mut dyn Agent, &mut Vec<Action>)) {
        let Some(agent) = self.nodes[node].agent.as_mut() else { return };
        event(agent.as_mut(), &mut self.actions);
        self.apply_actions(now, node);
    }

    /// Carries out what the node's agent asked for, then re-arms its timer.
    fn apply_actions(&mut self, now: Time, node: usize) {
        self.apply_actions_routed(now, node, None);
    }

    /// [`World::apply_actions`], with the next hop toward one destination already found (the packet the
    /// agent was handed, which it usually passes on): sending changes no route, so it is not looked up again.
    fn apply_actions_routed(&mut self, now: Time, node: usize, known: Option<(Ipv4Addr, (usize, usize))>) {
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
            if self.hooks.agent_output && self.offer_agent_output(now, node, &packet) {
                continue;
            }
            match known {
                // A feature that saw the packet above may have moved a route: then it is looked up.
                Some((to, out)) if to == dst && !self.hooks.agent_output => self.send(now, out, packet, priority),
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
            self.medium_update(link);
            self.kick(now, link);
        }
    }

    /// Tells the medium of `link` (if it sends on one) what the link would send next, after its queues
    /// changed (see [`Medium::update`]).
    #[inline]
    fn medium_update(&mut self, link: usize) {
        if let Some(m) = self.links[link].medium {
            if self.media[m].is_indexed() {
                let next = self.links[link].next_on_medium();
                self.media[m].update(link, next);
            }
        }
    }

    /// Takes out of both transmit queues of direction `dir` of `link` every frame not yet on the air for which
    /// `matches` holds; returns how many (see [`Link::purge`]).
    /// Every other feature's link layer drops what it holds for that direction too ([`Feature::on_link_purge`];
    /// counted there, not here).
    pub(crate) fn purge_link(&mut self, link: usize, dir: usize, matches: impl Fn(&[u8]) -> bool) -> u64 {
        let purged = self.links[link].purge(dir, matches);
        self.medium_update(link);
        for i in 0..self.features.len() {
            self.with_feature(FeatureId(i), |f, _| f.on_link_purge(link, dir));
        }
        purged
    }

    /// Starts whatever transmissions the link (or the medium it sends on) can start now.
    fn kick(&mut self, now: Time, link: usize) {
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
    fn launch(&mut self, now: Time, link: usize, t: Transmission) {
        let Transmission { dir, packet, done_at, arrives_at, corrupted } = t;
        self.capture(now, link, dir, &packet);
        let from = self.links[link].ends[dir];
        if let Some(agent) = self.nodes[from].agent.as_mut() {
            let side = if self.links[link].kind == LinkKind::Wireless { Side::ToMobile } else { Side::ToWired };
            agent.on_transmit(now, side, &packet);
        }
        self.sched.schedule(done_at, Event::TxDone { link, dir });
        if self.links[link].out_of_range {
            self.lose_out_of_range(&packet);
            return;
        }
        if !corrupted {
            let node = self.links[link].ends[1 - dir];
            self.sched.schedule(arrives_at, Event::Arrive { node, link, dir, packet });
        }
    }

    fn lose_out_of_range(&mut self, packet: &[u8]) {
        if Ipv4Packet::new_checked(packet).is_ok_and(|ip| !self.control_protocols.contains(&ip.protocol())) {
            self.out_of_range_losses += 1;
        }
    }

    /// Hands `packet`, addressed to `node`, to the node's endpoints (or a feature's datagram hook).
    pub(crate) fn deliver_local(&mut self, now: Time, node: usize, packet: Bytes) {
        let ip = Ipv4Packet::new_unchecked(&packet[..]);
        let (src, proto) = (ip.src_addr(), ip.protocol());
        if proto != PROTO_TCP {
            let taken = (0..self.features.len())
                .any(|i| self.with_feature(FeatureId(i), |f, w| f.on_datagram(w, now, node, &packet)) == Some(true));
            if !taken {
                self.undeliverable += 1;
            }
            return;
        }
        let Ok(tcp) = TcpPacket::new_checked(ip.payload()) else {
            self.undeliverable += 1;
            return;
        };
        let (sport, dport) = (tcp.src_port(), tcp.dst_port());
        let Some(ep) = self.nodes[node].find_endpoint((dport, src, sport), &self.endpoints) else {
            self.undeliverable += 1;
            return;
        };
        self.deliver_to_owner(now, ep, &packet);
    }

    /// Hands `packet` to the feature that keeps endpoint `ep`.
    fn deliver_to_owner(&mut self, now: Time, ep: usize, packet: &Bytes) {
        let Owner { feature, key } = self.endpoints[ep].owner;
        let ran = self.with_feature(feature, |f, w| f.on_endpoint_packet(w, now, key, packet));
        assert!(ran.is_some(), "a feature's own requests never deliver to its own endpoints");
    }

    /// Sends a packet that `node`'s own endpoint made, for feature `from` (`None`: one kept back, see below):
    /// offered first to the features' [`Feature::on_host_send`] (the link layer or the Mobile IP agent at a
    /// mobile host), else by the routing table.
    pub(crate) fn send_own(&mut self, now: Time, from: Option<FeatureId>, node: usize, dst: Ipv4Addr, packet: Bytes) {
        if self.hooks.host_send {
            let running = |(i, f): (usize, &Option<_>)| {
                f.is_none() && (Some(FeatureId(i)) != from || self.feature_hooks[i].host_send)
            };
            if self.features.iter().enumerate().any(running) {
                // Another feature runs now (an endpoint answering what it delivered), or the sender itself
                // wants to see what it sends: it too must see the packet.
                self.sent_while_a_feature_ran.push((now, node, dst, packet));
                return;
            }
            let taken = (0..self.features.len())
                .any(|i| self.with_feature(FeatureId(i), |f, w| f.on_host_send(w, now, node, &packet)) == Some(true));
            if taken {
                return;
            }
        }
        self.route(now, node, dst, packet, false);
    }

    /// Agents' counters per node name (what `RunResult::agents` holds).
    fn agent_counters(&self) -> BTreeMap<String, BTreeMap<String, u64>> {
        let mut agents = BTreeMap::new();
        for n in &self.nodes {
            if let Some(a) = &n.agent {
                let counters: BTreeMap<String, u64> =
                    a.counters().into_iter().map(|(k, v)| (k.to_string(), v)).collect();
                agents.insert(n.name.clone(), counters);
            }
        }
        agents
    }

    /// Sum of the per-connection agent counter `name` (`Agent::connection_counters`) over the nodes of
    /// `path` and the connections whose senders are `senders` (endpoint indices): what the agents did for
    /// these connections alone, not for every connection through them.
    pub(crate) fn connection_counter(&self, path: &[usize], keys: &[FlowKey], name: &str) -> u64 {
        let mut keys = keys.to_vec();
        keys.sort_unstable();
        keys.dedup();
        let agents = path.iter().filter_map(|&n| self.nodes[n].agent.as_deref());
        agents
            .flat_map(|a| keys.iter().flat_map(move |k| a.connection_counters(k)))
            .filter(|&(n, _)| n == name)
            .map(|(_, v)| v)
            .sum()
    }

    /// When the run ended: the last event played, or the time limit.
    pub(crate) fn run_end(&self) -> Time {
        self.sched.now().min(self.time_limit)
    }

    pub(crate) fn finish(mut self) -> Result<RunResult, SimError> {
        if let Some((at, likely)) = self.stalled.take() {
            let at_s = at.0 as f64 / 1e9;
            return Err(SimError::Stalled { at_s, events: STALL_EVENTS, span_ns: STALL_SPAN_NS, likely });
        }
        let end = self.run_end();
        let hit_time_limit = self.holding > 0;
        let agents = self.agent_counters();
        let run_ns = end.as_nanos().max(1) as f64;
        let mut links = Vec::new();
        for l in &mut self.links {
            for p in l.pcap.iter_mut().filter_map(Option::take) {
                let crate::link::Pcap { writer, path } = p;
                if let Err(source) = std::io::Write::flush(&mut writer.into_inner()) {
                    self.pcap_error.get_or_insert(SimError::Io { path, source });
                }
            }
            for (d, dir) in l.dirs.iter().enumerate() {
                links.push(LinkMetrics {
                    name: l.name.clone(),
                    direction: format!("{}->{}", self.nodes[l.ends[d]].name, self.nodes[l.ends[1 - d]].name),
                    frames_sent: dir.frames_sent,
                    frames_lost_to_errors: dir.frames_lost,
                    frames_dropped_queue: dir.frames_dropped_queue,
                    bytes_sent: dir.bytes_sent,
                    utilisation: dir.busy_ns as f64 / run_ns,
                });
            }
        }
        if let Some(e) = self.pcap_error.take() {
            return Err(e);
        }
        let mut result = RunResult {
            seed: self.seed,
            sim_time_s: end.as_secs_f64(),
            hit_time_limit,
            events: self.sched.processed(),
            flows: Vec::new(),
            links,
            agents,
            undeliverable_packets: self.undeliverable,
            web: Vec::new(),
            series: self.trace.then(Vec::new),
            handoffs: Vec::new(),
            mobile_ip: None,
        };
        for feature in std::mem::take(&mut self.features).into_iter().flatten() {
            feature.finish(&self, &mut result);
        }
        Ok(result)
    }
}

/// The half-duplex media: links naming the same `medium` share one, every other half-duplex link has its own.
fn build_media(s: &Scenario, links: &mut [Link]) -> Vec<Medium> {
    let mut media: Vec<Medium> = Vec::new();
    let mut named: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, (l, cfg)) in links.iter_mut().zip(s.links.values()).enumerate() {
        if !l.is_half_duplex() {
            continue;
        }
        let m = match cfg.medium.as_deref() {
            Some(name) => *named.entry(name).or_insert_with(|| {
                media.push(Medium::default());
                media.len() - 1
            }),
            None => {
                media.push(Medium::default());
                media.len() - 1
            }
        };
        media[m].links.push(i);
        l.medium = Some(m);
    }
    for m in &mut media {
        m.reindex(|l| links[l].next_on_medium());
    }
    media
}

impl World {
    /// Puts `links` on one half-duplex medium (full-duplex links keep their transmitters).
    pub(crate) fn share_medium(&mut self, links: &[usize]) {
        let mut into = None;
        for &l in links {
            let Some(m) = self.links[l].medium else { continue };
            let target = *into.get_or_insert(m);
            if m == target {
                continue;
            }
            let moved = std::mem::take(&mut self.media[m].links);
            for &k in &moved {
                self.links[k].medium = Some(target);
            }
            self.media[target].links.extend(moved);
        }
        for m in links.iter().filter_map(|&l| self.links[l].medium) {
            let links = &self.links;
            self.media[m].reindex(|l| links[l].next_on_medium());
        }
    }
}

/// Shortest-path (hop count) routes from every node (see [`crate::routes`]); `no_transit`: a node that
/// originates and receives but never relays (the mobile host).
fn compute_routes(nodes: &mut [Node], links: &[Link], no_transit: Option<usize>) {
    let ends: Vec<[usize; 2]> = links.iter().map(|l| l.ends).collect();
    let routes = crate::routes::compute(nodes.len(), &ends, no_transit);
    for (node, routes) in nodes.iter_mut().zip(routes) {
        node.routes = routes;
    }
}

#[cfg(test)]
mod tests {
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
        }
    }

    /// An agent whose timer is always due: every expiry asks for another at once, so simulated time never
    /// advances (what a timer of a few nanoseconds amounts to).
    struct AlwaysDue;

    impl Agent for AlwaysDue {
        fn on_packet(&mut self, _now: Time, side: lasthop_agents::Side, packet: Bytes, out: &mut Vec<Action>) {
            out.push(Action::Forward(side, packet));
        }
        fn on_timeout(&mut self, _now: Time, _out: &mut Vec<Action>) {}
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
        let bs = w.node_index("bs");
        w.nodes[bs].agent = Some(Box::new(AlwaysDue));
        w.sched.schedule(Time::ZERO, Event::AgentTimer { node: bs });
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
}
