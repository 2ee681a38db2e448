//! NewReno's fast recovery (Hoe 1996; RFC 6582 §3.2): Reno's ([`super::reno`]), except that an ACK of new
//! data below `recover` (SND.MAX when recovery began) is a partial ACK: the segment it now asks for is
//! lost too and is retransmitted at once, cwnd is deflated by what was acknowledged and one segment added
//! back, and recovery goes on. Only an ACK covering `recover` deflates to ssthresh and ends it, so several
//! losses of one window are repaired one per round trip without a timeout.

use super::reno::Reno;
use super::{AfterFastRetransmit, AnyController, Controller, Recovery, RecoveryAck};

#[derive(Debug, Clone, Default)]
pub(crate) struct NewReno {
    reno: Reno,
}

impl Recovery for NewReno {
    fn on_fast_retransmit(
        &mut self,
        cc: &mut AnyController,
        una: u64,
        mss: u32,
        dupthresh: u32,
    ) -> AfterFastRetransmit {
        self.reno.on_fast_retransmit(cc, una, mss, dupthresh)
    }

    fn on_dupack(&mut self, cc: &mut AnyController, mss: u32) {
        self.reno.on_dupack(cc, mss);
    }

    fn on_ack(&mut self, cc: &mut AnyController, una: u64, recover: u64, acked: u64, mss: u32) -> RecoveryAck {
        if una >= recover {
            return Reno::leave(cc);
        }
        // Partial ACK (RFC 6582 §3.2 step 3): deflate by what was acked, add back one segment if at least
        // one was acked.
        let add_back = if acked >= u64::from(mss) { mss } else { 0 };
        let acked = acked.min(u64::from(u32::MAX)) as u32;
        cc.set_window(cc.window().saturating_sub(acked).saturating_add(add_back).max(mss));
        RecoveryAck::RetransmitHead
    }
}

#[cfg(test)]
mod tests {
    use crate::tests::{ack, cfg, drain_sender, established, open_window, MSS};
    use crate::Variant;
    use lasthop_wire::Time;

    /// Three losses in one window (segments 0, 2 and 5 of 8): one fast retransmit, then one retransmission
    /// per partial ACK, each deflating cwnd by what it acknowledged and adding one segment back, until the
    /// ACK of `recover` sets cwnd to ssthresh. No timeout.
    #[test]
    fn each_partial_ack_retransmits_the_next_hole_and_deflates() {
        let (mut s, first) = established(cfg(Variant::NewReno), 1_000_000);
        let (flight, now) = open_window(&mut s, first, 8, Time::from_millis(100));
        let m = u64::from(MSS);
        let una = flight[0].off;
        let recover = una + 8 * m;
        for _ in 0..3 {
            s.handle_packet(now, &ack(una, &[]));
        }
        assert_eq!(drain_sender(&mut s, now)[0].off, una);
        assert_eq!((s.cwnd(), s.ssthresh()), (7 * MSS, 4 * MSS));
        // One more duplicate ACK (segment 3 or 4 arriving) inflates to 8.
        s.handle_packet(now, &ack(una, &[]));
        assert_eq!(s.cwnd(), 8 * MSS);
        // Partial ACK of two segments: 8 − 2 + 1 = 7, and segment 2 goes at once.
        s.handle_packet(now, &ack(una + 2 * m, &[]));
        let out = drain_sender(&mut s, now);
        assert_eq!((out[0].off, out[0].rexmit), (una + 2 * m, Some(true)));
        assert_eq!((s.cwnd(), s.in_recovery()), (7 * MSS, true));
        // Partial ACK of three segments: 7 − 3 + 1 = 5, segment 5 goes.
        s.handle_packet(now, &ack(una + 5 * m, &[]));
        let out = drain_sender(&mut s, now);
        assert_eq!((out[0].off, out[0].rexmit), (una + 5 * m, Some(true)));
        assert_eq!(s.cwnd(), 5 * MSS);
        // A partial ACK of less than a segment adds nothing back (and never drops below one segment).
        s.handle_packet(now, &ack(una + 5 * m + 10, &[]));
        assert_eq!(s.cwnd(), 5 * MSS - 10);
        s.handle_packet(now, &ack(recover, &[]));
        assert_eq!((s.cwnd(), s.in_recovery()), (4 * MSS, false));
        assert_eq!((s.stats().fast_retransmits, s.stats().timeouts), (1, 0));
    }
}
