//! What a feature is handed when the core calls it: [`Cx`], the time, a read-only [`View`] of the nodes, links
//! and routes, the scheduling of the feature's own events and an outbox of [`Request`]s that the core carries
//! out, in the order they were made, as soon as the hook returns (see "Same-instant order" in
//! [`crate::feature`]).

use crate::link::Link;
use crate::world::{Core, Node};
use bytes::Bytes;
use lasthop_agents::flow::FlowKey;
use lasthop_agents::{Action, Agent, Side};
use lasthop_tcp::{Receiver, Sender};
use lasthop_wire::Time;
use std::net::{Ipv4Addr, SocketAddrV4};

/// A TCP endpoint's state as a workload keeps it, and as a poke ([`Request::PokeEndpoints`]) sees it.
pub(crate) enum Role {
    Sender(Box<Sender>),
    Receiver(Box<Receiver>),
    /// An endpoint after its connection was torn down (its timers may still fire).
    Closed,
}

impl Role {
    /// When the endpoint's TCP wants its timer; never for a closed endpoint.
    #[inline]
    pub(crate) fn poll_timeout(&self) -> Option<Time> {
        match self {
            Role::Sender(s) => s.poll_timeout(),
            Role::Receiver(r) => r.poll_timeout(),
            Role::Closed => None,
        }
    }

    /// Runs the endpoint's timer event at `now`: forgets the pending `timer` if it is due, and fires its
    /// TCP's timeout if that is due. False for a closed endpoint, which has nothing more to do.
    pub(crate) fn fire_timer(&mut self, timer: &mut Option<Time>, now: Time) -> bool {
        if timer.is_some_and(|t| t <= now) {
            *timer = None;
        }
        self.fire_due(now);
        !matches!(self, Role::Closed)
    }

    /// Fires the endpoint's TCP timeout if it is due at `now`; whether it did. A timer armed for a deadline
    /// the TCP has since moved on (a retransmission timer restarted by an ACK, a pacing release taken by an
    /// earlier transmission) is not due, and leaves the endpoint as it was: nothing for it to send.
    pub(crate) fn fire_due(&mut self, now: Time) -> bool {
        if self.poll_timeout().is_none_or(|t| t > now) {
            return false;
        }
        match self {
            Role::Sender(s) => s.handle_timeout(now),
            Role::Receiver(r) => r.handle_timeout(now),
            Role::Closed => {}
        }
        true
    }

    /// The time to schedule the endpoint's timer for, when its TCP wants it earlier than the one pending
    /// (`timer`, then set to it).
    #[inline]
    pub(crate) fn rearm(&self, timer: &mut Option<Time>) -> Option<Time> {
        let t = self.poll_timeout()?;
        timer.is_none_or(|s| t < s).then(|| {
            *timer = Some(t);
            t
        })
    }
}

/// How far a bulk flow has come, as the core shows it to the features that watch the flows (mobility's
/// handoff pause): set up by the flows' workload ([`Setup::add_flow_progress`]) and kept current through
/// [`Request::FlowProgress`] while a feature asks for [`crate::feature::Feature::after_flow_endpoint`].
pub(crate) struct FlowProgress {
    /// The nodes from the sender to the receiver.
    pub path: Vec<usize>,
    pub bytes: u64,
    /// Bytes the receiving application has read.
    pub delivered: u64,
    /// One past the highest stream offset the sender has sent.
    pub snd_max: u64,
}

/// A read-only view of the core: nodes, links, routes.
#[derive(Clone, Copy)]
pub(crate) struct View<'a> {
    core: &'a Core,
}

impl<'a> View<'a> {
    #[inline]
    pub(crate) fn new(core: &'a Core) -> View<'a> {
        View { core }
    }

    pub(crate) fn nodes(&self) -> &'a [Node] {
        &self.core.nodes
    }

