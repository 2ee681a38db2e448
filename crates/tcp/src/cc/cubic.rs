//! CUBIC (Ha, Rhee and Xu 2008, "CUBIC: A New TCP-Friendly High-Speed TCP Variant"; RFC 9438) as Linux's
//! `net/ipv4/tcp_cubic.c` has it: after a loss the window follows W(t) = C·(t − K)³ + W_max from
//! β·W_max, with β = 717/1024 ≈ 0.7 and C = 0.4 (`bic_scale` 41 / 1024 × 10), fast convergence, the
//! Reno-friendly region (`tcp_friendliness`), and HyStart's ACK-train and delay-increase exits from slow
//! start (Ha and Rhee 2011). Linux's integer arithmetic throughout, time in 1 ms jiffies, except the cube
//! root: exact (the floor of the real root), where Linux looks up a table and takes one Newton step
//! (`cubic_root`, average error 0.195 %). Not modelled: HyStart++ (RFC 9406), the epoch shift after an
//! idle period (`CA_EVENT_TX_START`: the sender tells no controller when it restarts), undo, PRR, and
//! `tcp_is_cwnd_limited` (the window grows whether or not the application fills it).

use super::linux::{segment_window_controller, SegmentWindow, JIFFY_NS};
use super::{AckEvent, CongestionEvent, Controller};
use crate::config::TcpConfig;
use crate::rto::Rto;
use lasthop_wire::Time;

/// `BICTCP_BETA_SCALE`: β's fixed-point unit.
const BETA_SCALE: u32 = 1024;
/// `beta` = 717: β = 717/1024 ≈ 0.7 (RFC 9438 §4.6).
const BETA: u32 = 717;
/// `bic_scale` = 41: C = 41 × 10 / 1024 ≈ 0.4 (RFC 9438 §5).
const BIC_SCALE: u64 = 41;
/// `BICTCP_HZ` = 10: time in the cubic function is counted in 1/1024 s.
const BICTCP_HZ: u32 = 10;
/// `cube_rtt_scale` = `bic_scale` × 10.
const CUBE_RTT_SCALE: u64 = BIC_SCALE * 10;
/// `cube_factor` = 2^(10 + 3·BICTCP_HZ) / (`bic_scale` × 10): K = ∛(cube_factor × (W_max − cwnd)).
const CUBE_FACTOR: u64 = (1 << (10 + 3 * BICTCP_HZ)) / CUBE_RTT_SCALE;
/// `beta_scale` = 8·(1024 + β) / 3 / (1024 − β) = 15: the Reno-friendly window grows one segment per
/// 15·cwnd/8 segments acknowledged, α = 8/15 per RTT (RFC 9438 §4.3: α = 3(1 − β)/(1 + β) = 0.53).
const RENO_BETA_SCALE: u32 = 8 * (BETA_SCALE + BETA) / 3 / (BETA_SCALE - BETA);
/// `hystart_low_window`: HyStart runs only from 16 segments up.
const HYSTART_LOW_WINDOW: u32 = 16;
/// `hystart_ack_delta_us`: ACKs at most 2 ms apart belong to one train.
const HYSTART_ACK_DELTA_US: u64 = 2000;
/// `HYSTART_MIN_SAMPLES`: RTT samples per round before the delay test.
const HYSTART_MIN_SAMPLES: u32 = 8;
/// `HYSTART_DELAY_MIN`, `HYSTART_DELAY_MAX`: the delay increase that ends slow start is delay_min/8
/// clamped to 4..16 ms.
const HYSTART_DELAY_MIN_US: u64 = 4000;
const HYSTART_DELAY_MAX_US: u64 = 16_000;
/// Linux's `HZ / 32`: `ca->cnt` is recomputed at most this often while cwnd stays the same.
const RECOMPUTE_JIFFIES: u64 = 1000 / 32;
/// `HZ`: RTT samples in the first second of an epoch are ignored (`bictcp_acked`).
const EPOCH_SETTLE_JIFFIES: u64 = 1000;

