//! TCP Vegas (Brakmo and Peterson 1995, "TCP Vegas: End to End Congestion Avoidance on a Global
//! Internet", IEEE JSAC 13(8)) as Linux's `net/ipv4/tcp_vegas.c` has it: once per RTT (when the ACK
//! passes the SND.NXT of the round's start) the backlog diff = cwnd × (RTT − BaseRTT) / BaseRTT segments,
//! with RTT the smallest sample of the round and BaseRTT the smallest ever, moves the window by one
//! segment: up below α = 2, down above β = 4, in slow start out to congestion avoidance above γ = 1
//! (cwnd cut to the expected window + 1). Linux then raises ssthresh to 3/4 cwnd if it is lower
//! (`tcp_current_ssthresh`). With fewer than three samples in a round it is Reno. A loss is Reno's
//! (`tcp_reno_ssthresh`, here the configured halved flight), and the measurement restarts when the
//! next ACK outside recovery arrives (`vegas_state` back to Open). Not modelled: the reset after an idle
//! period (`CA_EVENT_TX_START`), undo, PRR.

use super::linux::{segment_window_controller, SegmentWindow};
use super::{AckEvent, CongestionEvent, Controller};
use crate::config::TcpConfig;
use crate::rto::Rto;
use lasthop_wire::Time;

/// `alpha`: below 2 segments of backlog, one segment more per RTT.
const ALPHA: u64 = 2;
/// `beta`: above 4 segments of backlog, one segment less per RTT.
const BETA: u64 = 4;
/// `gamma`: above 1 segment of backlog, slow start ends.
const GAMMA: u64 = 1;
/// `0x7fffffff`: no RTT sample yet.
const NO_RTT: u64 = 0x7fff_ffff;

#[derive(Debug, Clone)]
pub(crate) struct Vegas {
    w: SegmentWindow,
    /// `baseRTT`, `minRTT`: µs + 1, as Linux counts them.
    base_rtt: u64,
    min_rtt: u64,
    /// `cntRTT`: samples this round.
    cnt_rtt: u32,
    /// `beg_snd_nxt`: the round ends when an ACK passes this offset.
    beg_snd_nxt: u64,
    /// `doing_vegas_now`: off from a loss until the next ACK outside recovery.
    doing_vegas_now: bool,
    /// SND.UNA and SND.NXT of the last ACK.
    una: u64,
    nxt: u64,
}

impl Vegas {
    pub(crate) fn new(cfg: &TcpConfig, mss: u32) -> Vegas {
        Vegas {
            w: SegmentWindow::new(cfg, mss),
            base_rtt: NO_RTT,
            min_rtt: NO_RTT,
            cnt_rtt: 0,
            beg_snd_nxt: 0,
            doing_vegas_now: true,
            una: 0,
            nxt: 0,
        }
    }

    /// `vegas_enable`: a fresh round from SND.NXT.
    fn enable(&mut self) {
        self.doing_vegas_now = true;
        self.beg_snd_nxt = self.nxt;
        self.cnt_rtt = 0;
        self.min_rtt = NO_RTT;
    }

    /// The once-per-RTT adjustment of `tcp_vegas_cong_avoid`, from at least three samples.
    fn adjust(&mut self, acked: u32) {
        let (cwnd, rtt, base) = (u64::from(self.w.segments()), self.min_rtt, self.base_rtt);
        let target = cwnd * base / rtt;
        let diff = cwnd * (rtt - base) / base;
        let vegas_ssthresh = |w: &SegmentWindow| w.ssthresh_segments().min(w.segments());
        if diff > GAMMA && self.w.in_slow_start() {
            // Going too fast: to congestion avoidance, at the expected window plus one.
            self.w.set_segments(self.w.segments().min(target as u32 + 1));
            self.w.set_ssthresh_segments(vegas_ssthresh(&self.w));
        } else if self.w.in_slow_start() {
            self.w.slow_start(acked);
        } else if diff > BETA {
            self.w.set_segments(self.w.segments() - 1);
            self.w.set_ssthresh_segments(vegas_ssthresh(&self.w));
        } else if diff < ALPHA {
            self.w.set_segments(self.w.segments() + 1);
        }
        if self.w.segments() < 2 {
            self.w.set_segments(2);
        }
        // `tcp_current_ssthresh` outside recovery: at least 3/4 of cwnd.
        let cwnd = self.w.segments();
        self.w.set_ssthresh_segments(self.w.ssthresh_segments().max((cwnd >> 1) + (cwnd >> 2)));
    }
}

