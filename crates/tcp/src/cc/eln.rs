//! The ELN-aware sender's reaction (Balakrishnan 1998, "Explicit Loss Notification and Wireless Web
//! Performance", §3 "ELN Implementation"): an ACK whose ELN bit is set reports that the segment it asks for
//! was lost to wireless corruption, not congestion. After `eln_rexmt_thresh` ELN ACKs with one
//! acknowledgment number (a new ACK counts as the first) that segment is retransmitted at once, with no
//! change to `cwnd`, `ssthresh` or the recovery state ([`super::CongestionEvent::Eln`]); ELN DUPACKs never
//! feed the duplicate-ACK counter or Reno's inflation, and plain DUPACKs for a segment ELN already reported
//! are not counted either ([`Eln::reported`]).
//!
//! `last_rxmit` keeps the retransmission to "at most once during the course of a single round-trip": the
//! same segment is not ELN-retransmitted again until one smoothed RTT (the current RTO before any sample)
//! has passed since the last time, so that the DUPACKs every later segment of the window triggers do not
//! each resend it, while a lost ELN retransmission is still recovered without a timeout (ns-2's `tcp_eln`
//! never resends the same segment by ELN). Once new data is acknowledged the next segment is a different
//! one and may go at once. The retransmit timer is left running, as ns-2 does, so several losses in one
//! window still end in the coarse timeout the paper reports.

use crate::config::TcpConfig;
use crate::rto::Rto;
use lasthop_wire::Time;

#[derive(Debug, Clone)]
pub(crate) struct Eln {
    /// `TcpConfig::eln_rexmt_thresh`, at least 1.
    thresh: u32,
    /// The acknowledgment offset whose ELN ACKs `count` counts.
    ack: u64,
    count: u32,
    /// Balakrishnan 1998's `eln_last_rxmit`: the offset and time of the last ELN-triggered retransmission.
    last_rxmit: Option<(u64, Time)>,
}

impl Eln {
    pub(crate) fn new(cfg: &TcpConfig) -> Eln {
        Eln { thresh: cfg.eln_rexmt_thresh.max(1), ack: 0, count: 0, last_rxmit: None }
    }

    /// An ACK with the ELN bit set, acknowledging up to `una` (SND.UNA, already advanced) with SND.MAX at
    /// `max`. True when the segment at `una` is to be retransmitted now.
    pub(crate) fn on_eln_ack(&mut self, now: Time, una: u64, max: u64, rtt: &Rto) -> bool {
        if self.ack != una {
            self.ack = una;
            self.count = 0;
        }
        self.count = self.count.saturating_add(1);
        if self.count < self.thresh || una >= max {
            return false;
        }
        if let Some((off, at)) = self.last_rxmit {
            let rtt = rtt.srtt().unwrap_or_else(|| rtt.current());
            if off == una && now.as_nanos() < at.as_nanos().saturating_add(rtt) {
                return false;
            }
        }
        self.last_rxmit = Some((una, now));
        true
    }

    /// Whether an unmarked duplicate ACK for `ack` repeats a corruption loss ELN already reported: the
    /// receiver's DUPACKs that were on their way back when the base station saw the retransmission fill
    /// the hole are no longer marked (Balakrishnan 1998: the hole list is cleaned). Counting them would
    /// trigger the spurious fast retransmit and window halving that ELN exists to avoid.
    pub(crate) fn reported(&self, ack: u64) -> bool {
        self.ack == ack && self.count > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn threshold_per_ack_number_and_once_per_round_trip() {
        let cfg = TcpConfig { eln_rexmt_thresh: 2, tick_ms: 0.0, ..TcpConfig::default() };
        let mut rto = Rto::new(&cfg);
        let mut e = Eln::new(&cfg);
        let t = |ms: u64| Time(ms * MS);
        assert!(!e.reported(1));
        assert!(!e.on_eln_ack(t(0), 1, 10_000, &rto), "one ELN ACK is below the threshold");
        assert!(e.reported(1) && !e.reported(1001));
        assert!(e.on_eln_ack(t(0), 1, 10_000, &rto));
        // Before any RTT sample the current RTO (3 s) is the round trip.
        assert!(!e.on_eln_ack(t(2_999), 1, 10_000, &rto));
        assert!(e.on_eln_ack(t(3_000), 1, 10_000, &rto));
        rto.sample(t(3_000), t(3_200));
        assert!(!e.on_eln_ack(t(3_199), 1, 10_000, &rto));
        assert!(e.on_eln_ack(t(3_200), 1, 10_000, &rto), "one smoothed RTT (200 ms) later");
        // A new acknowledgment number starts the count again, and its segment may go at once.
        assert!(!e.on_eln_ack(t(3_201), 1001, 10_000, &rto));
        assert!(e.on_eln_ack(t(3_201), 1001, 10_000, &rto));
        // Nothing outstanding: nothing to retransmit.
        assert!(!e.on_eln_ack(t(4_000), 10_000, 10_000, &rto));
        assert!(!e.on_eln_ack(t(4_000), 10_000, 10_000, &rto));
    }

    #[test]
    fn a_zero_threshold_reads_as_one() {
        let cfg = TcpConfig { eln_rexmt_thresh: 0, ..TcpConfig::default() };
        let rto = Rto::new(&cfg);
        assert!(Eln::new(&cfg).on_eln_ack(Time::ZERO, 1, 2, &rto));
    }
}
