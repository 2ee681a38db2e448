//! Congestion control and loss recovery of the sender, for every variant, in one place: what happens on
//! a new cumulative ACK, a duplicate ACK and a retransmit timeout, and which segment SACK recovery sends
//! next, and the ELN-aware retransmission (Balakrishnan 1998), which touches neither `cwnd` nor `ssthresh`.
//!
//! - Tahoe: fast retransmit on the `dupack_threshold`-th dupack, then slow start from one segment, from the
//!   highest segment sent (BSD) or, with `tahoe_go_back`, from SND.UNA (ns-2; Eom 2002 Fig. 11).
//! - Reno (RFC 5681 §3.2): fast retransmit and fast recovery with window inflation; the first new ACK
//!   deflates to `ssthresh` and ends recovery, so several losses in one window usually end in a timeout.
//! - NewReno (RFC 6582): partial ACKs retransmit the next hole and keep recovery until `recover`.
//! - SACK (RFC 6675): scoreboard, `pipe`, NextSeg; falls back to NewReno if the peer refused SACK.
//!
//! - ELN (`TcpConfig::eln`, Balakrishnan 1998 §3 "ELN Implementation"): an ACK whose ELN bit is set reports a
//!   wireless corruption loss of the segment it asks for. After `eln_rexmt_thresh` ELN ACKs with one
//!   acknowledgment number (a new ACK counts as the first) that segment is retransmitted at once, with no
//!   change to `cwnd`, `ssthresh` or the recovery state, and ELN DUPACKs never feed the dupack counter
//!   or Reno's window inflation. `eln_last_rxmit` keeps it to once per round trip: the same segment is
//!   not ELN-retransmitted again until one smoothed RTT (the current RTO before any sample) has passed
//!   since the last time, so that the DUPACKs every later segment of the window triggers do not each
//!   resend it; once new data is acknowledged the next segment is a different one and may go at once.
//!   (ns-2's `tcp_eln` never resends the same segment by ELN; Balakrishnan 1998's "at most once during the
//!   course of a single round-trip" also recovers a lost ELN retransmission without a timeout.) The
//!   retransmit timer is left running, as ns-2 does, so several losses in one window still end in the
//!   coarse timeout the paper reports. ACKs without ELN keep the ordinary algorithm of the variant.
//!
//! A timeout always does the same (BSD `tcp_timers`): ssthresh = max(flight/2, 2·MSS), cwnd = 1 MSS,
//! go-back-N from SND.UNA, back off the RTO, forget SACK information (RFC 2018 §5.1). Fast retransmit
//! after a handoff (Caceres 1995, `Sender::retransmit_now`) does the same at once, without the backoff; a
//! receiver's handoff mark that finds the sender still resending the window of its last go-back only
//! resends from SND.UNA, with no second cut (`Sender::resume_go_back`).

use crate::config::{RecoverGuard, RtoRestart, SsthreshFrom, Variant};
use crate::sender::Sender;
use lasthop_wire::Time;

impl Sender {
    /// The algorithm in effect: SACK needs the peer's agreement.
    pub(crate) fn recovery_kind(&self) -> Variant {
        match self.cfg.variant {
            Variant::Sack if !self.sack_ok => Variant::NewReno,
            v => v,
        }
    }

    pub(crate) fn in_sack_recovery(&self) -> bool {
        self.in_recovery && self.recovery_kind() == Variant::Sack
    }

    fn dupthresh(&self) -> u32 {
        self.cfg.dupack_threshold.max(1)
    }

    /// ssthresh after a loss: half of what `ssthresh_from` measures, at least two segments (RFC 5681
    /// eq. 4). Segments sent by limited transmit are left out of a flight (RFC 5681 §3.2 step 2).
    fn halved_flight(&self) -> u32 {
        let mss = u64::from(self.mss);
        let half = match self.beh.ssthresh_from {
            SsthreshFrom::SndMax => self.max.saturating_sub(self.una).saturating_sub(self.lt_bytes) / 2,
            SsthreshFrom::Flight => {
                let outstanding = self.nxt.min(self.max).saturating_sub(self.una);
                outstanding.saturating_sub(self.scoreboard.sacked_bytes()).saturating_sub(self.lt_bytes) / 2
            }
            // Whole segments, as BSD (`/ 2 / t_maxseg`) and Linux (`snd_cwnd >> 1`, in packets) count.
            SsthreshFrom::Window => u64::from(self.cwnd.min(self.peer_window())) / 2 / mss * mss,
            SsthreshFrom::Cwnd => u64::from(self.cwnd) / mss / 2 * mss,
        };
        half.max(2 * mss).min(u64::from(u32::MAX)) as u32
    }

    /// Limited transmit (RFC 3042): how far beyond cwnd new data may go now, one segment per duplicate
    /// ACK below the threshold, outside recovery, and only for data never sent.
    pub(crate) fn limited_transmit_allowance(&self) -> u32 {
        if !self.beh.limited_transmit || self.in_recovery || self.nxt < self.max {
            return 0;
        }
        if self.dupacks == 0 || self.dupacks >= self.dupthresh() {
            return 0;
        }
        self.dupacks.min(2).saturating_mul(self.mss)
    }

