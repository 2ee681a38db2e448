//! Negative acknowledgments from the base station: for data from a mobile host, the BS reports the holes it
//! sees as SACK blocks, so that a SACK-enabled mobile sender retransmits them a wired round trip sooner
//! (Balakrishnan 1995 §3.2; Balakrishnan 1998 §3, "Using Negative ACKs").
//!
//! # What it does
//!
//! For data from the mobile host (MH) to the fixed host (FH), travelling [`Side::ToWired`], the agent keeps
//! per connection the ranges it has seen above the FH's cumulative ACK. A *gap* is a range below the
//! highest byte seen that the BS did not see: those segments were lost on the wireless hop (or before it).
//! The agent sends a NACK — Balakrishnan 1995: "when either a threshold number of packets (from a single window)
//! have reached the base station or when a certain amount of time has expired without any new packets
//! from the mobile" — that is, when
//!
//! - [`NackConfig::threshold_packets`] data packets have arrived above the lowest gap since the gap opened
//!   (or since the previous NACK), or
//! - a gap is open and no data packet has arrived from the mobile for [`NackConfig::timeout`] (one NACK
//!   per silence: the next data packet re-arms the timer).
//!
//! The NACK is an ACK injected toward the mobile ([`Action::Inject`]`(ToMobile, ..)`) that looks as if the FH
//! had sent it: FH address and port, the FH's last sequence number, window and timestamps, and as
//! cumulative ACK **the highest ACK the FH has sent** — never more (DESIGN.md: an agent never acknowledges
//! data the receiver has not; only cumulative ACKs free the sender's buffer). Its SACK blocks (RFC 2018)
//! list the ranges the BS has seen above that ACK, the most recently grown first, as many as fit beside the
//! other options (`TcpRepr::max_sack_blocks`: 4, or 3 with timestamps). Balakrishnan 1995 used the SACK option for
//! its NACKs too, instead of the "bit vector" Balakrishnan 1998 mentions; SACK needs no change at the mobile beyond
//! enabling SACK, and none at the FH.
//!
//! No NACK is sent before the FH has sent an ACK (there would be no cumulative ACK to repeat), nor on a
//! connection whose SYNs did not both carry SACK-permitted (a sender without SACK would read the NACK as a
//! plain duplicate ACK and gain nothing; [`NackConfig::assume_sack_permitted`] covers connections picked up
//! mid-stream).
//!
//! # How a SACK sender counts NACKs
//!
//! To the MH a NACK is a duplicate ACK (same cumulative ACK, no data, the FH's window). It should count
//! toward the sender's loss detection, because it is real evidence: the BS saw the segments above the gap
//! arrive, over a FIFO link, so the gap is a loss, not reordering. With the defaults a NACK SACKs three
//! segments above the hole, so RFC 6675's `IsLost` holds at once and *one* NACK starts SACK recovery
//! (lasthop-tcp's `Variant::Sack` does this), a wired RTT before the FH's own DUPACKs would arrive. What
//! must not happen is counting the *same* evidence twice: the FH's later DUPACKs report the same segments,
//! and a timeout NACK may repeat a threshold NACK. lasthop-tcp's SACK sender therefore counts a DUPACK that
//! carries SACK blocks only when they report something new (the SACK-based duplicate test RFC 6675 §2 and
//! RFC 5681 §2 allow). A NACK carries no ELN bit: it says "lost", not "lost to corruption", so a sender
//! takes its normal congestion response (use the ELN agent, [`crate::eln`], for that).
//!
//! Limits, by design: SACK blocks are advisory. A segment the BS saw and SACKed but that is then lost to
//! congestion on the wired path is not retransmitted until the sender's timeout (RFC 6675 clears the
//! scoreboard then), exactly as if a receiver had reneged; a NACK never puts data at risk.
//!
//! # Conventions
//!
//! As for [`crate::eln`]: non-TCP packets and fragments pass unchanged, malformed ones are dropped and
//! counted, the table is bounded ([`NackConfig::max_connections`], least recently active evicted) and so is
//! each connection's range list ([`NackConfig::max_blocks`]; past it the highest range is forgotten, which
//! can only make the BS report less). Every packet handed in is forwarded, first; NACKs follow it. Keyed
//! by the data direction (`src` = the MH). Timers fire in (deadline, key) order.

#[cfg(test)]
mod tests;

