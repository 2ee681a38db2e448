//! A windowed extreme of samples: the least (or largest) sample seen since the window began, where a
//! sample not beaten within the window's length replaces the held one and starts a new window. Snoop's
//! transmit-timed rules keep two: the hop's unqueued round trip (least transmission-to-ACK time) and the
//! receiver's ACK hold (largest quiet-to-ACK time), each over 10 s (Balakrishnan 1995 §6 times the wireless
//! hop's round trip; the windows are this implementation's, see the module docs of `snoop`).

use lasthop_wire::Time;

/// Holds the least sample of a window (`KEEP_MAX = false`) or the largest (`KEEP_MAX = true`), in ns.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Windowed<const KEEP_MAX: bool> {
    /// The held sample and when its window began.
    held: Option<(u64, Time)>,
}

/// The least sample of the window.
pub(super) type WindowedMin = Windowed<false>;
/// The largest sample of the window.
pub(super) type WindowedMax = Windowed<true>;

impl<const KEEP_MAX: bool> Windowed<KEEP_MAX> {
    pub const fn new() -> Self {
        Windowed { held: None }
    }

    /// Offers `sample` (clamped to `cap`) at `now`: it replaces the held one, starting a new window, if it
    /// is strictly better (smaller for a min, larger for a max) or if the held one's window of `window_ns`
    /// is over; a tie keeps the held one and its window.
    pub fn update(&mut self, now: Time, sample: u64, cap: u64, window_ns: u64) {
        let sample = sample.min(cap);
        let keep = |held: u64| if KEEP_MAX { sample <= held } else { sample >= held };
        self.held = match self.held {
            Some((held, since)) if keep(held) && now.0.saturating_sub(since.0) < window_ns => Some((held, since)),
            _ => Some((sample, now)),
        };
    }

    /// The held sample, once there is one.
    pub fn get(&self) -> Option<u64> {
        self.held.map(|(v, _)| v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: u64 = 10;

    fn at(ns: u64) -> Time {
        Time(ns)
    }

    #[test]
    fn a_min_holds_the_least_sample_until_its_window_ends() {
        let mut m = WindowedMin::new();
        assert_eq!(m.get(), None);
        m.update(at(0), 50, u64::MAX, W);
        m.update(at(3), 70, u64::MAX, W);
        assert_eq!(m.get(), Some(50), "a larger sample within the window is ignored");
        m.update(at(4), 40, u64::MAX, W);
        assert_eq!(m.get(), Some(40), "a smaller one replaces it and starts a new window (at 4)");
        m.update(at(13), 40, u64::MAX, W);
        m.update(at(13), 60, u64::MAX, W);
        assert_eq!(m.get(), Some(40), "a tie kept the window begun at 4, which lasts until 14");
        m.update(at(14), 60, u64::MAX, W);
        assert_eq!(m.get(), Some(60), "the window is over: the next sample stands, larger or not");
    }

    #[test]
    fn a_max_holds_the_largest_sample_until_its_window_ends() {
        let mut m = WindowedMax::new();
        m.update(at(0), 50, u64::MAX, W);
        m.update(at(3), 20, u64::MAX, W);
        assert_eq!(m.get(), Some(50));
        m.update(at(4), 80, u64::MAX, W);
        m.update(at(13), 10, u64::MAX, W);
        assert_eq!(m.get(), Some(80));
        m.update(at(14), 10, u64::MAX, W);
        assert_eq!(m.get(), Some(10));
    }

    #[test]
    fn samples_are_clamped_to_the_cap_before_they_compete() {
        let mut max = WindowedMax::new();
        max.update(at(0), 500, 100, W);
        assert_eq!(max.get(), Some(100));
        max.update(at(1), 300, 100, W);
        assert_eq!(max.get(), Some(100));
        let mut min = WindowedMin::new();
        min.update(at(0), 500, 100, W);
        min.update(at(1), 200, 100, W);
        assert_eq!(min.get(), Some(100), "both clamp to the cap: a tie");
    }
}
