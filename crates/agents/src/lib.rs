//! Network-layer agents that sit at a base station (or a mobile host) and watch, cache, suppress and
//! re-send packets: Snoop (Balakrishnan 1995 §3.1, §6), ELN marking and transit-link filtering (Balakrishnan 1998 §3), NACKs
//! via SACK (Balakrishnan 1995 §3.2), the handoff agents with their buffers (Balakrishnan 1995 §4, Caceres 1995), and the entities
//! of Mobile IP with Eom 2002's base-station buffering ([`mip`]).
//!
//! Every agent is a sans-IO state machine (`docs/src/dev/architecture.md`, "The agent contract"): it never
//! reads a clock, owns a socket or draws a random number. The simulator and the real base station hand it packets
//! and the current [`Time`], and carry out the [`Action`]s it emits. Its state is soft: losing it costs
//! performance, never data, and it never acknowledges data the receiver has not acknowledged.

pub mod eln;
pub mod flow;
pub mod handoff;
mod kind;
pub mod mip;
pub mod nack;
pub mod snoop;
mod triage;

use bytes::Bytes;
use flow::FlowKey;
pub use kind::AgentKind;
pub use lasthop_wire::Time;
use std::net::Ipv4Addr;
pub use triage::PassCounters;

/// Which way a packet travels through the node that hosts the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// Toward the mobile host, i.e. out over the wireless hop.
    ToMobile,
    /// Toward the wired network (the fixed host).
    ToWired,
}

impl Side {
    pub fn reverse(self) -> Side {
        match self {
            Side::ToMobile => Side::ToWired,
            Side::ToWired => Side::ToMobile,
        }
    }
}

/// Why an agent dropped a packet instead of forwarding it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// Could not be parsed (truncated, bad header length, bad option).
    Malformed,
    /// A duplicate ACK that the agent answered with a local retransmission, or expected after one.
    DupAckSuppressed,
    /// An ACK older than the highest one already seen.
    SpuriousAck,
    /// Data the receiver has already acknowledged; the agent answered with a regenerated ACK instead.
    AlreadyAcked,
    /// The packet was for the agent itself: a tunnelled copy kept in a handoff buffer or re-sent by the
    /// agent in another form, or a control message.
    Consumed,
    /// No way on to its destination: a mobile the node has no binding or table entry for (Eom 2002 §2.1:
    /// under base Mobile IP, what reaches a FA the mobile has left is lost there).
    NotDeliverable,
}

/// What an agent asks its host to do. Emitted in order; the host carries them out in that order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Send the packet on toward `side` at normal priority.
    Forward(Side, Bytes),
    /// Send toward `side` ahead of normal traffic (Snoop's local retransmissions: Balakrishnan 1995 §3.1.2).
    ForwardPriority(Side, Bytes),
    /// The packet handed in is not forwarded.
    Drop(DropReason),
    /// A packet the agent made itself (a regenerated ACK, a NACK), sent toward `side`.
    Inject(Side, Bytes),
}

/// The contract between an agent and whatever drives it (the simulator or `lasthop bs`).
pub trait Agent {
    /// A packet (a whole IPv4 packet) arrives at the node travelling toward `side`.
    /// The agent pushes onto `out` exactly one `Forward`, `ForwardPriority` or `Drop` for that packet, and
    /// any number of `ForwardPriority` (copies from its own cache) and `Inject` actions of its own.
    fn handle_packet(&mut self, now: Time, side: Side, packet: Bytes, out: &mut Vec<Action>);

    /// A hint: these packets (whole IPv4 packets, untrusted: any bytes at all) come to
    /// [`handle_packet`](Self::handle_packet) next, in this order, as a host that receives in batches knows (`lasthop
    /// bs` reads up to 64 frames per system call). An agent may ask the processor for the state they will
    /// touch, so that the batch's memory accesses overlap instead of each packet waiting for its own in turn.
    /// It changes no state and nothing the agent does or reports; the default ignores it.
    fn prefetch(&self, _packets: &[(Side, &[u8])]) {}

    /// Called at (or after) the time [`poll_timeout`](Self::poll_timeout) returned.
    fn handle_timeout(&mut self, now: Time, out: &mut Vec<Action>);

    /// The earliest time the agent wants `handle_timeout`, if any.
    fn poll_timeout(&self) -> Option<Time>;

