//! SACK-based loss recovery (RFC 6675, "A Conservative Loss Recovery Algorithm Based on Selective
//! Acknowledgment (SACK) for TCP", Blanton et al. 2012; SACK option RFC 2018): the sender's scoreboard of
//! SACKed ranges says which segments are lost (IsLost), recovery may start before the third duplicate ACK
//! when it already shows SND.UNA lost, cwnd is set to ssthresh and not inflated, and during recovery
//! `pipe` (the octets still in the network) against cwnd paces transmission, NextSeg choosing each
//! segment: first a lost one not yet retransmitted, then new data, then one below the highest SACKed
//! octet. Recovery ends on the ACK of `recover`. Without the peer's SACK-permitted the sender runs NewReno
//! ([`super::AnyRecovery::for_variant`]).

use super::{AfterFastRetransmit, AnyController, Controller, Recovery, RecoveryAck, Segment};
use crate::sender::Sender;

#[derive(Debug, Clone)]
pub(crate) struct Sack {
    /// RFC 6675 HighRxt: everything not SACKed below it was retransmitted in this recovery.
    high_rxt: u64,
}

impl Sack {
    pub(crate) fn new(una: u64) -> Sack {
        Sack { high_rxt: una }
    }
}

impl Recovery for Sack {
    fn lost_before_threshold(&self, s: &Sender) -> bool {
        s.scoreboard.is_lost(s.una, s.max, s.mss, s.dupthresh())
    }

    fn on_fast_retransmit(&mut self, _: &mut AnyController, una: u64, _: u32, _: u32) -> AfterFastRetransmit {
        // cwnd stays at the ssthresh the controller set (RFC 6675 §5 step (4.2)).
        self.high_rxt = una;
        AfterFastRetransmit::Recovery
    }

    fn on_ack(&mut self, _cc: &mut AnyController, una: u64, recover: u64, _acked: u64, _mss: u32) -> RecoveryAck {
        if una < recover {
            // Partial ACK: the pipe loop of `next_segment` sends what it allows.
            self.high_rxt = self.high_rxt.max(una);
            RecoveryAck::Continue
        } else {
            // RFC 6675 leaves cwnd at the ssthresh set on entry.
            RecoveryAck::Over
        }
    }

    fn on_retransmit(&mut self, end: u64) {
        self.high_rxt = self.high_rxt.max(end);
    }

    fn forget(&mut self, una: u64) {
        self.high_rxt = una;
    }

    /// RFC 6675's pipe.
    fn pipe(&self, s: &Sender) -> Option<u64> {
        Some(s.scoreboard.pipe(s.una, s.max, self.high_rxt, s.mss, s.dupthresh()))
    }