use crate::eln::parse::{self, Segment};
use crate::eln::ranges::Ranges;
use crate::eln::table::LruTable;
use crate::flow::FlowKey;
#[cfg(test)]
use crate::DropReason;
use crate::{Action, Agent, PassCounters, Side, Time};
use bytes::Bytes;
use lasthop_wire::{SackBlocks, SeqNum, TcpRepr};
use std::collections::BTreeSet;
use std::time::Duration;

/// The NACK agent's knobs.
#[derive(Debug, Clone)]
pub struct NackConfig {
    /// Packets arriving above a gap before a NACK is sent. Default 3, matching the sender's duplicate-ACK
    /// threshold, so one NACK SACKs enough for RFC 6675 to call the hole lost.
    pub threshold_packets: u32,
    /// Silence from the mobile, with a gap open, after which a NACK is sent. Default 50 ms: a few wireless
    /// round trips (Balakrishnan 1995 gives no number), far below a 1990s sender's 1 s minimum RTO.
    pub timeout: Duration,
    /// Send NACKs on connections whose handshake the agent did not see. Default false.
    pub assume_sack_permitted: bool,
    /// Most connections with state at once. Default 1024.
    pub max_connections: usize,
    /// Most ranges remembered per connection. Default 32 (RFC 2018 can only report 4 at a time anyway).
    pub max_blocks: usize,
    /// TTL of injected NACKs. Default 64.
    pub inject_ttl: u8,
}

impl Default for NackConfig {
    fn default() -> Self {
        NackConfig {
            threshold_packets: 3,
            timeout: Duration::from_millis(50),
            assume_sack_permitted: false,
            max_connections: 1024,
            max_blocks: 32,
            inject_ttl: 64,
        }
    }
}

/// What the agent did. Exported by [`Agent::counters`] under the field names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NackStats {
    /// NACKs sent because `threshold_packets` arrived above a gap.
    pub nacks_threshold: u64,
    /// NACKs sent because the mobile fell silent with a gap open.
    pub nacks_timeout: u64,
    /// NACKs due but not sent: no ACK from the FH yet, or SACK not permitted.
    pub nacks_suppressed: u64,
    /// Gaps opened by a segment beyond the highest seen.
    pub gaps_detected: u64,
    /// Packets passed over and the connection table.
    pub pass: PassCounters,
}

impl NackStats {
    pub fn nacks_sent(&self) -> u64 {
        self.nacks_threshold + self.nacks_timeout
    }
}

/// The FH's latest ACK: everything a NACK copies from it.
#[derive(Debug, Clone, Copy)]
struct FhAck {
    ack: SeqNum,
    seq: SeqNum,
    window: u16,
    timestamps: Option<(u32, u32)>,
}

#[derive(Debug, Default)]
struct Conn {
    /// Data seen from the mobile, above the FH's ACK.
    seen: Ranges,
    /// One past the highest byte seen from the mobile.
    next: Option<SeqNum>,
    /// The lowest byte from which this agent's view is complete: the first byte it saw (or the one after
    /// the SYN), raised by the FH's ACKs. Below it a missing range is not a gap, just unobserved.
    floor: Option<SeqNum>,
    fh: Option<FhAck>,
    sack_mh: Option<bool>,
    sack_fh: Option<bool>,
    /// Data packets above the lowest gap since it opened or since the last NACK.
    past_gap: u32,
    deadline: Option<Time>,
    fin_end: Option<SeqNum>,
    stamp: u64,
    ident: u16,
}

impl Conn {
    /// The start of the lowest gap, if any.
    fn first_gap(&self) -> Option<SeqNum> {
        let floor = self.floor?;
        let next = self.next?;
        let first = self.seen.first()?;
        if first.start > floor {
            return Some(floor);
        }
        (first.end < next).then_some(first.end)
    }
}

/// The NACK agent (one per base station).
#[derive(Debug)]
pub struct Nack {
    config: NackConfig,
    table: LruTable<Conn>,
    timers: BTreeSet<(Time, FlowKey)>,
    stats: NackStats,
}

impl Nack {
    pub fn new(config: NackConfig) -> Nack {
        Nack {
            table: LruTable::new(config.max_connections),
            config,
            timers: BTreeSet::new(),
            stats: NackStats::default(),
        }
    }

    pub fn config(&self) -> &NackConfig {
        &self.config
    }

    pub fn stats(&self) -> &NackStats {
        &self.stats
    }

