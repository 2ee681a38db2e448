//! Explicit Loss Notification at the base station: tell a mobile *sender* which of its losses were wireless
//! corruption, so that it retransmits without a congestion response (Balakrishnan 1998 §3, "Using Explicit Loss
//! Notifications", "ELN Implementation", "Cellular Wireless Transit Links").
//!
//! # The marker (the last-hop BS, and B of a transit link)
//!
//! For data from the mobile host (MH) to the fixed host (FH) — packets travelling [`Side::ToWired`] — the
//! agent keeps, per connection, the list of *blocks* of contiguous data it has seen (start sequence
//! number and size; a new segment is coalesced with a block it touches and bridges the hole between two
//! blocks it fills) and the list of *holes* it recorded. A segment beyond the highest sequence number seen
//! so far opens a gap: the segments in between were lost before they reached the BS. The gap is recorded
//! as a hole — a corruption loss — only when neither queue that could have dropped them under congestion is
//! more than [`ElnConfig::congestion_threshold`] (75 %, the paper's value) full:
//!
//! - **the BS's own input queue**, which the host hands in with [`Eln::set_input_queue`] before each
//!   [`Agent::handle_packet`] (the simulator: the occupancy of the queue where this node drops MH→FH packets;
//!   `lasthop bs`: its receive ring or qdisc backlog). It defaults to 0 (empty) until set.
//! - **the MH's output queue**, read from the packet: the MH piggybacks its occupancy on every segment as
//!   a 4-byte TCP option, kind 253 (see [`lasthop_wire::queue_option`] for the format and why). A packet
//!   without the option counts as an empty queue, as from an unmodified mobile host (which ignores ELN
//!   anyway).
//!
//! A gap classified as congestion is counted (`holes_classified_congestion`) and not recorded: it stays a
//! gap between blocks, so the list of holes holds corruption losses only.
//!
//! On each packet from the FH travelling [`Side::ToMobile`] with an ACK, blocks and holes below the ACK are
//! cleaned (the FH has them). If the ACK's next expected byte lies in a recorded hole, the ELN bit is set
//! (on a new ACK as well as a duplicate), the TCP checksum is updated, and the ACK forwarded. Nothing is
//! marked while the block list is empty: the BS then cannot know whether the mobile sent anything more.
//!
//! # The filter (A of a wireless transit link)
//!
//! With [`ElnRole::Filter`] the agent sits at A, the BS on the *sending* side of a wireless transit link:
//! data crosses it [`Side::ToMobile`] (out over the wireless link, toward B) and ACKs come back
//! [`Side::ToWired`]. It records the blocks it has seen. An ACK arriving with the ELN bit set (by B) passes
//! unchanged when A saw the segment the ACK asks for — it was lost on the wireless link — and has the bit
//! *cleared* otherwise: the segment never reached A, so it was lost to congestion before A and the sender
//! must react as usual. With no state for the connection A has no evidence either way and clears too.
//! (Several wireless links on a path: one marker and one filter per link, chained by the host.)
//!
//! Not done: the optional Snoop agent at A that caches and retransmits locally on ELN DUPACKs only.
//!
//! # The fixed sender's notifier (E2E-ELN at the last-hop BS)
//!
//! With [`ElnRole::MarkForwarded`] the agent is A of the last hop itself: the BS in front of the mobile's
//! wireless link, with a *fixed* sender. It records, as the filter does, the blocks of data it forwarded
//! toward the mobile ([`Side::ToMobile`]), and sets the ELN bit on a duplicate ACK from the mobile whose next
//! expected byte it forwarded: "the agent at base station A would have seen the packet, while B would not
//! ... it infers that the packet was obviously lost over the wireless link" (Balakrishnan 1998, "Cellular Wireless
//! Transit Links"; the mobile is B and sets nothing). This is the E2E-ELN scheme of the ToN'97 comparison
//! (Balakrishnan, Padmanabhan, Seshan, Katz, reference [12] of Eom 2002): the sender retransmits without a
//! congestion response. A segment forwarded while the queue toward the mobile was above
//! [`ElnConfig::congestion_threshold`] is not recorded (`forwarded_under_congestion`): the BS's own queue may
//! drop it, a congestion loss, so DUPACKs for it stay unmarked. Only duplicate ACKs are marked (a new ACK
//! reports no loss), and none while the block list is empty.
//!
//! # Conventions
//!
//! The same as Snoop's: non-TCP packets and fragments pass unchanged; truncated or malformed IPv4/TCP
//! headers (options included) are dropped as [`DropReason::Malformed`] and counted, never panicking; the
//! table holds at most [`ElnConfig::max_connections`] connections (least recently active evicted) and each
//! at most [`ElnConfig::max_blocks`] blocks. State is soft: losing it loses ELN marks (so the sender backs
//! off as plain TCP would), never data. Connections are keyed by the data direction: `src` is the data
//! sender (the MH for a marker, the upstream host for a filter). The agent has no timers.
//!
//! The helper modules `ranges`, `table` and `parse` are shared with the NACK agent ([`crate::nack`]).