    /// Whether duplicate ACKs that do not cover `recover` may start a fast retransmit (`recover_guard`).
    fn may_retransmit_again(&self) -> bool {
        match self.beh.recover_guard {
            RecoverGuard::Careful => false,
            RecoverGuard::None => true,
            // RFC 6582 §4.1: "the congestion window is greater than SMSS bytes and the difference between
            // highest_ack and prev_highest_ack is at most 4*SMSS bytes".
            RecoverGuard::AckHeuristic => self.cwnd > self.mss && self.last_advance <= 4 * u64::from(self.mss),
        }
    }

    /// Largest cwnd worth having: BSD caps it at the largest window it could ever use.
    fn cwnd_cap(&self) -> u32 {
        self.cfg.max_window.max(self.mss)
    }

    /// `acked` new bytes were cumulatively acknowledged (`una` already advanced).
    pub(crate) fn on_new_ack(&mut self, _now: Time, acked: u64) {
        if self.in_recovery {
            match self.recovery_kind() {
                Variant::NewReno if self.una < self.recover => {
                    // Partial ACK (RFC 6582 §3.2 step 3): the next hole is lost too; retransmit it, deflate
                    // by what was acked, add back one segment, stay in recovery.
                    self.rexmit_pending = Some(self.una);
                    self.timing = None;
                    let add_back = if acked >= u64::from(self.mss) { self.mss } else { 0 };
                    let acked = acked.min(u64::from(u32::MAX)) as u32;
                    self.cwnd = self.cwnd.saturating_sub(acked).saturating_add(add_back).max(self.mss);
                }
                Variant::Sack if self.una < self.recover => {
                    // Partial ACK: the pipe loop in `next_seg` sends what it allows.
                    self.high_rxt = self.high_rxt.max(self.una);
                }
                Variant::Sack => {
                    // RFC 6675 leaves cwnd at the ssthresh set on entry.
                    self.in_recovery = false;
                    self.dupacks = 0;
                }
                _ => {
                    // Reno's first new ACK and NewReno's full ACK: deflate the window and leave.
                    self.cwnd = self.ssthresh;
                    self.in_recovery = false;
                    self.dupacks = 0;
                }
            }
            return;
        }
        self.dupacks = 0;
        let incr = if self.cwnd < self.ssthresh {
            self.mss // slow start: one segment per ACK, as BSD
        } else {
            (u64::from(self.mss) * u64::from(self.mss) / u64::from(self.cwnd.max(1))).max(1) as u32
        };
        self.cwnd = self.cwnd.saturating_add(incr).min(self.cwnd_cap());
    }

    pub(crate) fn on_dupack(&mut self, now: Time) {
        self.dupacks += 1;
        let kind = self.recovery_kind();
        if self.in_recovery {
            if matches!(kind, Variant::Reno | Variant::NewReno) {
                // Each dupack means a segment left the network: inflate (RFC 5681 §3.2 step 4).
                self.cwnd = self.cwnd.saturating_add(self.mss);
            }
            return;
        }
        let thresh = self.dupthresh();
        let trigger = self.dupacks == thresh
            || (kind == Variant::Sack
                && self.dupacks < thresh
                && self.scoreboard.is_lost(self.una, self.max, self.mss, thresh));
        if !trigger {
            return;
        }
        // RFC 6582 §3.2 step 2 and RFC 6675 §5: dupacks for data sent before the last recovery or timeout
        // began start no new one. Tahoe and Reno as in 4.4BSD have no such guard (`recover_guard`).
        if self.una < self.recover && !self.may_retransmit_again() {
            return;
        }
        self.enter_recovery(now, kind);
    }

    pub(crate) fn enter_recovery(&mut self, now: Time, kind: Variant) {
        self.stats.fast_retransmits += 1;
        self.ssthresh = self.halved_flight();
        self.rexmit_pending = Some(self.una);
        self.timing = None;
        self.lt_bytes = 0;
        if self.beh.rto_restart == RtoRestart::Retransmit || self.rtx_deadline.is_none() {
            self.rtx_deadline = Some(self.rto.deadline(now));
        }
        match kind {
            Variant::Tahoe => {
                self.cwnd = self.mss;
                self.recover = self.max;
                if self.cfg.tahoe_go_back {
                    // ns-2's Tahoe (Eom 2002 Fig. 11): slow start from SND.UNA, resending what followed.
                    self.nxt = self.una;
                    self.go_back_max = self.max;
                }
            }
            Variant::Reno | Variant::NewReno => {
                self.cwnd = self.ssthresh.saturating_add(self.dupthresh().saturating_mul(self.mss));
                self.in_recovery = true;
                self.recover = self.max;
            }
            Variant::Sack => {
                self.cwnd = self.ssthresh;
                self.in_recovery = true;
                self.recover = self.max;
                self.high_rxt = self.una;
            }
        }
    }