    /// Named counters for reports (`local_retransmissions`, `dupacks_suppressed`, ...), summed over every
    /// connection the agent has seen.
    fn counters(&self) -> Vec<(&'static str, u64)>;

    /// The counters of [`counters`](Self::counters) that the agent keeps per connection, for connection
    /// `key` (FH→MH) alone, under the same names: what a host reporting per flow attributes to that flow
    /// when several share the agent. The default (an agent that counts only in total) is none.
    fn connection_counters(&self, _key: &FlowKey) -> Vec<(&'static str, u64)> {
        Vec::new()
    }

    /// The link below has just started to transmit `packet`, one the agent passed on toward `side`.
    ///
    /// A packet an agent forwards may wait in the interface queue for a long time (a 64 KB window queued
    /// at a 2 Mb/s hop is a quarter of a second). Hosts that can tell when a frame really leaves (the
    /// simulator, the hop emulator of `lasthop bs`) call this so that an agent can time round trips and
    /// reason about ordering from the moment of transmission, not of queueing. Agents must work without it.
    fn handle_transmit(&mut self, _now: Time, _side: Side, _packet: &Bytes) {}

    /// How full (0.0 empty – 1.0 full) the host's transmit queue toward `side` is now. Hosts call it before
    /// `handle_packet` whenever it may have changed (ELN classifies losses by it: Balakrishnan 1998 §3).
    fn handle_queue_occupancy(&mut self, _side: Side, _fraction: f64) {}

    /// The host's radio lost (`reachable` false: the mobile left the cell, a handoff gap) or regained the
    /// mobile host `mobile`. Hosts that know (the simulator's mobility) call it; an agent that acts on it
    /// may emit actions.
    fn handle_reachability(&mut self, _now: Time, _mobile: Ipv4Addr, _reachable: bool, _out: &mut Vec<Action>) {}
}

/// Agents run one after another on the same packet, as configured at a node (e.g. Snoop then ELN).
///
/// A packet handed in goes to the first agent; every packet an agent passes on (`Forward` or
/// `ForwardPriority`) goes to the next, and what the last one passes on is the chain's output. Packets an
/// agent makes itself (`Inject`) and its `Drop`s leave the chain at once: an agent's own packets are not
/// second-guessed by the agents after it.
pub struct Chain {
    agents: Vec<Box<dyn Agent + Send>>,
    scratch: Vec<Action>,
    next: Vec<Action>,
}

impl Chain {
    pub fn new(agents: Vec<Box<dyn Agent + Send>>) -> Chain {
        Chain { agents, scratch: Vec::new(), next: Vec::new() }
    }

    pub fn is_empty(&self) -> bool {
        self.agents.is_empty()
    }

    /// Runs the actions of agent `from` through the agents after it.
    fn pass_on(&mut self, now: Time, from: usize, out: &mut Vec<Action>) {
        let mut pending = std::mem::take(&mut self.scratch);
        for i in from + 1..self.agents.len() {
            let mut next = std::mem::take(&mut self.next);
            for action in pending.drain(..) {
                match action {
                    Action::Forward(side, p) => self.agents[i].handle_packet(now, side, p, &mut next),
                    Action::ForwardPriority(side, p) => {
                        let start = next.len();
                        self.agents[i].handle_packet(now, side, p, &mut next);
                        // Keep the priority an earlier agent asked for.
                        for a in &mut next[start..] {
                            if let Action::Forward(s, p) = a {
                                *a = Action::ForwardPriority(*s, p.clone());
                            }
                        }
                    }
                    other => out.push(other),
                }
            }
            self.next = std::mem::replace(&mut pending, next);
        }
        out.append(&mut pending);
        self.scratch = pending;
    }
}

impl Agent for Chain {
    fn handle_packet(&mut self, now: Time, side: Side, packet: Bytes, out: &mut Vec<Action>) {
        if self.agents.is_empty() {
            out.push(Action::Forward(side, packet));
            return;
        }
        let mut first = std::mem::take(&mut self.scratch);
        self.agents[0].handle_packet(now, side, packet, &mut first);
        self.scratch = first;
        self.pass_on(now, 0, out);
    }

    fn prefetch(&self, packets: &[(Side, &[u8])]) {
        for a in &self.agents {
            a.prefetch(packets);
        }
    }

