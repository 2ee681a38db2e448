//! Per-connection Snoop state and the two procedures of Balakrishnan 1995 §3.1: `snoop_data()` (§3.1.1) for data
//! from the fixed host and `snoop_ack()` (§3.1.2) for acknowledgments from the mobile, plus the two timers
//! of §6.
//!
//! Sequence numbers are [`SeqNum`]s compared modulo 2^32, so a transfer may wrap. Every method receives
//! the current time from the caller; nothing here reads a clock.

use super::parse::Segment;
use super::queue::HeadInline;
use super::segment::{flag, with_tsval, CachedSeg, SegTx};
use super::tx::{TxTimed, TX_BACKOFF_GRACE};
use super::{Cfg, ConnectionStats, SnoopStats};
use crate::flow::FlowKey;
use crate::{Action, DropReason, Side};
use bytes::Bytes;
use lasthop_wire::{SeqNum, TcpFlags, TcpRepr, Time};

/// The packet timestamped for the wireless RTT (Balakrishnan 1995 §3.1.1 case 1: one per window).
#[derive(Debug, Clone, Copy)]
struct Probe {
    /// The ACK that acknowledges the timestamped packet.
    end: SeqNum,
    sent: Time,
    /// `Conn::rexmit_epoch` when it was sent; if any retransmission happened since, the sample is discarded
    /// (Karn, §3.1.2 case 1: "only if no retransmissions happened in that window").
    epoch: u32,
    /// `sent` and `epoch` are from the packet's actual transmission (`handle_transmit`), not its queueing.
    transmitted: bool,
}

#[derive(Debug, Clone, Copy)]
struct MhLast {
    seq: SeqNum,
    timestamps: Option<(u32, u32)>,
}

impl MhLast {
    fn of(seg: &Segment) -> MhLast {
        // The MH's next sequence number; a FIN is not repeated in a regenerated ACK, so it does not count.
        MhLast { seq: seg.seq + seg.payload_len + u32::from(seg.syn()), timestamps: seg.timestamps }
    }
}

/// What the caller must do with the connection after an input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum After {
    Keep,
    /// The FH's FIN is acknowledged and nothing is cached: the state is no longer useful.
    Remove,
}

/// One connection's state. Laid out by hand (`repr(C)`, fields in the order given) so that what every data
/// packet and every ACK reads or writes is packed into the first lines of its 64-byte aligned slot
/// (`table.rs`: the slot's stamp and generation come first, the connection 16 bytes in), the transmit-timed
/// and rare fields after it; `tests::hot_fields_come_first` checks the offsets the comments name.
#[derive(Debug)]
#[repr(C)]
pub(super) struct Conn {
    // ---- line 0, with the slot's stamp and generation: lookup, touch, timers ---------------------
    /// FH -> MH: `src` is the fixed host, `dst` the mobile.
    pub key: FlowKey,
    /// Bumped by every retransmission, local or by the sender (Karn).
    rexmit_epoch: u32,
    /// Time of this connection's entry in the timer heap (see `table.rs`).
    pub scheduled: Option<Time>,
    /// Last packet from the sender or the receiver (§6 persist timer).
    last_activity: Time,
    /// Last time the persist timer (or the round-trip timer) fired; the persist timer counts from the
    /// later of this and `last_activity` so it does not fire back to back.
    persist_base: Time,
    // ---- line 1: every data packet and every ACK -------------------------------------------------
    /// Round-trip timer (§6); armed only once a DUPACK caused a local retransmission, then kept armed for
    /// the packet the mobile needs next until the local recovery is over (see `on_new_ack`).
    rtx_deadline: Option<Time>,
    /// One past the highest sequence number seen from the sender ("last sequence number seen", §3.1.1).
    last_seq_seen: SeqNum,
    /// The ACK that would show the current local recovery is over (§6).
    next_exp_ack: SeqNum,
    /// Sequence number just past the FH's FIN, once seen.
    fin_end: Option<SeqNum>,
    /// Highest cumulative ACK seen from the mobile; `None` until one is seen (state picked up from data).
    last_ack: Option<SeqNum>,
    /// Data packets sent toward the mobile on this connection, counting retransmissions.
    tx_count: u64,
    /// Sequence space the cache covers: what the high-water mark of §6 counts.
    cache_bytes: usize,
    /// Memory the cache holds: every cached packet as buffered, headers included, plus its entry
    /// ([`CachedSeg::held`]); what `SnoopConfig::max_cache_bytes` bounds.
    cache_held: usize,
    // ---- line 2: every ACK -----------------------------------------------------------------------
    probe: Option<Probe>,
    /// From the MH's last (non-spurious) packet, to regenerate an ACK as the MH would have sent it: its next
    /// sequence number, its timestamps option and its IP ident. `None` until a packet from the MH is seen.
    mh_last: Option<MhLast>,
    /// DUPACKs still expected for the packet last retransmitted on a DUPACK (§3.1.2 case 3).
    exp_dupacks: u32,
    /// DUPACKs seen for the current last ACK, suppressed or not: each is a packet after the hole that
    /// reached the mobile. Used to detect a further hole at a partial ACK (`on_new_ack`).
    dupacks_seen: u32,
    /// One past the newest transmission (`tx_idx`) through the link's normal queue known to have reached the
    /// mobile (its packet was acknowledged); 0 if none. The queue keeps order, so DUPACKs for packets sent
    /// before it have already been counted. Local retransmissions do not count: they go at priority and
    /// overtake what waits in the queue.
    acked_tx: u64,
    rtx_backoff: u32,
    /// The MH's window field in its last (non-spurious) ACK, raw (unscaled), for regenerated ACKs.
    mh_window: u16,
    /// The host reports transmissions (`handle_transmit`) for this connection: the transmit-timed rules apply.
    /// Until the first report, every rule is the queue-timed one (hosts need not call it).
    tx_mode: bool,
    /// A local recovery is in progress: set by a DUPACK-caused retransmission, over once every packet
    /// forwarded before the latest local retransmission is acknowledged (`recover`, as in NewReno).
    in_recovery: bool,
    // ---- lines 3 to 5: the RTT, the cache and its first segment inline ---------------------------
    /// Smoothed wireless round-trip time in ns; `None` before the first sample.
    srtt: Option<u64>,
    /// `tx_count` just after the latest local retransmission.
    recover: u64,
    /// Unacknowledged segments in sequence order, non-overlapping; a lone one inline (see `queue.rs`).
    cache: HeadInline<CachedSeg>,
    // ---- cold: transmit-timed state (written by `handle_transmit`) and rare paths --------------------
    /// What the transmit-timed rules know (`tx.rs`); read only in `tx_mode`.
    tx: TxTimed,
    /// This connection's share of the station's counters (kept across a SYN: the 4-tuple is the same).
    counts: Counts,
}