pub(crate) mod parse;
pub(crate) mod ranges;
pub(crate) mod table;
#[cfg(test)]
mod tests;

use crate::flow::FlowKey;
#[cfg(test)]
use crate::DropReason;
use crate::{Action, Agent, PassCounters, Side, Time};
use bytes::Bytes;
use lasthop_wire::queue_option::QueueOccupancy;
use lasthop_wire::SeqNum;
use parse::Segment;
use ranges::Ranges;
use table::LruTable;

/// Where the agent sits relative to the wireless link (Balakrishnan 1998 §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ElnRole {
    /// Downstream of the wireless link (the last-hop BS for MH→FH data, or B of a transit link): records
    /// corruption holes in data travelling `ToWired` and marks ACKs travelling `ToMobile`.
    #[default]
    Mark,
    /// Upstream of a wireless transit link (A): watches data travelling `ToMobile` and clears the ELN bit
    /// of ACKs travelling `ToWired` for segments it never saw.
    Filter,
    /// The last-hop BS with a fixed sender (E2E-ELN): watches data travelling `ToMobile` and sets the ELN
    /// bit on duplicate ACKs travelling `ToWired` for segments it forwarded (see the module documentation).
    MarkForwarded,
}

/// The ELN agent's knobs. Defaults are the paper's where it gives one.
#[derive(Debug, Clone)]
pub struct ElnConfig {
    pub role: ElnRole,
    /// A gap is a corruption loss only if neither the BS's input queue nor the MH's output queue is above
    /// this fraction of its maximum. Default 0.75 (Balakrishnan 1998: "set to 75% in our implementation").
    /// Exactly at the threshold is not above it.
    pub congestion_threshold: f64,
    /// Most connections with state at once (least recently active evicted). Default 1024.
    pub max_connections: usize,
    /// Most blocks per connection. Past it the marker bridges its two highest blocks, forgetting any hole
    /// between them, and the filter forgets its highest block: both err toward *not* signalling ELN.
    /// Default 64 (a 64 KB window of 1 KB segments with every other segment lost).
    pub max_blocks: usize,
}

impl Default for ElnConfig {
    fn default() -> Self {
        ElnConfig { role: ElnRole::Mark, congestion_threshold: 0.75, max_connections: 1024, max_blocks: 64 }
    }
}

/// What the agent did, summed over connections. Exported by [`Agent::counters`] under the field names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ElnStats {
    /// Gaps recorded as corruption losses.
    pub holes_recorded: u64,
    /// Gaps not recorded because a queue was above the threshold.
    pub holes_classified_congestion: u64,
    /// Recorded holes (wholly or partly) filled by a retransmission from the mobile.
    pub holes_bridged: u64,
    /// ACKs forwarded with the ELN bit set (new and duplicate).
    pub acks_marked: u64,
    /// Of `acks_marked`, those repeating the previous ACK number.
    pub dupacks_marked: u64,
    /// Data packets that carried the mobile's queue-occupancy option.
    pub queue_options_read: u64,
    /// Filter: ELN-marked ACKs let through (the segment had crossed this node).
    pub eln_passed: u64,
    /// Filter: ELN bits cleared (the segment never reached this node: congestion upstream).
    pub eln_cleared: u64,
    /// Fixed-sender notifier: data segments not vouched for because the queue toward the mobile was above
    /// the congestion threshold when they passed.
    pub forwarded_under_congestion: u64,
    /// Packets passed over and the connection table.
    pub pass: PassCounters,
}

/// Per-connection state.
#[derive(Debug, Default)]
struct Conn {
    /// One past the highest sequence number seen from the data sender.
    next: Option<SeqNum>,
    /// Highest ACK seen from the data receiver.
    acked: Option<SeqNum>,
    /// Contiguous data seen, above `acked`.
    blocks: Ranges,
    /// Marker: gaps recorded as corruption losses, above `acked`.
    holes: Ranges,
    /// Sequence number just past the data sender's FIN, once seen.
    fin_end: Option<SeqNum>,
    /// Counter for range stamps.
    stamp: u64,
}

/// The ELN agent (one per node).
#[derive(Debug)]
pub struct Eln {
    config: ElnConfig,
    table: LruTable<Conn>,
    input_queue: f64,
    stats: ElnStats,
}

impl Eln {
    pub fn new(config: ElnConfig) -> Eln {
        Eln { table: LruTable::new(config.max_connections), config, input_queue: 0.0, stats: ElnStats::default() }
    }

    pub fn config(&self) -> &ElnConfig {
        &self.config
    }

    pub fn stats(&self) -> &ElnStats {
        &self.stats
    }

