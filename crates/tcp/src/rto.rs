//! The retransmission timeout (RFC 6298) on a coarse clock: SRTT/RTTVAR smoothing with the standard
//! gains (1/8 and 1/4: the newest sample weighs 1/8, not 7/8 as in one old ns-2 module), RTO clamped to
//! `[min_rto, max_rto]`, doubled per timeout, and counted in ticks of BSD's 500 ms slow timer, which is
//! what made 1990s timeouts so long (Balakrishnan 1995 §1) and so irregular: a timer of n ticks expires at the n-th
//! tick after it was set, so between (n − 1) and n ticks later, and BSD's 1 s minimum RTO (2 ticks)
//! freezes a connection for 0.5–1 s (Caceres 1995, "More Accurate Retransmission Timers": pauses "from
//! 650 ms" after a handoff).

//!
//! With [`TimerStyle::Ns`] the timer is instead ns-2's of Balakrishnan 1998's time (Balakrishnan 1998 §4: "We use ns as our
//! simulator"): `TcpAgent::rtt_update`, `rtt_timeout`, `rtt_backoff` and `rtt_init` of ns-2's `tcp/tcp.cc`
//! (the version with `rfc2988_` off, as in the `ns2/NS2` repository's history), with the defaults of
//! `tcl/lib/ns-default.tcl` revision 1.82 of 1997-12-20 (`tcpTick_ 0.1`, `rtxcur_init_ 6.0`,
//! `maxrto_ 100000`, no `minrto_` yet): see `examples/web-ns.toml`.
//!
//! With [`TimerStyle::Linux`] it is Linux's (`net/ipv4/tcp_input.c` `tcp_rtt_estimator`, `tcp_set_rto`):
//! exact (jiffies of 1 ms), fed an RTT on every ACK, its variance `rttvar` the largest `mdev` of the
//! last flight and never below the minimum RTO, which is how Linux applies `TCP_RTO_MIN`.

use crate::cc::linux::JIFFY_NS;
use crate::config::{ms, BackoffReset, TcpConfig, TimerStyle};
use lasthop_wire::Time;

/// Backoff doublings are capped here; `max_rto` caps the value long before in any sane configuration.
const MAX_BACKOFF: u32 = 16;

#[derive(Debug, Clone)]
pub(crate) struct Rto {
    srtt: Option<u64>,
    rttvar: u64,
    backoff: u32,
    initial: u64,
    min: u64,
    max: u64,
    tick: u64,
    style: TimerStyle,
    /// What resets the backoff (`TcpConfig::rto_backoff_reset`).
    reset_on: BackoffReset,
    /// ns: `t_srtt_`, srtt in ticks × 8 (0: no estimate).
    ns_srtt8: i64,
    /// ns: `t_rttvar_`, rttvar in ticks × 4.
    ns_rttvar4: i64,
    /// ns: `t_rtxcur_`, the RTO before backoff and clamps, nanoseconds.
    ns_rtxcur: u64,
    /// Linux: `srtt_us`, eight times the smoothed RTT in microseconds (0: no estimate yet).
    srtt8_us: u64,
    /// Linux: `mdev_us`, four times the smoothed mean deviation (`rttvar` holds `rttvar_us`).
    mdev: u64,
    /// Linux: `mdev_max_us`, the largest `mdev` since the flight that ends at `rtt_seq` began.
    mdev_max: u64,
    /// Linux: `rtt_seq`, SND.NXT when the current flight's variance began; past it, `rttvar` decays.
    rtt_seq: u64,
}