#[derive(Debug, Clone)]
pub(crate) struct Cubic {
    w: SegmentWindow,
    /// `ca->cnt`: segments acknowledged per one-segment increase.
    cnt: u32,
    /// W_max, segments (`last_max_cwnd`); 0 before the first loss.
    last_max_cwnd: u32,
    last_cwnd: u32,
    last_time: u64,
    /// Start of the current congestion-avoidance epoch, jiffies; `None` until the first ACK after a cut.
    epoch_start: Option<u64>,
    origin_point: u32,
    /// K in 1/1024 s.
    k: u64,
    /// The smallest RTT seen, µs (0: none yet).
    delay_min: u64,
    ack_cnt: u32,
    /// The Reno-friendly window, segments (RFC 9438 §4.3's W_est).
    tcp_cwnd: u32,
    hystart: HyStart,
}

/// Classic HyStart's per-round state (`bictcp_hystart_reset`, `hystart_update`).
#[derive(Debug, Clone)]
struct HyStart {
    found: bool,
    round_start: u64,
    last_ack: u64,
    /// The round ends when SND.UNA passes this offset (SND.NXT when it began).
    end_seq: u64,
    curr_rtt: u64,
    sample_cnt: u32,
}

impl HyStart {
    fn new() -> HyStart {
        HyStart { found: false, round_start: 0, last_ack: 0, end_seq: 0, curr_rtt: u64::MAX, sample_cnt: 0 }
    }

    fn reset(&mut self, now_us: u64, nxt: u64) {
        self.round_start = now_us;
        self.last_ack = now_us;
        self.end_seq = nxt;
        self.curr_rtt = u64::MAX;
        self.sample_cnt = 0;
    }
}

fn jiffies(now: Time) -> u64 {
    now.as_nanos() / JIFFY_NS
}

/// ⌊∛x⌋, exact.
fn cube_root(x: u64) -> u64 {
    let mut r = (x as f64).cbrt() as u64;
    while u128::from(r).pow(3) > u128::from(x) {
        r -= 1;
    }
    while u128::from(r + 1).pow(3) <= u128::from(x) {
        r += 1;
    }
    r
}

impl Cubic {
    pub(crate) fn new(cfg: &TcpConfig, mss: u32) -> Cubic {
        Cubic {
            w: SegmentWindow::new(cfg, mss),
            cnt: 0,
            last_max_cwnd: 0,
            last_cwnd: 0,
            last_time: 0,
            epoch_start: None,
            origin_point: 0,
            k: 0,
            delay_min: 0,
            ack_cnt: 0,
            tcp_cwnd: 0,
            hystart: HyStart::new(),
        }
    }

    /// `bictcp_reset` on a timeout: every trace of the last epoch and W_max forgotten.
    fn reset(&mut self) {
        let w = self.w.clone();
        *self = Cubic { w, ..Cubic::new(&TcpConfig::default(), 1) };
    }

    /// `bictcp_recalc_ssthresh`: end the epoch, remember W_max (less with fast convergence), and
    /// return β·cwnd in segments, at least 2.
    fn recalc_ssthresh(&mut self) -> u32 {
        let cwnd = self.w.segments();
        self.epoch_start = None;
        self.last_max_cwnd = if cwnd < self.last_max_cwnd {
            // Fast convergence (RFC 9438 §4.7): W_max = cwnd·(1 + β)/2.
            cwnd * (BETA_SCALE + BETA) / (2 * BETA_SCALE)
        } else {
            cwnd
        };
        (cwnd * BETA / BETA_SCALE).max(2)
    }