    #[inline]
    pub(crate) fn links(&self) -> &'a [Link] {
        &self.core.links
    }

    /// The bulk flows' progress, in the order of their names (current while a feature watches it).
    pub(crate) fn flows(&self) -> &'a [FlowProgress] {
        &self.core.flow_progress
    }

    /// Whether some feature watches the bulk flows' progress ([`crate::feature::HookSet::after_flow_endpoint`]).
    pub(crate) fn flow_progress_watched(&self) -> bool {
        self.core.hooks.after_flow_endpoint
    }

    /// Whether the run records time series ([`crate::RunOptions::trace`]).
    pub(crate) fn trace(&self) -> bool {
        self.core.trace
    }

    /// The times (s) of the handoffs noted so far ([`Request::NoteHandoff`]).
    pub(crate) fn handoffs_noted(&self) -> &'a [f64] {
        &self.core.handoffs_noted
    }

    /// When the run ended (for metrics at its end): the last event played, or the time limit.
    pub(crate) fn run_end(&self) -> Time {
        self.core.run_end()
    }

    /// Node index by name (the scenario was validated, so the name exists).
    pub(crate) fn node_index(&self, name: &str) -> usize {
        self.core.node_index(name)
    }

    /// Link index by name (validated likewise).
    pub(crate) fn link_index(&self, name: &str) -> usize {
        self.core.links.iter().position(|l| l.name == name).expect("validated")
    }

    /// Where `node` sends a packet for `dst` (its default gateway, else its route), as (link, direction).
    #[inline]
    pub(crate) fn next_hop(&self, node: usize, dst: Ipv4Addr) -> Option<(usize, usize)> {
        self.core.next_hop(node, dst)
    }

    /// Nodes from `from` to `to` inclusive, following the routing tables.
    pub(crate) fn path(&self, from: usize, to: usize) -> Option<Vec<usize>> {
        self.core.path(from, to)
    }

    /// Whether `protocol` is a feature's control traffic ([`Request::AddControlProtocol`]).
    pub(crate) fn is_control_protocol(&self, protocol: u8) -> bool {
        self.core.is_control_protocol(protocol)
    }

    /// Sum of the per-connection agent counter `name` over the nodes of `path` and the connections `keys`.
    pub(crate) fn connection_counter(&self, path: &[usize], keys: &[FlowKey], name: &str) -> u64 {
        self.core.connection_counter(path, keys, name)
    }

    /// Data frames lost so far because their link was out of range.
    pub(crate) fn out_of_range_losses(&self) -> u64 {
        self.core.out_of_range_losses()
    }
}

/// Which frames a purge takes: true for a frame (an IPv4 packet) to be taken.
pub(crate) type FrameFilter = Box<dyn Fn(&[u8]) -> bool>;
/// What a host event tells a node's agent, and where the agent puts what it then does.
pub(crate) type AgentCall = Box<dyn FnOnce(&mut dyn Agent, &mut Vec<Action>)>;
/// What a poke does to an endpoint at `Time`.
pub(crate) type EndpointPoke = Box<dyn Fn(&mut Role, Time)>;

/// What a feature asks the core to do; carried out after the hook returns, in the order asked.
pub(crate) enum Request<E> {
    /// One of the feature's own events, handed back to it at `at`.
    Schedule { at: Time, event: E },
    /// [`Request::Schedule`] under `seq`, a place among the events of its instant taken at set-up
    /// ([`Setup::reserve_event`]): it runs where it would have run had it been scheduled then.
    ScheduleReserved { at: Time, seq: u64, event: E },
    /// The feature no longer holds the run open ([`crate::feature::Feature::holds_run`]).
    Finished,
    /// Bulk flow `flow` has come this far: the core notes it for [`View::flows`] and calls every feature's
    /// [`crate::feature::Feature::after_flow_endpoint`].
    FlowProgress { flow: usize, delivered: u64, snd_max: u64 },
    /// Queue `packet` on direction `dir` of `link` ([`Core::send`]).
    Send { out: (usize, usize), packet: Bytes, priority: bool },
    /// Send `packet` from `node` toward `dst` by the routing table ([`Core::route`]).
    Route { node: usize, dst: Ipv4Addr, packet: Bytes, priority: bool },
    /// Hand `packet`, addressed to `node`, to its endpoints ([`Core::deliver_local`]).
    DeliverLocal { node: usize, packet: Bytes },
    /// Hand `packet` to `node`'s agent as if it travelled toward `side` ([`Core::hand_to_agent`]).
    HandToAgent { node: usize, side: Side, packet: Bytes },
    /// Take out of direction `dir` of `link` every frame not yet on the air for which `matches` holds; how
    /// many comes back to [`crate::feature::Feature::on_purged`] ([`Core::purge_link`]).
    Purge { link: usize, dir: usize, matches: FrameFilter },
    /// Put `agent` in place of `node`'s agent (none: the node forwards plainly).
    SetAgent { node: usize, agent: Option<Box<dyn lasthop_agents::Agent>> },
    /// Count `protocol` as control traffic, not data (set-up).
    AddControlProtocol(u8),
    /// Mark wireless `link` out of the mobile's range (frames on it are lost) or back in range.
    SetOutOfRange { link: usize, out: bool },
    /// Give `node` a default gateway (a mobile host's current cell) or take it away.
    SetGateway { node: usize, gateway: Option<(usize, usize)> },
    /// Note a handoff now, for every traced flow's time series ([`View::handoffs_noted`]).
    NoteHandoff,
    /// The mobile (re)associated with the cell of wireless `link`: every other feature restarts its link-layer
    /// state for it ([`Core::reassociate`]).
    Reassociate { link: usize },
    /// Let `node`'s agent (if any) act on a host event outside a packet ([`Core::tell_agent`]).
    TellAgent { node: usize, tell: AgentCall },
    /// Tell `node`'s agent (if any) how full the queue it forwards into toward `side` is.
    QueueOccupancy { node: usize, side: Side, occupancy: f64 },
    /// Run `poke` on every open endpoint at `node`, each followed by the core's follow-up (what it sends,
    /// reads, its timer), in the order the endpoints were opened.
    PokeEndpoints { node: usize, poke: EndpointPoke },
    /// Open an endpoint at `node` that the feature keeps and runs: packets from `remote` to `local` reach
    /// its [`crate::feature::Feature::on_endpoint_packet`] with `key`.
    OpenEndpoint { key: usize, node: usize, local: SocketAddrV4, remote: SocketAddrV4 },
    /// Close the endpoint opened with `key`.
    CloseEndpoint { key: usize },
    /// Run the endpoint opened with `key`: send what it sends ([`crate::feature::Feature::endpoint_transmit`]),
    /// then [`crate::feature::Feature::after_endpoint_transmit`].
    RunEndpoint { key: usize },
    /// Send `packet`, made by an endpoint at `node` for `dst`: offered to the other features' `on_host_send`,
    /// else routed ([`Core::send_own`]).
    SendOwn { node: usize, dst: Ipv4Addr, packet: Bytes },
    /// Hand `event` back to the feature's `on_event` at the same instant, once the requests before it are
    /// carried out and nothing else is queued (`crate::world::Work`): after everything they caused, however
    /// indirectly. A hook that must read what its own requests changed continues there.
    Then(E),
}

