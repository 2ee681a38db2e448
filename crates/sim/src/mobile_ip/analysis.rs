//! Eom 2002 §2.2's estimate of what a handoff costs: Eq. (1), the packets dropped, from the maximum window,
//! the round-trip time and the loss period t_loss; Eq. (2) and (3), t_loss under base Mobile IP and under
//! route optimisation. Evaluated beside the measured drops and t_loss (`mip-analysis`).

use std::time::Duration;

/// Eq. (1): min(mws / rtt × t_loss, mws), in packets. `mws` is the maximum window in packets.
pub fn packets_dropped(mws: f64, rtt: Duration, t_loss: Duration) -> f64 {
    if rtt.is_zero() {
        return mws;
    }
    (mws / rtt.as_secs_f64() * t_loss.as_secs_f64()).min(mws)
}

/// The terms of Eq. (2) and (3) (§2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LossPeriod {
    /// t_delay: HA to old FA.
    pub ha_to_old_fa: Duration,
    /// t_beacon: from entering the new cell to hearing the new BS's beacon (at most its period, §2.2).
    pub beacon: Duration,
    /// t_new_fa: from the beacon to the new FA sending the registration request.
    pub new_fa: Duration,
    /// t_ha: from the new FA sending the registration request to the HA receiving it.
    pub to_ha: Duration,
    /// t_old_fa: from the new FA sending the binding update to the old FA receiving it.
    pub to_old_fa: Duration,
}

impl LossPeriod {
    /// Eq. (2), base Mobile IP: t_delay + t_beacon + t_new_fa + t_ha.
    pub fn base(&self) -> Duration {
        self.ha_to_old_fa + self.beacon + self.new_fa + self.to_ha
    }

    /// Eq. (3), route optimisation: t_beacon + t_new_fa + t_old_fa.
    pub fn route_optimised(&self) -> Duration {
        self.beacon + self.new_fa + self.to_old_fa
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    #[test]
    fn eq1_is_the_window_share_of_the_loss_period_capped_at_the_window() {
        // 32 packets per 160 ms round trip, 30 ms of loss: 6 packets.
        assert!((packets_dropped(32.0, ms(160), ms(30)) - 6.0).abs() < 1e-9);
        // A loss period longer than a round trip loses the whole window.
        assert_eq!(packets_dropped(32.0, ms(20), ms(100)), 32.0);
        assert_eq!(packets_dropped(32.0, Duration::ZERO, ms(1)), 32.0);
    }

    #[test]
    fn eq2_and_eq3_differ_by_about_twice_the_ha_fa_delay() {
        // §2.2: "the difference between t_loss is approximately the twice of the delay between the HA and
        // the old (to new) FA" when t_old_fa is small. HA–FA 70 ms, beacon 50 ms, 4 ms to the new FA, 1 ms
        // between FAs.
        let p = LossPeriod { ha_to_old_fa: ms(70), beacon: ms(50), new_fa: ms(4), to_ha: ms(70), to_old_fa: ms(1) };
        assert_eq!(p.base(), ms(194));
        assert_eq!(p.route_optimised(), ms(55));
        assert_eq!(p.base() - p.route_optimised(), ms(139));
    }
}