    pub fn connections(&self) -> usize {
        self.table.len()
    }

    /// The ranges seen above the FH's ACK for a connection (data-direction key, `src` = the MH).
    pub fn seen(&self, key: &FlowKey) -> Option<Vec<(SeqNum, SeqNum)>> {
        self.table.get(key).map(|c| c.seen.as_slice().iter().map(|r| (r.start, r.end)).collect())
    }

    /// Timer entries held: at most one per connection (the fuzz targets check it after every step).
    pub fn timers_pending(&self) -> usize {
        self.timers.len()
    }

    fn create(&mut self, key: FlowKey) -> bool {
        // A SYN that re-creates a connection replaces its state: its timer goes with it, or the entry would
        // stay behind (one per re-creation) and fire on the new connection.
        if let Some(d) = self.table.get(&key).and_then(|c| c.deadline) {
            self.timers.remove(&(d, key));
        }
        match self.table.insert(key, Conn::default()) {
            Ok(evicted) => {
                self.stats.pass.connections_created += 1;
                if let Some((k, c)) = evicted {
                    self.stats.pass.connections_evicted += 1;
                    if let Some(d) = c.deadline {
                        self.timers.remove(&(d, k));
                    }
                }
                true
            }
            Err(_) => false,
        }
    }

    fn remove(&mut self, key: &FlowKey) {
        if let Some(c) = self.table.remove(key) {
            self.stats.pass.connections_closed += 1;
            if let Some(d) = c.deadline {
                self.timers.remove(&(d, *key));
            }
        }
    }

    fn set_deadline(timers: &mut BTreeSet<(Time, FlowKey)>, key: FlowKey, c: &mut Conn, d: Option<Time>) {
        if let Some(old) = c.deadline {
            timers.remove(&(old, key));
        }
        c.deadline = d;
        if let Some(d) = d {
            timers.insert((d, key));
        }
    }

    /// Data (or a SYN) from the mobile.
    fn on_data(&mut self, now: Time, seg: &Segment, out: &mut Vec<Action>) {
        let key = seg.key();
        if seg.rst() {
            self.remove(&key);
            return;
        }
        if seg.syn() {
            if self.create(key) {
                if let Some(c) = self.table.get_mut(&key) {
                    c.next = Some(seg.tcp.seq + 1);
                    c.floor = Some(seg.tcp.seq + 1);
                    c.sack_mh = Some(seg.tcp.sack_permitted);
                }
            }
            return;
        }
        if seg.seg_len() == 0 {
            return;
        }
        if self.table.get(&key).is_none() && !self.create(key) {
            return;
        }
        let cfg = &self.config;
        let Some(c) = self.table.get_mut(&key) else { return };
        let mut s = seg.tcp.seq;
        let e = seg.tcp.seq + seg.seg_len();
        if seg.fin() {
            c.fin_end = Some(e);
        }
        if let Some(a) = c.fh.map(|f| f.ack) {
            if e <= a {
                return; // the FH has it already
            }
            s = s.max(a);
        }
        if c.floor.is_none() {
            c.floor = Some(s);
        }
        if c.next.is_some_and(|n| s > n) {
            self.stats.gaps_detected += 1;
        }
        c.stamp += 1;
        c.seen.insert(s, e, c.stamp);
        if c.next.is_none_or(|n| e > n) {
            c.next = Some(e);
        }
        while c.seen.len() > cfg.max_blocks.max(1) {
            c.seen.pop_highest();
        }
        match c.first_gap() {
            None => {
                c.past_gap = 0;
                Self::set_deadline(&mut self.timers, key, c, None);
            }
            Some(g) => {
                if s > g {
                    c.past_gap += 1;
                }
                Self::set_deadline(&mut self.timers, key, c, Some(now + cfg.timeout));
                if c.past_gap >= cfg.threshold_packets.max(1) {
                    c.past_gap = 0;
                    match Self::build(cfg, key, c) {
                        Some(p) => {
                            self.stats.nacks_threshold += 1;
                            out.push(Action::Inject(Side::ToMobile, p));
                        }
                        None => self.stats.nacks_suppressed += 1,
                    }
                }
            }
        }
    }

