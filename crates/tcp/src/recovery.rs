//! How the sender meets losses, for every algorithm: duplicate ACKs and the fast-retransmit trigger, new
//! ACKs during and outside recovery, the retransmit timeout, the ELN retransmission and Caceres 1995's
//! handoff go-back. What differs between algorithms is asked of the congestion controller and the loss
//! recovery of [`crate::cc`]; what is here is the same for all of them:
//!
//! - the duplicate-ACK threshold, RFC 6582's guard against a second fast retransmit for one window
//!   (`recover_guard`) and limited transmit (RFC 3042);
//! - ssthresh's measure of the flight (`ssthresh_from`, RFC 5681 eq. 4), handed to the controller;
//! - a timeout (BSD `tcp_timers`): ssthresh = max(flight/2, 2·MSS), cwnd = 1 MSS, go-back-N from SND.UNA,
//!   back off the RTO, forget SACK information (RFC 2018 §5.1). Fast retransmit after a handoff (Caceres
//!   1995, `Sender::retransmit_now`) does the same at once, without the backoff; a receiver's handoff mark
//!   that finds the sender still resending the window of its last go-back only resends from SND.UNA, with
//!   no second cut (`Sender::resume_go_back`);
//! - ELN ACKs (Balakrishnan 1998, [`crate::cc::eln`]) retransmit without touching either.

use crate::cc::{CongestionEvent, Controller, RecoveryAck};
use crate::config::{RecoverGuard, RtoRestart, SsthreshFrom};
use crate::sender::Sender;
use lasthop_wire::Time;

impl Sender {
    pub(crate) fn dupthresh(&self) -> u32 {
        self.cfg.dupack_threshold.max(1)
    }

    /// ssthresh after a loss: half of what `ssthresh_from` measures, at least two segments (RFC 5681
    /// eq. 4). Segments sent by limited transmit are left out of a flight (RFC 5681 §3.2 step 2).
    pub(crate) fn halved_flight(&self) -> u32 {
        let mss = u64::from(self.mss);
        let half = match self.beh.ssthresh_from {
            SsthreshFrom::SndMax => self.max.saturating_sub(self.una).saturating_sub(self.lt_bytes) / 2,
            SsthreshFrom::Flight => {
                let outstanding = self.nxt.min(self.max).saturating_sub(self.una);
                outstanding.saturating_sub(self.scoreboard.sacked_bytes()).saturating_sub(self.lt_bytes) / 2
            }
            // Whole segments, as BSD (`/ 2 / t_maxseg`) and Linux (`snd_cwnd >> 1`, in packets) count.
            SsthreshFrom::Window => u64::from(self.cc.window().min(self.peer_window())) / 2 / mss * mss,
            SsthreshFrom::Cwnd => u64::from(self.cc.window()) / mss / 2 * mss,
        };
        half.max(2 * mss).min(u64::from(u32::MAX)) as u32
    }

    /// Limited transmit (RFC 3042): how far beyond cwnd new data may go now, one segment per duplicate
    /// ACK below the threshold, outside recovery, and only for data never sent.
    pub(crate) fn limited_transmit_allowance(&self) -> u32 {
        if !self.beh.limited_transmit || self.recovery.in_recovery() || self.nxt < self.max {
            return 0;
        }
        if self.dupacks == 0 || self.dupacks >= self.dupthresh() {
            return 0;
        }
        self.dupacks.min(2).saturating_mul(self.mss)
    }

    /// Whether duplicate ACKs that do not cover `recover` may start a fast retransmit (`recover_guard`).
    pub(crate) fn may_retransmit_again(&self) -> bool {
        match self.beh.recover_guard {
            RecoverGuard::Careful => false,
            RecoverGuard::None => true,
            // RFC 6582 §4.1: "the congestion window is greater than SMSS bytes and the difference between
            // highest_ack and prev_highest_ack is at most 4*SMSS bytes".
            RecoverGuard::AckHeuristic => self.cc.window() > self.mss && self.last_advance <= 4 * u64::from(self.mss),
        }
    }

