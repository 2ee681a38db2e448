//! What Linux's congestion controls share (`net/ipv4/tcp_cong.c`, `tcp_input.c`): a window counted in
//! segments with its `snd_cwnd_cnt`, slow start and additive increase per acknowledged segment
//! (`tcp_slow_start`, `tcp_cong_avoid_ai`), and the per-ACK RTT sample (`tcp_clean_rtx_queue`'s
//! `ca_rtt_us`) that CUBIC's HyStart, Westwood+, Veno and Vegas read.

use crate::config::TcpConfig;
use lasthop_wire::Time;
use std::collections::VecDeque;

/// The [`Controller`](super::Controller) methods every Linux-style controller shares: its window is the
/// [`SegmentWindow`] in its field `w`, and it reads every ACK.
macro_rules! segment_window_controller {
    () => {
        fn window(&self) -> u32 {
            self.w.cwnd
        }

        fn ssthresh(&self) -> u32 {
            self.w.ssthresh
        }

        fn start(&mut self, mss: u32) {
            self.w.start(mss);
        }

        fn set_window(&mut self, cwnd: u32) {
            self.w.cwnd = cwnd;
        }

        fn wants_ack_events(&self) -> bool {
            true
        }
    };
}
pub(crate) use segment_window_controller;

/// Linux's `HZ` as this crate counts jiffies: one jiffy is a millisecond.
pub(crate) const JIFFY_NS: u64 = 1_000_000;

/// cwnd and ssthresh in bytes, grown in whole segments as Linux counts them (`snd_cwnd`,
/// `snd_cwnd_cnt`), capped at `max_window` (`snd_cwnd_clamp`).
#[derive(Debug, Clone)]
pub(crate) struct SegmentWindow {
    pub(crate) cwnd: u32,
    pub(crate) ssthresh: u32,
    pub(crate) mss: u32,
    /// `snd_cwnd_cnt`: segments acknowledged towards the next additive increase.
    pub(crate) cnt: u32,
    /// Acknowledged bytes short of a whole segment, carried to the next ACK.
    partial: u32,
    pub(crate) initial_segments: u32,
    max_window: u32,
    /// A timeout without a new ACK since: a further one keeps ssthresh (`tcp_enter_loss`).
    in_loss: bool,
}

impl SegmentWindow {
    pub(crate) fn new(cfg: &TcpConfig, mss: u32) -> SegmentWindow {
        let initial_segments = cfg.initial_cwnd.max(1);
        SegmentWindow {
            cwnd: initial_segments.saturating_mul(mss),
            ssthresh: cfg.initial_ssthresh,
            mss,
            cnt: 0,
            partial: 0,
            initial_segments,
            max_window: cfg.max_window,
            in_loss: false,
        }
    }

    pub(crate) fn start(&mut self, mss: u32) {
        self.mss = mss.max(1);
        self.cwnd = self.initial_segments.saturating_mul(self.mss).min(self.cap());
    }

    /// The largest window worth having: `max_window`, at least one segment.
    pub(crate) fn cap(&self) -> u32 {
        self.max_window.max(self.mss)
    }

    /// `snd_cwnd`: the window in whole segments.
    pub(crate) fn segments(&self) -> u32 {
        self.cwnd / self.mss
    }

    /// `snd_ssthresh` in segments, rounded up so that `cwnd < ssthresh` reads the same in both units.
    pub(crate) fn ssthresh_segments(&self) -> u32 {
        self.ssthresh.div_ceil(self.mss)
    }

    /// Sets the window to `segs` segments, within the cap.
    pub(crate) fn set_segments(&mut self, segs: u32) {
        self.cwnd = segs.saturating_mul(self.mss).min(self.cap());
    }

    /// Sets ssthresh to `segs` segments.
    pub(crate) fn set_ssthresh_segments(&mut self, segs: u32) {
        self.ssthresh = segs.saturating_mul(self.mss);
    }

    pub(crate) fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// Whole segments in `acked` bytes, a remainder carried to the next call (Linux counts the
    /// segments `tcp_clean_rtx_queue` freed).
    pub(crate) fn acked_segments(&mut self, acked: u64) -> u32 {
        let total = acked.saturating_add(u64::from(self.partial));
        self.partial = (total % u64::from(self.mss)) as u32;
        (total / u64::from(self.mss)).min(u64::from(u32::MAX)) as u32
    }

    /// `tcp_slow_start`: one segment per segment acknowledged, up to ssthresh; returns what is left of
    /// `acked` for congestion avoidance.
    pub(crate) fn slow_start(&mut self, acked: u32) -> u32 {
        let cwnd = self.segments();
        let grown = cwnd.saturating_add(acked).min(self.ssthresh_segments().max(cwnd));
        self.set_segments(grown);
        acked - (grown - cwnd)
    }

    /// `tcp_cong_avoid_ai`: one segment per `w` segments acknowledged.
    pub(crate) fn cong_avoid_ai(&mut self, w: u32, acked: u32) {
        let w = w.max(1);
        let mut cwnd = self.segments();
        if self.cnt >= w {
            self.cnt = 0;
            cwnd += 1;
        }
        self.cnt = self.cnt.saturating_add(acked);
        if self.cnt >= w {
            let delta = self.cnt / w;
            self.cnt -= delta * w;
            cwnd = cwnd.saturating_add(delta);
        }
        self.set_segments(cwnd);
    }