impl Controller for Vegas {
    segment_window_controller!();

    /// `tcp_vegas_pkts_acked`.
    fn on_ack_event(&mut self, _now: Time, ack: &AckEvent) {
        self.una = ack.una;
        self.nxt = ack.nxt;
        self.w.on_acked(ack.acked);
        if let Some(rtt_ns) = ack.rtt_ns {
            let vrtt = rtt_ns / 1000 + 1;
            self.base_rtt = self.base_rtt.min(vrtt);
            self.min_rtt = self.min_rtt.min(vrtt);
            self.cnt_rtt += 1;
        }
    }

    /// `tcp_vegas_cong_avoid`.
    fn on_ack(&mut self, _now: Time, acked: u64, _rtt: &Rto) {
        if !self.doing_vegas_now {
            self.enable(); // back in the Open state
        }
        let acked = self.w.acked_segments(acked);
        if self.una > self.beg_snd_nxt {
            self.beg_snd_nxt = self.nxt;
            if self.cnt_rtt <= 2 {
                if acked > 0 {
                    self.w.reno_cong_avoid(acked);
                }
            } else {
                self.adjust(acked);
            }
            self.cnt_rtt = 0;
            self.min_rtt = NO_RTT;
        } else if self.w.in_slow_start() && acked > 0 {
            self.w.slow_start(acked);
        }
    }