    /// `bictcp_update`: how many segments must be acknowledged per one-segment increase now.
    fn update(&mut self, now: Time, cwnd: u32, acked: u32) {
        let now_j = jiffies(now);
        self.ack_cnt = self.ack_cnt.saturating_add(acked);
        if self.last_cwnd == cwnd && now_j.saturating_sub(self.last_time) <= RECOMPUTE_JIFFIES {
            return;
        }
        if !(self.epoch_start.is_some() && now_j == self.last_time) {
            self.last_cwnd = cwnd;
            self.last_time = now_j;
            let epoch_start = *self.epoch_start.get_or_insert_with(|| {
                self.ack_cnt = acked;
                self.tcp_cwnd = cwnd;
                if self.last_max_cwnd <= cwnd {
                    self.k = 0;
                    self.origin_point = cwnd;
                } else {
                    self.k = cube_root(CUBE_FACTOR.saturating_mul(u64::from(self.last_max_cwnd - cwnd)));
                    self.origin_point = self.last_max_cwnd;
                }
                now_j
            });
            // t in 1/1024 s since the epoch began, one minimum RTT ahead (W(t + RTT), RFC 9438 §4.2).
            let t_us = (now_j - epoch_start) * (JIFFY_NS / 1000) + self.delay_min;
            let t = (t_us << BICTCP_HZ) / 1_000_000;
            let offs = t.abs_diff(self.k);
            let cube = u128::from(CUBE_RTT_SCALE) * u128::from(offs).pow(3);
            let delta = (cube >> (10 + 3 * BICTCP_HZ)).min(u128::from(u32::MAX)) as u32;
            let target = if t < self.k {
                self.origin_point.saturating_sub(delta)
            } else {
                self.origin_point.saturating_add(delta)
            };
            self.cnt = if target > cwnd { cwnd / (target - cwnd) } else { 100 * cwnd };
            // Before any loss the bandwidth is unknown: at least 5 % per RTT.
            if self.last_max_cwnd == 0 && self.cnt > 20 {
                self.cnt = 20;
            }
        }
        // The Reno-friendly region (RFC 9438 §4.3).
        let delta = (cwnd * RENO_BETA_SCALE) >> 3;
        if delta > 0 {
            while self.ack_cnt > delta {
                self.ack_cnt -= delta;
                self.tcp_cwnd += 1;
            }
        }
        if self.tcp_cwnd > cwnd {
            let max_cnt = cwnd / (self.tcp_cwnd - cwnd);
            self.cnt = self.cnt.min(max_cnt);
        }
        // At most one segment per two acknowledged: 1.5× per RTT.
        self.cnt = self.cnt.max(2);
    }

    /// `hystart_update`: an RTT sample of `delay` µs in slow start from 16 segments up.
    fn hystart_update(&mut self, now_us: u64, una: u64, nxt: u64, delay: u64) {
        let h = &mut self.hystart;
        if una > h.end_seq {
            h.reset(now_us, nxt);
        }
        // The ACK train: ACKs closely spaced for longer than delay_min/2 (no pacing, so halved).
        if now_us.saturating_sub(h.last_ack) <= HYSTART_ACK_DELTA_US {
            h.last_ack = now_us;
            if now_us.saturating_sub(h.round_start) > self.delay_min >> 1 {
                h.found = true;
            }
        }
        // The delay increase: the round's minimum over its first 8 samples against delay_min.
        h.curr_rtt = h.curr_rtt.min(delay);
        if h.sample_cnt < HYSTART_MIN_SAMPLES {
            h.sample_cnt += 1;
        } else if h.curr_rtt > self.delay_min + (self.delay_min >> 3).clamp(HYSTART_DELAY_MIN_US, HYSTART_DELAY_MAX_US)
        {
            h.found = true;
        }
        if h.found {
            self.w.ssthresh = self.w.cwnd;
        }
    }
}

impl Controller for Cubic {
    segment_window_controller!();

    /// `bictcp_acked`.
    fn on_ack_event(&mut self, now: Time, ack: &AckEvent) {
        self.w.on_acked(ack.acked);
        let Some(rtt_ns) = ack.rtt_ns else { return };
        if self.epoch_start.is_some_and(|e| jiffies(now).saturating_sub(e) < EPOCH_SETTLE_JIFFIES) {
            return; // right after a cut the queue is draining: no delay sample
        }
        let delay = (rtt_ns / 1000).max(1);
        if self.delay_min == 0 || self.delay_min > delay {
            self.delay_min = delay;
        }
        if !self.hystart.found && self.w.in_slow_start() && self.w.segments() >= HYSTART_LOW_WINDOW {
            self.hystart_update(now.as_nanos() / 1000, ack.una, ack.nxt, delay);
        }
    }

    /// `bictcp_cong_avoid`.
    fn on_ack(&mut self, now: Time, acked: u64, _rtt: &Rto) {
        let mut acked = self.w.acked_segments(acked);
        if acked == 0 {
            return;
        }
        if self.w.in_slow_start() {
            acked = self.w.slow_start(acked);
            if acked == 0 {
                return;
            }
        }
        let cwnd = self.w.segments();
        self.update(now, cwnd, acked);
        self.w.cong_avoid_ai(self.cnt, acked);
    }