impl Rto {
    pub fn new(cfg: &TcpConfig) -> Rto {
        let min = ms(cfg.min_rto_ms).as_nanos() as u64;
        let max = (ms(cfg.max_rto_ms).as_nanos() as u64).max(min);
        Rto {
            srtt: None,
            rttvar: 0,
            backoff: 0,
            initial: ms(cfg.initial_rto_ms).as_nanos() as u64,
            min,
            max,
            tick: ms(cfg.tick_ms).as_nanos() as u64,
            style: cfg.timer,
            reset_on: cfg.behaviours().rto_backoff_reset,
            ns_srtt8: 0,
            ns_rttvar4: 0,
            ns_rtxcur: ms(cfg.initial_rto_ms).as_nanos() as u64,
            srtt8_us: 0,
            mdev: 0,
            mdev_max: 0,
            rtt_seq: 0,
        }
    }

    /// Whether this is Linux's timer, which takes its samples from [`sample_linux`](Self::sample_linux).
    pub fn is_linux(&self) -> bool {
        self.style == TimerStyle::Linux
    }

    /// Linux `tcp_rtt_estimator` with `tcp_ack_update_rtt`'s backoff reset: folds in `rtt` nanoseconds
    /// measured by an ACK that left SND.UNA at `una`, SND.NXT being `nxt`. Linux keeps microseconds; so
    /// does this, so its integer steps are Linux's.
    pub fn sample_linux(&mut self, rtt: u64, una: u64, nxt: u64) {
        let m = (rtt / 1000).max(1) as i64; // mrtt_us
        let rto_min = (self.min / 1000) as i64;
        let (mut mdev, mut mdev_max, mut rttvar) = (self.mdev as i64, self.mdev_max as i64, self.rttvar as i64);
        let srtt8 = match self.srtt8_us {
            srtt8 if srtt8 > 0 => {
                let mut srtt8 = srtt8 as i64;
                let mut err = m - (srtt8 >> 3);
                srtt8 += err; // rtt = 7/8 rtt + 1/8 new
                if err < 0 {
                    // "we use finer gain for mdev in this case (alpha*beta)": a falling RTT barely moves it.
                    err = -err - (mdev >> 2);
                    if err > 0 {
                        err >>= 3;
                    }
                } else {
                    err -= mdev >> 2;
                }
                mdev += err; // mdev = 3/4 mdev + 1/4 new
                if mdev > mdev_max {
                    mdev_max = mdev;
                    rttvar = rttvar.max(mdev_max);
                }
                if una > self.rtt_seq {
                    // A flight has passed: rttvar decays towards its largest mdev, which starts afresh.
                    if mdev_max < rttvar {
                        rttvar -= (rttvar - mdev_max) >> 2;
                    }
                    self.rtt_seq = nxt;
                    mdev_max = rto_min;
                }
                srtt8
            }
            _ => {
                mdev = m << 1; // "make sure rto = 3*rtt"
                rttvar = mdev.max(rto_min);
                mdev_max = rttvar;
                self.rtt_seq = nxt;
                m << 3
            }
        };
        self.srtt8_us = srtt8.max(1) as u64;
        self.srtt = Some(self.srtt8_us * 1000 / 8);
        (self.mdev, self.mdev_max, self.rttvar) = (mdev as u64, mdev_max as u64, rttvar.max(0) as u64);
        self.backoff = 0;
    }

    /// Folds in the RTT of a segment sent at `sent` and acknowledged at `now`.
    pub fn sample(&mut self, sent: Time, now: Time) {
        if self.style == TimerStyle::Ns {
            self.ns_sample(sent, now);
            return;
        }
        self.sample_bsd(now.as_nanos().saturating_sub(sent.as_nanos()));
        if self.reset_on == BackoffReset::RttSample {
            // 4.4BSD `tcp_xmit_timer`: "Since we now have an rtt measurement, cancel the timer backoff".
            self.backoff = 0;
        }
    }