    /// The host's report of the BS's input-queue occupancy, as a fraction of its maximum (clamped to
    /// `[0, 1]`; NaN reads as full, so that an unknown occupancy never turns a loss into "corruption").
    /// Call it before [`Agent::handle_packet`] whenever the occupancy may have changed; the value holds until
    /// the next call.
    pub fn set_input_queue(&mut self, fraction: f64) {
        self.input_queue = if fraction.is_nan() { 1.0 } else { fraction.clamp(0.0, 1.0) };
    }

    pub fn input_queue(&self) -> f64 {
        self.input_queue
    }

    /// Connections with state.
    pub fn connections(&self) -> usize {
        self.table.len()
    }

    /// The blocks seen for a connection (data-direction key), lowest first.
    pub fn blocks(&self, key: &FlowKey) -> Option<Vec<(SeqNum, SeqNum)>> {
        self.table.get(key).map(|c| c.blocks.as_slice().iter().map(|r| (r.start, r.end)).collect())
    }

    /// The corruption holes recorded for a connection (data-direction key), lowest first.
    pub fn holes(&self, key: &FlowKey) -> Option<Vec<(SeqNum, SeqNum)>> {
        self.table.get(key).map(|c| c.holes.as_slice().iter().map(|r| (r.start, r.end)).collect())
    }

    fn data_side(&self) -> Side {
        match self.config.role {
            ElnRole::Mark => Side::ToWired,
            ElnRole::Filter | ElnRole::MarkForwarded => Side::ToMobile,
        }
    }

    fn create(&mut self, key: FlowKey) -> bool {
        match self.table.insert(key, Conn::default()) {
            Ok(evicted) => {
                self.stats.pass.connections_created += 1;
                if evicted.is_some() {
                    self.stats.pass.connections_evicted += 1;
                }
                true
            }
            Err(_) => false,
        }
    }

    /// A packet from the data sender.
    fn on_data(&mut self, seg: &Segment) {
        let key = seg.key();
        if seg.rst() {
            if self.table.remove(&key).is_some() {
                self.stats.pass.connections_closed += 1;
            }
            return;
        }
        if seg.syn() {
            // A SYN (re)starts the sequence space: the first byte of data follows it.
            if !self.create(key) {
                return;
            }
            if let Some(c) = self.table.get_mut(&key) {
                c.next = Some(seg.tcp.seq + 1);
            }
            return;
        }
        if seg.seg_len() == 0 {
            return; // a pure ACK for reverse-direction data: nothing in this direction's sequence space
        }
        if seg.queue.is_some() {
            self.stats.queue_options_read += 1;
        }
        if self.table.get(&key).is_none() && !self.create(key) {
            return;
        }
        let congested = self.congested(seg.queue);
        let (role, max_blocks) = (self.config.role, self.config.max_blocks.max(1));
        if role == ElnRole::MarkForwarded && self.input_queue > self.config.congestion_threshold {
            // It may yet be dropped by this node's own queue: no evidence it will cross the wireless link.
            self.stats.forwarded_under_congestion += 1;
            return;
        }
        let Some(c) = self.table.get_mut(&key) else { return };
        let mut s = seg.tcp.seq;
        let e = seg.tcp.seq + seg.seg_len();
        if seg.fin() {
            c.fin_end = Some(e);
        }
        if let Some(a) = c.acked {
            if e <= a {
                return; // already acknowledged: a spurious retransmission
            }
            s = s.max(a);
        }
        c.stamp += 1;
        match c.next {
            Some(n) if s > n => {
                // Out of the normal increasing sequence: [n, s) was lost before reaching this node.
                if role == ElnRole::Mark {
                    if congested {
                        self.stats.holes_classified_congestion += 1;
                    } else {
                        c.holes.insert(n, s, c.stamp);
                        self.stats.holes_recorded += 1;
                    }
                }
                c.blocks.insert(s, e, c.stamp);
                c.next = Some(e);
            }
            n => {
                c.blocks.insert(s, e, c.stamp);
                if c.holes.remove(s, e) > 0 {
                    self.stats.holes_bridged += 1;
                }
                if n.is_none_or(|n| e > n) {
                    c.next = Some(e);
                }
            }
        }
        while c.blocks.len() > max_blocks {
            match role {
                ElnRole::Mark => {
                    if let Some((gs, ge)) = c.blocks.bridge_highest_gap() {
                        c.holes.remove(gs, ge);
                    }
                }
                ElnRole::Filter | ElnRole::MarkForwarded => {
                    c.blocks.pop_highest();
                }
            }
        }
    }

    /// Balakrishnan 1998: "If either of the instantaneous queue sizes is above a certain threshold of the maximum
    /// ... then this loss is not considered as one due to corruption."
    fn congested(&self, mh_queue: Option<QueueOccupancy>) -> bool {
        let t = self.config.congestion_threshold;
        let mh = mh_queue.map_or(0.0, QueueOccupancy::fraction);
        self.input_queue > t || mh > t
    }