    fn on_congestion_event(&mut self, _now: Time, event: CongestionEvent) {
        self.doing_vegas_now = false;
        match event {
            CongestionEvent::FastRetransmit { halved_flight } => {
                self.w.ssthresh = halved_flight;
                self.w.cwnd = halved_flight;
            }
            CongestionEvent::Timeout { halved_flight } => {
                if self.w.loss_episode_begins() {
                    self.w.ssthresh = halved_flight;
                }
                self.w.loss_window();
            }
            CongestionEvent::Eln => self.doing_vegas_now = true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1000;

    fn vegas(initial_cwnd: u32, initial_ssthresh: u32) -> (Vegas, Rto) {
        let cfg = TcpConfig { initial_cwnd, initial_ssthresh, max_window: 1 << 30, ..TcpConfig::default() };
        let mut c = Vegas::new(&cfg, 1460);
        c.start(MSS);
        (c, Rto::new(&cfg))
    }

    /// One ACK of one segment up to `una`, SND.NXT at `nxt`, with an RTT of `rtt_ms`.
    fn ack(c: &mut Vegas, rto: &Rto, una: u64, nxt: u64, rtt_ms: u64) {
        let ev = AckEvent { una, nxt, acked: u64::from(MSS), rtt_ns: Some(rtt_ms * 1_000_000) };
        c.on_ack_event(Time::ZERO, &ev);
        c.on_ack(Time::ZERO, u64::from(MSS), rto);
    }

    /// A round: three ACKs inside it, then the one that passes its start's SND.NXT (`end`).
    fn round(c: &mut Vegas, rto: &Rto, start: u64, end: u64, rtt_ms: u64) {
        for i in 1..=3 {
            ack(c, rto, start + i * 1000, end, rtt_ms);
        }
        ack(c, rto, end + 1000, end + 30_000, rtt_ms);
    }

    /// Congestion avoidance at 20 segments, BaseRTT 100 ms. Round at 100 ms: diff = 0 < α, cwnd 21, and
    /// ssthresh rises to ⌊21/2⌋ + ⌊21/4⌋ = 15. Round at 130 ms: diff = ⌊21 × 30 000 / 100 001⌋ = 6 > β,
    /// cwnd 20. Round at 115 ms: diff = ⌊20 × 15 000 / 100 001⌋ = 2, between α and β: cwnd stays. Inside
    /// a round nothing changes.
    #[test]
    fn once_per_rtt_the_backlog_moves_the_window_by_one() {
        let (mut c, rto) = vegas(20, 10_000);
        ack(&mut c, &rto, 1000, 21_000, 100); // passes beg_snd_nxt 0: a Reno round (one sample)
        assert_eq!((c.window(), c.beg_snd_nxt), (20 * MSS, 21_000));
        round(&mut c, &rto, 1000, 21_000, 100);
        assert_eq!((c.window(), c.ssthresh()), (21 * MSS, 15 * MSS));
        round(&mut c, &rto, 22_000, 51_000, 130);
        assert_eq!((c.window(), c.ssthresh()), (20 * MSS, 15 * MSS));
        round(&mut c, &rto, 52_000, 81_000, 115);
        assert_eq!(c.window(), 20 * MSS);
        ack(&mut c, &rto, 83_000, 111_000, 200);
        assert_eq!(c.window(), 20 * MSS, "inside a round");
    }

    /// Slow start, cwnd 10, BaseRTT 100 ms: after the first (Reno) round and two ACKs of slow start inside
    /// the next, cwnd is 13, and that round at 130 ms has diff = ⌊13 × 30 000 / 100 001⌋ = 3 > γ:
    /// cwnd = min(13, ⌊13 × 100 001 / 130 001⌋ + 1 = 11), and
    /// ssthresh = min(ssthresh, 11) = 11 (at least ⌊11/2⌋ + ⌊11/4⌋ = 7): congestion avoidance.
    #[test]
    fn slow_start_ends_when_the_backlog_passes_gamma() {
        let (mut c, rto) = vegas(10, 1 << 30);
        ack(&mut c, &rto, 1000, 11_000, 100);
        assert_eq!(c.window(), 11 * MSS, "a Reno round: slow start");
        for i in 1..=2 {
            ack(&mut c, &rto, 1000 + i * 1000, 11_000, 130);
        }
        assert_eq!(c.window(), 13 * MSS, "slow start inside the round");
        ack(&mut c, &rto, 12_000, 40_000, 130);
        assert_eq!((c.window(), c.ssthresh()), (11 * MSS, 11 * MSS));
    }

    /// A loss is Reno's; the next ACK outside recovery starts a fresh round; a timeout restarts from one
    /// segment and a second one before any new ACK keeps ssthresh.
    #[test]
    fn losses_are_renos_and_restart_the_measurement() {
        let (mut c, rto) = vegas(20, 10_000);
        c.on_congestion_event(Time::ZERO, CongestionEvent::Eln);
        assert_eq!(c.window(), 20 * MSS, "ELN: no congestion response");
        c.on_congestion_event(Time::ZERO, CongestionEvent::FastRetransmit { halved_flight: 8000 });
        assert_eq!((c.ssthresh(), c.window()), (8000, 8000));
        ack(&mut c, &rto, 5000, 30_000, 100);
        assert_eq!((c.beg_snd_nxt, c.cnt_rtt), (30_000, 0), "a fresh round from SND.NXT, its sample dropped");
        c.on_congestion_event(Time::ZERO, CongestionEvent::Timeout { halved_flight: 6000 });
        c.on_congestion_event(Time::ZERO, CongestionEvent::Timeout { halved_flight: 2000 });
        assert_eq!((c.ssthresh(), c.window()), (6000, MSS));
    }
}