/// A connection's [`ConnectionStats`], in 32 bits each (saturating) so that the slot stays seven lines.
#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    local_retransmissions: u32,
    dupacks_suppressed: u32,
}

/// Why a segment was retransmitted locally.
#[derive(Debug, Clone, Copy)]
enum Cause {
    /// An unexpected DUPACK, or a hole a partial ACK revealed (§3.1.2 case 3).
    Dupack,
    /// The round-trip timer (§6).
    RtxTimer,
    /// The persist timer (§6).
    PersistTimer,
}

impl Conn {
    pub fn new(key: FlowKey, now: Time) -> Conn {
        Conn {
            key,
            cache: HeadInline::new(),
            cache_bytes: 0,
            cache_held: 0,
            last_seq_seen: SeqNum(0),
            last_ack: None,
            mh_window: 0,
            mh_last: None,
            exp_dupacks: 0,
            dupacks_seen: 0,
            next_exp_ack: SeqNum(0),
            srtt: None,
            probe: None,
            rexmit_epoch: 0,
            tx_count: 0,
            rtx_deadline: None,
            rtx_backoff: 0,
            in_recovery: false,
            recover: 0,
            acked_tx: 0,
            last_activity: now,
            persist_base: now,
            fin_end: None,
            tx_mode: false,
            tx: TxTimed::new(now),
            scheduled: None,
            counts: Counts::default(),
        }
    }

    /// Soft state, re-initialised by a SYN (§6: "easily reconstructed from scratch"). Keeps the timer-heap
    /// bookkeeping, which belongs to the table.
    pub fn reset(&mut self, now: Time) {
        let (scheduled, tx_mode, counts) = (self.scheduled, self.tx_mode, self.counts);
        *self = Conn::new(self.key, now);
        self.scheduled = scheduled;
        self.tx_mode = tx_mode;
        self.counts = counts;
    }

    /// Counts a local retransmission, in this connection's counts and the station's.
    fn count_rexmit(&mut self, cause: Cause, stats: &mut SnoopStats) {
        self.counts.local_retransmissions = self.counts.local_retransmissions.saturating_add(1);
        let all = &mut stats.local_retransmissions;
        match cause {
            Cause::Dupack => all.dupack += 1,
            Cause::RtxTimer => all.rtx_timer += 1,
            Cause::PersistTimer => all.persist_timer += 1,
        }
    }

    /// Keeps a DUPACK from the sender: Snoop recovers the loss (or already has) locally.
    fn suppress_dupack(&mut self, out: &mut Vec<Action>, stats: &mut SnoopStats) {
        self.counts.dupacks_suppressed = self.counts.dupacks_suppressed.saturating_add(1);
        stats.dupacks_suppressed += 1;
        out.push(Action::Drop(DropReason::DupAckSuppressed));
    }

    // ---- timers ----------------------------------------------------------------------------------------

    /// Round-trip timeout (§6): `max(2·srtt, min)`, doubled per consecutive expiry up to `2^max_backoff`,
    /// and never above `max_rtx_timeout`. The backoff lives here, *not* in `srtt`, and `srtt` only takes
    /// Karn-clean samples clamped to `max_rtx_timeout`, so the estimate cannot run away at high loss (the
    /// ns-2 failure mode); any new ACK resets the backoff.
    fn rto(&self, cfg: &Cfg) -> u64 {
        let base = match self.tx.rto_base(cfg).filter(|_| self.tx_mode) {
            Some(base) => base,
            None => self.srtt.unwrap_or(cfg.initial_srtt).saturating_mul(2).max(cfg.min_rtx_timeout),
        };
        // Transmit-timed, the first `TX_BACKOFF_GRACE` expiries in a row do not back off: the timer already
        // waits for a quiet medium, and at high loss a retransmission is lost several times in a row (a
        // doubling timer then idles the link for most of the recovery). A mobile out of reach still gets a
        // doubling timer after that, and `max_local_rexmit` still ends it.
        let exp = if self.tx_mode { self.rtx_backoff.saturating_sub(TX_BACKOFF_GRACE) } else { self.rtx_backoff };
        let backed = base.saturating_mul(1u64 << exp.min(cfg.max_rtx_backoff).min(32));
        backed.min(cfg.max_rtx_timeout).max(1)
    }

    fn persist_deadline(&self, cfg: &Cfg) -> Option<Time> {
        if self.cache.is_empty() {
            return None;
        }
        Some(Time(self.last_activity.max(self.persist_base).0.saturating_add(cfg.persist_timeout)))
    }

