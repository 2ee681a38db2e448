//! Westwood+ (Mascolo, Casetti, Gerla, Sanadidi and Wang 2001, "TCP Westwood: Bandwidth Estimation for
//! Enhanced Transport over Wireless Links"; the "+" of Grieco and Mascolo 2004 samples once per RTT) as
//! Linux's `net/ipv4/tcp_westwood.c` has it: the bytes each ACK acknowledges (a duplicate ACK counted as
//! one segment, taken back from the cumulative ACK that covers it) are summed over a window of one RTT,
//! at least 50 ms, and the rate low-pass filtered twice with gain 7/8. After a loss ssthresh =
//! BWE × RTTmin / MSS segments, at least 2: a fast retransmit sets cwnd to it if cwnd is larger (the
//! paper's rule; Linux reaches the same window when recovery completes, `CA_EVENT_COMPLETE_CWR`), a
//! timeout restarts from one segment. Growth is Reno's, counted per segment as Linux does. Time in 1 ms
//! jiffies; the RTT is the per-ACK sample. An ACK of new data with no duplicate ACKs to take back takes
//! Linux's fast path (`westwood_fast_bw`), any other the slow path (`westwood_acked_count`). Not
//! modelled: undo, PRR.

use super::linux::{segment_window_controller, SegmentWindow, JIFFY_NS};
use super::{AckEvent, CongestionEvent, Controller};
use crate::config::TcpConfig;
use crate::rto::Rto;
use lasthop_wire::Time;

/// `TCP_WESTWOOD_RTT_MIN` = HZ/20: the bandwidth sample window is at least 50 ms.
const RTT_MIN_JIFFIES: u64 = 50;
/// `TCP_WESTWOOD_INIT_RTT` = 20·HZ: the RTT before the first sample.
const INIT_RTT_JIFFIES: u64 = 20_000;

#[derive(Debug, Clone)]
pub(crate) struct Westwood {
    w: SegmentWindow,
    /// `bw_ns_est`, `bw_est`: the once- and twice-filtered rates, bytes per jiffy.
    bw_ns_est: u64,
    bw_est: u64,
    /// `bk`: bytes acknowledged in the current sample window.
    bk: u64,
    /// `rtt_win_sx`: when the sample window began (jiffies); `None` until the first ACK.
    rtt_win_sx: Option<u64>,
    /// `snd_una` as last seen; `None` until the first ACK (`first_ack`).
    snd_una: Option<u64>,
    /// `accounted`: bytes credited to duplicate ACKs and not yet taken back.
    accounted: u64,
    /// `rtt`, `rtt_min`: the last RTT sample and the smallest, jiffies.
    rtt: u64,
    rtt_min: u64,
    reset_rtt_min: bool,
}

impl Westwood {
    pub(crate) fn new(cfg: &TcpConfig, mss: u32) -> Westwood {
        Westwood {
            w: SegmentWindow::new(cfg, mss),
            bw_ns_est: 0,
            bw_est: 0,
            bk: 0,
            rtt_win_sx: None,
            snd_una: None,
            accounted: 0,
            rtt: INIT_RTT_JIFFIES,
            rtt_min: INIT_RTT_JIFFIES,
            reset_rtt_min: true,
        }
    }

    /// The bandwidth estimate, bytes per second.
    #[cfg(test)]
    fn bwe(&self) -> u64 {
        self.bw_est * 1000
    }

    /// `westwood_filter`: fold the window's rate, `bk / delta`, into both filters.
    fn filter(&mut self, delta: u64) {
        let sample = self.bk / delta;
        if self.bw_ns_est == 0 && self.bw_est == 0 {
            self.bw_ns_est = sample;
            self.bw_est = sample;
        } else {
            self.bw_ns_est = (7 * self.bw_ns_est + sample) >> 3;
            self.bw_est = (7 * self.bw_est + self.bw_ns_est) >> 3;
        }
    }

    /// `westwood_update_window`: close the sample window once an RTT (at least 50 ms) has passed.
    fn update_window(&mut self, now_j: u64, una: u64) {
        let start = *self.rtt_win_sx.get_or_insert(now_j);
        self.snd_una.get_or_insert(una);
        let delta = now_j - start;
        if self.rtt > 0 && delta > self.rtt.max(RTT_MIN_JIFFIES) {
            self.filter(delta);
            self.bk = 0;
            self.rtt_win_sx = Some(now_j);
        }
    }