    /// A packet from the FH: its ACK (and, on a SYN-ACK, whether it permits SACK).
    fn on_ack(&mut self, seg: &Segment) {
        let key = seg.key().reversed();
        if seg.rst() {
            self.remove(&key);
            return;
        }
        let Some(ack) = seg.tcp.ack else { return };
        let Some(c) = self.table.get_mut(&key) else {
            self.stats.pass.unknown_forwarded += 1;
            return;
        };
        if seg.syn() {
            c.sack_fh = Some(seg.tcp.sack_permitted);
            return; // the SYN-ACK's ACK covers only the SYN
        }
        let fresh = FhAck { ack, seq: seg.tcp.seq, window: seg.tcp.window, timestamps: seg.tcp.timestamps };
        match c.fh {
            Some(f) if ack < f.ack => return, // reordered old ACK: keep the newer one
            _ => c.fh = Some(fresh),
        }
        c.seen.trim_below(ack);
        c.floor = Some(c.floor.map_or(ack, |f| f.max(ack)));
        if c.next.is_some_and(|n| ack > n) {
            c.next = Some(ack);
        }
        if c.first_gap().is_none() {
            c.past_gap = 0;
            Self::set_deadline(&mut self.timers, key, c, None);
        }
        if c.fin_end.is_some_and(|f| ack >= f) {
            self.remove(&key);
        }
    }

    /// The NACK for connection `key` (data direction MH→FH), if one may be sent.
    fn build(cfg: &NackConfig, key: FlowKey, c: &mut Conn) -> Option<Bytes> {
        let fh = c.fh?;
        let sack_ok = match (c.sack_mh, c.sack_fh) {
            (Some(a), Some(b)) => a && b,
            _ => cfg.assume_sack_permitted,
        };
        if !sack_ok || c.first_gap().is_none() {
            return None;
        }
        let mut repr = TcpRepr {
            src_port: key.dst_port,
            dst_port: key.src_port,
            seq: fh.seq,
            ack: Some(fh.ack),
            window: fh.window,
            timestamps: fh.timestamps,
            ..TcpRepr::default()
        };
        let mut ranges: Vec<_> = c.seen.as_slice().iter().filter(|r| r.start >= fh.ack).copied().collect();
        // RFC 2018 §4: the first block holds the most recently received data, then the most recently
        // reported; ties (never in practice: stamps are per packet) fall back to sequence order.
        ranges.sort_by(|a, b| b.stamp.cmp(&a.stamp).then(a.start.diff(b.start).cmp(&0)));
        let mut sack = SackBlocks::new();
        for r in ranges.iter().take(repr.max_sack_blocks()) {
            sack.push(r.start, r.end);
        }
        if sack.is_empty() {
            return None;
        }
        repr.sack = sack;
        c.ident = c.ident.wrapping_add(1);
        Some(repr.emit_ipv4(key.dst, key.src, c.ident, cfg.inject_ttl, &[]))
    }
}

impl Agent for Nack {
    fn handle_packet(&mut self, now: Time, side: Side, packet: Bytes, out: &mut Vec<Action>) {
        let count = &mut self.stats.pass;
        let Some(seg) = parse::classify(&packet).tcp_or_pass(side, &packet, out, count) else { return };
        // Disposition first, then any NACK (the agent contract's order).
        out.push(Action::Forward(side, packet));
        match side {
            Side::ToWired => self.on_data(now, &seg, out),
            Side::ToMobile => self.on_ack(&seg),
        }
    }

    fn handle_timeout(&mut self, now: Time, out: &mut Vec<Action>) {
        while let Some(&(t, key)) = self.timers.first() {
            if t > now {
                break;
            }
            self.timers.pop_first();
            let Some(c) = self.table.get_mut(&key) else { continue };
            c.deadline = None; // one NACK per silence; the next data packet re-arms
            if c.first_gap().is_none() {
                continue;
            }
            c.past_gap = 0;
            match Self::build(&self.config, key, c) {
                Some(p) => {
                    self.stats.nacks_timeout += 1;
                    out.push(Action::Inject(Side::ToMobile, p));
                }
                None => self.stats.nacks_suppressed += 1,
            }
        }
    }

    fn poll_timeout(&self) -> Option<Time> {
        self.timers.first().map(|&(t, _)| t)
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let s = &self.stats;
        let mut named = vec![
            ("nacks_sent", s.nacks_sent()),
            ("nacks_threshold", s.nacks_threshold),
            ("nacks_timeout", s.nacks_timeout),
            ("nacks_suppressed", s.nacks_suppressed),
            ("gaps_detected", s.gaps_detected),
        ];
        named.extend(s.pass.named());
        named
    }
}