    /// A packet from the data receiver (its ACK field is what matters). Returns the packet to forward.
    fn on_ack(&mut self, seg: &Segment, packet: Bytes) -> Bytes {
        // The data direction is the reverse of this packet's.
        let key = seg.key().reversed();
        if seg.rst() {
            if self.table.remove(&key).is_some() {
                self.stats.pass.connections_closed += 1;
            }
            return packet;
        }
        let Some(ack) = seg.tcp.ack else { return packet };
        let role = self.config.role;
        let Some(c) = self.table.get_mut(&key) else {
            self.stats.pass.unknown_forwarded += 1;
            if role == ElnRole::Filter && seg.tcp.eln {
                // No evidence the segment crossed this node: let the sender treat the loss as congestion.
                self.stats.eln_cleared += 1;
                return parse::with_eln(&packet, seg, false);
            }
            return packet;
        };
        let dup = c.acked == Some(ack);
        if c.acked.is_none_or(|a| ack > a) {
            c.acked = Some(ack);
            // Balakrishnan 1998: clean up "all blocks (or parts of blocks) that have been acknowledged so far".
            c.blocks.trim_below(ack);
            c.holes.trim_below(ack);
            // The receiver has data this node never saw (state picked up late, or another path): the
            // sequence continues from the ACK, so no hole can open below it.
            if c.next.is_some_and(|n| ack > n) {
                c.next = Some(ack);
            }
        }
        let current = c.acked == Some(ack);
        let done = c.fin_end.is_some_and(|f| ack >= f);
        let out = match role {
            ElnRole::Mark => {
                // Mark when the next expected byte is a recorded hole, never with an empty block list.
                // A reordered older ACK is left alone: the sender ignores it anyway.
                if current && !c.blocks.is_empty() && c.holes.containing(ack).is_some() && !seg.tcp.eln {
                    self.stats.acks_marked += 1;
                    if dup {
                        self.stats.dupacks_marked += 1;
                    }
                    parse::with_eln(&packet, seg, true)
                } else {
                    packet
                }
            }
            ElnRole::Filter if seg.tcp.eln => {
                if c.blocks.containing(ack).is_some() {
                    self.stats.eln_passed += 1;
                    packet
                } else {
                    self.stats.eln_cleared += 1;
                    parse::with_eln(&packet, seg, false)
                }
            }
            ElnRole::Filter => packet,
            ElnRole::MarkForwarded => {
                // A pure duplicate ACK asking for a byte this node forwarded: lost on the wireless hop.
                let pure = seg.seg_len() == 0;
                if dup && pure && current && c.blocks.containing(ack).is_some() && !seg.tcp.eln {
                    self.stats.acks_marked += 1;
                    self.stats.dupacks_marked += 1;
                    parse::with_eln(&packet, seg, true)
                } else {
                    packet
                }
            }
        };
        if done {
            self.table.remove(&key);
            self.stats.pass.connections_closed += 1;
        }
        out
    }
}

impl Agent for Eln {
    fn handle_packet(&mut self, _now: Time, side: Side, packet: Bytes, out: &mut Vec<Action>) {
        let count = &mut self.stats.pass;
        let Some(seg) = parse::classify(&packet).tcp_or_pass(side, &packet, out, count) else { return };
        let packet = if side == self.data_side() {
            self.on_data(&seg);
            // Data packets also carry ACKs for the reverse direction; those are not ours to judge.
            packet
        } else {
            self.on_ack(&seg, packet)
        };
        out.push(Action::Forward(side, packet));
    }

    fn handle_timeout(&mut self, _now: Time, _out: &mut Vec<Action>) {}

    fn poll_timeout(&self) -> Option<Time> {
        None
    }

    /// The host's queue toward the data's next hop is the BS's "input queue" of Balakrishnan 1998 §3: the one that
    /// overflows when the wired side is congested. Only the queue on the data's side counts.
    fn handle_queue_occupancy(&mut self, side: Side, fraction: f64) {
        if side == self.data_side() {
            self.set_input_queue(fraction);
        }
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let s = &self.stats;
        let mut named = vec![
            ("holes_recorded", s.holes_recorded),
            ("holes_classified_congestion", s.holes_classified_congestion),
            ("holes_bridged", s.holes_bridged),
            ("acks_marked", s.acks_marked),
            ("dupacks_marked", s.dupacks_marked),
            ("queue_options_read", s.queue_options_read),
            ("eln_passed", s.eln_passed),
            ("eln_cleared", s.eln_cleared),
            ("forwarded_under_congestion", s.forwarded_under_congestion),
        ];
        named.extend(s.pass.named());
        named
    }
}
