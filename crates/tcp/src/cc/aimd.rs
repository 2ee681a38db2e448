//! Slow start and congestion avoidance (Jacobson 1988, "Congestion Avoidance and Control"; RFC 5681 §3.1),
//! counted as 4.4BSD's `tcp_input` does (Balakrishnan 1995 measured that stack): one segment per new ACK
//! below ssthresh, MSS²/cwnd above it, cwnd capped at the largest window the sender could use. With
//! `count_acked_segments` (the `linux` profile) they count the segments each ACK covers instead, as Linux's
//! `tcp_reno_cong_avoid` does (RFC 3465's byte counting in packets, [`SegmentWindow::reno_cong_avoid`]).
//! After a loss ssthresh is half the flight (RFC 5681 eq. 4); a timeout restarts from one segment (the loss
//! window), a fast retransmit from ssthresh, which the recovery algorithm then adjusts. An ELN loss
//! (Balakrishnan 1998) changes nothing.

use super::linux::SegmentWindow;
use super::{CongestionEvent, Controller};
use crate::config::TcpConfig;
use crate::rto::Rto;
use lasthop_wire::Time;

#[derive(Debug, Clone)]
pub(crate) struct Aimd {
    /// cwnd and ssthresh, bytes; in 4.4BSD's counting only its cwnd, ssthresh and MSS are used.
    w: SegmentWindow,
    /// `TcpConfig::count_acked_segments` in force: grow by Linux's rules on `w`.
    count_acked_segments: bool,
}

impl Aimd {
    pub(crate) fn new(cfg: &TcpConfig, mss: u32) -> Aimd {
        Aimd { w: SegmentWindow::new(cfg, mss), count_acked_segments: cfg.behaviours().count_acked_segments }
    }
}

impl Controller for Aimd {
    fn window(&self) -> u32 {
        self.w.cwnd
    }

    fn ssthresh(&self) -> u32 {
        self.w.ssthresh
    }

    fn start(&mut self, mss: u32) {
        // The initial window is not capped at `max_window` here (4.4BSD's window was never that small).
        self.w.mss = mss;
        self.w.cwnd = self.w.initial_segments.saturating_mul(mss);
    }

    fn on_ack(&mut self, _now: Time, acked: u64, _rtt: &Rto) {
        if self.count_acked_segments {
            let segments = self.w.acked_segments(acked);
            self.w.reno_cong_avoid(segments);
            return;
        }
        let (cwnd, mss) = (self.w.cwnd, self.w.mss);
        let incr = if cwnd < self.w.ssthresh {
            mss // slow start: one segment per ACK, as BSD
        } else {
            (u64::from(mss) * u64::from(mss) / u64::from(cwnd.max(1))).max(1) as u32
        };
        self.w.cwnd = cwnd.saturating_add(incr).min(self.w.cap());
    }

    fn on_congestion_event(&mut self, _now: Time, event: CongestionEvent) {
        match event {
            CongestionEvent::FastRetransmit { halved_flight } => {
                self.w.ssthresh = halved_flight;
                self.w.cwnd = halved_flight;
            }
            CongestionEvent::Timeout { halved_flight } => {
                self.w.ssthresh = halved_flight;
                self.w.cwnd = self.w.mss;
            }
            CongestionEvent::Eln => return,
        }
        // `tcp_init_cwnd_reduction` and `tcp_enter_loss` start the additive increase's count afresh.
        self.w.cnt = 0;
    }

    fn set_window(&mut self, cwnd: u32) {
        self.w.cwnd = cwnd;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::TcpConfig;

    fn aimd(initial_cwnd: u32, initial_ssthresh: u32) -> (Aimd, Rto) {
        let cfg = TcpConfig { initial_cwnd, initial_ssthresh, max_window: 20_000, ..TcpConfig::default() };
        let mut c = Aimd::new(&cfg, 1460);
        c.start(1000);
        (c, Rto::new(&cfg))
    }

    #[test]
    fn slow_start_adds_a_segment_per_ack_then_mss_squared_over_cwnd() {
        let (mut c, rto) = aimd(2, 4000);
        assert_eq!(c.window(), 2000, "the initial window is counted in the negotiated MSS");
        c.on_ack(Time::ZERO, 1000, &rto);
        c.on_ack(Time::ZERO, 1000, &rto);
        assert_eq!(c.window(), 4000, "one segment per ACK below ssthresh, whatever it acknowledged");
        c.on_ack(Time::ZERO, 1000, &rto);
        assert_eq!(c.window(), 4250, "at ssthresh: 1000²/4000");
        c.on_ack(Time::ZERO, 1000, &rto);
        assert_eq!(c.window(), 4250 + 1_000_000 / 4250);
        assert_eq!(c.pacing_rate(), None);
    }

    #[test]
    fn growth_stops_at_the_largest_usable_window() {
        let (mut c, rto) = aimd(1, 65535);
        for _ in 0..40 {
            c.on_ack(Time::ZERO, 1000, &rto);
        }
        assert_eq!(c.window(), 20_000, "capped at max_window");
    }

    #[test]
    fn fast_retransmit_timeout_and_eln_cut_differently() {
        let (mut c, _) = aimd(10, 65535);
        c.on_congestion_event(Time::ZERO, CongestionEvent::Eln);
        assert_eq!((c.window(), c.ssthresh()), (10_000, 65535), "ELN: no congestion response");
        c.on_congestion_event(Time::ZERO, CongestionEvent::FastRetransmit { halved_flight: 5000 });
        assert_eq!((c.window(), c.ssthresh()), (5000, 5000));
        c.on_congestion_event(Time::ZERO, CongestionEvent::Timeout { halved_flight: 2000 });
        assert_eq!((c.window(), c.ssthresh()), (1000, 2000), "a timeout restarts from one segment");
    }
}