    /// `acked` new bytes were cumulatively acknowledged (`una` already advanced).
    pub(crate) fn on_new_ack(&mut self, now: Time, acked: u64) {
        if self.recovery.in_recovery() {
            match self.recovery.on_ack(&mut self.cc, self.una, self.recover, acked, self.mss) {
                RecoveryAck::Continue => {}
                RecoveryAck::RetransmitHead => {
                    self.rexmit_pending = Some(self.una);
                    self.timing = None;
                }
                RecoveryAck::Over => self.dupacks = 0,
            }
            return;
        }
        self.dupacks = 0;
        self.cc.on_ack(now, acked, &self.rto);
    }

    pub(crate) fn on_dupack(&mut self, now: Time) {
        self.dupacks += 1;
        if self.recovery.in_recovery() {
            self.recovery.on_dupack(&mut self.cc, self.mss);
            return;
        }
        let thresh = self.dupthresh();
        let trigger = self.dupacks == thresh || (self.dupacks < thresh && self.recovery.lost_before_threshold(self));
        if !trigger {
            return;
        }
        // RFC 6582 §3.2 step 2 and RFC 6675 §5: dupacks for data sent before the last recovery or timeout
        // began start no new one. Tahoe and Reno as in 4.4BSD have no such guard (`recover_guard`).
        if self.una < self.recover && !self.may_retransmit_again() {
            return;
        }
        self.enter_recovery(now);
    }

    /// Fast retransmit: the controller cuts the window, the recovery algorithm sets the window of its phase.
    pub(crate) fn enter_recovery(&mut self, now: Time) {
        self.stats.fast_retransmits += 1;
        let halved_flight = self.halved_flight();
        let prior_cwnd = self.cc.window();
        self.cc.on_congestion_event(now, CongestionEvent::FastRetransmit { halved_flight });
        self.rexmit_pending = Some(self.una);
        self.timing = None;
        self.lt_bytes = 0;
        if self.beh.rto_restart == RtoRestart::Retransmit || self.rtx_deadline.is_none() {
            self.rtx_deadline = Some(self.rto.deadline(now));
        }
        let thresh = self.dupthresh();
        if self.recovery.on_fast_retransmit(&mut self.cc, self.una, self.mss, thresh) {
            self.nxt = self.una;
            self.go_back_max = self.max;
        }
        if self.recovery.in_recovery() {
            self.prr_start(prior_cwnd);
        }
        self.recover = self.max;
    }

    /// An ACK with the ELN bit set, acknowledging up to SND.UNA: retransmit the segment there when the
    /// ELN reaction says so, with no congestion response.
    pub(crate) fn on_eln_ack(&mut self, now: Time) {
        self.stats.eln_acks_received += 1;
        if self.eln.on_eln_ack(now, self.una, self.max, &self.rto) {
            self.cc.on_congestion_event(now, CongestionEvent::Eln);
            self.rexmit_pending = Some(self.una);
            self.timing = None;
            self.stats.eln_retransmits += 1;
        }
    }

    pub(crate) fn on_timeout(&mut self, now: Time) {
        self.stats.timeouts += 1;
        self.go_back(now);
        if let (Some(rate), false) = (&mut self.rate, self.sack_ok) {
            rate.forget_dupacks(); // `tcp_timeout_mark_lost`
        }
        self.rto.back_off();
        self.rtx_deadline = Some(self.rto.deadline(now));
    }

    /// Caceres 1995's fast retransmit after handoff for a sending host ([`Sender::retransmit_now`]): what the
    /// timeout does, at once and without backing off the timer.
    pub(crate) fn on_handoff_retransmit(&mut self, now: Time) {
        self.stats.fast_retransmits += 1;
        self.go_back(now);
        self.rtx_deadline = Some(self.rto.deadline(now));
    }

    /// Go-back-N from SND.UNA in slow start: ssthresh = half the flight, cwnd one segment, recovery and
    /// SACK information forgotten.
    fn go_back(&mut self, now: Time) {
        let halved_flight = self.halved_flight();
        self.cc.on_congestion_event(now, CongestionEvent::Timeout { halved_flight });
        self.lt_bytes = 0;
        self.recover = self.max;
        self.go_back_max = self.max;
        self.rewind();
    }

    /// The next segment to send is the one at SND.UNA (go-back-N); recovery and SACK information
    /// forgotten. No change to cwnd or ssthresh.
    pub(crate) fn rewind(&mut self) {
        self.nxt = self.una;
        self.dupacks = 0;
        self.recovery.forget(self.una);
        if let Some(p) = &mut self.prr {
            p.forget();
        }
        self.rack_forget();
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
}
