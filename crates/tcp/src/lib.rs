//! Sans-IO TCP endpoints for the lasthop simulator: a bulk [`Sender`] (Tahoe, Reno, NewReno or SACK loss
//! recovery, optionally ELN-aware as in Balakrishnan 1998 §3: `TcpConfig::eln`; one file per algorithm in
//! `cc/`) and a BSD-like [`Receiver`],
//! modelled on the 4.4BSD stack the source papers measured (Balakrishnan 1995). The sender honours the peer's
//! advertised window and persists through a zero one with probes (RFC 9293 §3.8.6.1). The behaviours
//! real stacks differ on (limited transmit, the ssthresh measure, NewReno's guard, quick ACKs, the
//! retransmit timer's backoff and restart rules) are [`TcpConfig`] fields, set together by a [`Profile`].
//!
//! Like quinn-proto's `Connection`, neither endpoint reads a clock or owns a socket: whole IPv4 packets go
//! in through `handle_packet(now, ..)`, come out of `poll_transmit(now)`, and `poll_timeout()` says when
//! `handle_timeout(now)` wants to be called. Everything is a deterministic function of its inputs.
//!
//! Sequence space is handled internally as 64-bit *offsets* from the initial sequence number (the SYN is
//! offset 0, application byte `i` is offset `1 + i`, the FIN follows the last byte), converted to wrapping
//! 32-bit [`SeqNum`](lasthop_wire::SeqNum)s only at the wire, so transfers may exceed 4 GiB.

mod cc;
mod config;
mod delack;
mod pacing;
pub mod payload;
mod prr;
mod rack;
mod receiver;
mod recovery;
mod rto;
mod scoreboard;
mod segment;
mod sender;
pub mod split;

#[cfg(test)]
mod harness;
#[cfg(test)]
mod tests;

pub use config::{
    AckRules, BackoffReset, Behaviours, Profile, ReceiverStats, RecoverGuard, RtoRestart, SenderStats, SsthreshFrom,
    TcpConfig, TimerStyle, Variant, MAX_TIME_MS,
};
pub use receiver::Receiver;
pub use sender::Sender;
