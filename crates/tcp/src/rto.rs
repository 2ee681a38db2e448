//! The retransmission timeout (RFC 6298) on a coarse clock: SRTT/RTTVAR smoothing with the standard
//! gains (1/8 and 1/4: the newest sample weighs 1/8, not 7/8 as in one old ns-2 module), RTO clamped to
//! `[min_rto, max_rto]`, doubled per timeout, and counted in ticks of BSD's 500 ms slow timer, which is
//! what made 1990s timeouts so long (seed 000 §1) and so irregular: a timer of n ticks expires at the n-th
//! tick after it was set, so between (n − 1) and n ticks later, and BSD's 1 s minimum RTO (2 ticks)
//! freezes a connection for 0.5–1 s (seed 004, "More Accurate Retransmission Timers": pauses "from
//! 650 ms" after a handoff).

use crate::config::{ms, TcpConfig};
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
        }
    }

    /// Folds in one RTT measurement, in nanoseconds (RFC 6298 §2.2–2.3).
    pub fn sample(&mut self, rtt: u64) {
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
        let raw = match self.srtt {
            None => self.initial,
            Some(srtt) => srtt.saturating_add(self.tick.max(self.rttvar.saturating_mul(4))),
        };
        raw.clamp(self.min, self.max)
    }

    /// RTO with the exponential backoff applied.
    pub fn current(&self) -> u64 {
        self.base().saturating_mul(1u64 << self.backoff).min(self.max)
    }

    pub fn back_off(&mut self) {
        self.backoff = (self.backoff + 1).min(MAX_BACKOFF);
    }

    pub fn reset_backoff(&mut self) {
        self.backoff = 0;
    }

    pub fn srtt(&self) -> Option<u64> {
        self.srtt
    }

    /// When a timer armed at `now` expires. With a tick, as BSD's `tcp_slowtimo`: the RTO is a whole number
    /// of ticks n (rounded up, at least one), the timer is decremented at every tick boundary (multiples of
    /// the tick from time 0) and expires at the n-th one after `now`, that is between (n − 1)·tick
    /// (exclusive) and n·tick after `now`. Without a tick (0): exactly `now + RTO`.
    pub fn deadline(&self, now: Time) -> Time {
        let t = now.as_nanos();
        let rto = self.current();
        if self.tick == 0 {
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
        r.sample(100 * MS);
        assert_eq!(r.srtt(), Some(100 * MS));
        assert_eq!(r.base(), 300 * MS); // 100 + 4 * 50
        r.sample(200 * MS);
        // rttvar = (3*50 + 100)/4 = 62.5; srtt = (700 + 200)/8 = 112.5 — the new sample weighs 1/8.
        assert_eq!(r.srtt(), Some(112_500_000));
        assert_eq!(r.base(), 112_500_000 + 250 * MS);
    }

    #[test]
    fn clamped_to_min_and_max_and_backoff_doubles() {
        let mut r = Rto::new(&TcpConfig::default());
        r.sample(10 * MS);
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
        big.sample(100_000 * MS);
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
}