    /// NextSeg (RFC 6675 §5 step (C)): the next segment recovery may send, if `cwnd - pipe >= 1 SMSS`.
    fn next_segment(&self, s: &Sender) -> Option<Segment> {
        let thresh = s.dupthresh();
        let pipe = s.scoreboard.pipe(s.una, s.max, self.high_rxt, s.mss, thresh);
        if pipe + u64::from(s.mss) > u64::from(s.cc.window()) {
            return None;
        }
        let holes = || s.scoreboard.holes(s.una, s.max, s.mss, thresh);
        // (1) the first lost octet not yet retransmitted (IsLost, or RACK's mark: `crate::rack`)
        for h in holes() {
            let start = h.start.max(self.high_rxt);
            if (h.lost || s.rack_lost(start)) && start < h.end {
                let (len, fin) = s.shape(start, h.end);
                return Some((start, len, fin));
            }
        }
        // (2) new data, within the peer's window
        let fin_off = s.fin_offset();
        if s.max <= fin_off {
            let remaining = fin_off - s.max;
            if remaining == 0 && !s.is_stream_open() {
                return Some((s.max, 0, true));
            }
            let room = (s.una + u64::from(s.peer_window())).saturating_sub(s.max);
            let len = u64::from(s.mss).min(remaining).min(room);
            if len > 0 && (len == u64::from(s.mss) || len == remaining) {
                return Some((s.max, len as u32, len == remaining && !s.is_stream_open()));
            }
        }
        // (3) an octet not SACKed, not yet retransmitted and below the highest SACKed one, though not
        // known lost; data above every SACK block is merely in flight.
        let highest_sacked = s.scoreboard.highest().unwrap_or(s.una);
        for h in holes() {
            let start = h.start.max(self.high_rxt);
            if start < h.end && start < highest_sacked {
                let (len, fin) = s.shape(start, h.end.min(highest_sacked));
                return Some((start, len, fin));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use crate::harness::{RECEIVER_ADDR, SENDER_ADDR};
    use crate::tests::{ack, drain_sender, IRS, ISS, MSS};
    use crate::{Sender, TcpConfig, Variant};
    use lasthop_wire::Time;

    /// An open-stream sender past its handshake with eight segments in flight (offsets 1 + i·MSS) and
    /// nothing more to send.
    fn eight_in_flight(sack: bool) -> (Sender, Vec<u64>) {
        let c = TcpConfig { variant: Variant::Sack, sack, mss: MSS as u16, initial_cwnd: 8, ..TcpConfig::default() };
        let mut s = Sender::new_established(c, SENDER_ADDR, RECEIVER_ADDR, ISS, IRS);
        s.push(8 * u64::from(MSS));
        let offs: Vec<u64> = drain_sender(&mut s, Time::ZERO).iter().map(|g| g.off).collect();
        assert_eq!(offs.len(), 8);
        (s, offs)
    }

    fn rexmits(s: &mut Sender, now: Time) -> Vec<u64> {
        drain_sender(s, now).into_iter().filter(|g| g.rexmit == Some(true)).map(|g| g.off).collect()
    }

    /// Three segments SACKed above SND.UNA show it lost at once (IsLost); cwnd = ssthresh = half the flight,
    /// not inflated by later SACKs; `pipe` holds back until SACKs drain it; then NextSeg's rule (3) resends
    /// a hole below the highest SACKed octet though it is not known lost, and never the data above every
    /// SACK block.
    #[test]
    fn pipe_paces_recovery_and_rule_three_resends_below_the_highest_sack() {
        let (mut s, o) = eight_in_flight(true);
        let m = u64::from(MSS);
        let now = Time::from_millis(100);
        s.handle_packet(now, &ack(o[0], &[(o[1], o[3] + m)]));
        assert!(s.in_recovery(), "one SACK of three segments above the hole");
        assert_eq!(rexmits(&mut s, now), vec![o[0]]);
        assert_eq!((s.cwnd(), s.ssthresh()), (4 * MSS, 4 * MSS));
        // pipe: segments 4 to 7 (not lost) and the retransmission: 5 segments, no room.
        s.handle_packet(now, &ack(o[0], &[(o[1], o[3] + m), (o[5], o[5] + m)]));
        assert!(drain_sender(&mut s, now).is_empty());
        assert_eq!(s.cwnd(), 4 * MSS, "no inflation in SACK recovery");
        // pipe 3 segments (4, 7 and the retransmission): room for one, and segment 4 is all NextSeg has.
        s.handle_packet(now, &ack(o[0], &[(o[1], o[3] + m), (o[5], o[6] + m)]));
        assert_eq!(rexmits(&mut s, now), vec![o[4]]);
        assert!(drain_sender(&mut s, now).is_empty());
        // The ACK of everything ends recovery at ssthresh.
        s.handle_packet(now, &ack(o[7] + m, &[]));
        assert_eq!((s.in_recovery(), s.cwnd(), s.stats().fast_retransmits), (false, 4 * MSS, 1));
    }

    /// A peer that did not agree to SACK gets NewReno's recovery: the third duplicate ACK, an inflated
    /// window and a retransmission per partial ACK.
    #[test]
    fn without_the_peers_agreement_recovery_is_newreno() {
        let (mut s, o) = eight_in_flight(false);
        let m = u64::from(MSS);
        let now = Time::from_millis(100);
        for _ in 0..3 {
            s.handle_packet(now, &ack(o[0], &[(o[1], o[3] + m)]));
        }
        assert_eq!(rexmits(&mut s, now), vec![o[0]]);
        assert_eq!(s.cwnd(), 7 * MSS, "ssthresh + 3 segments");
        s.handle_packet(now, &ack(o[2], &[]));
        assert_eq!(rexmits(&mut s, now), vec![o[2]]);
        assert!(s.in_recovery());
    }
}
