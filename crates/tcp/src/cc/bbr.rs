//! BBR v1 (Cardwell, Cheng, Gunn, Yeganeh and Jacobson 2016, "BBR: Congestion-Based Congestion
//! Control", ACM Queue 14(5)) as Linux's `net/ipv4/tcp_bbr.c` had it when it was merged (Linux 4.9): a
//! model of the path, the bottleneck bandwidth (the largest delivery rate of the last 10 round trips,
//! [`super::rate`]) and the round-trip propagation time (the least RTT of the last 10 s), sets the pacing
//! rate (gain × bandwidth) and the window (2 × bandwidth × min RTT, plus Linux's allowance of three
//! TSO bursts, rounded up to even). With `bbr_ack_aggregation` (the default) the window target also
//! holds Linux 4.19's ACK-aggregation allowance (below).
//!
//! - STARTUP paces and windows at 2/ln 2 ≈ 2.885 × the estimate until three round trips in a row fail to
//!   raise the bandwidth by 25 %; DRAIN then paces at its inverse until the flight is one BDP.
//! - PROBE_BW cycles the pacing gain through 5/4, 3/4 and six phases of 1, each about one min RTT,
//!   starting at a phase other than 3/4 (Linux draws it at random; here a fixed-seed generator does, so
//!   runs repeat).
//! - PROBE_RTT: when the min RTT has not been renewed for 10 s, the window drops to 4 segments for at
//!   least 200 ms and one round trip, then the previous window is restored.
//! - Losses: ssthresh is not touched; a fast retransmit starts packet conservation for the first round of
//!   recovery (cwnd = flight + newly delivered), lost segments come off cwnd, and the window before
//!   recovery comes back when it ends; a timeout takes cwnd to one segment (`tcp_enter_loss`), restores it
//!   at the end of loss recovery, and restarts full-bandwidth detection. The loss-recovery algorithm of the
//!   sender (SACK or NewReno) chooses what is retransmitted; its window settings do not apply (BBR's
//!   `cong_control` owns cwnd, as in Linux, where PRR does not run under it).
//!
//! - ACK aggregation (`bbr_update_ack_aggregation`, Linux 4.19): an epoch starts whenever the ACKs fall
//!   behind the bandwidth estimate; the segments acknowledged since it began beyond what the estimate
//!   expected in that time (at most cwnd) feed a max filter of two windows of 5 round trips. Once the pipe
//!   is full that maximum, at most 100 ms of data at the estimate, is added to the window target
//!   (`bbr_ack_aggregation_cwnd`), so the sender keeps sending through the silences of a path that
//!   returns its ACKs in bunches (a half-duplex hop whose stations take turns, delayed ACKs).
//!
//! Counted in bytes where Linux counts packets (bandwidth in bytes per second, windows in segments).
//! Not modelled: the long-term bandwidth of token-bucket policers (`lt_bw`, Linux 4.10), the restart
//! after idle (`CA_EVENT_TX_START`), undo, and the changes of Linux 5.x (the 1 % pacing margin, two more
//! segments in the first PROBE_BW phase, departure-time pacing).

use super::rate::{CaState, RateSample};
use super::{mul_div, CongestionEvent, Controller};
use crate::config::TcpConfig;
use crate::rto::Rto;
use lasthop_wire::Time;

/// `BBR_UNIT`: gains are fixed-point with 8 fractional bits.
const UNIT: u64 = 256;
/// `bbr_high_gain` = 2/ln 2: the smallest gain that doubles the sending rate every round trip.
const HIGH_GAIN: u64 = UNIT * 2885 / 1000 + 1;
/// `bbr_drain_gain`: the inverse of the high gain, to drain in one round trip the queue STARTUP built.
const DRAIN_GAIN: u64 = UNIT * 1000 / 2885;
/// `bbr_cwnd_gain`: the window is twice the BDP, for delayed and stretched ACKs.
const CWND_GAIN: u64 = UNIT * 2;
/// `bbr_pacing_gain`: the eight phases of PROBE_BW.
const PACING_GAIN: [u64; 8] = [UNIT * 5 / 4, UNIT * 3 / 4, UNIT, UNIT, UNIT, UNIT, UNIT, UNIT];
/// `bbr_cycle_rand`: the first phase is drawn from the last seven.
const CYCLE_RAND: u64 = 7;
/// `bbr_bw_rtts`: the bandwidth filter's window, round trips.
const BW_RTTS: u64 = PACING_GAIN.len() as u64 + 2;
/// `bbr_min_rtt_win_sec`: the min-RTT filter's window.
const MIN_RTT_WIN_NS: u64 = 10_000_000_000;
/// `bbr_probe_rtt_mode_ms`: PROBE_RTT holds the small window at least this long.
const PROBE_RTT_NS: u64 = 200_000_000;
/// `bbr_cwnd_min_target`: the window of PROBE_RTT and the floor of every other, segments.
const CWND_MIN_TARGET: u32 = 4;
/// `bbr_full_bw_thresh`, `bbr_full_bw_cnt`: the pipe is full after three round trips without 25 % growth.
const FULL_BW_THRESH: u64 = UNIT * 5 / 4;
const FULL_BW_CNT: u32 = 3;
/// `bbr_extra_acked_gain`: the ACK-aggregation allowance is added at gain 1.
const EXTRA_ACKED_GAIN: u64 = UNIT;
/// `bbr_extra_acked_win_rtts`: each of the two windows of the aggregation max filter, round trips.
const EXTRA_ACKED_WIN_RTTS: u32 = 5;
/// `bbr_ack_epoch_acked_reset_thresh`: an epoch that acknowledged this many segments starts afresh.
const ACK_EPOCH_ACKED_RESET_THRESH: u32 = 1 << 20;
/// `bbr_extra_acked_max_us`: the allowance is at most this much data at the bandwidth estimate.
const EXTRA_ACKED_MAX_NS: u64 = 100_000_000;
/// `TCP_INIT_CWND`: the target before any RTT is measured.
const TCP_INIT_CWND: u32 = 10;
/// `bbr_min_tso_rate` (1.2 Mbit/s) in bytes per second: below it one segment per TSO burst, above two.
const MIN_TSO_RATE: u64 = 1_200_000 / 8;