/// What a family's `build` may do to the topology before the run starts: routes, media, agents, gateways,
/// ranges and control protocols; the rest of the core it sees through [`Setup::view`].
pub(crate) struct Setup<'a> {
    core: &'a mut Core,
}

impl<'a> Setup<'a> {
    pub(crate) fn new(core: &'a mut Core) -> Setup<'a> {
        Setup { core }
    }

    pub(crate) fn view(&self) -> View<'_> {
        View::new(self.core)
    }

    /// Recomputes every node's routes; `no_transit` is a node that originates and receives but never relays.
    pub(crate) fn recompute_routes(&mut self, no_transit: Option<usize>) {
        self.core.recompute_routes(no_transit);
    }

    /// Puts `links` on one half-duplex medium.
    pub(crate) fn share_medium(&mut self, links: &[usize]) {
        self.core.share_medium(links);
    }

    pub(crate) fn set_agent(&mut self, node: usize, agent: Option<Box<dyn lasthop_agents::Agent>>) {
        self.core.nodes[node].agent = agent;
    }

    pub(crate) fn set_gateway(&mut self, node: usize, gateway: Option<(usize, usize)>) {
        self.core.nodes[node].gateway = gateway;
    }

    pub(crate) fn set_out_of_range(&mut self, link: usize, out: bool) {
        self.core.links[link].out_of_range = out;
    }

    /// Counts `protocol` as control traffic, not data.
    pub(crate) fn add_control_protocol(&mut self, protocol: u8) {
        self.core.add_control_protocol(protocol);
    }

    /// Takes the next place among same-instant events, for an event scheduled later with
    /// [`Request::ScheduleReserved`].
    pub(crate) fn reserve_event(&mut self) -> u64 {
        self.core.reserve_event()
    }

    /// Adds a bulk flow to [`View::flows`], in order.
    pub(crate) fn add_flow_progress(&mut self, progress: FlowProgress) {
        self.core.flow_progress.push(progress);
    }
}

/// The context of one hook call: the time, the [`View`] (through `Deref`) and the outbox.
pub(crate) struct Cx<'a, E> {
    now: Time,
    view: View<'a>,
    out: &'a mut Vec<Request<E>>,
}

impl<'a, E> std::ops::Deref for Cx<'a, E> {
    type Target = View<'a>;
    fn deref(&self) -> &View<'a> {
        &self.view
    }
}

impl<'a, E> Cx<'a, E> {
    #[inline]
    pub(crate) fn new(now: Time, view: View<'a>, out: &'a mut Vec<Request<E>>) -> Cx<'a, E> {
        Cx { now, view, out }
    }

    #[inline]
    pub(crate) fn now(&self) -> Time {
        self.now
    }

    /// The read-only view, for code that keeps it past the call.
    pub(crate) fn view(&self) -> View<'a> {
        self.view
    }

    /// Schedules one of the feature's own events.
    pub(crate) fn schedule(&mut self, at: Time, event: E) {
        self.out.push(Request::Schedule { at, event });
    }

    /// Asks the core to carry out `request` once the hook returns.
    pub(crate) fn request(&mut self, request: Request<E>) {
        self.out.push(request);
    }

    pub(crate) fn send(&mut self, out: (usize, usize), packet: Bytes, priority: bool) {
        self.out.push(Request::Send { out, packet, priority });
    }

    pub(crate) fn route(&mut self, node: usize, dst: Ipv4Addr, packet: Bytes, priority: bool) {
        self.out.push(Request::Route { node, dst, packet, priority });
    }

    pub(crate) fn deliver_local(&mut self, node: usize, packet: Bytes) {
        self.out.push(Request::DeliverLocal { node, packet });
    }

    /// Continues with `event` once the requests made so far are carried out ([`Request::Then`]).
    pub(crate) fn then(&mut self, event: E) {
        self.out.push(Request::Then(event));
    }
}
