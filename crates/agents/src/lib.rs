//! Network-layer agents that sit at a base station (or a mobile host) and watch, cache, suppress and
//! re-send packets: Snoop (seed 000 §3.1, §6) and, later, ELN marking, NACK generation and handoff buffers.
//!
//! Every agent is a sans-IO state machine (`../shared/DESIGN.md`, "The agent contract"): it never reads a
//! clock, owns a socket or draws a random number. The simulator and the real base station hand it packets
//! and the current [`Time`], and carry out the [`Action`]s it emits. Its state is soft: losing it costs
//! performance, never data, and it never acknowledges data the receiver has not acknowledged.

pub mod flow;
pub mod handoff;
pub mod snoop;

use bytes::Bytes;
pub use lasthop_wire::Time;

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
}

/// What an agent asks its host to do. Emitted in order; the host carries them out in that order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Send the packet on toward `side` at normal priority.
    Forward(Side, Bytes),
    /// Send toward `side` ahead of normal traffic (Snoop's local retransmissions: seed 000 §3.1.2).
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
    fn on_packet(&mut self, now: Time, side: Side, packet: Bytes, out: &mut Vec<Action>);

    /// Called at (or after) the time [`poll_timeout`](Self::poll_timeout) returned.
    fn on_timeout(&mut self, now: Time, out: &mut Vec<Action>);

    /// The earliest time the agent wants `on_timeout`, if any.
    fn poll_timeout(&self) -> Option<Time>;

    /// Named counters for reports (`local_retransmissions`, `dupacks_suppressed`, ...).
    fn counters(&self) -> Vec<(&'static str, u64)>;
}
pub mod eln;
pub mod nack;