    /// ns-2 `TcpAgent::rtt_update` (without timestamps): the RTT in whole ticks of the agent's clock, the
    /// tick boundaries crossed between `sent` and `now` (ns offsets its clock by a random `boot_time_`; ours
    /// starts at 0, keeping runs deterministic), at least one; then ns's integer smoothing. A valid sample
    /// also resets the backoff (`newack`: `t_backoff_ = 1` where it calls `rtt_update`).
    fn ns_sample(&mut self, sent: Time, now: Time) {
        let tick = self.tick.max(1);
        let t_rtt = ((now.as_nanos() / tick).saturating_sub(sent.as_nanos() / tick)).clamp(1, 1 << 20) as i64;
        if self.ns_srtt8 != 0 {
            let mut delta = t_rtt - (self.ns_srtt8 >> 3); // d = m - a0
            self.ns_srtt8 += delta; // a1 = 7/8 a0 + 1/8 m
            if self.ns_srtt8 <= 0 {
                self.ns_srtt8 = 1;
            }
            delta = delta.abs() - (self.ns_rttvar4 >> 2);
            self.ns_rttvar4 += delta; // var1 = 3/4 var0 + 1/4 |d|
            if self.ns_rttvar4 <= 0 {
                self.ns_rttvar4 = 1;
            }
        } else {
            self.ns_srtt8 = t_rtt << 3; // srtt = rtt
            self.ns_rttvar4 = t_rtt << 1; // rttvar = rtt / 2
        }
        // t_rtxcur_ = (((t_rttvar_ << (rttvar_exp_ + (T_SRTT_BITS - T_RTTVAR_BITS))) + t_srtt_) >> T_SRTT_BITS)
        //             * tcp_tick_, with rttvar_exp_ = 2, T_SRTT_BITS = 3, T_RTTVAR_BITS = 2: srtt + 4·rttvar.
        let ticks = ((self.ns_rttvar4 << 3) + self.ns_srtt8) >> 3;
        self.ns_rtxcur = (ticks.max(0) as u64).saturating_mul(self.tick);
        self.srtt = Some((self.ns_srtt8 as u64).saturating_mul(self.tick) / 8);
        self.backoff = 0;
    }

    /// Folds in one RTT measurement, in nanoseconds (RFC 6298 §2.2–2.3).
    fn sample_bsd(&mut self, rtt: u64) {
        match self.srtt {
            None => {
                self.srtt = Some(rtt);
                self.rttvar = rtt / 2;
            }
            Some(srtt) => {
                self.rttvar = (3 * self.rttvar + srtt.abs_diff(rtt)) / 4;
                self.srtt = Some((7 * srtt + rtt) / 8);
            }
        }
    }

    /// RTO before backoff: SRTT + max(G, 4·RTTVAR), G being the clock granularity, clamped.
    pub fn base(&self) -> u64 {
        if self.style == TimerStyle::Ns {
            return self.ns_timeout(1);
        }
        if self.style == TimerStyle::Linux {
            // `__tcp_set_rto`: (srtt >> 3) + rttvar in whole jiffies, then `tcp_bound_rto`.
            if self.srtt8_us == 0 {
                return self.initial.min(self.max);
            }
            let us = (self.srtt8_us >> 3) + self.rttvar;
            return (us * 1000).div_ceil(JIFFY_NS).saturating_mul(JIFFY_NS).min(self.max);
        }
        let raw = match self.srtt {
            None => self.initial,
            Some(srtt) => srtt.saturating_add(self.tick.max(self.rttvar.saturating_mul(4))),
        };
        raw.clamp(self.min, self.max)
    }

    /// ns-2 `TcpAgent::rtt_timeout` (`rfc2988_` off): `t_rtxcur_ × t_backoff_`, at most `maxrto_`, at
    /// least `minrto_`, at least two ticks.
    fn ns_timeout(&self, backoff: u64) -> u64 {
        self.ns_rtxcur.saturating_mul(backoff).min(self.max).max(self.min).max(self.tick.saturating_mul(2))
    }

    /// RTO with the exponential backoff applied.
    pub fn current(&self) -> u64 {
        if self.style == TimerStyle::Ns {
            return self.ns_timeout(1 << self.backoff);
        }
        self.base().saturating_mul(1u64 << self.backoff).min(self.max)
    }

