//! The mobile host's beacon analysis (Balakrishnan 1995 §4, §6): it keeps the signal strength of the recent beacons of
//! every base station it hears, and decides with hysteresis which one should be its primary and which are
//! likely handoff targets (asked to buffer).
//!
//! Balakrishnan 1995 §4: "Handoffs are mobile-initiated and occur when the mobile host discovers a base station with a
//! stronger signal than the current one. [...] Based on its beacon measurements and some hysteresis, the MH
//! computes that BS1 should be buffering (rather than forwarding) packets and that BS2 should be forwarding
//! packets. Using hysteresis ensures that very frequent and unnecessary handoffs don't occur." §6: the kernel
//! samples the signal strength of every beacon; a user-level analyser decides when to hand off.
//!
//! The paper leaves the rule open; this one is stated here and its constants are parameters
//! ([`BeaconConfig`]): a base station's strength is the mean (in dB) of its last `samples` beacons heard within
//! `max_age`; the mobile hands off to the strongest base station when it is at least `hysteresis_db` stronger
//! than the current primary, or at once when the primary has not been heard within `max_age` (out of range);
//! every other base station heard at `buffer_threshold_dbm` or more is a likely target. Sans-IO: samples are
//! handed in with their time, decisions come out; nothing here reads a clock or draws a random number.

use lasthop_wire::Time;
use std::collections::{BTreeMap, VecDeque};
use std::net::Ipv4Addr;

/// Constants of the handoff rule.
#[derive(Debug, Clone, PartialEq)]
pub struct BeaconConfig {
    /// A base station must be this much stronger than the primary (dB) before the mobile hands off to it.
    pub hysteresis_db: f64,
    /// Beacons averaged per base station (the most recent ones).
    pub samples: usize,
    /// Beacons older than this are forgotten; a base station with none left is not heard (out of range).
    pub max_age: Time,
    /// Base stations other than the primary heard at least this strong (dBm) are asked to buffer.
    pub buffer_threshold_dbm: f64,
}

/// What the mobile should do after a new measurement.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// Hand off to this base station (`None`: keep the current primary).
    pub handoff_to: Option<Ipv4Addr>,
    /// Base stations that should buffer (likely targets), never the primary-to-be; in address order.
    pub likely: Vec<Ipv4Addr>,
}

/// Recent beacon strengths per base station and the hysteresis rule.
#[derive(Debug, Clone)]
pub struct BeaconMonitor {
    cfg: BeaconConfig,
    heard: BTreeMap<Ipv4Addr, VecDeque<(Time, f64)>>,
}

impl BeaconMonitor {
    pub fn new(cfg: BeaconConfig) -> BeaconMonitor {
        let samples = cfg.samples.max(1);
        BeaconMonitor { cfg: BeaconConfig { samples, ..cfg }, heard: BTreeMap::new() }
    }

    pub fn config(&self) -> &BeaconConfig {
        &self.cfg
    }

    /// A beacon from `bs` arrived at `now` with received signal strength `dbm`.
    pub fn handle_beacon(&mut self, now: Time, bs: Ipv4Addr, dbm: f64) {
        let q = self.heard.entry(bs).or_default();
        if q.len() == self.cfg.samples {
            q.pop_front();
        }
        q.push_back((now, dbm));
    }

    /// The strength of `bs` at `now`: the mean of its kept samples no older than `max_age`; `None` if there
    /// is none (not heard).
    pub fn strength(&self, now: Time, bs: Ipv4Addr) -> Option<f64> {
        let fresh: Vec<f64> = self
            .heard
            .get(&bs)?
            .iter()
            .filter(|(t, _)| now.saturating_since(*t) <= std::time::Duration::from_nanos(self.cfg.max_age.0))
            .map(|&(_, v)| v)
            .collect();
        (!fresh.is_empty()).then(|| fresh.iter().sum::<f64>() / fresh.len() as f64)
    }

    /// The hysteresis decision for a mobile whose primary is `current`. Ties between equally strong base
    /// stations go to the lower address, so the decision is a pure function of the samples.
    pub fn decide(&self, now: Time, current: Ipv4Addr) -> Decision {
        let heard: Vec<(Ipv4Addr, f64)> =
            self.heard.keys().filter_map(|&b| self.strength(now, b).map(|s| (b, s))).collect();
        let best = heard.iter().copied().fold(None::<(Ipv4Addr, f64)>, |acc, (b, s)| match acc {
            Some((_, a)) if a >= s => acc,
            _ => Some((b, s)),
        });
        let handoff_to = match (best, self.strength(now, current)) {
            (Some((b, _)), None) if b != current => Some(b),
            (Some((b, s)), Some(cur)) if b != current && s >= cur + self.cfg.hysteresis_db => Some(b),
            _ => None,
        };
        let primary = handoff_to.unwrap_or(current);
        let likely = heard
            .iter()
            .filter(|&&(b, s)| b != primary && s >= self.cfg.buffer_threshold_dbm)
            .map(|&(b, _)| b)
            .collect();
        Decision { handoff_to, likely }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BS1: Ipv4Addr = Ipv4Addr::new(10, 0, 1, 1);
    const BS2: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 1);
    const BS3: Ipv4Addr = Ipv4Addr::new(10, 0, 3, 1);