const NS_PER_SEC: u128 = 1_000_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

/// Kathleen Nichols' windowed running maximum as Linux's `lib/minmax.c` keeps it: the best, second and
/// third best samples of the window, so that the maximum survives the expiry of the best one.
#[derive(Debug, Clone, Copy, Default)]
struct WindowedMax {
    /// (time, value), best first.
    s: [(u64, u64); 3],
}

impl WindowedMax {
    fn get(&self) -> u64 {
        self.s[0].1
    }

    fn reset(&mut self, t: u64, v: u64) {
        self.s = [(t, v); 3];
    }

    /// `minmax_running_max`.
    fn update(&mut self, win: u64, t: u64, v: u64) {
        let val = (t, v);
        if v >= self.s[0].1 || t - self.s[2].0 > win {
            self.reset(t, v);
            return;
        }
        if v >= self.s[1].1 {
            self.s[2] = val;
            self.s[1] = val;
        } else if v >= self.s[2].1 {
            self.s[2] = val;
        }
        // `minmax_subwin_update`
        let dt = t - self.s[0].0;
        if dt > win {
            self.s = [self.s[1], self.s[2], val];
            if t - self.s[0].0 > win {
                self.s = [self.s[1], self.s[2], val];
            }
        } else if self.s[1].0 == self.s[0].0 && dt > win / 4 {
            self.s[2] = val;
            self.s[1] = val;
        } else if self.s[2].0 == self.s[1].0 && dt > win / 2 {
            self.s[2] = val;
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Bbr {
    mode: Mode,
    /// `snd_cwnd` and its clamp, segments; the MSS.
    cwnd: u32,
    cwnd_clamp: u32,
    initial_cwnd: u32,
    mss: u32,
    ssthresh: u32,
    /// The bottleneck bandwidth filter, bytes per second, over round trips (`rtt_cnt`).
    bw: WindowedMax,
    rtt_cnt: u64,
    /// The round ends when a segment sent after this delivered count is delivered.
    next_rtt_delivered: u64,
    round_start: bool,
    min_rtt_ns: Option<u64>,
    min_rtt_stamp: Time,
    probe_rtt_done_stamp: Option<Time>,
    probe_rtt_round_done: bool,
    /// PROBE_RTT marks what it sends app-limited (Linux sets `tp->app_limited`): samples of segments
    /// sent before the delivered count reaches this are taken as app-limited.
    app_limited_until: u64,
    pacing_gain: u64,
    cwnd_gain: u64,
    /// Bytes per second; `has_seen_rtt` once it was set from a measured RTT.
    pacing_rate: u64,
    /// [`Bbr::tso_segs_goal`] at `pacing_rate`, kept with it: read on every ACK and every segment sent.
    tso_segs: u32,
    has_seen_rtt: bool,
    full_bw: u64,
    full_bw_cnt: u32,
    full_bw_reached: bool,
    cycle_idx: usize,
    cycle_stamp: Time,
    prior_cwnd: u32,
    packet_conservation: bool,
    prev_ca_state: CaState,
    /// Segments marked lost since the last ACK (`rs->losses`): a fast retransmit's, and the sample's.
    losses: u32,
    /// The generator of the first PROBE_BW phase.
    rng: u64,
    /// The ACK-aggregation allowance; none for Linux 4.9's BBR (`TcpConfig::bbr_ack_aggregation`).
    aggregation: Option<AckAggregation>,
}

/// What `bbr_update_ack_aggregation` keeps: the epoch and the windowed maximum of the extra acknowledged.
#[derive(Debug, Clone, Default)]
struct AckAggregation {
    /// `ack_epoch_mstamp`, `ack_epoch_acked` (segments).
    epoch_start: Time,
    epoch_acked: u32,
    /// `extra_acked[2]`, segments: the current window's maximum and the previous one's.
    extra_acked: [u32; 2],
    /// `extra_acked_win_rtts`, `extra_acked_win_idx`.
    win_rtts: u32,
    win_idx: usize,
}

impl Bbr {
    pub(crate) fn new(cfg: &TcpConfig, mss: u32) -> Bbr {
        let mss = mss.max(1);
        let initial_cwnd = cfg.initial_cwnd.max(1);
        let mut b = Bbr {
            mode: Mode::Startup,
            cwnd: initial_cwnd,
            cwnd_clamp: (cfg.max_window / mss).max(1),
            initial_cwnd,
            mss,
            ssthresh: cfg.initial_ssthresh,
            bw: WindowedMax::default(),
            rtt_cnt: 0,
            next_rtt_delivered: 0,
            round_start: false,
            min_rtt_ns: None,
            min_rtt_stamp: Time::ZERO,
            probe_rtt_done_stamp: None,
            probe_rtt_round_done: false,
            app_limited_until: 0,
            pacing_gain: HIGH_GAIN,
            cwnd_gain: HIGH_GAIN,
            pacing_rate: 0,
            tso_segs: 1,
            has_seen_rtt: false,
            full_bw: 0,
            full_bw_cnt: 0,
            full_bw_reached: false,
            cycle_idx: 0,
            cycle_stamp: Time::ZERO,
            prior_cwnd: 0,
            packet_conservation: false,
            prev_ca_state: CaState::Open,
            losses: 0,
            rng: 0x9e37_79b9_7f4a_7c15,
            aggregation: cfg.bbr_ack_aggregation.then(AckAggregation::default),
        };
        b.init_pacing_rate(None);
        b
    }

    #[cfg(test)]
    pub(crate) fn mode(&self) -> Mode {
        self.mode
    }

    /// The bandwidth estimate, bytes per second.
    pub(crate) fn max_bw(&self) -> u64 {
        self.bw.get()
    }

    /// `bbr_init_pacing_rate_from_rtt`: the initial window per RTT (1 ms before any is measured), at the
    /// high gain.
    fn init_pacing_rate(&mut self, srtt_ns: Option<u64>) {
        let rtt = match srtt_ns {
            Some(r) => {
                self.has_seen_rtt = true;
                r.max(1_000)
            }
            None => 1_000_000,
        };
        let bw = u128::from(self.cwnd) * u128::from(self.mss) * NS_PER_SEC / u128::from(rtt);
        self.set_rate(rate_with_gain(bw.min(u128::from(u64::MAX)) as u64, HIGH_GAIN));
    }

    /// Sets the pacing rate, and the TSO burst that goes with it.
    fn set_rate(&mut self, rate: u64) {
        if rate != self.pacing_rate {
            self.pacing_rate = rate;
            self.tso_segs = self.tso_segs_goal_at(rate);
        }
    }

    /// `bbr_tso_segs_goal`: segments per TSO burst at the current pacing rate (about 1 ms of data, at least
    /// one or two).
    fn tso_segs_goal(&self) -> u32 {
        self.tso_segs
    }

    /// [`tso_segs_goal`](Self::tso_segs_goal) at pacing rate `rate`.
    fn tso_segs_goal_at(&self, rate: u64) -> u32 {
        let min_segs = if rate < MIN_TSO_RATE { 1 } else { 2 };
        let bytes = (rate >> 10).min(65_536 - 1 - 320);
        ((bytes / u64::from(self.mss)) as u32).max(min_segs).min(0x7f)
    }

    /// `bbr_target_cwnd` (`bbr_inflight`): gain × BDP in segments, plus three TSO bursts, rounded up to even.
    fn target_cwnd(&self, bw: u64, gain: u64) -> u32 {
        self.target_cwnd_plus(bw, gain, 0)
    }

    /// [`target_cwnd`](Self::target_cwnd) with `extra` segments added to the BDP before the TSO bursts
    /// (`bbr_set_cwnd`'s ACK-aggregation allowance).
    fn target_cwnd_plus(&self, bw: u64, gain: u64, extra: u32) -> u32 {
        let Some(min_rtt) = self.min_rtt_ns else { return TCP_INIT_CWND };
        // ⌈bw · gain · min_rtt / (UNIT · 1 s · MSS)⌉; bw · gain fits a u64 below 2.5·10¹⁶ B/s.
        let bw_gain = bw.saturating_mul(gain);
        let per_segment = UNIT * NS_PER_SEC as u64 * u64::from(self.mss);
        let bdp = mul_div(bw_gain, min_rtt, per_segment, true).min(u64::from(u32::MAX / 4)) as u32;
        let cwnd = bdp + extra.min(u32::MAX / 4) + 3 * self.tso_segs_goal();
        (cwnd + 1) & !1
    }

    fn segments(&self, bytes: u64) -> u32 {
        segments(bytes, self.mss)
    }

    /// `bbr_save_cwnd`: the window to restore after recovery or PROBE_RTT.
    fn save_cwnd(&mut self) {
        self.prior_cwnd = if self.prev_ca_state < CaState::Recovery && self.mode != Mode::ProbeRtt {
            self.cwnd
        } else {
            self.prior_cwnd.max(self.cwnd)
        };
    }

    fn next_random(&mut self) -> u64 {
        // xorshift64*
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32
    }

    fn reset_probe_bw_mode(&mut self, now: Time) {
        self.mode = Mode::ProbeBw;
        self.cycle_idx = PACING_GAIN.len() - 1 - (self.next_random() % CYCLE_RAND) as usize;
        self.advance_cycle_phase(now);
    }

    fn advance_cycle_phase(&mut self, delivered_time: Time) {
        self.cycle_idx = (self.cycle_idx + 1) % PACING_GAIN.len();
        self.cycle_stamp = delivered_time;
    }

    /// `bbr_reset_mode`: back to STARTUP if the pipe was never full, else PROBE_BW.
    fn reset_mode(&mut self, now: Time) {
        if self.full_bw_reached {
            self.reset_probe_bw_mode(now);
        } else {
            self.mode = Mode::Startup;
        }
    }

    /// `bbr_update_ack_aggregation`: the segments acknowledged since the epoch began beyond what the
    /// bandwidth estimate expected in that time, into the max filter.
    fn update_ack_aggregation(&mut self, rs: &RateSample) {
        let (bw, mss, round_start, cwnd) = (self.max_bw(), self.mss, self.round_start, self.cwnd);
        let acked = self.segments(rs.acked_sacked);
        let Some(a) = self.aggregation.as_mut() else { return };
        if rs.acked_sacked == 0 || rs.interval_ns == 0 {
            return;
        }
        if round_start {
            a.win_rtts = (a.win_rtts + 1).min(0x1f);
            if a.win_rtts >= EXTRA_ACKED_WIN_RTTS {
                a.win_rtts = 0;
                a.win_idx ^= 1;
                a.extra_acked[a.win_idx] = 0;
            }
        }
        let epoch_ns = rs.delivered_time.as_nanos().saturating_sub(a.epoch_start.as_nanos());
        let expected = mul_div(bw, epoch_ns, NS_PER_SEC as u64 * u64::from(mss), false);
        let mut expected = expected.min(u64::from(u32::MAX)) as u32;
        if a.epoch_acked <= expected || a.epoch_acked.saturating_add(acked) >= ACK_EPOCH_ACKED_RESET_THRESH {
            a.epoch_acked = 0;
            a.epoch_start = rs.delivered_time;
            expected = 0;
        }
        a.epoch_acked = a.epoch_acked.saturating_add(acked).min(0xf_ffff);
        let extra = (a.epoch_acked - expected).min(cwnd);
        a.extra_acked[a.win_idx] = a.extra_acked[a.win_idx].max(extra);
    }

    /// `bbr_ack_aggregation_cwnd`: the allowance added to the window target once the pipe is full.
    fn ack_aggregation_cwnd(&self) -> u32 {
        match &self.aggregation {
            Some(a) if self.full_bw_reached => {
                let max_aggr =
                    mul_div(self.max_bw(), EXTRA_ACKED_MAX_NS, NS_PER_SEC as u64 * u64::from(self.mss), false);
                let extra = u64::from(a.extra_acked[0].max(a.extra_acked[1])) * EXTRA_ACKED_GAIN / UNIT;
                extra.min(max_aggr.min(u64::from(u32::MAX))) as u32
            }
            _ => 0,
        }
    }

    /// `bbr_update_bw`: count round trips and feed the bandwidth filter.
    fn update_bw(&mut self, rs: &RateSample, app_limited: bool) {
        self.round_start = false;
        if rs.interval_ns == 0 {
            return;
        }
        if rs.prior_delivered >= self.next_rtt_delivered {
            self.next_rtt_delivered = rs.total_delivered;
            self.rtt_cnt += 1;
            self.round_start = true;
            self.packet_conservation = false;
        }
        let bw = mul_div(rs.delivered, NS_PER_SEC as u64, rs.interval_ns, false);
        if !app_limited || bw >= self.max_bw() {
            self.bw.update(BW_RTTS, self.rtt_cnt, bw);
        }
    }

    /// `bbr_is_next_cycle_phase`: a phase lasts a min RTT; probing (5/4) also until the flight reaches
    /// 5/4 BDP or a loss, draining (3/4) ends early once the flight is down to one BDP.
    fn update_cycle_phase(&mut self, rs: &RateSample) {
        if self.mode != Mode::ProbeBw {
            return;
        }
        let elapsed = rs.delivered_time.as_nanos().saturating_sub(self.cycle_stamp.as_nanos());
        let full_length = elapsed > self.min_rtt_ns.unwrap_or(u64::MAX);
        let gain = PACING_GAIN[self.cycle_idx];
        let inflight = || self.segments(rs.prior_in_flight);
        let next = if gain == UNIT {
            full_length
        } else if gain > UNIT {
            full_length && (self.losses > 0 || inflight() >= self.target_cwnd(self.max_bw(), gain))
        } else {
            full_length || inflight() <= self.target_cwnd(self.max_bw(), UNIT)
        };
        if next {
            self.advance_cycle_phase(rs.delivered_time);
        }
    }

    /// `bbr_check_full_bw_reached`: once per round trip, not on app-limited samples.
    fn check_full_bw_reached(&mut self, app_limited: bool) {
        if self.full_bw_reached || !self.round_start || app_limited {
            return;
        }
        let thresh = (u128::from(self.full_bw) * u128::from(FULL_BW_THRESH) / u128::from(UNIT)) as u64;
        if self.max_bw() >= thresh {
            self.full_bw = self.max_bw();
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_reached = self.full_bw_cnt >= FULL_BW_CNT;
    }

    /// `bbr_check_drain`.
    fn check_drain(&mut self, now: Time, rs: &RateSample) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain;
            self.ssthresh = self.target_cwnd(self.max_bw(), UNIT).saturating_mul(self.mss);
        }
        if self.mode == Mode::Drain && self.segments(rs.in_flight) <= self.target_cwnd(self.max_bw(), UNIT) {
            self.reset_probe_bw_mode(now);
        }
    }

    /// `bbr_update_min_rtt`: the 10 s filter, and PROBE_RTT when it expires.
    fn update_min_rtt(&mut self, now: Time, rs: &RateSample) {
        let expired = now.as_nanos() > self.min_rtt_stamp.as_nanos().saturating_add(MIN_RTT_WIN_NS);
        if let Some(rtt) = rs.rtt_ns {
            if self.min_rtt_ns.is_none_or(|m| rtt <= m) || expired {
                self.min_rtt_ns = Some(rtt);
                self.min_rtt_stamp = now;
            }
        }
        if expired && self.mode != Mode::ProbeRtt {
            self.mode = Mode::ProbeRtt;
            self.save_cwnd();
            self.probe_rtt_done_stamp = None;
        }
        if self.mode != Mode::ProbeRtt {
            return;
        }
        self.app_limited_until = (rs.total_delivered + rs.in_flight).max(1);
        match self.probe_rtt_done_stamp {
            None if self.segments(rs.in_flight) <= CWND_MIN_TARGET => {
                self.probe_rtt_done_stamp = Some(Time::from_nanos(now.as_nanos() + PROBE_RTT_NS));
                self.probe_rtt_round_done = false;
                self.next_rtt_delivered = rs.total_delivered;
            }
            None => {}
            Some(done) => {
                self.probe_rtt_round_done |= self.round_start;
                if self.probe_rtt_round_done && now > done {
                    self.min_rtt_stamp = now;
                    self.cwnd = self.cwnd.max(self.prior_cwnd);
                    self.reset_mode(now);
                }
            }
        }
    }

    /// `bbr_update_gains`.
    fn update_gains(&mut self) {
        (self.pacing_gain, self.cwnd_gain) = match self.mode {
            Mode::Startup => (HIGH_GAIN, HIGH_GAIN),
            Mode::Drain => (DRAIN_GAIN, HIGH_GAIN),
            Mode::ProbeBw => (PACING_GAIN[self.cycle_idx], CWND_GAIN),
            Mode::ProbeRtt => (UNIT, UNIT),
        };
    }

    /// `bbr_set_pacing_rate`: before the pipe is full the rate only grows.
    fn set_pacing_rate(&mut self, srtt_ns: Option<u64>) {
        if !self.has_seen_rtt && srtt_ns.is_some() {
            self.init_pacing_rate(srtt_ns);
        }
        let rate = rate_with_gain(self.max_bw(), self.pacing_gain);
        if self.full_bw_reached || rate > self.pacing_rate {
            self.set_rate(rate);
        }
    }

    /// `bbr_set_cwnd_to_recover_or_restore`: `Some(cwnd)` under packet conservation.
    fn recover_or_restore(&mut self, rs: &RateSample, acked: u32) -> (u32, bool) {
        let mut cwnd = self.cwnd;
        if self.losses > 0 {
            cwnd = cwnd.saturating_sub(self.losses).max(1);
        }
        let state = rs.ca_state;
        let mss = self.mss;
        let in_flight = || segments(rs.in_flight, mss);
        if state == CaState::Recovery && self.prev_ca_state != CaState::Recovery {
            // The first round of recovery: packet conservation, from the flight (unused window cut).
            self.packet_conservation = true;
            self.next_rtt_delivered = rs.total_delivered;
            cwnd = in_flight() + acked;
        } else if self.prev_ca_state >= CaState::Recovery && state < CaState::Recovery {
            cwnd = cwnd.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;
        if self.packet_conservation {
            return (cwnd.max(in_flight() + acked), true);
        }
        (cwnd, false)
    }

    /// `bbr_set_cwnd`: towards gain × BDP, by at most what was delivered.
    fn set_cwnd(&mut self, rs: &RateSample) {
        let acked = self.segments(rs.acked_sacked);
        let mut cwnd = self.cwnd;
        if acked > 0 {
            let (c, conserving) = self.recover_or_restore(rs, acked);
            cwnd = c;
            if !conserving {
                let target = self.target_cwnd_plus(self.max_bw(), self.cwnd_gain, self.ack_aggregation_cwnd());
                if self.full_bw_reached {
                    cwnd = (cwnd + acked).min(target);
                } else if cwnd < target || rs.total_delivered < u64::from(TCP_INIT_CWND) * u64::from(self.mss) {
                    cwnd += acked;
                }
                cwnd = cwnd.max(CWND_MIN_TARGET);
            }
        }
        self.cwnd = cwnd.min(self.cwnd_clamp);
        if self.mode == Mode::ProbeRtt {
            self.cwnd = self.cwnd.min(CWND_MIN_TARGET);
        }
    }
}

/// `bytes` in segments of `mss`, rounded up.
fn segments(bytes: u64, mss: u32) -> u32 {
    bytes.div_ceil(u64::from(mss)).min(u64::from(u32::MAX)) as u32
}

/// `bbr_rate_bytes_per_sec`: `bw` bytes per second times a gain.
fn rate_with_gain(bw: u64, gain: u64) -> u64 {
    (u128::from(bw) * u128::from(gain) / u128::from(UNIT)).min(u128::from(u64::MAX)) as u64
}

impl Controller for Bbr {
    fn window(&self) -> u32 {
        self.cwnd.saturating_mul(self.mss)
    }

    fn ssthresh(&self) -> u32 {
        self.ssthresh
    }

    fn pacing_rate(&self) -> Option<u64> {
        Some(self.pacing_rate)
    }

    fn pacing_burst(&self) -> u32 {
        self.tso_segs_goal()
    }

    fn start(&mut self, mss: u32) {
        self.mss = mss.max(1);
        self.cwnd = self.initial_cwnd.min(self.cwnd_clamp);
        self.init_pacing_rate(None);
        self.tso_segs = self.tso_segs_goal_at(self.pacing_rate); // the MSS may have changed, not the rate
    }

    /// BBR reads every ACK through [`on_rate_sample`](Self::on_rate_sample).
    fn on_ack(&mut self, _now: Time, _acked: u64, _rtt: &Rto) {}

    fn on_congestion_event(&mut self, _now: Time, event: CongestionEvent) {
        match event {
            // `bbr_ssthresh`: ssthresh stays; the window is saved, the lost segment comes off it.
            CongestionEvent::FastRetransmit { .. } => {
                self.save_cwnd();
                self.losses += 1;
            }
            // `tcp_enter_loss` (cwnd = the flight, none, + 1) and `bbr_set_state(TCP_CA_Loss)`.
            CongestionEvent::Timeout { .. } => {
                self.save_cwnd();
                self.cwnd = 1;
                self.prev_ca_state = CaState::Loss;
                self.full_bw = 0;
                self.round_start = true;
            }
            CongestionEvent::Eln => {}
        }
    }

    /// The recovery algorithms' windows do not apply: BBR sets cwnd on every ACK.
    fn set_window(&mut self, _cwnd: u32) {}

    fn wants_rate_samples(&self) -> bool {
        true
    }

    /// `bbr_main`.
    fn on_rate_sample(&mut self, now: Time, rs: &RateSample, srtt_ns: Option<u64>) {
        self.losses += rs.losses;
        let app_limited = rs.is_app_limited || rs.prior_delivered < self.app_limited_until;
        self.update_bw(rs, app_limited);
        self.update_ack_aggregation(rs);
        self.update_cycle_phase(rs);
        self.check_full_bw_reached(app_limited);
        self.check_drain(now, rs);
        self.update_min_rtt(now, rs);
        self.update_gains();
        self.set_pacing_rate(srtt_ns);
        self.set_cwnd(rs);
        self.losses = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1000;
    const RTT: u64 = 100_000_000;

    /// A path played by the test: every ACK delivers one segment and measures `bw` over one RTT.
    struct Path {
        now: u64,
        delivered: u64,
        /// The delivered count when the current round's segments were sent.
        round_base: u64,
    }

    impl Path {
        fn new() -> Path {
            Path { now: 1_000_000_000, delivered: 0, round_base: 0 }
        }

        fn ack(&mut self, b: &mut Bbr, bw: u64, rtt: u64, in_flight: u32, ca_state: CaState) {
            self.now += 1_000;
            self.delivered += u64::from(MSS);
            let rs = RateSample {
                delivered: bw * RTT / 1_000_000_000,
                interval_ns: RTT,
                prior_delivered: self.round_base,
                is_app_limited: false,
                acked_sacked: u64::from(MSS),
                prior_in_flight: u64::from(in_flight + 1) * u64::from(MSS),
                in_flight: u64::from(in_flight) * u64::from(MSS),
                rtt_ns: Some(rtt),
                total_delivered: self.delivered,
                delivered_time: Time::from_nanos(self.now),
                ca_state,
                losses: 0,
            };
            b.on_rate_sample(Time::from_nanos(self.now), &rs, Some(RTT));
        }

        /// A round trip: `acks` ACKs of segments sent when the previous round began.
        fn round(&mut self, b: &mut Bbr, bw: u64, acks: u32) {
            self.now += RTT;
            for _ in 0..acks {
                self.ack(b, bw, RTT, acks, CaState::Open);
            }
            self.round_base = self.delivered;
        }
    }

    /// Linux 4.9's BBR, which the tests below work through by hand; [`the_ack_aggregation_allowance`]
    /// adds Linux 4.19's.
    fn bbr() -> Bbr {
        bbr_with(false)
    }

    fn bbr_with(bbr_ack_aggregation: bool) -> Bbr {
        let cfg = TcpConfig {
            variant: crate::Variant::Bbr,
            initial_cwnd: 10,
            max_window: 1 << 30,
            bbr_ack_aggregation,
            ..TcpConfig::default()
        };
        let mut b = Bbr::new(&cfg, 1460);
        b.start(MSS);
        b
    }

    /// The constants as Linux has them (BBR_UNIT = 256).
    #[test]
    fn gains_are_linuxs() {
        assert_eq!((HIGH_GAIN, DRAIN_GAIN, CWND_GAIN), (739, 88, 512));
        assert_eq!(PACING_GAIN, [320, 192, 256, 256, 256, 256, 256, 256]);
        assert_eq!((BW_RTTS, FULL_BW_THRESH, FULL_BW_CNT, CWND_MIN_TARGET), (10, 320, 3, 4));
    }

    /// STARTUP on a path that delivers what is sent: each round's ACKs add a segment each, so the window
    /// doubles (10, 20, 40, 80), below the target 2.885 × BDP + 6 (round 1: 100 kB/s × 100 ms = 10
    /// segments, ⌈28.9⌉ + 3 TSO bursts of 2 = 35, even 36). The pacing rate starts at 10 segments per
    /// 1 ms × 2.885 (no RTT yet: 28 867 187 B/s), is set from the first RTT (10 segments per 100 ms ×
    /// 739/256 = 288 671) and only grows before the pipe is full: 400 kB/s × 739/256 = 1 154 687.
    #[test]
    fn startup_doubles_the_window_each_round_and_paces_at_the_high_gain() {
        let mut b = bbr();
        assert_eq!((b.cwnd, b.pacing_rate), (10, 28_867_187));
        let mut p = Path::new();
        p.ack(&mut b, 100_000, RTT, 9, CaState::Open);
        assert_eq!((b.cwnd, b.pacing_rate, b.target_cwnd(100_000, HIGH_GAIN)), (11, 288_671, 36));
        for _ in 1..10 {
            p.ack(&mut b, 100_000, RTT, 9, CaState::Open);
        }
        p.round_base = p.delivered;
        assert_eq!(b.cwnd, 20);
        p.round(&mut b, 200_000, 20);
        assert_eq!(b.cwnd, 40);
        p.round(&mut b, 400_000, 40);
        assert_eq!((b.cwnd, b.mode, b.rtt_cnt), (80, Mode::Startup, 3));
        assert_eq!(b.pacing_rate, 1_154_687);
    }

    /// Three rounds without 25 % growth (400 kB/s in rounds 3 to 6) fill the pipe at the first ACK of the
    /// third: DRAIN, ssthresh the BDP target (40 segments + 6, at the STARTUP pacing rate's two-segment
    /// bursts: 46), pacing at 88/256 × 400 kB/s = 137 500 B/s, below 1.2 Mbit/s, so the window's TSO
    /// allowance shrinks to three one-segment bursts: ⌈115.5⌉ + 3, even, 120. DRAIN ends when the flight
    /// is down to the BDP target at that rate, 40 + 3, even, 44: PROBE_BW, whose gain of at least 1 brings
    /// back two-segment bursts, the window towards 2 × 40 + 6 = 86.
    #[test]
    fn the_full_pipe_ends_startup_and_drain_ends_at_one_bdp() {
        let mut b = bbr();
        let mut p = Path::new();
        p.round(&mut b, 100_000, 10);
        p.round(&mut b, 200_000, 20);
        p.round(&mut b, 400_000, 40);
        p.round(&mut b, 400_000, 40);
        p.round(&mut b, 400_000, 40);
        assert_eq!((b.mode, b.full_bw_cnt, b.cwnd), (Mode::Startup, 2, 122));
        p.now += RTT;
        p.ack(&mut b, 400_000, RTT, 100, CaState::Open);
        assert_eq!((b.mode, b.ssthresh, b.pacing_rate, b.cwnd), (Mode::Drain, 46 * MSS, 137_500, 120));
        p.ack(&mut b, 400_000, RTT, 45, CaState::Open);
        assert_eq!(b.mode, Mode::Drain);
        p.ack(&mut b, 400_000, RTT, 44, CaState::Open);
        assert_eq!((b.mode, b.cwnd), (Mode::ProbeBw, 86));
    }

    fn in_probe_bw() -> (Bbr, Path) {
        let mut b = bbr();
        let mut p = Path::new();
        for (bw, acks) in [(100_000, 10), (200_000, 20), (400_000, 40), (400_000, 40), (400_000, 40)] {
            p.round(&mut b, bw, acks);
        }
        p.now += RTT;
        p.ack(&mut b, 400_000, RTT, 46, CaState::Open);
        assert_eq!(b.mode, Mode::ProbeBw);
        (b, p)
    }

    /// PROBE_BW never starts in the draining phase; a phase of gain 1 lasts one min RTT; the 5/4 phase
    /// lasts until the flight before the ACK reaches 5/4 BDP + 6 = 56 segments; the 3/4 phase ends as soon
    /// as it is down to the BDP target, 46.
    #[test]
    fn the_gain_cycle_probes_drains_and_cruises() {
        let (mut b, mut p) = in_probe_bw();
        let mut firsts = [0; 8];
        for _ in 0..700 {
            b.reset_probe_bw_mode(Time::ZERO);
            firsts[b.cycle_idx] += 1;
        }
        assert_eq!(firsts[1], 0, "never the 3/4 phase first");
        assert!(firsts.iter().enumerate().all(|(i, &n)| i == 1 || n > 50), "{firsts:?}");

        (b.cycle_idx, b.cycle_stamp) = (7, Time::from_nanos(p.now));
        p.now += RTT / 2;
        p.ack(&mut b, 400_000, RTT, 40, CaState::Open);
        assert_eq!(b.cycle_idx, 7, "half a min RTT");
        p.now += RTT / 2;
        p.ack(&mut b, 400_000, RTT, 40, CaState::Open);
        assert_eq!((b.cycle_idx, b.pacing_rate), (0, 500_000), "probing at 5/4 × 400 kB/s");
        p.now += 2 * RTT;
        p.ack(&mut b, 400_000, RTT, 54, CaState::Open);
        assert_eq!(b.cycle_idx, 0, "55 segments in flight: not yet 5/4 BDP");
        p.ack(&mut b, 400_000, RTT, 55, CaState::Open);
        assert_eq!((b.cycle_idx, b.pacing_rate), (1, 300_000), "draining at 3/4");
        p.ack(&mut b, 400_000, RTT, 46, CaState::Open);
        assert_eq!((b.cycle_idx, b.pacing_rate), (1, 300_000), "47 in flight before the ACK");
        p.ack(&mut b, 400_000, RTT, 45, CaState::Open);
        assert_eq!((b.cycle_idx, b.pacing_rate), (2, 400_000), "down to the BDP early");
    }

    /// The bandwidth filter is the largest sample of the last 10 round trips, its runners-up kept as
    /// `lib/minmax.c` keeps them: 100 at round 1 lasts to round 11, then 50 (round 4) and 40 (round 7)
    /// take over as each ages out.
    #[test]
    fn the_bandwidth_filter_keeps_the_maximum_of_ten_rounds() {
        let mut f = WindowedMax::default();
        for (t, v, max) in [(1, 100, 100), (2, 50, 100), (4, 50, 100), (7, 40, 100), (11, 30, 100), (12, 30, 50)] {
            f.update(BW_RTTS, t, v);
            assert_eq!(f.get(), max, "round {t}");
        }
        f.update(BW_RTTS, 15, 30);
        assert_eq!(f.get(), 40);
        f.update(BW_RTTS, 18, 20);
        assert_eq!(f.get(), 30);
        f.update(BW_RTTS, 19, 60);
        assert_eq!(f.get(), 60, "a new maximum resets the filter");
    }

    /// Ten seconds without an RTT at or below the minimum: PROBE_RTT, window 4 segments; once the flight is
    /// down to 4, at least 200 ms and a round trip; then the window before it (86) comes back.
    #[test]
    fn probe_rtt_after_ten_seconds_without_a_new_min_rtt() {
        let (mut b, mut p) = in_probe_bw();
        let stamp = b.min_rtt_stamp.as_nanos();
        while p.now + 1_000_000_000 <= stamp + MIN_RTT_WIN_NS {
            p.now += 1_000_000_000 - 1_000;
            p.ack(&mut b, 400_000, RTT + 20_000_000, 80, CaState::Open);
            p.round_base = p.delivered;
        }
        assert_eq!((b.mode, b.cwnd), (Mode::ProbeBw, 86));
        p.now = stamp + MIN_RTT_WIN_NS;
        p.ack(&mut b, 400_000, RTT + 20_000_000, 80, CaState::Open);
        assert_eq!((b.mode, b.cwnd, b.min_rtt_ns), (Mode::ProbeRtt, 4, Some(RTT + 20_000_000)));
        assert_eq!(b.prior_cwnd, 86);
        p.ack(&mut b, 400_000, RTT, 4, CaState::Open);
        let done = p.now + PROBE_RTT_NS;
        assert_eq!(b.probe_rtt_done_stamp, Some(Time::from_nanos(done)));
        p.round_base = p.delivered;
        p.ack(&mut b, 400_000, RTT, 4, CaState::Open);
        assert_eq!((b.mode, b.probe_rtt_round_done), (Mode::ProbeRtt, true), "a round, not yet 200 ms");
        p.now = done - 1_000; // the next ACK comes at `done`: not after it
        p.ack(&mut b, 400_000, RTT, 4, CaState::Open);
        assert_eq!(b.mode, Mode::ProbeRtt);
        p.ack(&mut b, 400_000, RTT, 4, CaState::Open);
        assert_eq!((b.mode, b.cwnd), (Mode::ProbeBw, 86));
    }

    /// A fast retransmit: packet conservation for the first round of recovery (cwnd = flight + delivered,
    /// the lost segment off), growth by what is delivered after it, the window before recovery restored when
    /// it ends. A timeout: one segment, grown to the floor of 4, the saved window restored after loss
    /// recovery. ELN changes nothing.
    #[test]
    fn losses_conserve_packets_and_restore_the_window() {
        let (mut b, mut p) = in_probe_bw();
        assert_eq!(b.cwnd, 86);
        b.on_congestion_event(Time::from_nanos(p.now), CongestionEvent::FastRetransmit { halved_flight: 0 });
        p.ack(&mut b, 400_000, RTT, 60, CaState::Recovery);
        assert_eq!((b.cwnd, b.packet_conservation, b.prior_cwnd), (61, true, 86));
        p.ack(&mut b, 400_000, RTT, 59, CaState::Recovery);
        assert_eq!(b.cwnd, 61, "max(cwnd, flight + delivered)");
        p.round_base = p.delivered;
        p.ack(&mut b, 400_000, RTT, 59, CaState::Recovery);
        assert_eq!((b.cwnd, b.packet_conservation), (62, false), "a round later: + delivered");
        p.ack(&mut b, 400_000, RTT, 59, CaState::Open);
        assert_eq!(b.cwnd, 86);
        b.on_congestion_event(Time::from_nanos(p.now), CongestionEvent::Eln);
        assert_eq!(b.cwnd, 86);
        b.on_congestion_event(Time::from_nanos(p.now), CongestionEvent::Timeout { halved_flight: 0 });
        assert_eq!((b.cwnd, b.ssthresh), (1, 46 * MSS));
        p.ack(&mut b, 400_000, RTT, 0, CaState::Loss);
        assert_eq!(b.cwnd, 4);
        p.ack(&mut b, 400_000, RTT, 3, CaState::Open);
        assert_eq!(b.cwnd, 86);
    }

    /// An ACK of `acked` bytes whose segments were delivered at `t_ms`, for the aggregation filter.
    fn delivered_at(t_ms: u64, acked: u64) -> RateSample {
        RateSample {
            delivered: acked,
            interval_ns: RTT,
            prior_delivered: 0,
            is_app_limited: false,
            acked_sacked: acked,
            prior_in_flight: 0,
            in_flight: 0,
            rtt_ns: Some(RTT),
            total_delivered: 0,
            delivered_time: Time::from_millis(t_ms),
            ca_state: CaState::Open,
            losses: 0,
        }
    }

    /// `bbr_update_ack_aggregation` and `bbr_ack_aggregation_cwnd` by hand, at 100 kB/s (100 segments per
    /// second) with a 12-segment window. The first ACK starts an epoch (nothing acknowledged yet is below
    /// the 100 segments expected since time 0): 2 extra. 10 ms later 1 segment was expected and 4 came: 3;
    /// at 20 ms 2 were expected and seven two-segment ACKs come at once: 18 − 2 = 16, capped at cwnd, 12.
    /// At 200 ms 20 were expected and 18 came: a new epoch, and the maximum stays. The allowance is that
    /// maximum at gain 1, at most 100 ms at 100 kB/s (10 segments), once the pipe is full; the window
    /// target holds it before the TSO bursts: 2 × 10 segments of BDP + 10 + 3 one-segment bursts, even:
    /// 34 against 24. The maximum is over two windows of 5 round trips: after 5 round starts the other
    /// slot begins, after 10 the 12 ages out.
    #[test]
    fn the_ack_aggregation_allowance() {
        let mut b = bbr_with(true);
        b.bw.reset(0, 100_000);
        (b.cwnd, b.min_rtt_ns) = (12, Some(RTT));
        b.set_rate(100_000);
        let mut extra = vec![];
        for (t, acks) in [(1000, 1), (1010, 1), (1020, 7), (1200, 1)] {
            for _ in 0..acks {
                b.update_ack_aggregation(&delivered_at(t, 2 * u64::from(MSS)));
            }
            extra.push(b.aggregation.as_ref().map(|a| (a.epoch_acked, a.extra_acked[0])).unwrap());
        }
        assert_eq!(extra, [(2, 2), (4, 3), (18, 12), (2, 12)]);
        assert_eq!(b.ack_aggregation_cwnd(), 0, "not before the pipe is full");
        b.full_bw_reached = true;
        assert_eq!(b.ack_aggregation_cwnd(), 10, "100 ms at 100 kB/s");
        let (bw, allowance) = (b.max_bw(), b.ack_aggregation_cwnd());
        assert_eq!((b.target_cwnd(bw, CWND_GAIN), b.target_cwnd_plus(bw, CWND_GAIN, allowance)), (24, 34));

        b.round_start = true;
        for (round, t) in (1..=10).zip((2000..).step_by(1000)) {
            b.update_ack_aggregation(&delivered_at(t, u64::from(MSS)));
            let a = b.aggregation.as_ref().unwrap();
            let expected = match round {
                1..=4 => ([12, 0], 10),
                5..=9 => ([12, 1], 10),
                _ => ([1, 1], 1),
            };
            assert_eq!((a.extra_acked, b.ack_aggregation_cwnd()), expected, "round {round}");
        }

        let mut v49 = bbr();
        v49.bw.reset(0, 100_000);
        v49.full_bw_reached = true;
        v49.update_ack_aggregation(&delivered_at(1000, 20 * u64::from(MSS)));
        assert_eq!(v49.ack_aggregation_cwnd(), 0, "Linux 4.9 has none");
        let reno = TcpConfig { bbr_ack_aggregation: false, ..TcpConfig::default() };
        assert_eq!(reno.check_behaviours().map_err(|e| e.0), Err("bbr_ack_aggregation"), "BBR's knob only");
    }
}
