//! TCP Veno (Fu and Liew 2003, "TCP Veno: TCP Enhancement for Transmission Over Wireless Access
//! Networks", IEEE JSAC 21(2)) as Linux's `net/ipv4/tcp_veno.c` has it: Vegas's backlog estimate
//! N = cwnd × (RTT − BaseRTT) / RTT, with RTT the smallest sample since the last ACK and BaseRTT the
//! smallest ever, tells a random loss (N < β = 3 segments: ssthresh = cwnd × 4/5) from a congestive one
//! (ssthresh = cwnd / 2); in congestion avoidance with N ≥ β the window grows one segment every other
//! RTT instead of every RTT. Linux keeps N doubled (`V_PARAM_SHIFT` 1) and compares it with 3 << 1.
//! Below three RTT samples it is Reno. Growth is counted per segment acknowledged, as Linux does. Not
//! modelled: the reset after an idle period (`CA_EVENT_TX_START`), undo, PRR.

use super::linux::{segment_window_controller, SegmentWindow};
use super::{AckEvent, CongestionEvent, Controller};
use crate::config::TcpConfig;
use crate::rto::Rto;
use lasthop_wire::Time;

/// `V_PARAM_SHIFT`: N is kept in half segments.
const V_PARAM_SHIFT: u32 = 1;
/// `beta` = 3 << `V_PARAM_SHIFT`: the backlog, in half segments, from which a loss is congestive.
const BETA: u64 = 3 << V_PARAM_SHIFT;
/// `0x7fffffff`: no RTT sample yet.
const NO_RTT: u64 = 0x7fff_ffff;

#[derive(Debug, Clone)]
pub(crate) struct Veno {
    w: SegmentWindow,
    /// `minrtt`, `basertt`: µs + 1, as Linux counts them.
    minrtt: u64,
    basertt: u64,
    /// `cntrtt`: RTT samples so far.
    cntrtt: u32,
    /// `inc`: whether the next full window of ACKs in the congestive state adds a segment.
    inc: bool,
    /// `diff`: N in half segments, from the last ACK.
    diff: u64,
}

impl Veno {
    pub(crate) fn new(cfg: &TcpConfig, mss: u32) -> Veno {
        Veno { w: SegmentWindow::new(cfg, mss), minrtt: NO_RTT, basertt: NO_RTT, cntrtt: 0, inc: true, diff: 0 }
    }

    /// `tcp_veno_ssthresh`: 4/5 of cwnd after a random loss, half after a congestive one; at least 2.
    fn ssthresh_segments(&self) -> u32 {
        let cwnd = self.w.segments();
        if self.diff < BETA {
            (cwnd * 4 / 5).max(2)
        } else {
            (cwnd >> 1).max(2)
        }
    }

    fn cut(&mut self) {
        let ssthresh = self.ssthresh_segments();
        self.w.set_ssthresh_segments(ssthresh);
    }
}

impl Controller for Veno {
    segment_window_controller!();

    /// `tcp_veno_pkts_acked`.
    fn on_ack_event(&mut self, _now: Time, ack: &AckEvent) {
        self.w.on_acked(ack.acked);
        if let Some(rtt_ns) = ack.rtt_ns {
            let vrtt = rtt_ns / 1000 + 1;
            self.basertt = self.basertt.min(vrtt);
            self.minrtt = self.minrtt.min(vrtt);
            self.cntrtt += 1;
        }
    }

    /// `tcp_veno_cong_avoid`.
    fn on_ack(&mut self, _now: Time, acked: u64, _rtt: &Rto) {
        let mut acked = self.w.acked_segments(acked);
        if acked == 0 {
            return;
        }
        if self.cntrtt <= 2 {
            self.w.reno_cong_avoid(acked);
        } else {
            let cwnd = u64::from(self.w.segments());
            let target = ((cwnd * self.basertt) << V_PARAM_SHIFT) / self.minrtt;
            self.diff = (cwnd << V_PARAM_SHIFT).saturating_sub(target);
            if self.w.in_slow_start() {
                acked = self.w.slow_start(acked);
            }
            if acked > 0 {
                if self.diff < BETA {
                    // Non-congestive: one segment per RTT, as Reno.
                    self.w.cong_avoid_ai(self.w.segments(), acked);
                } else if self.w.cnt >= self.w.segments() {
                    // Congestive: one segment every other RTT.
                    if self.inc {
                        self.w.set_segments(self.w.segments() + 1);
                        self.inc = false;
                    } else {
                        self.inc = true;
                    }
                    self.w.cnt = 0;
                } else {
                    self.w.cnt += acked;
                }
            }
            if self.w.segments() < 2 {
                self.w.set_segments(2);
            }
        }
        self.minrtt = NO_RTT;
    }