    fn s(x: f64) -> Time {
        Time((x * 1e9) as u64)
    }

    fn monitor(hysteresis_db: f64) -> BeaconMonitor {
        BeaconMonitor::new(BeaconConfig { hysteresis_db, samples: 3, max_age: s(3.5), buffer_threshold_dbm: -75.0 })
    }

    /// Feeds one beacon per BS per second, `samples[k]` = (bs1, bs2) strengths at second k.
    fn feed(m: &mut BeaconMonitor, samples: &[(f64, f64)]) {
        for (k, &(a, b)) in samples.iter().enumerate() {
            m.handle_beacon(s(k as f64), BS1, a);
            m.handle_beacon(s(k as f64 + 0.5), BS2, b);
        }
    }

    #[test]
    fn stronger_by_less_than_the_margin_keeps_the_primary() {
        let mut m = monitor(6.0);
        feed(&mut m, &[(-70.0, -66.0), (-70.0, -65.0), (-70.0, -66.0)]);
        let d = m.decide(s(2.6), BS1);
        assert_eq!(d.handoff_to, None, "4–5 dB stronger is inside the 6 dB hysteresis");
        assert_eq!(d.likely, vec![BS2], "but BS2 is a likely target and buffers");
    }

    #[test]
    fn stronger_by_the_margin_hands_off_and_the_old_primary_buffers() {
        let mut m = monitor(6.0);
        feed(&mut m, &[(-72.0, -66.0), (-72.0, -65.0), (-72.0, -66.0)]);
        let d = m.decide(s(2.6), BS1);
        assert_eq!(d.handoff_to, Some(BS2));
        assert_eq!(d.likely, vec![BS1]);
    }

    #[test]
    fn without_hysteresis_noise_makes_it_ping_pong() {
        // Two BSs at equal mean strength with ±1 dB noise: the averaged best flips between them.
        let noisy = [(-70.0, -71.0), (-71.0, -70.0), (-71.0, -69.0), (-69.0, -71.0), (-69.0, -72.0)];
        let (mut bare, mut with) = (monitor(0.0), monitor(6.0));
        let (mut cur_bare, mut cur_with) = (BS1, BS1);
        let (mut n_bare, mut n_with) = (0, 0);
        for (k, &(a, b)) in noisy.iter().enumerate() {
            for (m, cur, n) in [(&mut bare, &mut cur_bare, &mut n_bare), (&mut with, &mut cur_with, &mut n_with)] {
                m.handle_beacon(s(k as f64), BS1, a);
                m.handle_beacon(s(k as f64 + 0.5), BS2, b);
                if let Some(t) = m.decide(s(k as f64 + 0.6), *cur).handoff_to {
                    *cur = t;
                    *n += 1;
                }
            }
        }
        assert!(n_bare >= 2, "no margin: {n_bare} handoffs");
        assert_eq!(n_with, 0, "6 dB margin: none");
    }

    #[test]
    fn a_primary_not_heard_any_more_is_left_at_once() {
        let mut m = monitor(10.0);
        m.handle_beacon(s(0.0), BS1, -60.0);
        m.handle_beacon(s(4.0), BS2, -84.0);
        assert_eq!(m.strength(s(4.0), BS1), None, "older than max_age");
        let d = m.decide(s(4.0), BS1);
        assert_eq!(d.handoff_to, Some(BS2), "even a weak BS beats one out of range");
        assert!(d.likely.is_empty(), "BS1 not heard, nobody else above the threshold");
    }

    #[test]
    fn strength_is_the_mean_of_the_last_samples() {
        let mut m = monitor(6.0);
        for (k, v) in [-90.0, -60.0, -63.0, -66.0].into_iter().enumerate() {
            m.handle_beacon(s(k as f64), BS3, v);
        }
        assert_eq!(m.strength(s(3.0), BS3), Some(-63.0), "the oldest of four dropped (3 kept)");
        assert_eq!(m.strength(s(5.6), BS3), Some(-66.0), "only the sample from t = 3 s is fresh");
        assert_eq!(m.strength(s(3.0), BS1), None);
    }

    #[test]
    fn weak_base_stations_are_not_asked_to_buffer_and_ties_go_to_the_lower_address() {
        let mut m = monitor(0.0);
        m.handle_beacon(s(0.0), BS1, -80.0);
        m.handle_beacon(s(0.0), BS3, -70.0);
        m.handle_beacon(s(0.0), BS2, -70.0);
        let d = m.decide(s(0.1), BS1);
        assert_eq!(d.handoff_to, Some(BS2));
        assert_eq!(d.likely, vec![BS3], "BS1 below -75 dBm is not buffering");
    }
}