    /// `westwood_acked_count`: the bytes this ACK stands for.
    fn acked_count(&mut self, una: u64) -> u64 {
        let mss = u64::from(self.w.mss);
        let mut cumul_ack = una - self.snd_una.unwrap_or(una);
        if cumul_ack == 0 {
            // A duplicate ACK: a segment has left the network.
            self.accounted += mss;
            cumul_ack = mss;
        }
        if cumul_ack > mss {
            // A partial or delayed ACK: what the duplicate ACKs already counted is taken back.
            if self.accounted >= cumul_ack {
                self.accounted -= cumul_ack;
                cumul_ack = mss;
            } else {
                cumul_ack -= self.accounted;
                self.accounted = 0;
            }
        }
        self.snd_una = Some(una);
        cumul_ack
    }

    /// `tcp_westwood_bw_rttmin`: BWE × RTTmin in segments, at least 2.
    fn bw_rttmin(&self) -> u32 {
        (self.bw_est * self.rtt_min / u64::from(self.w.mss)).clamp(2, u64::from(u32::MAX)) as u32
    }
}

impl Controller for Westwood {
    segment_window_controller!();

    /// `tcp_westwood_ack` (slow path), then `tcp_westwood_pkts_acked`.
    fn on_ack_event(&mut self, now: Time, ack: &AckEvent) {
        self.w.on_acked(ack.acked);
        self.update_window(now.as_nanos() / JIFFY_NS, ack.una);
        if ack.acked > 0 && self.accounted == 0 {
            self.bk += ack.una - self.snd_una.unwrap_or(ack.una);
            self.snd_una = Some(ack.una);
        } else {
            self.bk += self.acked_count(ack.una);
        }
        self.rtt_min = if self.reset_rtt_min { self.rtt } else { self.rtt_min.min(self.rtt) };
        self.reset_rtt_min = false;
        if let Some(rtt_ns) = ack.rtt_ns.filter(|&r| r > 0) {
            self.rtt = rtt_ns.div_ceil(JIFFY_NS); // usecs_to_jiffies rounds up
        }
    }

    /// `tcp_reno_cong_avoid`.
    fn on_ack(&mut self, _now: Time, acked: u64, _rtt: &Rto) {
        let acked = self.w.acked_segments(acked);
        if acked > 0 {
            self.w.reno_cong_avoid(acked);
        }
    }