    /// `tcp_reno_cong_avoid`: slow start, then one segment per window of acknowledged segments.
    pub(crate) fn reno_cong_avoid(&mut self, acked: u32) {
        let mut acked = acked;
        if self.in_slow_start() {
            acked = self.slow_start(acked);
            if acked == 0 {
                return;
            }
        }
        self.cong_avoid_ai(self.segments(), acked);
    }

    /// Whether a timeout now begins a loss episode, so that the controller sets ssthresh by its rule
    /// before [`loss_window`](Self::loss_window): `tcp_enter_loss` sets it once per episode, and a second
    /// timeout before any new ACK keeps it.
    pub(crate) fn loss_episode_begins(&self) -> bool {
        !self.in_loss
    }

    /// A timeout: the loss window of one segment (`tcp_enter_loss`), the episode lasting until new data
    /// is acknowledged.
    pub(crate) fn loss_window(&mut self) {
        self.cwnd = self.mss;
        self.cnt = 0;
        self.in_loss = true;
    }

    /// An ACK acknowledged `acked` new bytes: a loss episode is over once new data is.
    pub(crate) fn on_acked(&mut self, acked: u64) {
        if acked > 0 {
            self.in_loss = false;
        }
    }
}

/// The send times a per-ACK RTT needs (Linux's skb timestamps): every first transmission, until the
/// ACK that covers it. An ACK's samples are the times since the newest and the oldest segment it
/// acknowledges were sent ([`AckRtt`]), none when any byte it acknowledges was ever retransmitted (Karn;
/// `FLAG_RETRANS_DATA_ACKED`).
#[derive(Debug, Clone, Default)]
pub(crate) struct AckSampler {
    /// (end offset, time sent) of first transmissions not yet acknowledged, in offset order.
    sent: VecDeque<(u64, Time)>,
    /// One past the highest byte ever retransmitted.
    rexmit_end: u64,
}

impl AckSampler {
    /// A segment ending at `end` went out at `now`; `rexmit` when any of it had been sent before.
    pub(crate) fn on_send(&mut self, end: u64, now: Time, rexmit: bool) {
        if rexmit {
            self.rexmit_end = self.rexmit_end.max(end);
        } else {
            self.sent.push_back((end, now));
        }
    }

    /// The cumulative ACK moved from `from` to `to` at `now`: the RTTs it measured.
    pub(crate) fn on_ack(&mut self, from: u64, to: u64, now: Time) -> Option<AckRtt> {
        let mut sent_range: Option<(Time, Time)> = None;
        while let Some(&(end, sent)) = self.sent.front() {
            if end > to {
                break;
            }
            sent_range = Some((sent_range.map_or(sent, |r| r.0), sent));
            self.sent.pop_front();
        }
        if from < self.rexmit_end {
            return None;
        }
        let since = |t: Time| now.as_nanos().saturating_sub(t.as_nanos());
        sent_range.map(|(oldest, newest)| AckRtt { newest_ns: since(newest), oldest_ns: since(oldest) })
    }
}

/// The RTTs one ACK measured, nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AckRtt {
    /// Since the newest segment it acknowledges was sent (`ca_rtt_us`): what congestion control reads.
    pub newest_ns: u64,
    /// Since the oldest was sent (`seq_rtt_us`): what Linux's RTO estimator reads.
    pub oldest_ns: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window() -> SegmentWindow {
        let cfg = TcpConfig { initial_cwnd: 2, initial_ssthresh: 4000, max_window: 20_000, ..TcpConfig::default() };
        let mut w = SegmentWindow::new(&cfg, 1460);
        w.start(1000);
        w
    }

    #[test]
    fn slow_start_counts_segments_acknowledged_and_stops_at_ssthresh() {
        let mut w = window();
        assert_eq!(w.acked_segments(1500), 1, "half a segment is carried");
        assert_eq!(w.acked_segments(500), 1);
        assert_eq!(w.slow_start(1), 0);
        assert_eq!(w.cwnd, 3000);
        assert_eq!(w.slow_start(3), 2, "4000 is reached after one of three; two are left over");
        assert_eq!(w.cwnd, 4000);
        // tcp_cong_avoid_ai(w = 4): two, then four more segments acknowledged: one increase, cnt 2.
        w.cong_avoid_ai(4, 2);
        w.cong_avoid_ai(4, 4);
        assert_eq!((w.cwnd, w.cnt), (5000, 2));
        w.set_segments(100);
        assert_eq!(w.cwnd, 20_000, "capped at max_window");
    }

    #[test]
    fn ack_samples_follow_the_newest_segment_and_karn() {
        let mut s = AckSampler::default();
        let t = Time::from_millis;
        s.on_send(1000, t(0), false);
        s.on_send(2000, t(10), false);
        s.on_send(3000, t(20), false);
        let both = s.on_ack(0, 2000, t(110)).unwrap();
        assert_eq!((both.newest_ns, both.oldest_ns), (100_000_000, 110_000_000), "from the newest and the oldest");
        assert_eq!(s.on_ack(2000, 2500, t(120)), None, "no segment completed");
        s.on_send(3000, t(130), true);
        s.on_send(4000, t(140), false);
        assert_eq!(s.on_ack(2500, 4000, t(200)), None, "covers a retransmitted byte");
        s.on_send(5000, t(210), false);
        assert_eq!(s.on_ack(4000, 5000, t(260)).map(|r| r.newest_ns), Some(50_000_000));
    }
}