    fn handle_timeout(&mut self, now: Time, out: &mut Vec<Action>) {
        for i in 0..self.agents.len() {
            if self.agents[i].poll_timeout().is_some_and(|t| t <= now) {
                let mut mine = std::mem::take(&mut self.scratch);
                self.agents[i].handle_timeout(now, &mut mine);
                self.scratch = mine;
                self.pass_on(now, i, out);
            }
        }
    }

    fn poll_timeout(&self) -> Option<Time> {
        self.agents.iter().filter_map(|a| a.poll_timeout()).min()
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        self.agents.iter().flat_map(|a| a.counters()).collect()
    }

    fn connection_counters(&self, key: &FlowKey) -> Vec<(&'static str, u64)> {
        self.agents.iter().flat_map(|a| a.connection_counters(key)).collect()
    }

    fn handle_transmit(&mut self, now: Time, side: Side, packet: &Bytes) {
        for a in &mut self.agents {
            a.handle_transmit(now, side, packet);
        }
    }

    fn handle_queue_occupancy(&mut self, side: Side, fraction: f64) {
        for a in &mut self.agents {
            a.handle_queue_occupancy(side, fraction);
        }
    }

    fn handle_reachability(&mut self, now: Time, mobile: Ipv4Addr, reachable: bool, out: &mut Vec<Action>) {
        for a in &mut self.agents {
            a.handle_reachability(now, mobile, reachable, out);
        }
    }
}

#[cfg(test)]
mod mobile_sender_fixture;

#[cfg(test)]
mod chain_tests {
    use super::*;

    /// Tags every packet it forwards by appending one byte; drops packets that start with 0xff.
    struct Tagger(u8);
    impl Agent for Tagger {
        fn handle_packet(&mut self, _now: Time, side: Side, packet: Bytes, out: &mut Vec<Action>) {
            if packet.first() == Some(&0xff) {
                out.push(Action::Drop(DropReason::Malformed));
                return;
            }
            let mut v = packet.to_vec();
            v.push(self.0);
            out.push(Action::Forward(side, Bytes::from(v)));
            out.push(Action::Inject(side.reverse(), Bytes::from(vec![self.0])));
        }
        fn handle_timeout(&mut self, _now: Time, out: &mut Vec<Action>) {
            out.push(Action::ForwardPriority(Side::ToMobile, Bytes::from(vec![0x10 + self.0])));
        }
        fn poll_timeout(&self) -> Option<Time> {
            Some(Time(u64::from(self.0)))
        }
        fn counters(&self) -> Vec<(&'static str, u64)> {
            vec![("tagger", u64::from(self.0))]
        }
    }

    fn chain() -> Chain {
        Chain::new(vec![Box::new(Tagger(1)), Box::new(Tagger(2))])
    }

    #[test]
    fn forwarded_packets_pass_through_every_agent_injections_leave_at_once() {
        let mut out = Vec::new();
        chain().handle_packet(Time(0), Side::ToMobile, Bytes::from_static(&[7]), &mut out);
        assert_eq!(
            out,
            vec![
                Action::Inject(Side::ToWired, Bytes::from_static(&[1])),
                Action::Forward(Side::ToMobile, Bytes::from_static(&[7, 1, 2])),
                Action::Inject(Side::ToWired, Bytes::from_static(&[2])),
            ]
        );
    }

    #[test]
    fn drops_stop_the_packet_and_priority_survives_later_agents() {
        let mut c = chain();
        let mut out = Vec::new();
        c.handle_packet(Time(0), Side::ToMobile, Bytes::from_static(&[0xff]), &mut out);
        assert_eq!(out, vec![Action::Drop(DropReason::Malformed)]);
        out.clear();
        assert_eq!(c.poll_timeout(), Some(Time(1)));
        c.handle_timeout(Time(1), &mut out);
        assert_eq!(
            out,
            vec![
                Action::ForwardPriority(Side::ToMobile, Bytes::from_static(&[0x11, 2])),
                Action::Inject(Side::ToWired, Bytes::from_static(&[2])),
            ]
        );
        assert_eq!(c.counters(), vec![("tagger", 1), ("tagger", 2)]);
    }

    #[test]
    fn empty_chain_forwards() {
        let mut out = Vec::new();
        Chain::new(Vec::new()).handle_packet(Time(0), Side::ToWired, Bytes::from_static(&[1]), &mut out);
        assert_eq!(out, vec![Action::Forward(Side::ToWired, Bytes::from_static(&[1]))]);
    }
}