    /// The earliest time this connection needs `handle_timer`.
    pub fn deadline(&self, cfg: &Cfg) -> Option<Time> {
        match (self.rtx_deadline, self.persist_deadline(cfg)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Index of the cached segment the mobile needs next: the head, if it covers the last ACK (the cache is
    /// freed up to the last ACK, so only the head can). Without any ACK seen, the head.
    fn needed_head(&self) -> Option<usize> {
        let h = self.cache.front()?;
        match self.last_ack {
            Some(a) if h.seq > a => None,
            _ => Some(0),
        }
    }

    fn retransmit(&mut self, idx: usize, now: Time, out: &mut Vec<Action>) {
        let tx = self.tx_count;
        self.tx_count += 1;
        self.recover = self.tx_count;
        self.rexmit_epoch = self.rexmit_epoch.wrapping_add(1);
        let s = &mut self.cache[idx];
        s.local_rexmits = s.local_rexmits.saturating_add(1);
        s.set(flag::LOCAL_REXMIT);
        s.sent_at = now;
        s.tx_idx = tx;
        s.tx.pending = s.tx.pending.saturating_add(1);
        // Timestamps (deviation from Balakrishnan 1995, which predates RFC 7323): the receiver keeps the TSval of the
        // segment that last advanced its ACK as `ts_recent`, echoes it as TSecr, and drops a segment with an
        // older TSval as an old duplicate (PAWS). Once the sender has resent a segment the cache did not
        // hold, its fresh TSval is `ts_recent`, and the cached copy of the next hole, with its original
        // TSval, would be dropped on arrival, answered by a DUPACK, resent, dropped, until the sender's own
        // copy came: measured on the Linux testbed with the kernel's megabyte window (the mobile's
        // `PAWSEstab` 34–124 per MB). So the copy carries the receiver's own echo, when that is newer than
        // its TSval: the least value it accepts. Not more: filling the hole sets `ts_recent` to the copy's
        // TSval, and the sender's packets still queued behind it would fail PAWS in turn (resending with
        // the sender's newest TSval did that: 179–260 per MB).
        let echo = self.mh_last.and_then(|m| m.timestamps).map(|(_, ecr)| ecr);
        let pkt = echo.and_then(|ts| with_tsval(&s.pkt, ts)).unwrap_or_else(|| s.pkt.clone());
        // At high priority: the link keeps a second, high-priority queue for these (§3.1.2 case 3).
        out.push(Action::ForwardPriority(Side::ToMobile, pkt));
    }

    /// Retransmission driven by a timer: the head if it is the missing one and under the cap. A timer
    /// retransmission takes the packet back from the sender: its SENDER_REXMIT flag is cleared (only that
    /// flag), so the DUPACKs it causes are handled locally again; otherwise a sender retransmission lost on
    /// the wireless hop would leave recovery to the sender's coarse timeout.
    fn timer_retransmit(&mut self, now: Time, cfg: &Cfg, out: &mut Vec<Action>) -> bool {
        let Some(i) = self.needed_head() else { return false };
        if self.cache[i].local_rexmits >= cfg.max_local_rexmit {
            return false;
        }
        self.cache[i].clear(flag::SENDER_REXMIT);
        self.retransmit(i, now, out);
        true
    }

    pub fn handle_timer(&mut self, now: Time, cfg: &Cfg, out: &mut Vec<Action>, stats: &mut SnoopStats) {
        let mut fired = false;
        // Round-trip timer (§6): retransmit the first unacknowledged packet at priority, back off, re-arm.
        if self.rtx_deadline.is_some_and(|d| d <= now) {
            self.rtx_deadline = None;
            fired = true;
            if self.tx_mode {
                // Transmit-timed, the timer fires only after twice the hop's round trip without an ACK since
                // the latest transmission: every transmission so far has been answered or lost.
                self.all_answered();
            }
            if self.timer_retransmit(now, cfg, out) {
                self.count_rexmit(Cause::RtxTimer, stats);
                let grace = if self.tx_mode { TX_BACKOFF_GRACE } else { 0 };
                self.rtx_backoff = (self.rtx_backoff + 1).min(cfg.max_rtx_backoff + grace);
                self.rtx_deadline = Some(Time(now.0.saturating_add(self.rto(cfg))));
            }
            // else: nothing we may resend (not cached, or at the cap); the sender takes over.
            self.persist_base = now;
        }
        // Persist timer (§6): 200 ms without activity from sender or receiver while packets are cached.
        // Skipped if the round-trip timer just resent the same packet.
        if !fired && self.persist_deadline(cfg).is_some_and(|d| d <= now) {
            self.persist_base = now;
            if self.timer_retransmit(now, cfg, out) {
                self.count_rexmit(Cause::PersistTimer, stats);
            }
            // §6: "This timer also sets the number of expected DUPACKS to zero and the next expected
            // acknowledgment to one more than the last ACK seen so far."
            self.exp_dupacks = 0;
            if let Some(a) = self.last_ack {
                self.next_exp_ack = a + 1;
            }
            if self.tx_mode {
                // The same in transmit-timed terms: after 200 ms without a packet from either end, the
                // ACKs of every transmission so far are in.
                self.all_answered();
            }
        }
    }

    // ---- transmit-timed state (the host calls `handle_transmit`) -------------------------------------------

    /// Where the segment starting at `seq` is in the cache, or would be (the cache is in sequence order,
    /// non-overlapping). Two guesses are checked before a search: the segment just forwarded (the cache's
    /// last, when the link's queue is empty), and, since the link sends segments in the order it was handed
    /// them and a bulk transfer's are contiguous and of one size, the place its sequence number gives
    /// counted in the first segment's lengths (a queued segment some way back from the last).
    fn transmitted_position(&self, seq: SeqNum) -> usize {
        let (Some(first), Some(last)) = (self.cache.front(), self.cache.back()) else { return 0 };
        if last.seq == seq {
            return self.cache.len() - 1;
        }
        if seq > first.seq && first.len > 0 {
            let guess = (seq.0.wrapping_sub(first.seq.0) / first.len) as usize;
            if self.cache.get(guess).is_some_and(|c| c.seq == seq) {
                return guess;
            }
        }
        self.cache.partition_point(|c| c.seq < seq)
    }

    /// The link started transmitting data segment `[seq, seq + len)` of this connection (any copy: the
    /// sender's, or a local retransmission). Numbers the transmission, and for a cached segment records
    /// when it left and whether an earlier copy can still arrive; times the RTT probe from here; and, when
    /// the packet the mobile needs is retransmitted during a local recovery, restarts the round-trip timer
    /// from this moment (§6 "if an acknowledgment hasn't been received in twice this time": the time counts
    /// from when the packet was really sent, not from when it was queued). Returns true if the connection's
    /// deadline may have moved earlier.
    pub fn handle_transmit(&mut self, now: Time, seq: SeqNum, len: u32, cfg: &Cfg) -> bool {
        self.tx_mode = true;
        let idx = self.tx.number_transmission();
        let pos = self.transmitted_position(seq);
        let Some(c) = self.cache.get_mut(pos).filter(|c| c.seq == seq && c.len == len) else { return false };
        c.tx.pending = c.tx.pending.saturating_sub(1);
        c.tx.count = c.tx.count.saturating_add(1);
        if c.tx.count == 1 || c.has(flag::PROVEN_LOST) {
            // The first transmission, or one sent because all earlier ones are lost.
            c.tx.live_from = idx;
            if c.has(flag::PROVEN_LOST) {
                c.clear(flag::PROVEN_LOST | flag::UNSEEN_COPIES);
            }
        }
        c.tx.prev = c.tx.last;
        c.tx.last = idx;
        c.tx.at = now;
        let (first, end) = (c.tx.count == 1, c.end());
        if !first {
            // Karn: a retransmission left the link; a probe in flight may now be acknowledged late.
            self.rexmit_epoch = self.rexmit_epoch.wrapping_add(1);
        }
        if let Some(p) = self.probe.as_mut().filter(|p| !p.transmitted && p.end == end) {
            if first {
                p.sent = now;
                p.epoch = self.rexmit_epoch;
                p.transmitted = true;
            }
        }
        self.tx.transmitted_at(now);
        if !first && self.in_recovery && pos == 0 && self.needed_head() == Some(0) {
            self.rtx_deadline = Some(Time(now.0.saturating_add(self.rto(cfg))));
            return true;
        }
        // An armed round-trip timer counts from the connection's latest transmission: an ACK the mobile
        // sends waits for the frames queued before it on the shared medium, so while frames leave, silence
        // proves nothing (and DUPACKs, not the timer, reveal losses then).
        if let Some(d) = self.rtx_deadline {
            self.rtx_deadline = Some(d.max(Time(now.0.saturating_add(self.rto(cfg)))));
        }
        false
    }

    /// Transmit-timed: every transmission of `c`, the segment the mobile needs next, is lost
    /// ([`TxTimed::head_lost`]).
    fn head_lost(&self, c: &CachedSeg) -> bool {
        self.tx_mode && self.tx.head_lost(c, self.dupacks_seen)
    }

    /// Transmit-timed: a timer fired after the medium stayed quiet, so every transmission so far has been
    /// answered or lost. The copy of the needed segment resent now is the only one that can still arrive,
    /// and the next DUPACK comes from a later transmission.
    fn all_answered(&mut self) {
        self.tx.all_answered();
        self.dupacks_seen = 0;
        if let Some(i) = self.needed_head() {
            self.cache[i].set(flag::PROVEN_LOST);
        }
    }

    /// Retransmits the needed head `i` because [`head_lost`](Self::head_lost) holds.
    fn retransmit_lost(&mut self, i: usize, now: Time, cfg: &Cfg, out: &mut Vec<Action>, stats: &mut SnoopStats) {
        self.cache[i].set(flag::PROVEN_LOST);
        self.retransmit(i, now, out);
        self.count_rexmit(Cause::Dupack, stats);
        self.next_exp_ack = self.cache[i].end();
        self.in_recovery = true;
        self.rtx_deadline = Some(Time(now.0.saturating_add(self.rto(cfg))));
    }

    // ---- snoop_data(): Balakrishnan 1995 §3.1.1 --------------------------------------------------------------

    /// A SYN from the fixed host: (re)initialise (§6 soft state). The SYN is forwarded uncached: the
    /// handshake is the endpoints' business.
    pub fn handle_syn_from_fixed(&mut self, now: Time, seg: &Segment) {
        self.reset(now);
        self.last_seq_seen = seg.seq + seg.seg_len();
    }

    /// State picked up mid-connection from a data packet (§5, §6: "reconstructed ... by snooping on a few
    /// packets"): the first packet seen is treated as the next in sequence.
    pub fn start_at(&mut self, seq: SeqNum) {
        self.last_seq_seen = seq;
    }

    fn cache_insert_at(&mut self, idx: usize, s: CachedSeg, stats: &mut SnoopStats) {
        self.cache_bytes += s.len as usize;
        self.cache_held += s.held();
        self.cache.insert(idx, s);
        stats.packets_cached += 1;
    }

    /// Accounts for a segment that has left the cache.
    fn uncount(&mut self, s: &CachedSeg) {
        self.cache_bytes -= s.len as usize;
        self.cache_held -= s.held();
    }

    /// Data (payload or FIN) from the fixed host toward the mobile.
    pub fn handle_data(
        &mut self,
        now: Time,
        seg: &Segment,
        pkt: Bytes,
        cfg: &Cfg,
        out: &mut Vec<Action>,
        stats: &mut SnoopStats,
    ) {
        self.last_activity = now;
        let len = seg.seg_len();
        let end = seg.seq + len;
        let fin_flag = if seg.fin() { flag::FIN } else { 0 };
        if seg.fin() {
            self.fin_end = Some(end);
        }

        if seg.seq >= self.last_seq_seen {
            // Case 1: a new packet in the normal increasing sequence (a gap before it means the missing
            // packet was lost upstream; it is still new). Cache unless past the high-water mark (§6:
            // "only packets ... out of order and earlier in sequence than the last one seen" are cached
            // past it), forward, and timestamp one packet per window.
            self.last_seq_seen = end;
            let tx_idx = self.tx_count;
            self.tx_count += 1;
            let s = CachedSeg {
                seq: seg.seq,
                len,
                pkt: pkt.clone(),
                local_rexmits: 0,
                flags: fin_flag,
                sent_at: now,
                tx_idx,
                tx: SegTx::queued(),
            };
            let under_high_water = self.cache_bytes + len as usize <= cfg.high_water;
            if under_high_water && self.cache_held + s.held() <= cfg.max_held {
                let at = self.cache.len();
                self.cache_insert_at(at, s, stats);
                stats.cache_bytes_peak = stats.cache_bytes_peak.max(self.cache_bytes as u64);
            } else {
                stats.packets_uncached_high_water += 1;
            }
            if self.probe.is_none() {
                self.probe = Some(Probe { end, sent: now, epoch: self.rexmit_epoch, transmitted: false });
            }
            out.push(Action::Forward(Side::ToMobile, pkt));
            return;
        }

        // Out of sequence: below the last sequence number seen, so the sender (or the network) sent it again.
        stats.sender_retransmissions_seen += 1;
        self.rexmit_epoch = self.rexmit_epoch.wrapping_add(1);

        if let Some(a) = self.last_ack {
            if end <= a {
                // Case 2, at or below the last ACK: the mobile has every byte of it. The ACK that said so
                // may have been lost on the wired path, so drop the packet and regenerate that ACK (never
                // more than the mobile acknowledged: it is the mobile's own last ACK). A segment that is
                // only *partly* acknowledged (seq < last ACK < end) still carries bytes the mobile needs and
                // is forwarded below.
                out.push(Action::Drop(DropReason::AlreadyAcked));
                if let Some(ack) = self.regenerate_ack(cfg) {
                    stats.acks_regenerated += 1;
                    out.push(Action::Inject(Side::ToWired, ack));
                }
                return;
            }
        }

        let tx_idx = self.tx_count;
        self.tx_count += 1;
        let pos = self.cache.partition_point(|c| c.seq < seg.seq);
        if let Some(c) = self.cache.get_mut(pos).filter(|c| c.seq == seg.seq && c.len == len) {
            // Case 2, above the last ACK: cached earlier and very likely never reached the mobile. Forward
            // it; the sender is now recovering this packet, so mark it and reset its local retransmission
            // count (§3.1.2, last paragraph).
            c.local_rexmits = 0;
            c.set(flag::SENDER_REXMIT);
            c.sent_at = now;
            c.tx_idx = tx_idx;
            c.tx.pending = c.tx.pending.saturating_add(1);
            c.clear(flag::PROVEN_LOST);
            out.push(Action::Forward(Side::ToMobile, pkt));
            return;
        }

        // Case 3: out of sequence and not cached (lost upstream by congestion, or reordered, or resent with
        // different segmentation). Forward, cache (an older packet is always accepted, even past the
        // high-water mark, §6), and mark it sender-retransmitted so its DUPACKs go to the sender.
        // Cached segments it overlaps are replaced by it, keeping the cache sorted and non-overlapping.
        let mut lo = pos;
        if lo > 0 && self.cache[lo - 1].end() > seg.seq {
            lo -= 1;
        }
        let mut hi = pos;
        while hi < self.cache.len() && self.cache[hi].seq < end {
            hi += 1;
        }
        for _ in lo..hi {
            if let Some(c) = self.cache.remove(lo) {
                self.uncount(&c);
            }
        }
        let s = CachedSeg {
            seq: seg.seq,
            len,
            pkt: pkt.clone(),
            local_rexmits: 0,
            flags: flag::SENDER_REXMIT | flag::UNSEEN_COPIES | fin_flag,
            sent_at: now,
            tx_idx,
            tx: SegTx::queued(),
        };
        self.cache_insert_at(lo, s, stats);
        // Hard bound: twice the high-water mark (or the memory limit). Older packets matter more (§6: they
        // "cause sender timeouts earlier"), so the newest are dropped from the cache to make room.
        while self.cache_bytes > cfg.hard_limit || self.cache_held > cfg.max_held {
            let Some(c) = self.cache.pop_back() else { break };
            self.uncount(&c);
            stats.cache_evictions += 1;
        }
        stats.cache_bytes_peak = stats.cache_bytes_peak.max(self.cache_bytes as u64);
        out.push(Action::Forward(Side::ToMobile, pkt));
    }

    /// An ACK for the last ACK seen, as the mobile would send it: source the MH's address and port,
    /// destination the FH, the MH's next sequence number and last timestamps, the MH's last advertised
    /// window, no payload, correct checksums (built by `lasthop_wire`).
    fn regenerate_ack(&self, cfg: &Cfg) -> Option<Bytes> {
        let ack = self.last_ack?;
        let mh = self.mh_last?;
        let repr = TcpRepr {
            src_port: self.key.dst_port,
            dst_port: self.key.src_port,
            seq: mh.seq,
            ack: Some(ack),
            flags: TcpFlags::NONE,
            window: self.mh_window,
            timestamps: mh.timestamps,
            ..TcpRepr::default()
        };
        Some(repr.emit_ipv4(self.key.dst, self.key.src, 0, cfg.inject_ttl, &[]))
    }

    // ---- snoop_ack(): Balakrishnan 1995 §3.1.2 ---------------------------------------------------------------

    /// A SYN from the mobile (its SYN, or its SYN-ACK to the FH's SYN): a new incarnation; re-initialise
    /// and learn the first ACK and window.
    pub fn handle_syn_from_mobile(&mut self, now: Time, seg: &Segment) {
        self.reset(now);
        if seg.has_ack() {
            self.last_ack = Some(seg.ack);
            self.last_seq_seen = seg.ack;
            self.next_exp_ack = seg.ack + 1;
        }
        self.mh_window = seg.window;
        self.mh_last = Some(MhLast::of(seg));
    }

    /// Any packet from the mobile on this connection (pure ACK, or data with a piggybacked ACK).
    pub fn handle_ack(
        &mut self,
        now: Time,
        seg: &Segment,
        pkt: Bytes,
        cfg: &Cfg,
        out: &mut Vec<Action>,
        stats: &mut SnoopStats,
    ) -> After {
        self.last_activity = now;
        if !seg.has_ack() {
            out.push(Action::Forward(Side::ToWired, pkt));
            return After::Keep;
        }
        let ack = seg.ack;
        let carries = seg.seg_len() > 0; // data, SYN or FIN from the mobile: never dropped, never a DUPACK
        let new_ack_sample = self.tx_mode && !carries && self.last_ack.is_some_and(|l| ack > l);
        self.tx.on_mobile_ack(now, new_ack_sample, cfg);
        match self.last_ack {
            Some(last) if ack < last => {
                if carries {
                    // Stale ACK field on a packet with data for the FH: the data matters, forward it.
                    out.push(Action::Forward(Side::ToWired, pkt));
                } else {
                    // Case 2: a spurious ACK, below the last one seen: discard (§3.1.2).
                    stats.spurious_acks_dropped += 1;
                    out.push(Action::Drop(DropReason::SpuriousAck));
                }
                After::Keep
            }
            Some(last) if ack == last => {
                let window_grew = seg.window > self.mh_window;
                self.mh_window = seg.window;
                self.mh_last = Some(MhLast::of(seg));
                let outstanding = self.last_seq_seen > last || !self.cache.is_empty();
                if carries || window_grew || !outstanding {
                    // Not a DUPACK: data, a window update (a larger window must reach the sender, or a
                    // zero-window sender would stall), or nothing is outstanding.
                    out.push(Action::Forward(Side::ToWired, pkt));
                } else {
                    self.on_dupack(now, pkt, cfg, out, stats);
                }
                After::Keep
            }
            _ => self.on_new_ack(now, seg, pkt, cfg, out, stats),
        }
    }

    /// Case 1: a new ACK (§3.1.2): free the acknowledged packets, update the wireless RTT once per window
    /// if the window was free of retransmissions, forward.
    fn on_new_ack(
        &mut self,
        now: Time,
        seg: &Segment,
        pkt: Bytes,
        cfg: &Cfg,
        out: &mut Vec<Action>,
        stats: &mut SnoopStats,
    ) -> After {
        let ack = seg.ack;
        // Segments freed, and whether they covered the acknowledged range without gaps (from the old ACK to
        // the new one); only then does `freed` count the packets the mobile got in between.
        let mut freed = 0u32;
        let mut covered = self.last_ack;
        // tx mode: the highest transmission index known to have arrived among the freed segments.
        let mut received = 0u64;
        // Transmissions of the packet that was needed up to this ACK numbered at most `old_bound` are lost
        // (a later one had reached the mobile while it was still missing).
        let old_bound = self.tx.received_bound(self.dupacks_seen);
        let mut hop_sample: Option<u64> = None;
        while let Some(h) = self.cache.front() {
            if h.end() <= ack {
                freed += 1;
                covered = covered.filter(|c| h.seq <= *c).map(|_| h.end());
                if !h.has(flag::LOCAL_REXMIT) {
                    // Only a copy that took the normal queue: a local retransmission went at priority and
                    // overtook the packets forwarded before it, which may all still be on their way.
                    self.acked_tx = self.acked_tx.max(h.tx_idx + 1);
                }
                if h.tx.count > 0 && !h.has(flag::UNSEEN_COPIES) {
                    let was_needed = freed == 1 && self.last_ack.is_some_and(|a| h.seq <= a);
                    let exact = h.tx.single_live() || (was_needed && h.tx.prev <= old_bound);
                    received = received.max(if exact { h.tx.last } else { h.tx.live_from });
                    if exact {
                        // Karn-clean: the copy that arrived is known. Transmission to ACK.
                        let rtt = now.0.saturating_sub(h.tx.at.0);
                        hop_sample = Some(hop_sample.map_or(rtt, |x| x.min(rtt)));
                    }
                }
                if let Some(h) = self.cache.pop_front() {
                    self.uncount(&h);
                }
            } else {
                break;
            }
        }
        if let Some(p) = self.probe {
            if ack >= p.end {
                if p.epoch == self.rexmit_epoch && (p.transmitted || !self.tx_mode) {
                    // §6: srtt = (1 − α)·srtt + α·sample with α = 1/4 on the NEW sample, in integer
                    // arithmetic (ns-2 weighted the new sample 7/8). The sample is clamped so that one
                    // absurd measurement cannot push the timer out of reach.
                    let sample = (now.0.saturating_sub(p.sent.0)).min(cfg.max_rtx_timeout);
                    self.srtt = Some(match self.srtt {
                        None => sample,
                        Some(s) => s - s / 4 + sample / 4,
                    });
                    stats.rtt_samples += 1;
                }
                self.probe = None;
            }
        }
        let episode_over = ack >= self.next_exp_ack;
        self.last_ack = Some(ack);
        if ack > self.last_seq_seen {
            // State picked up mid-connection, or packets that bypassed us: trust the mobile.
            self.last_seq_seen = ack;
        }
        self.mh_window = seg.window;
        self.mh_last = Some(MhLast::of(seg));
        // The expected DUPACKs were for the packet now acknowledged.
        self.exp_dupacks = 0;
        self.rtx_backoff = 0;
        if episode_over {
            self.next_exp_ack = ack + 1;
        }
        out.push(Action::Forward(Side::ToWired, pkt));
        // A further hole at a partial ACK. Each DUPACK seen for the old ACK was a packet after the old hole
        // reaching the mobile; `freed - 1` of them were packets up to the new ACK. If there were more, some
        // packet *beyond* the new ACK has arrived, so the packet at the new ACK was lost as well (the link
        // keeps order). The DUPACKs that would announce it have already been spent on the old hole and none
        // may come, so wait for none: retransmit it now, as on a first DUPACK (§3.1.2 case 3). Without
        // this, each further hole waits for a timer (the persist timer, 200 ms, outside a recovery), which
        // is how recovery stalls when half the packets are lost.
        let dupacks = std::mem::take(&mut self.dupacks_seen);
        self.rtx_deadline = None;
        if let Some(rtt) = hop_sample.filter(|_| self.tx_mode) {
            self.tx.sample_hop_rtt(now, rtt, cfg);
            stats.rtt_samples += 1;
        }
        if self.tx_mode {
            self.tx.on_new_ack(dupacks, received);
            // The exact partial-ACK rule: the segment at the new ACK was transmitted before one that reached
            // the mobile (e.g. before the local retransmission this ACK covers): it is lost, and no DUPACK
            // may announce it (the packets after it may have spent theirs on the old hole, or there may be
            // none). Retransmit it now, as on a first DUPACK (§3.1.2 case 3). One still queued is left alone.
            if let Some(i) = self.needed_head() {
                let h = &self.cache[i];
                if !h.has(flag::SENDER_REXMIT) && h.local_rexmits < cfg.max_local_rexmit && self.head_lost(h) {
                    self.retransmit_lost(i, now, cfg, out, stats);
                }
            }
        }
        let contiguous = freed > 0 && covered == Some(ack);
        let beyond = if contiguous && !self.tx_mode { dupacks.saturating_sub(freed - 1) } else { 0 };
        if beyond > 0 {
            if let Some(h) = self
                .cache
                .front()
                .filter(|h| h.seq <= ack && !h.has(flag::SENDER_REXMIT) && h.local_rexmits < cfg.max_local_rexmit)
            {
                let sent_after = self.tx_count - h.tx_idx - 1;
                self.retransmit(0, now, out);
                self.count_rexmit(Cause::Dupack, stats);
                // Packets sent after it that have not already reached the mobile (`beyond` of them have).
                self.exp_dupacks = sent_after.saturating_sub(u64::from(beyond)).min(u64::from(u32::MAX)) as u32;
                self.next_exp_ack = self.cache[0].end();
                self.in_recovery = true;
            }
        }
        // During a local recovery the round-trip timer stays armed while the packet now needed was sent
        // before the latest local retransmission (it may be lost too, and a lost retransmission may never
        // be announced by a DUPACK); the recovery is over once that point is passed.
        if self.in_recovery {
            match self.cache.front() {
                Some(h) if h.seq <= ack && h.tx_idx < self.recover => {
                    if self.rtx_deadline.is_none() {
                        self.rtx_deadline = Some(Time(now.0.saturating_add(self.rto(cfg))));
                    }
                }
                _ => self.in_recovery = false,
            }
        }
        if self.cache.is_empty() && self.fin_end.is_some_and(|f| ack >= f) {
            return After::Remove;
        }
        After::Keep
    }

    /// Case 3: a DUPACK (§3.1.2).
    ///
    /// - The next packet is not cached, or the sender resent it: forward, the sender needs its DUPACKs.
    /// - DUPACKs still expected after a local retransmission: drop, counting down.
    /// - Otherwise the DUPACK is unexpected: the first one after a loss, or one more than the packets sent
    ///   before our retransmission can explain, i.e. the retransmission itself was lost. Retransmit at once
    ///   at high priority, drop the DUPACK, and expect one DUPACK per packet sent after the lost one before
    ///   this retransmission, *less the one in hand* (it is the first of them). After `max_local_rexmit`
    ///   local retransmissions of the same packet Snoop stops and forwards DUPACKs so the sender's fast
    ///   retransmit takes over (the sender's retransmission then resets the count, §3.1.2 last paragraph).
    fn on_dupack(&mut self, now: Time, pkt: Bytes, cfg: &Cfg, out: &mut Vec<Action>, stats: &mut SnoopStats) {
        self.dupacks_seen = self.dupacks_seen.saturating_add(1);
        if self.tx_mode {
            // The medium is not quiet while the mobile's ACKs still come: the round-trip timer counts from
            // the latest of them too (see `handle_transmit`).
            if let Some(d) = self.rtx_deadline {
                self.rtx_deadline = Some(d.max(Time(now.0.saturating_add(self.rto(cfg)))));
            }
        }
        let Some(i) = self.needed_head() else {
            forward_dupack(pkt, out, stats);
            return;
        };
        let head = &self.cache[i];
        if head.has(flag::SENDER_REXMIT) {
            forward_dupack(pkt, out, stats);
            return;
        }
        if self.tx_mode && (head.tx.count > 0 || head.tx.pending > 0) {
            // Transmit-timed: the DUPACK is unexpected exactly when it shows that a transmission later than
            // the head's latest one reached the mobile (`head_lost`): the first DUPACK after a loss in the
            // normal sequence, or one more than the transmissions between the hole and its retransmission
            // can explain (the retransmission was lost). Any other DUPACK is expected: dropped.
            if !self.head_lost(head) {
                self.suppress_dupack(out, stats);
                return;
            }
            if head.local_rexmits >= cfg.max_local_rexmit {
                forward_dupack(pkt, out, stats);
                return;
            }
            self.suppress_dupack(out, stats);
            self.retransmit_lost(i, now, cfg, out, stats);
            return;
        }
        if self.exp_dupacks > 0 {
            self.exp_dupacks -= 1;
            self.suppress_dupack(out, stats);
            return;
        }
        if head.local_rexmits >= cfg.max_local_rexmit {
            forward_dupack(pkt, out, stats);
            return;
        }
        // Packets sent after the lost one, not counting those sent before a transmission that has since
        // been acknowledged: their DUPACKs were spent on an earlier loss (a hole revealed by a partial ACK).
        let sent_after = self.tx_count - head.tx_idx.max(self.acked_tx.saturating_sub(1)) - 1;
        let end = head.end();
        self.suppress_dupack(out, stats);
        self.retransmit(i, now, out);
        self.count_rexmit(Cause::Dupack, stats);
        self.exp_dupacks = sent_after.saturating_sub(1).min(u64::from(u32::MAX)) as u32;
        self.next_exp_ack = end;
        // §6: the round-trip timer is armed by a DUPACK-caused local retransmission.
        self.in_recovery = true;
        self.rtx_deadline = Some(Time(now.0.saturating_add(self.rto(cfg))));
    }

    /// A packet from either endpoint that is neither data toward the mobile nor handled above (the FH's pure
    /// ACKs for the MH's data): only activity for the persist timer.
    pub fn handle_other(&mut self, now: Time) {
        self.last_activity = now;
    }

    // ---- inspection (tests, debugging) ----------------------------------------------------------------

    #[cfg(test)]
    pub fn cache(&self) -> &HeadInline<CachedSeg> {
        &self.cache
    }
    pub fn cache_bytes(&self) -> usize {
        self.cache_bytes
    }
    pub fn cache_held(&self) -> usize {
        self.cache_held
    }
    pub fn srtt(&self) -> Option<u64> {
        self.srtt
    }
    /// What Snoop did for this connection so far.
    pub fn stats(&self) -> ConnectionStats {
        ConnectionStats {
            local_retransmissions: self.counts.local_retransmissions.into(),
            dupacks_suppressed: self.counts.dupacks_suppressed.into(),
        }
    }
    /// DUPACKs still expected for the packet the mobile needs. Transmit-timed: those the transmissions
    /// after the one that produced the last ACK and before the needed packet's latest transmission can
    /// still cause, less those already seen.
    #[cfg(test)]
    pub fn exp_dupacks(&self) -> u32 {
        match self.needed_head().map(|i| &self.cache[i]) {
            Some(h) if self.tx_mode && h.tx.count > 0 => {
                let bound = self.tx.lost_bound(h, self.dupacks_seen);
                let still = h.tx.last.saturating_sub(bound - u64::from(self.dupacks_seen) + 1);
                still.saturating_sub(u64::from(self.dupacks_seen)) as u32
            }
            _ => self.exp_dupacks,
        }
    }
    #[cfg(test)]
    pub fn next_exp_ack(&self) -> SeqNum {
        self.next_exp_ack
    }
    #[cfg(test)]
    pub fn rtx_deadline(&self) -> Option<Time> {
        self.rtx_deadline
    }
    /// The receiver's longest ACK hold in the current window (ns), once seen.
    pub fn ack_hold(&self) -> Option<u64> {
        self.tx.ack_hold()
    }
    #[cfg(test)]
    pub fn last_ack(&self) -> Option<SeqNum> {
        self.last_ack
    }
}

/// Passes a DUPACK on to the sender, whose own recovery needs it.
fn forward_dupack(pkt: Bytes, out: &mut Vec<Action>, stats: &mut SnoopStats) {
    stats.dupacks_forwarded += 1;
    out.push(Action::Forward(Side::ToWired, pkt));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::offset_of;

    proptest::proptest! {
        /// The guesses of `transmitted_position` never change its answer: it is the search's, for caches
        /// of one segment size or many, contiguous or with holes, and for any sequence number.
        #[test]
        fn transmitted_position_is_the_searched_one(
            start in proptest::prelude::any::<u32>(),
            pieces in proptest::collection::vec((0u32..3, 1u32..1500, proptest::prelude::any::<bool>()), 0..40),
            pick in proptest::prelude::any::<proptest::sample::Index>(),
            offset in 0u32..3000,
        ) {
            let key = FlowKey { src: std::net::Ipv4Addr::LOCALHOST, src_port: 1, dst: std::net::Ipv4Addr::LOCALHOST, dst_port: 2 };
            let mut c = Conn::new(key, Time::ZERO);
            let mut seq = SeqNum(start);
            for &(gap, len, mss) in &pieces {
                seq = seq + gap * 1460;
                let len = if mss { 1460 } else { len };
                let at = c.cache.len();
                c.cache.insert(at, CachedSeg {
                    seq,
                    len,
                    pkt: Bytes::new(),
                    local_rexmits: 0,
                    flags: 0,
                    sent_at: Time::ZERO,
                    tx_idx: 0,
                    tx: SegTx::queued(),
                });
                seq = seq + len;
            }
            let cached: Vec<SeqNum> = (0..c.cache.len()).map(|i| c.cache[i].seq).collect();
            let queries = cached.iter().copied().chain([SeqNum(start) + offset, seq, SeqNum(start)]);
            let picked = (!cached.is_empty()).then(|| cached[pick.index(cached.len())]);
            for q in queries.chain(picked) {
                proptest::prop_assert_eq!(c.transmitted_position(q), c.cache.partition_point(|s| s.seq < q));
            }
        }
    }

    /// Where the comments in `Conn` say each group lies, counted from the slot's start (the connection
    /// sits 16 bytes into its slot: `table::tests::a_slot_is_aligned_to_a_cache_line`).
    #[test]
    fn hot_fields_come_first() {
        let at = |offset: usize| offset + 16;
        assert!(at(offset_of!(Conn, persist_base) + 8) <= 64, "line 0");
        assert!(at(offset_of!(Conn, rtx_deadline)) >= 64 && at(offset_of!(Conn, cache_held) + 8) <= 128, "line 1");
        assert!(at(offset_of!(Conn, probe)) >= 128 && at(offset_of!(Conn, in_recovery) + 1) <= 192, "line 2");
        let hot_end = at(offset_of!(Conn, cache) + std::mem::size_of::<HeadInline<CachedSeg>>());
        assert!(at(offset_of!(Conn, srtt)) >= 192 && hot_end <= 6 * 64, "lines 3 to 5");
        assert_eq!(offset_of!(Conn, tx), offset_of!(Conn, cache) + std::mem::size_of::<HeadInline<CachedSeg>>());
        assert!(at(std::mem::size_of::<Conn>()) <= 7 * 64, "the slot is seven lines");
    }
}