    fn on_congestion_event(&mut self, _now: Time, event: CongestionEvent) {
        match event {
            CongestionEvent::FastRetransmit { .. } => {
                let ssthresh = self.recalc_ssthresh();
                self.w.set_ssthresh_segments(ssthresh);
                self.w.set_segments(ssthresh);
            }
            CongestionEvent::Timeout { .. } => {
                // `tcp_enter_loss`: ssthresh once per loss episode, then `bictcp_state(TCP_CA_Loss)`.
                if self.w.loss_episode_begins() {
                    let ssthresh = self.recalc_ssthresh();
                    self.w.set_ssthresh_segments(ssthresh);
                }
                self.reset();
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

    fn cubic(initial_cwnd: u32, initial_ssthresh: u32) -> (Cubic, Rto) {
        let cfg = TcpConfig { initial_cwnd, initial_ssthresh, max_window: 1 << 30, ..TcpConfig::default() };
        let mut c = Cubic::new(&cfg, 1460);
        c.start(MSS);
        (c, Rto::new(&cfg))
    }

    fn ms(t: u64) -> Time {
        Time::from_millis(t)
    }

    #[test]
    fn constants_are_linuxs() {
        assert_eq!(RENO_BETA_SCALE, 15);
        assert_eq!(CUBE_FACTOR, 2_681_735_677, "2^40 / 410");
        assert_eq!((cube_root(26), cube_root(27), cube_root(u64::MAX)), (2, 3, 2_642_245));
    }

    /// Fast retransmit at 100 segments: ssthresh = cwnd = ⌊100 × 717/1024⌋ = 70 (β = 0.7), W_max = 100.
    /// The first ACK of the epoch (t = 0, delay_min 0) computes K = ∛(cube_factor × 30) in 1/1024 s
    /// = ⌊∛80 452 070 310⌋ = 4316, 4.215 s (RFC 9438 eq. 2, K = ∛((W_max − cwnd)/C), with W_max − cwnd = 30
    /// and C = 410/1024). Below the origin the target is 100 − 410·4316³/2^40 = 100 − 29 = 71, so
    /// cnt = 70 / (71 − 70) = 70 segments per increase.
    #[test]
    fn fast_retransmit_cuts_to_beta_and_the_epoch_starts_at_k() {
        let (mut c, rto) = cubic(100, 50_000);
        c.on_congestion_event(ms(1000), CongestionEvent::FastRetransmit { halved_flight: 50_000 });
        assert_eq!((c.window(), c.ssthresh(), c.last_max_cwnd), (70_000, 70_000, 100));
        c.on_ack(ms(1000), u64::from(MSS), &rto);
        assert_eq!(c.k, 4316);
        assert_eq!(c.origin_point, 100);
        assert_eq!(c.cnt, 70);
        assert_eq!(c.window(), 70_000, "one segment of 70 acknowledged");
        // 69 more single-segment ACKs in the same jiffy: cnt stays, the 70th segment adds one.
        for _ in 0..69 {
            c.on_ack(ms(1000), u64::from(MSS), &rto);
        }
        assert_eq!(c.window(), 71_000);
        // At t = K (4316/1024 s = 4215 ms later, in whole ms) the target is W_max = 100: cnt = 71/29 = 2.
        c.on_ack(ms(1000 + 4215), u64::from(MSS), &rto);
        assert_eq!(c.cnt, 2);
        // A second loss below W_max: fast convergence, W_max = 71 × 1741/2048 = 60, cwnd = 71 × 0.7 = 49.
        c.on_congestion_event(ms(6000), CongestionEvent::FastRetransmit { halved_flight: 2000 });
        assert_eq!((c.last_max_cwnd, c.window()), (60, 49_000));
    }

    /// The Reno-friendly region: right after a cut at W_max = cwnd (K = 0, target = cwnd + 410·t³/2^40)
    /// the cubic target stays near cwnd for a while, and the Reno estimate W_est, one segment per
    /// ⌊15·cwnd/8⌋ acknowledged, overtakes it: cnt = cwnd / (W_est − cwnd).
    #[test]
    fn reno_friendly_region_takes_over_when_cubic_is_slower() {
        let (mut c, rto) = cubic(20, 10_000);
        // Not in slow start (cwnd 20 ≥ ssthresh 10), no loss yet: an epoch from cwnd = 20, W_max 0.
        c.last_max_cwnd = 20; // as if the last loss had been at 20: K = 0, origin 20
        c.on_ack(ms(0), u64::from(MSS), &rto);
        assert_eq!((c.k, c.origin_point, c.tcp_cwnd), (0, 20, 20));
        assert_eq!(c.cnt, 2000, "target = cwnd at t = 0: 100·cwnd");
        // ⌊15·20/8⌋ = 37 segments per Reno increase: after 111 more acknowledged (ack_cnt 112 > 3 × 37,
        // 1 s later, cubic target 20 + ⌊410·1024³/2^40⌋ = 20 + 0), W_est = 23: cnt = 20 / 3 = 6.
        c.on_ack(ms(1000), 111 * u64::from(MSS), &rto);
        assert_eq!(c.tcp_cwnd, 23);
        assert_eq!(c.cnt, 6);
    }

    /// A timeout: ssthresh = 0.7 cwnd, cwnd one segment, W_max forgotten (`bictcp_reset`); a second
    /// timeout before any new ACK keeps ssthresh. Slow start then counts segments acknowledged (a delayed
    /// ACK of two adds two), up to ssthresh.
    #[test]
    fn timeout_restarts_from_one_segment_and_slow_start_counts_segments() {
        let (mut c, rto) = cubic(40, 1 << 30);
        c.on_congestion_event(ms(0), CongestionEvent::Timeout { halved_flight: 20_000 });
        assert_eq!((c.window(), c.ssthresh(), c.last_max_cwnd), (MSS, 28_000, 0));
        c.on_congestion_event(ms(3000), CongestionEvent::Timeout { halved_flight: 2000 });
        assert_eq!((c.window(), c.ssthresh()), (MSS, 28_000), "same loss episode");
        c.on_ack_event(ms(3100), &AckEvent { una: 1000, nxt: 1000, acked: 1000, rtt_ns: None });
        c.on_ack(ms(3100), u64::from(MSS), &rto);
        c.on_ack(ms(3200), 2 * u64::from(MSS), &rto);
        assert_eq!(c.window(), 4 * MSS);
        c.on_congestion_event(ms(3300), CongestionEvent::Eln);
        assert_eq!((c.window(), c.ssthresh()), (4 * MSS, 28_000), "ELN: no congestion response");
        assert_eq!(c.pacing_rate(), None);
    }

    fn sample(c: &mut Cubic, t_us: u64, una: u64, nxt: u64, rtt_us: u64) {
        c.on_ack_event(Time::from_micros(t_us), &AckEvent { una, nxt, acked: 1000, rtt_ns: Some(rtt_us * 1000) });
    }

    /// HyStart's delay increase: delay_min 100 ms, so the threshold is 100 + clamp(12.5, 4, 16) = 112.5
    /// ms. A round whose first 8 samples stay at or below it goes on; in the next round, 8 samples of
    /// 113 ms and a ninth end slow start: ssthresh = cwnd. Below 16 segments HyStart does not run.
    #[test]
    fn hystart_delay_increase_ends_slow_start() {
        let (mut c, _) = cubic(15, 1 << 30);
        sample(&mut c, 0, 1000, 20_000, 100_000);
        assert_eq!(c.delay_min, 100_000);
        assert_eq!(c.hystart.sample_cnt, 0, "15 segments: HyStart waits for 16");
        c.w.set_segments(16);
        // Samples 10 ms apart (no ACK train) in the round ending at 20 000.
        for i in 0..9 {
            sample(&mut c, 100_000 + i * 10_000, 2000 + i * 1000, 30_000, 112_500);
        }
        assert!(!c.hystart.found, "112.5 ms is not above the threshold");
        // SND.UNA passes 30 000: a new round, curr_rtt forgotten.
        for i in 0..8 {
            sample(&mut c, 300_000 + i * 10_000, 31_000 + i * 1000, 50_000, 113_000);
            assert!(!c.hystart.found, "sample {i}: fewer than 8 in the round");
        }
        sample(&mut c, 390_000, 40_000, 50_000, 113_000);
        assert!(c.hystart.found);
        assert_eq!(c.ssthresh(), 16 * MSS);
    }

    /// HyStart's ACK train: delay_min 10 ms, so a train of ACKs each ≤ 2 ms apart lasting more than 5 ms
    /// from the round's start ends slow start.
    #[test]
    fn hystart_ack_train_ends_slow_start() {
        let (mut c, _) = cubic(16, 1 << 30);
        sample(&mut c, 0, 1000, 20_000, 10_000);
        // A new round at 1 ms (una 21 000 > 20 000), then ACKs every 1.5 ms: 1, 2.5, 4, 5.5 ms.
        for t in [1000, 2500, 4000, 5500] {
            sample(&mut c, t, 21_000, 40_000, 10_000);
        }
        assert!(!c.hystart.found, "4.5 ms of train is not above 5 ms");
        sample(&mut c, 6100, 22_000, 40_000, 10_000);
        assert!(c.hystart.found, "5.1 ms of train");
        assert_eq!(c.ssthresh(), 16 * MSS);
    }

    /// An RTT change: the smallest RTT moves t one delay_min ahead in the cubic function (W(t + RTT)).
    /// With K = 4316 as above and delay_min 500 ms, the first ACK of the epoch sees t = 512/1024 s:
    /// offs = 3804, delta = 410·3804³/2^40 = 20, target = 80, cnt = 70 / 10 = 7.
    #[test]
    fn the_minimum_rtt_moves_the_cubic_clock() {
        let (mut c, rto) = cubic(100, 50_000);
        sample(&mut c, 0, 1000, 2000, 500_000);
        c.on_congestion_event(ms(1000), CongestionEvent::FastRetransmit { halved_flight: 50_000 });
        c.on_ack(ms(1000), u64::from(MSS), &rto);
        assert_eq!((c.k, c.cnt), (4316, 7));
    }

    /// An idle period: 10 s without ACKs after the epoch began at a cut from 100 to 70 segments. Linux
    /// would shift the epoch by the idle time (`CA_EVENT_TX_START`, not modelled), so here the first ACK
    /// after it reads the curve at t = 10 s = 10 240/1024: offs = 10 240 − 4316 = 5924, delta =
    /// ⌊410 × 5924³ / 2^40⌋ = 77, target 177, cnt = ⌊70 / 107⌋ = 0, raised to the cap of 2: one segment per
    /// two acknowledged.
    #[test]
    fn after_an_idle_period_growth_is_capped_at_one_segment_per_two_acknowledged() {
        let (mut c, rto) = cubic(100, 50_000);
        c.on_congestion_event(ms(1000), CongestionEvent::FastRetransmit { halved_flight: 50_000 });
        c.on_ack(ms(1000), u64::from(MSS), &rto);
        c.on_ack(ms(11_000), u64::from(MSS), &rto);
        assert_eq!(c.cnt, 2);
        for _ in 0..4 {
            c.on_ack(ms(11_000), u64::from(MSS), &rto);
        }
        // Six segments acknowledged in all, each counting towards snd_cwnd_cnt (the first one's count
        // carried over from cnt 70): 6 / 2 = three segments more.
        assert_eq!(c.window(), 73 * MSS);
    }

    /// Through the sender: slow start counts segments acknowledged (1, 2, 4, 8 segments after three
    /// ACKs of whole flights; Reno's per-ACK count would have 4), then three duplicate ACKs cut to
    /// ⌊8 × 717/1024⌋ = 5 segments, NewReno's recovery inflates by the three that left (8) and the ACK
    /// of `recover` leaves it at ssthresh, 5 segments, where Reno would have 4.
    #[test]
    fn fast_retransmit_through_the_sender_cuts_by_beta() {
        use crate::tests::{ack, cfg, drain_sender, established, open_window, MSS};
        use crate::Variant;
        let (mut s, first) = established(cfg(Variant::Cubic), 1_000_000);
        let (flight, now) = open_window(&mut s, first, 8, Time::from_millis(100));
        assert_eq!((flight.len(), s.cwnd()), (8, 8 * MSS));
        let una = flight[0].off;
        for _ in 0..3 {
            s.handle_packet(now, &ack(una, &[]));
        }
        assert_eq!(drain_sender(&mut s, now)[0].off, una, "fast retransmit");
        assert_eq!((s.cwnd(), s.ssthresh(), s.in_recovery()), (8 * MSS, 5 * MSS, true));
        s.handle_packet(now, &ack(una + 8 * u64::from(MSS), &[]));
        assert_eq!((s.cwnd(), s.in_recovery()), (5 * MSS, false));
    }
}
