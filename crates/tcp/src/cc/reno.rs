//! Reno's fast recovery (Jacobson 1990, the 4.3BSD-Reno stack; RFC 5681 §3.2): after the fast retransmit
//! cwnd is ssthresh plus the `dupack_threshold` segments the duplicate ACKs say have left the network, and
//! each further duplicate ACK inflates it by one segment, so new data can go while the hole is filled.
//! The first ACK of new data deflates cwnd to ssthresh and ends recovery, so several losses in one window
//! usually end in a timeout (Balakrishnan 1995 measured exactly this stack).

use super::{AfterFastRetransmit, AnyController, Controller, Recovery, RecoveryAck};

/// Reno keeps no state of its own: the window is the controller's, the recovery phase the sender's.
#[derive(Debug, Clone, Default)]
pub(crate) struct Reno;

impl Reno {
    /// The first new ACK (Reno) or the one covering `recover` (NewReno): deflate and leave.
    pub(crate) fn leave(cc: &mut AnyController) -> RecoveryAck {
        cc.set_window(cc.ssthresh());
        RecoveryAck::Over
    }
}

impl Recovery for Reno {
    fn on_fast_retransmit(&mut self, cc: &mut AnyController, _: u64, mss: u32, dupthresh: u32) -> AfterFastRetransmit {
        cc.set_window(cc.ssthresh().saturating_add(dupthresh.saturating_mul(mss)));
        AfterFastRetransmit::Recovery
    }

    fn on_dupack(&mut self, cc: &mut AnyController, mss: u32) {
        // Each duplicate ACK means a segment left the network (RFC 5681 §3.2 step 4).
        cc.set_window(cc.window().saturating_add(mss));
    }

    fn on_ack(&mut self, cc: &mut AnyController, _una: u64, _recover: u64, _acked: u64, _mss: u32) -> RecoveryAck {
        Reno::leave(cc)
    }
}

#[cfg(test)]
mod tests {
    use crate::tests::{ack, cfg, drain_sender, established, open_window, MSS};
    use crate::Variant;
    use lasthop_wire::Time;
    use std::time::Duration;

    /// A timeout during fast recovery ends it: cwnd one segment, ssthresh half of SND.MAX − SND.UNA,
    /// go-back-N from SND.UNA, and later duplicate ACKs inflate nothing.
    #[test]
    fn timeout_in_recovery_ends_it_and_stops_inflation() {
        let (mut s, first) = established(cfg(Variant::Reno), 1_000_000);
        let (flight, now) = open_window(&mut s, first, 8, Time::from_millis(100));
        let una = flight[0].off;
        for _ in 0..4 {
            s.handle_packet(now, &ack(una, &[]));
        }
        drain_sender(&mut s, now);
        assert_eq!((s.cwnd(), s.in_recovery()), (8 * MSS, true), "ssthresh 4 + 3 + one inflation");
        let later = s.poll_timeout().unwrap() + Duration::from_millis(1);
        s.handle_timeout(later);
        assert_eq!((s.cwnd(), s.ssthresh(), s.in_recovery()), (MSS, 4 * MSS, false));
        let out = drain_sender(&mut s, later);
        assert_eq!(out.iter().map(|g| (g.off, g.rexmit)).collect::<Vec<_>>(), vec![(una, Some(true))]);
        s.handle_packet(later, &ack(una, &[]));
        assert_eq!(s.cwnd(), MSS, "no inflation outside recovery");
    }
}
