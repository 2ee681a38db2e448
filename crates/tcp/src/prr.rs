//! Proportional Rate Reduction (RFC 6937; Linux `net/ipv4/tcp_input.c` `tcp_init_cwnd_reduction`,
//! `tcp_cwnd_reduction`, `tcp_end_cwnd_reduction`), on with `prr = true` (the `linux` profile's): during
//! fast recovery the window is not Reno's inflation nor a step to ssthresh but the flight plus what
//! PRR lets go on this ACK, so that the sender's rate falls smoothly to ssthresh over one round trip:
//! in proportion to the data delivered (ssthresh / prior cwnd) while the flight is above ssthresh,
//! and by slow start back up to it (at most one segment more than delivered, PRR-SSRB) once it has
//! fallen below. The first ACK of recovery always lets the fast retransmission go.
//!
//! The loss recovery algorithm still chooses *which* segment goes (`cc/`); PRR only sets how many.

use crate::cc::Controller;
use crate::sender::Sender;

#[derive(Debug, Clone, Default)]
pub(crate) struct Prr {
    /// A recovery is being paced: between the fast retransmit and the end of recovery.
    active: bool,
    /// `prior_cwnd`: cwnd when recovery began. All counts are in segments, as Linux keeps them.
    prior_cwnd: u64,
    /// `snd_ssthresh` set by the controller's cut.
    ssthresh: u64,
    /// `prr_delivered`: segments the receiver got during recovery (cumulatively acknowledged or SACKed).
    delivered: u64,
    /// `prr_out`: segments sent during recovery.
    out: u64,
    /// Without SACK, Linux counts each duplicate ACK as one segment delivered (`tcp_add_reno_sack`),
    /// and a partial ACK takes back all but one of them (`tcp_remove_reno_sacks`): bytes.
    reno_sacked: u64,
    /// The latest ACK let nothing go while a retransmission was ordered: it waits, as Linux retransmits
    /// only within the window PRR sets (`tcp_xmit_retransmit_queue`), for an ACK that delivers more or
    /// for the timeout.
    holds_retransmission: bool,
}

impl Prr {
    /// `tcp_init_cwnd_reduction`, after the controller's cut.
    fn start(&mut self, prior_cwnd: u64, ssthresh: u64) {
        *self = Prr { active: true, prior_cwnd: prior_cwnd.max(1), ssthresh, ..Prr::default() };
    }

    /// `sndcnt` of `tcp_cwnd_reduction`: the segments that may be sent now, `delivered` having just
    /// been delivered with `pipe` in flight.
    fn sndcnt(&mut self, delivered: u64, pipe: u64, una_advanced: bool) -> u64 {
        self.delivered += delivered;
        let sndcnt = if pipe > self.ssthresh {
            // Proportional: ceil(ssthresh · prr_delivered / prior_cwnd) − prr_out.
            let target = (u128::from(self.ssthresh) * u128::from(self.delivered)).div_ceil(u128::from(self.prior_cwnd));
            (target as u64).saturating_sub(self.out)
        } else {
            // Slow start back to ssthresh, at most one segment beyond what was delivered (PRR-SSRB).
            let mut n = self.out.saturating_sub(self.delivered).max(delivered);
            if una_advanced {
                n += 1;
            }
            n.min(self.ssthresh - pipe)
        };
        // "Force a fast retransmit upon entering fast recovery".
        sndcnt.max(u64::from(self.out == 0))
    }

    /// Recovery ended, by its last ACK or by a go-back (a timeout): nothing more to pace.
    pub(crate) fn forget(&mut self) {
        self.active = false;
        self.reno_sacked = 0;
    }

    /// A segment went out.
    pub(crate) fn on_sent(&mut self) {
        if self.active {
            self.out += 1;
        }
    }

    /// A retransmission ordered by loss recovery must wait (see `holds_retransmission`).
    pub(crate) fn holds_retransmission(&self) -> bool {
        self.active && self.holds_retransmission
    }
}

impl Sender {
    /// Fast recovery began with cwnd `prior_cwnd` before the controller's cut.
    pub(crate) fn prr_start(&mut self, prior_cwnd: u32) {
        let mss = self.mss.max(1);
        let ssthresh = u64::from(self.cc.ssthresh() / mss);
        if let Some(p) = &mut self.prr {
            p.start(u64::from(prior_cwnd / mss), ssthresh);
        }
    }