    fn on_congestion_event(&mut self, _now: Time, event: CongestionEvent) {
        match event {
            CongestionEvent::FastRetransmit { .. } => {
                self.cut();
                self.w.cwnd = self.w.ssthresh;
            }
            CongestionEvent::Timeout { .. } => {
                if self.w.loss_episode_begins() {
                    self.cut();
                }
                self.w.loss_window();
            }
            CongestionEvent::Eln => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1000;

    /// 20 segments in congestion avoidance (ssthresh 10).
    fn veno() -> (Veno, Rto) {
        let cfg = TcpConfig { initial_cwnd: 20, initial_ssthresh: 10_000, max_window: 1 << 30, ..TcpConfig::default() };
        let mut c = Veno::new(&cfg, 1460);
        c.start(MSS);
        (c, Rto::new(&cfg))
    }

    /// One ACK of one segment with an RTT sample of `rtt_ms`.
    fn ack(c: &mut Veno, rtt: &Rto, rtt_ms: u64) {
        let ev = AckEvent { una: 0, nxt: 0, acked: u64::from(MSS), rtt_ns: Some(rtt_ms * 1_000_000) };
        c.on_ack_event(Time::ZERO, &ev);
        c.on_ack(Time::ZERO, u64::from(MSS), rtt);
    }

    /// RTT = BaseRTT = 100 ms: N = 0, so congestion avoidance is Reno's (20 → 21 after 20 segments, the
    /// first three of them Reno's outright: fewer than three samples), and a loss is random:
    /// ssthresh = cwnd = ⌊21 × 4/5⌋ = 16.
    #[test]
    fn no_backlog_grows_as_reno_and_a_loss_cuts_a_fifth() {
        let (mut c, rto) = veno();
        for _ in 0..20 {
            ack(&mut c, &rto, 100);
        }
        assert_eq!(c.window(), 21 * MSS);
        assert_eq!(c.diff, 0);
        c.on_congestion_event(Time::ZERO, CongestionEvent::FastRetransmit { halved_flight: 2000 });
        assert_eq!((c.ssthresh(), c.window()), (16 * MSS, 16 * MSS));
    }

    /// The RTT rises to 150 ms over a BaseRTT of 100 ms: N = 20 × 50/150 = 6.7 ≥ 3 (Linux: 2N =
    /// 40 − ⌊40 × 100 001/150 001⌋ = 40 − 26 = 14 ≥ 6), the congestive state. Three ACKs at 100 ms left
    /// cnt at 3 (two of Reno, one of Veno's non-congestive growth); cwnd grows every other window of
    /// ACKs: once cnt has reached 20 (17 ACKs later) the next ACK adds a segment (inc starts set), the
    /// next full window (21 ACKs, then the 22nd) only re-arms inc, and 22 more add the next. A loss then
    /// halves: ⌊22 / 2⌋ = 11; a timeout before any new ACK halves again, ⌊11 / 2⌋ = 5, from one segment.
    #[test]
    fn a_backlog_grows_every_other_rtt_and_a_loss_halves() {
        let (mut c, rto) = veno();
        for _ in 0..3 {
            ack(&mut c, &rto, 100);
        }
        assert_eq!((c.diff, c.w.cnt), (0, 3));
        ack(&mut c, &rto, 150);
        assert_eq!(c.diff, 14);
        for _ in 0..16 {
            ack(&mut c, &rto, 150);
        }
        assert_eq!((c.window(), c.w.cnt), (20 * MSS, 20));
        ack(&mut c, &rto, 150);
        assert_eq!(c.window(), 21 * MSS, "the ACK after cnt reached cwnd");
        for _ in 0..22 {
            ack(&mut c, &rto, 150);
        }
        assert_eq!(c.window(), 21 * MSS, "every other RTT");
        for _ in 0..22 {
            ack(&mut c, &rto, 150);
        }
        assert_eq!(c.window(), 22 * MSS);
        c.on_congestion_event(Time::ZERO, CongestionEvent::FastRetransmit { halved_flight: 2000 });
        assert_eq!((c.ssthresh(), c.window()), (11 * MSS, 11 * MSS));
        c.on_congestion_event(Time::ZERO, CongestionEvent::Eln);
        assert_eq!(c.window(), 11 * MSS, "ELN: no congestion response");
        c.on_congestion_event(Time::ZERO, CongestionEvent::Timeout { halved_flight: 2000 });
        assert_eq!((c.ssthresh(), c.window()), (5 * MSS, MSS));
    }

    /// Slow start counts segments acknowledged, then a timeout with no backlog keeps 4/5.
    #[test]
    fn slow_start_then_a_random_timeout() {
        let cfg = TcpConfig { initial_cwnd: 2, max_window: 1 << 30, ..TcpConfig::default() };
        let (mut c, rto) = (Veno::new(&cfg, MSS), Rto::new(&cfg));
        c.start(MSS);
        for _ in 0..8 {
            ack(&mut c, &rto, 100);
        }
        assert_eq!(c.window(), 10 * MSS);
        c.on_congestion_event(Time::ZERO, CongestionEvent::Timeout { halved_flight: 2000 });
        assert_eq!((c.ssthresh(), c.window()), (8 * MSS, MSS));
    }
}