    /// An ACK with the ELN bit set, acknowledging up to `ack` (already `una`).
    pub(crate) fn on_eln_ack(&mut self, now: Time, ack: u64) {
        self.stats.eln_acks_received += 1;
        if self.eln_ack != ack {
            self.eln_ack = ack;
            self.eln_count = 0;
        }
        self.eln_count = self.eln_count.saturating_add(1);
        if self.eln_count < self.cfg.eln_rexmt_thresh.max(1) || self.una >= self.max {
            return;
        }
        if let Some((off, at)) = self.eln_last_rxmit {
            let rtt = self.rto.srtt().unwrap_or_else(|| self.rto.current());
            if off == self.una && now.as_nanos() < at.as_nanos().saturating_add(rtt) {
                return;
            }
        }
        // Retransmit the missing segment; no ssthresh, cwnd, dupack or recovery change.
        self.rexmit_pending = Some(self.una);
        self.timing = None;
        self.eln_last_rxmit = Some((self.una, now));
        self.stats.eln_retransmits += 1;
    }

    pub(crate) fn on_timeout(&mut self, now: Time) {
        self.stats.timeouts += 1;
        self.go_back();
        self.rto.back_off();
        self.rtx_deadline = Some(self.rto.deadline(now));
    }

    /// Caceres 1995's fast retransmit after handoff for a sending host ([`Sender::retransmit_now`]): what the
    /// timeout does, at once and without backing off the timer.
    pub(crate) fn on_handoff_retransmit(&mut self, now: Time) {
        self.stats.fast_retransmits += 1;
        self.go_back();
        self.rtx_deadline = Some(self.rto.deadline(now));
    }

    /// Go-back-N from SND.UNA in slow start: ssthresh = half the flight, cwnd one segment, recovery and
    /// SACK information forgotten.
    fn go_back(&mut self) {
        self.ssthresh = self.halved_flight();
        self.lt_bytes = 0;
        self.cwnd = self.mss;
        self.recover = self.max;
        self.go_back_max = self.max;
        self.rewind();
    }

    /// The next segment to send is the one at SND.UNA (go-back-N); recovery and SACK information
    /// forgotten. No change to cwnd or ssthresh.
    fn rewind(&mut self) {
        self.nxt = self.una;
        self.in_recovery = false;
        self.dupacks = 0;
        self.high_rxt = self.una;
        self.scoreboard.clear();
        self.rexmit_pending = None;
        self.timing = None;
    }

    /// Caceres 1995's handoff signal reaching a sender that has already gone back to SND.UNA for the window
    /// it concerns (its timeout fired during the rendezvous, `una < go_back_max`): resend from SND.UNA at
    /// once what was sent since the go-back (into the gap), keeping cwnd and ssthresh, and restart the
    /// timer (its backoff stays until new data is acknowledged). When the sender is at SND.UNA already
    /// (the mark's own ACK acknowledged everything sent since), nothing changes. Counted in
    /// [`SenderStats::fast_retransmits`](crate::SenderStats) when something is resent.
    pub(crate) fn resume_go_back(&mut self, now: Time) {
        if self.nxt > self.una {
            self.stats.fast_retransmits += 1;
            self.rewind();
            self.rtx_deadline = Some(self.rto.deadline(now));
        }
    }

    /// RFC 6675 §5 step (C): the next segment SACK recovery may send, if `cwnd - pipe >= 1 SMSS`.
    pub(crate) fn next_seg(&self) -> Option<(u64, u32, bool)> {
        let thresh = self.dupthresh();
        let pipe = self.scoreboard.pipe(self.una, self.max, self.high_rxt, self.mss, thresh);
        if pipe + u64::from(self.mss) > u64::from(self.cwnd) {
            return None;
        }
        let holes = || self.scoreboard.holes(self.una, self.max, self.mss, thresh);
        // (1) the first lost octet not yet retransmitted
        for h in holes() {
            let s = h.start.max(self.high_rxt);
            if h.lost && s < h.end {
                let (len, fin) = self.shape(s, h.end);
                return Some((s, len, fin));
            }
        }
        // (2) new data, within the peer's window
        let fin_off = self.fin_offset();
        if self.max <= fin_off {
            let remaining = fin_off - self.max;
            if remaining == 0 && !self.is_stream_open() {
                return Some((self.max, 0, true));
            }
            let room = (self.una + u64::from(self.peer_window())).saturating_sub(self.max);
            let len = u64::from(self.mss).min(remaining).min(room);
            if len > 0 && (len == u64::from(self.mss) || len == remaining) {
                return Some((self.max, len as u32, len == remaining && !self.is_stream_open()));
            }
        }
        // (3) an octet not SACKed, not yet retransmitted and below the highest SACKed one, though not
        // known lost; data above every SACK block is merely in flight.
        let highest_sacked = self.scoreboard.highest().unwrap_or(self.una);
        for h in holes() {
            let s = h.start.max(self.high_rxt);
            if s < h.end && s < highest_sacked {
                let (len, fin) = self.shape(s, h.end.min(highest_sacked));
                return Some((s, len, fin));
            }
        }
        None
    }
}
