//! Tahoe (4.3BSD-Tahoe; Jacobson 1988, "Congestion Avoidance and Control", and its fast retransmit as
//! RFC 5681 §3.2 describes it): on the `dupack_threshold`-th duplicate ACK the segment at SND.UNA is
//! retransmitted and the sender slow-starts from one segment. There is no fast recovery. Slow start goes
//! on from the highest segment sent, as BSD's fast retransmit restores SND.NXT after sending the one
//! segment; with `TcpConfig::tahoe_go_back` it goes back to SND.UNA and resends what followed, as ns-2's
//! `TcpAgent::dupack_action` does (Eom 2002 §3.2, Fig. 11).

use super::{AfterFastRetransmit, AnyController, Controller, Recovery, RecoveryAck};
use crate::config::TcpConfig;

#[derive(Debug, Clone)]
pub(crate) struct Tahoe {
    /// `TcpConfig::tahoe_go_back`.
    go_back: bool,
}

impl Tahoe {
    pub(crate) fn new(cfg: &TcpConfig) -> Tahoe {
        Tahoe { go_back: cfg.tahoe_go_back }
    }
}

impl Recovery for Tahoe {
    fn on_fast_retransmit(&mut self, cc: &mut AnyController, _: u64, mss: u32, _: u32) -> AfterFastRetransmit {
        cc.set_window(mss);
        if self.go_back {
            AfterFastRetransmit::SlowStartFromUna
        } else {
            AfterFastRetransmit::SlowStart
        }
    }

    fn on_ack(&mut self, _: &mut AnyController, _: u64, _: u64, _: u64, _: u32) -> RecoveryAck {
        RecoveryAck::Over // never in recovery
    }
}

#[cfg(test)]
mod tests {
    use crate::tests::{ack, cfg, drain_sender, established, open_window, MSS};
    use crate::{RecoverGuard, TcpConfig, Variant};
    use lasthop_wire::Time;

    /// Three duplicate ACKs: one retransmission, cwnd one segment, ssthresh half the flight. When the
    /// retransmission's ACK leaves a second hole, three duplicate ACKs for it start nothing under the careful
    /// guard (they are for data sent before the first fast retransmit) and a second fast retransmit without.
    #[test]
    fn a_second_hole_retransmits_only_without_the_guard() {
        for (guard, second) in [(RecoverGuard::Careful, false), (RecoverGuard::None, true)] {
            let c = TcpConfig { recover_guard: Some(guard), ..cfg(Variant::Tahoe) };
            let (mut s, first) = established(c, 1_000_000);
            let (flight, now) = open_window(&mut s, first, 8, Time::from_millis(100));
            let (una, m) = (flight[0].off, u64::from(MSS));
            for _ in 0..3 {
                s.handle_packet(now, &ack(una, &[]));
            }
            let out = drain_sender(&mut s, now);
            assert_eq!(out.iter().map(|g| (g.off, g.rexmit)).collect::<Vec<_>>(), vec![(una, Some(true))]);
            assert_eq!((s.cwnd(), s.ssthresh(), s.in_recovery()), (MSS, 4 * MSS, false));
            s.handle_packet(now, &ack(una + m, &[]));
            assert_eq!(s.cwnd(), 2 * MSS, "slow start");
            assert!(drain_sender(&mut s, now).is_empty(), "seven segments are still outstanding");
            for _ in 0..3 {
                s.handle_packet(now, &ack(una + m, &[]));
            }
            let out = drain_sender(&mut s, now);
            assert_eq!(s.stats().fast_retransmits, 1 + u64::from(second), "{guard:?}");
            if second {
                assert_eq!(out.iter().map(|g| (g.off, g.rexmit)).collect::<Vec<_>>(), vec![(una + m, Some(true))]);
                assert_eq!((s.cwnd(), s.ssthresh()), (MSS, 7 * MSS / 2), "half of the seven outstanding");
            } else {
                assert!(out.is_empty());
                assert_eq!((s.cwnd(), s.ssthresh()), (2 * MSS, 4 * MSS));
            }
        }
    }
}
