//! The retransmission timeout (RFC 6298) on a coarse clock: SRTT/RTTVAR smoothing with the standard
//! gains (1/8 and 1/4: the newest sample weighs 1/8, not 7/8 as in one old ns-2 module), RTO clamped to
//! `[min_rto, max_rto]`, doubled per timeout, and expiries rounded up to the next tick of BSD's 500 ms
//! slow timer, which is what made 1990s timeouts so long (seed 000 §1).

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

    /// When a timer armed at `now` expires: the first tick boundary at or after `now + RTO`.
    pub fn deadline(&self, now: Time) -> Time {
        Time(round_up(now.as_nanos().saturating_add(self.current()), self.tick))
    }
}

/// The first multiple of `tick` at or after `t` (`t` itself when `tick` is 0).
pub(crate) fn round_up(t: u64, tick: u64) -> u64 {
    if tick == 0 {
        return t;
    }
    t.div_ceil(tick).saturating_mul(tick)
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
    fn deadlines_fall_on_tick_boundaries() {
        let r = Rto::new(&TcpConfig { initial_rto_ms: 1000.0, ..TcpConfig::default() });
        assert_eq!(r.deadline(Time::from_millis(0)), Time::from_millis(1000));
        assert_eq!(r.deadline(Time::from_millis(1)), Time::from_millis(1500));
        assert_eq!(r.deadline(Time::from_millis(499)), Time::from_millis(1500));
        assert_eq!(r.deadline(Time::from_millis(500)), Time::from_millis(1500));
        assert_eq!(round_up(7, 0), 7);
    }
}