    pub fn back_off(&mut self) {
        if self.style == TimerStyle::Ns {
            // ns-2 `rtt_backoff`: double up to 64; backed off past 8, srtt is folded into rttvar and
            // forgotten (the next sample starts the estimate afresh).
            self.backoff = (self.backoff + 1).min(6);
            if self.backoff > 3 {
                self.ns_rttvar4 += self.ns_srtt8 >> 3;
                self.ns_srtt8 = 0;
            }
            return;
        }
        self.backoff = (self.backoff + 1).min(MAX_BACKOFF);
    }

    /// RFC 6298 (5.7): after the SYN timed out, an RTO below `floor` is re-initialized to it for data,
    /// until the first RTT sample sets a measured one.
    pub fn raise_initial(&mut self, floor: u64) {
        self.initial = self.initial.max(floor);
        if self.ns_srtt8 == 0 {
            self.ns_rtxcur = self.ns_rtxcur.max(floor);
        }
    }

    pub fn reset_backoff(&mut self) {
        self.backoff = 0;
    }

    /// A new ACK arrived: with `rto_backoff_reset = "new_ack"` (the `bsd` timer's default) the backoff is
    /// reset here; with `"rtt_sample"` (ns's default) only by an RTT sample ([`sample`](Self::sample)).
    pub fn on_new_ack(&mut self) {
        if self.reset_on == BackoffReset::NewAck {
            self.backoff = 0;
        }
    }

    pub fn srtt(&self) -> Option<u64> {
        self.srtt
    }

    /// When a timer armed at `now` expires. With a tick, as BSD's `tcp_slowtimo`: the RTO is a whole number
    /// of ticks n (rounded up, at least one), the timer is decremented at every tick boundary (multiples of
    /// the tick from time 0) and expires at the n-th one after `now`, that is between (n − 1)·tick
    /// (exclusive) and n·tick after `now`. Without a tick (0), or with ns's timer: exactly `now + RTO`.
    pub fn deadline(&self, now: Time) -> Time {
        self.deadline_after(now, self.current())
    }