    fn on_congestion_event(&mut self, _now: Time, event: CongestionEvent) {
        match event {
            CongestionEvent::FastRetransmit { .. } => {
                let ssthresh = self.bw_rttmin();
                self.w.set_ssthresh_segments(ssthresh);
                self.w.cwnd = self.w.cwnd.min(self.w.ssthresh);
            }
            CongestionEvent::Timeout { .. } => {
                if self.w.loss_episode_begins() {
                    let ssthresh = self.bw_rttmin();
                    self.w.set_ssthresh_segments(ssthresh);
                    self.reset_rtt_min = true; // RTTmin is taken afresh from the next ACK
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

    fn westwood(initial_cwnd: u32) -> (Westwood, Rto) {
        let cfg = TcpConfig { initial_cwnd, max_window: 1 << 30, ..TcpConfig::default() };
        let mut c = Westwood::new(&cfg, 1460);
        c.start(MSS);
        (c, Rto::new(&cfg))
    }

    fn ack(c: &mut Westwood, t_ms: u64, una: u64, rtt_ms: Option<u64>) {
        let acked = una - c.snd_una.unwrap_or(0);
        c.on_ack_event(
            Time::from_millis(t_ms),
            &AckEvent { una, nxt: una, acked, rtt_ns: rtt_ms.map(|r| r * JIFFY_NS) },
        );
    }

    /// 1 MB/s for 100 ms RTTs: an ACK of 10 000 bytes every 10 ms. The first ACK opens the sample window
    /// at 0 ms (its own bytes uncounted: `first_ack`) and gives RTT 100 ms; the window closes at the first
    /// ACK more than 100 ms later (110 ms, before that ACK is counted) with the ten ACKs of 10..100 ms:
    /// 100 000 B / 110 ms = 909 B/ms, the first sample taken as is. The next closes at 220 ms with the
    /// eleven of 110..210 ms: 110 000 / 110 = 1000, so bw_ns_est = (7·909 + 1000)/8 = 920 and bw_est =
    /// (7·909 + 920)/8 = 910. A fast retransmit then sets ssthresh = 910 B/ms × 100 ms / 1000 B = 91
    /// segments, and cwnd 40 stays (below it).
    #[test]
    fn bandwidth_estimate_sets_ssthresh_after_a_fast_retransmit() {
        let (mut c, _) = westwood(40);
        ack(&mut c, 0, 10_000, Some(100));
        for i in 1..=22 {
            ack(&mut c, i * 10, 10_000 + i * 10_000, Some(100));
        }
        assert_eq!((c.rtt, c.rtt_min), (100, 100));
        assert_eq!((c.bw_ns_est, c.bwe()), (920, 910_000));
        c.on_congestion_event(Time::from_millis(230), CongestionEvent::FastRetransmit { halved_flight: 20_000 });
        assert_eq!((c.ssthresh(), c.window()), (91 * MSS, 40 * MSS));
    }

    /// The rate halves from 220 ms (5000 bytes per 10 ms). The window closing at 330 ms holds the 220 ms
    /// ACK (10 000) and ten of 5000: 60 000 / 110 = 545, so bw_ns_est = (7·920 + 545)/8 = 873 and bw_est =
    /// (7·910 + 873)/8 = 905; the one closing at 440 ms holds eleven of 5000: 500, so (7·873 + 500)/8 =
    /// 826 and (7·905 + 826)/8 = 895. A timeout then sets ssthresh = 895 × 100 / 1000 = 89 segments and
    /// cwnd one segment, and RTTmin is taken afresh.
    #[test]
    fn the_filter_follows_a_rate_change_at_7_8_and_a_timeout_restarts_from_one_segment() {
        let (mut c, _) = westwood(40);
        ack(&mut c, 0, 10_000, Some(100));
        let mut una = 10_000;
        for i in 1..=22 {
            una += 10_000;
            ack(&mut c, i * 10, una, Some(100));
        }
        for i in 23..=44 {
            una += 5000;
            ack(&mut c, i * 10, una, Some(100));
        }
        assert_eq!((c.bw_ns_est, c.bw_est), (826, 895));
        c.on_congestion_event(Time::from_millis(450), CongestionEvent::Timeout { halved_flight: 20_000 });
        assert_eq!((c.ssthresh(), c.window()), (89 * MSS, MSS));
        // An RTT change: the next ACK's RTTmin is the last sample (100), then 60 ms lowers it.
        ack(&mut c, 460, una + 1000, Some(60));
        assert_eq!(c.rtt_min, 100, "the previous sample, as Linux's order of calls has it");
        ack(&mut c, 470, una + 2000, Some(60));
        assert_eq!(c.rtt_min, 60);
    }

    /// Duplicate ACKs count one segment each, taken back from the cumulative ACK that follows; ELN
    /// changes nothing; growth is Reno's per segment.
    #[test]
    fn duplicate_acks_count_a_segment_and_are_taken_back() {
        let (mut c, rto) = westwood(2);
        ack(&mut c, 0, 1000, None);
        let bk = c.bk;
        ack(&mut c, 1, 1000, None);
        ack(&mut c, 2, 1000, None);
        assert_eq!((c.bk - bk, c.accounted), (2000, 2000));
        ack(&mut c, 3, 4000, None); // 3000 acknowledged, 2000 already counted
        assert_eq!((c.bk - bk, c.accounted), (3000, 0));
        c.on_congestion_event(Time::ZERO, CongestionEvent::Eln);
        assert_eq!(c.window(), 2 * MSS);
        c.on_ack(Time::ZERO, 2000, &rto);
        assert_eq!(c.window(), 4 * MSS, "slow start: one segment per segment acknowledged");
    }
}