    /// An ACK was processed that found `sacked_before` bytes SACKed (or counted as such) and moved
    /// SND.UNA by `acked`: during recovery, cwnd becomes the flight plus PRR's `sndcnt`; when the ACK
    /// ended recovery, ssthresh (`tcp_end_cwnd_reduction`).
    pub(crate) fn prr_on_ack(&mut self, sacked_before: u64, acked: u64, dupack: bool) {
        if self.prr.as_ref().is_some_and(|p| p.active) {
            // Out of its field while it reads the sender, which it does not change but for cwnd.
            let mut p = self.prr.take().expect("checked");
            self.pace_recovery(&mut p, sacked_before, acked, dupack);
            self.prr = Some(p);
        }
    }

    fn pace_recovery(&mut self, p: &mut Prr, sacked_before: u64, acked: u64, dupack: bool) {
        let mss = u64::from(self.mss);
        if !self.recovery.in_recovery() {
            p.forget();
            self.cc.set_window(self.cc.ssthresh());
            return;
        }
        let sacked_after = if self.sack_ok {
            self.scoreboard.sacked_bytes()
        } else {
            if dupack {
                p.reno_sacked += mss;
            } else if acked > 0 {
                p.reno_sacked = p.reno_sacked.saturating_sub(acked.saturating_sub(mss));
            }
            p.reno_sacked = p.reno_sacked.min(self.max.saturating_sub(self.una));
            p.reno_sacked
        };
        let delivered = (acked + sacked_after).saturating_sub(sacked_before).div_ceil(mss);
        if delivered == 0 {
            return;
        }
        // The flight as Linux estimates it (`tcp_packets_in_flight`), and as the recovery algorithm's
        // transmission rule measures it against cwnd.
        let (pipe, send_rule_flight) = match self.recovery.pipe(self) {
            Some(pipe) => (pipe, pipe),
            None => {
                // SND.NXT − SND.UNA does not grow with a retransmission, which Linux counts in flight
                // (`retrans_out`): one ordered now takes its segment of the allowance.
                let flight = self.nxt.saturating_sub(self.una);
                let rexmit = if self.rexmit_pending.is_some() { mss } else { 0 };
                (flight.saturating_sub(p.reno_sacked), flight.saturating_sub(rexmit))
            }
        };
        let sndcnt = p.sndcnt(delivered, pipe.div_ceil(mss), acked > 0);
        p.holds_retransmission = sndcnt == 0 && self.rexmit_pending.is_some();
        self.cc.set_window((send_rule_flight + sndcnt * mss).min(u64::from(u32::MAX)) as u32);
    }

    /// Bytes counted as SACKed before an ACK is processed, for [`prr_on_ack`](Self::prr_on_ack).
    pub(crate) fn prr_sacked(&self) -> u64 {
        match &self.prr {
            None => 0,
            Some(_) if self.sack_ok => self.scoreboard.sacked_bytes(),
            Some(p) => p.reno_sacked,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6937 Appendix A's first example: cwnd 20, ssthresh 10, one loss; each
    /// ACK delivers one segment. PRR sends one segment for every two delivered while the flight is above
    /// ssthresh.
    #[test]
    fn proportional_while_the_flight_is_above_ssthresh() {
        let mut p = Prr::default();
        p.start(20, 10);
        let mut pipe = 19; // one segment lost, 19 in flight
        let mut sent = Vec::new();
        for _ in 0..8 {
            pipe -= 1; // a duplicate ACK: one segment left the network
            let n = p.sndcnt(1, pipe, false);
            for _ in 0..n {
                p.on_sent();
            }
            pipe += n;
            sent.push(n);
        }
        assert_eq!(sent, vec![1, 0, 1, 0, 1, 0, 1, 0], "the fast retransmit, then one per two delivered");
        assert_eq!(p.out, 4);
    }

    /// Once the flight has fallen below ssthresh (many losses), PRR-SSRB grows it back by at most one
    /// segment more than delivered per ACK, and never past ssthresh.
    #[test]
    fn slow_start_reduction_bound_below_ssthresh() {
        let mut p = Prr::default();
        p.start(20, 10);
        p.on_sent();
        assert_eq!(p.sndcnt(1, 4, true), 2, "delivered 1, plus one for the advancing SND.UNA");
        p.on_sent();
        p.on_sent();
        assert_eq!(p.sndcnt(3, 6, false), 3);
        assert_eq!(p.sndcnt(5, 8, true), 2, "capped at ssthresh − pipe");
    }
}