    /// When a timer of `rto` nanoseconds armed at `now` expires, counted as [`deadline`](Self::deadline)
    /// counts.
    pub fn deadline_after(&self, now: Time, rto: u64) -> Time {
        let t = now.as_nanos();
        if self.tick == 0 || self.style != TimerStyle::Bsd {
            return Time(t.saturating_add(rto));
        }
        let ticks = rto.div_ceil(self.tick).max(1);
        Time((t / self.tick).saturating_add(ticks).saturating_mul(self.tick))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn first_sample_sets_srtt_and_half_variance() {
        let mut r = Rto::new(&TcpConfig { min_rto_ms: 0.0, tick_ms: 0.0, ..TcpConfig::default() });
        assert_eq!(r.base(), 3000 * MS, "initial RTO before any sample");
        r.sample_bsd(100 * MS);
        assert_eq!(r.srtt(), Some(100 * MS));
        assert_eq!(r.base(), 300 * MS); // 100 + 4 * 50
        r.sample_bsd(200 * MS);
        // rttvar = (3*50 + 100)/4 = 62.5; srtt = (700 + 200)/8 = 112.5 — the new sample weighs 1/8.
        assert_eq!(r.srtt(), Some(112_500_000));
        assert_eq!(r.base(), 112_500_000 + 250 * MS);
    }

    #[test]
    fn clamped_to_min_and_max_and_backoff_doubles() {
        let mut r = Rto::new(&TcpConfig::default());
        r.sample_bsd(10 * MS);
        assert_eq!(r.current(), 1000 * MS, "min RTO (BSD TCPTV_MIN) wins over a tiny RTT");
        r.back_off();
        assert_eq!(r.current(), 2000 * MS);
        r.back_off();
        assert_eq!(r.current(), 4000 * MS);
        for _ in 0..40 {
            r.back_off();
        }
        assert_eq!(r.current(), 64000 * MS, "max RTO caps the backoff");
        r.reset_backoff();
        assert_eq!(r.current(), 1000 * MS);
        let mut big = Rto::new(&TcpConfig::default());
        big.sample_bsd(100_000 * MS);
        assert_eq!(big.current(), 64000 * MS);
    }

    #[test]
    fn deadlines_count_whole_ticks_as_bsd_slowtimo() {
        // RTO 1 s = 2 ticks of 500 ms: the timer expires at the second tick boundary after it was armed,
        // 0.5 s (exclusive) to 1 s later.
        let r = Rto::new(&TcpConfig { initial_rto_ms: 1000.0, ..TcpConfig::default() });
        assert_eq!(r.deadline(Time::from_millis(0)), Time::from_millis(1000));
        assert_eq!(r.deadline(Time::from_millis(1)), Time::from_millis(1000));
        assert_eq!(r.deadline(Time::from_millis(499)), Time::from_millis(1000));
        assert_eq!(r.deadline(Time::from_millis(500)), Time::from_millis(1500));
        assert_eq!(r.deadline(Time::from_millis(999)), Time::from_millis(1500));
        // A backed-off RTO of 2 s is 4 ticks; an RTO that is not a whole number of ticks is rounded up.
        let mut b = Rto::new(&TcpConfig { initial_rto_ms: 1000.0, ..TcpConfig::default() });
        b.back_off();
        assert_eq!(b.deadline(Time::from_millis(1200)), Time::from_millis(3000));
        let odd = Rto::new(&TcpConfig { initial_rto_ms: 1200.0, min_rto_ms: 0.0, ..TcpConfig::default() });
        assert_eq!(odd.deadline(Time::from_millis(100)), Time::from_millis(1500), "3 ticks");
        // No tick: exact.
        let exact = Rto::new(&TcpConfig { initial_rto_ms: 1000.0, tick_ms: 0.0, ..TcpConfig::default() });
        assert_eq!(exact.deadline(Time::from_millis(7)), Time::from_millis(1007));
    }

    #[test]
    fn every_deadline_is_a_tick_boundary_within_one_tick_below_the_rto() {
        let r = Rto::new(&TcpConfig { initial_rto_ms: 1000.0, ..TcpConfig::default() });
        for now_ms in (0..3000).step_by(37) {
            let d = r.deadline(Time::from_millis(now_ms)).as_nanos();
            let wait = d - Time::from_millis(now_ms).as_nanos();
            assert_eq!(d % (500 * MS), 0);
            assert!(wait > 500 * MS && wait <= 1000 * MS, "{now_ms} ms: waits {wait} ns");
        }
    }

    #[test]
    fn ns_backoff_caps_at_64_and_forgets_srtt_past_8() {
        let cfg = TcpConfig {
            timer: TimerStyle::Ns,
            tick_ms: 100.0,
            min_rto_ms: 0.0,
            max_rto_ms: 100_000_000.0,
            initial_rto_ms: 6000.0,
            ..TcpConfig::default()
        };
        let mut r = Rto::new(&cfg);
        assert_eq!(r.current(), 6000 * MS, "rtxcur_init_");
        r.sample(Time::from_millis(0), Time::from_millis(20)); // 1 tick: RTO 3 ticks
        assert_eq!(r.current(), 300 * MS);
        for k in 1..=3 {
            r.back_off();
            assert_eq!(r.current(), (300 << k) * MS);
        }
        assert_eq!(r.srtt(), Some(100 * MS));
        r.back_off(); // x16: srtt folded into rttvar and cleared
        assert_eq!(r.current(), 16 * 300 * MS, "the current RTO value is kept until the next sample");
        for _ in 0..10 {
            r.back_off();
        }
        assert_eq!(r.current(), 64 * 300 * MS, "t_backoff_ stops at 64");
        // The next sample starts afresh (srtt = rtt, rttvar = rtt / 2) and resets the backoff.
        r.sample(Time::from_millis(1000), Time::from_millis(1250)); // 2 ticks: RTO 2 + 4·1
        assert_eq!(r.current(), 600 * MS);
        // Never below two ticks.
        let tiny = Rto::new(&TcpConfig { initial_rto_ms: 50.0, ..cfg });
        assert_eq!(tiny.current(), 200 * MS);
        assert_eq!(tiny.deadline(Time::from_millis(7)), Time::from_millis(207), "exact, not tick-aligned");
    }

    fn linux(min_rto_ms: f64) -> Rto {
        let cfg = TcpConfig { min_rto_ms, ..TcpConfig::with_profile(crate::Profile::Linux) };
        Rto::new(&cfg)
    }

    #[test]
    fn linux_rttvar_follows_the_flights_largest_mdev_and_never_falls_below_the_minimum() {
        let mut r = linux(200.0);
        assert_eq!(r.current(), 1000 * MS, "TCP_TIMEOUT_INIT before a sample");
        r.sample_linux(100 * MS, 1, 10);
        // srtt 100 ms, mdev 200 ms ("rto = 3*rtt"), rttvar max(mdev, TCP_RTO_MIN).
        assert_eq!(r.current(), 300 * MS);
        r.sample_linux(60 * MS, 5, 10);
        // srtt 95 ms; the fall moves mdev to 190 ms, but rttvar keeps the flight's largest, 200 ms.
        assert_eq!(r.current(), 295 * MS);
        r.sample_linux(300 * MS, 12, 20);
        // srtt 120.625 ms; mdev 347.5 ms raises rttvar at once; a new flight begins (rtt_seq 20).
        assert_eq!(r.current(), 469 * MS, "468.125 ms in whole jiffies");
        r.sample_linux(100 * MS, 15, 20);
        assert_eq!(r.current(), 466 * MS, "srtt 118.046 ms + rttvar 347.5 ms: within the flight, no decay");
        r.sample_linux(100 * MS, 25, 30);
        // Past rtt_seq: rttvar decays by a quarter of its excess over the flight's mdev_max (281.25 ms).
        assert_eq!(r.current(), 447 * MS, "115.791 ms + 330.938 ms");
        r.back_off();
        assert_eq!(r.current(), 894 * MS);
        r.sample_linux(100 * MS, 26, 30);
        assert!(r.current() < 894 * MS, "a valid sample resets the backoff (tcp_ack_update_rtt)");
    }

    #[test]
    fn linux_mdev_moves_with_gain_one_32nd_when_the_rtt_falls() {
        let mut r = linux(0.0);
        r.sample_linux(100 * MS, 1, 10);
        r.sample_linux(10 * MS, 2, 10);
        // srtt 88.75 ms; |err| 90 ms less mdev/4 (50 ms) is 40 ms, taken at 1/8: mdev 205 ms. RFC 6298's
        // gain would give rttvar 60 ms, an RTO of 328.75 ms.
        assert_eq!(r.current(), 294 * MS, "88.75 + 205 ms, rounded up to a jiffy");
        assert_eq!(r.srtt(), Some(88_750_000));
    }

    #[test]
    fn linux_timer_is_exact_and_capped_at_tcp_rto_max() {
        let mut r = linux(200.0);
        r.sample_linux(10 * MS, 1, 10);
        assert_eq!(r.current(), 210 * MS, "srtt + TCP_RTO_MIN: Linux's floor is on rttvar, not the RTO");
        assert_eq!(r.deadline(Time::from_millis(7)), Time::from_millis(217), "no slow-timer tick");
        for _ in 0..20 {
            r.back_off();
        }
        assert_eq!(r.current(), 120_000 * MS, "TCP_RTO_MAX");
    }
}
