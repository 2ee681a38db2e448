//! Cells and mobility (seed 000 §4–§7, seed 004): the scenario's `[mobility]` table, the motion schedule,
//! and per-handoff measurement.
//!
//! Each base station is a cell; the medium of a cell is the wireless link joining its BS and the mobile host.
//! Motion toggles which of those links are *attached*: a frame sent on a detached link, or in flight when it
//! detaches, is lost (the mobile is out of range). Two cell layouts, as in seed 004's four motion cases:
//!
//! - `overlapping`: the mobile stays in range of every BS (seed 000's testbed, seed 004 case 2); a handoff
//!   is the mobile's decision alone, every `interval_s` seconds, and it is make-before-break.
//! - `non-overlapping`: at each crossing the mobile leaves the old cell (its link detaches) and hears the
//!   new BS only `rendezvous_s` later (seed 004's rendezvous delay), when the new link attaches and it
//!   decides to hand off.
//!
//! The mobile visits the listed base stations in order, cyclically (two BSs: back and forth). Handoff
//! control is the sans-IO `lasthop_agents::handoff` machinery, its messages real packets.

use serde::Deserialize;

/// The scenario's `[mobility]` table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MobilityConfig {
    /// "multicast" (seed 000, buffering BSs), "plain" (seed 004 break-before-make), or "none" (the table is
    /// ignored: static routes, no home agent).
    #[serde(default)]
    pub scheme: SchemeKind,
    /// The mobile host (node name).
    pub mobile: String,
    /// The home agent (node name): must lie on the wired path to the mobile.
    pub home_agent: String,
    /// Base stations (node names), each joined to the mobile by one wireless link; the mobile starts in the
    /// first one's cell and moves through them in order, cyclically.
    pub base_stations: Vec<String>,
    /// Seconds between handoffs (default `inf`: none).
    #[serde(default = "inf")]
    pub interval_s: f64,
    /// Time of the first handoff, seconds (default: `interval_s`).
    #[serde(default)]
    pub first_s: Option<f64>,
    /// "overlapping" (default) or "non-overlapping".
    #[serde(default)]
    pub cells: Cells,
    /// Each crossing happens a uniform random 0 to `jitter_s` seconds after its scheduled time, drawn from
    /// the run's seed (default 0: exactly on schedule). Seed 004's crossings fall at arbitrary moments of
    /// the TCP's 500 ms timer ticks; a jitter of at least one tick lets seeds sample that phase.
    #[serde(default)]
    pub jitter_s: f64,
    /// Non-overlapping cells: seconds from leaving a cell to hearing the next BS's beacon (default 0).
    #[serde(default)]
    pub rendezvous_s: f64,
    /// Seed 004's motion cases in one field (overrides `cells`, `rendezvous_s`, and for "still" the
    /// interval): "still" | "overlapping" | "rendezvous-0s" | "rendezvous-1s".
    #[serde(default)]
    pub case: Option<String>,
    /// On handoff completion the mobile's TCP sends three DUPACKs / retransmits at once (seed 004).
    #[serde(default)]
    pub fast_retransmit: bool,
    /// Packets a buffering BS keeps for the new primary to send (seed 000 §6: 12).
    #[serde(default = "twelve")]
    pub buffer_packets: usize,
    /// Packets a buffering BS's Snoop mirror keeps, freed FIFO (default 48, about one 64 KB window).
    #[serde(default = "forty_eight")]
    pub mirror_packets: usize,
    /// Seconds between beacons of each BS, real frames on its wireless link (seed 000 §6: 1 s; 0 = none).
    #[serde(default = "one")]
    pub beacon_period_s: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SchemeKind {
    #[default]
    Multicast,
    Plain,
    None,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cells {
    #[default]
    Overlapping,
    NonOverlapping,
}

fn inf() -> f64 {
    f64::INFINITY
}
fn twelve() -> usize {
    12
}
fn forty_eight() -> usize {
    48
}
fn one() -> f64 {
    1.0
}

impl MobilityConfig {
    /// (cells, rendezvous, interval) after applying `case`.
    pub fn motion(&self) -> (Cells, f64, f64) {
        match self.case.as_deref() {
            Some("still") => (Cells::Overlapping, 0.0, f64::INFINITY),
            Some("overlapping") => (Cells::Overlapping, 0.0, self.interval_s),
            Some("rendezvous-0s") => (Cells::NonOverlapping, 0.0, self.interval_s),
            Some("rendezvous-1s") => (Cells::NonOverlapping, 1.0, self.interval_s),
            _ => (self.cells, self.rendezvous_s, self.interval_s),
        }
    }

    /// Checks ranges and references; errors are (field, message) relative to `mobility`.
    pub fn validate(&self, node: &dyn Fn(&str) -> bool) -> Result<(), (String, String)> {
        for (f, n) in [("mobile", &self.mobile), ("home_agent", &self.home_agent)] {
            if !node(n) {
                return Err((f.into(), format!("no node named `{n}`")));
            }
        }
        if self.base_stations.is_empty() {
            return Err(("base_stations".into(), "expected at least one base station".into()));
        }
        for b in &self.base_stations {
            if !node(b) {
                return Err(("base_stations".into(), format!("no node named `{b}`")));
            }
        }
        if self.interval_s.is_nan() || self.interval_s <= 0.0 {
            return Err(("interval_s".into(), "expected a positive number of seconds (or inf)".into()));
        }
        if self.first_s.is_some_and(|f| !(f.is_finite() && f >= 0.0)) {
            return Err(("first_s".into(), "expected a time ≥ 0 s".into()));
        }
        if !(self.rendezvous_s.is_finite() && self.rendezvous_s >= 0.0) {
            return Err(("rendezvous_s".into(), "expected a delay ≥ 0 s".into()));
        }
        if let Some(c) = &self.case {
            if !["still", "overlapping", "rendezvous-0s", "rendezvous-1s"].contains(&c.as_str()) {
                return Err((
                    "case".into(),
                    format!("unknown case `{c}` (expected still, overlapping, rendezvous-0s, rendezvous-1s)"),
                ));
            }
        }
        if !(self.jitter_s.is_finite() && self.jitter_s >= 0.0) {
            return Err(("jitter_s".into(), "expected a jitter ≥ 0 s".into()));
        }
        let (_, rv, iv) = self.motion();
        if iv.is_finite() && rv >= iv {
            return Err(("rendezvous_s".into(), "expected a rendezvous delay shorter than interval_s".into()));
        }
        if iv.is_finite() && rv + self.jitter_s >= iv {
            return Err((
                "jitter_s".into(),
                "expected jitter_s plus the rendezvous delay shorter than interval_s (crossings would overlap)".into(),
            ));
        }
        if self.buffer_packets == 0 {
            return Err(("buffer_packets".into(), "expected at least 1 packet".into()));
        }
        if !(self.beacon_period_s.is_finite() && self.beacon_period_s >= 0.0) {
            return Err(("beacon_period_s".into(), "expected a period ≥ 0 s (0: no beacons)".into()));
        }
        Ok(())
    }
}

/// Run-time state of mobility inside a world (node and link indices are the world's).
pub(crate) struct MobState {
    pub fast_retransmit: bool,
    pub cells: Cells,
    pub rendezvous: lasthop_wire::Time,
    pub interval_s: f64,
    pub first_s: f64,
    /// Crossing `k` is delayed by a uniform draw in (0, jitter_s] from the stream ("mobility", "crossing.k").
    pub jitter_s: f64,
    pub seed: u64,
    pub beacon_period: Option<lasthop_wire::Time>,
    pub mh: usize,
    pub ha: usize,
    /// Base stations in visiting order, and the wireless link joining each to the mobile.
    pub bss: Vec<usize>,
    pub bs_link: Vec<usize>,
    /// Per world link: out of range (frames lost).
    pub detached: Vec<bool>,
    pub controller: lasthop_agents::handoff::MobileHost,
    /// Index into `bss` of the cell the mobile's uplink goes to (its default gateway).
    pub current: usize,
    pub handoffs: Vec<crate::metrics::HandoffMetrics>,
    /// When the mobile left its last cell (non-overlapping), for the next handoff's `left_s`.
    pub left_at: Option<lasthop_wire::Time>,
    /// Sum of the base stations' `resent_from_buffer` when the current handoff began.
    pub resent_mark: u64,
    /// (source, IP ID) of recent data packets the mobile received, to count duplicates.
    pub seen: std::collections::VecDeque<(std::net::Ipv4Addr, u16)>,
    pub seen_set: std::collections::BTreeSet<(std::net::Ipv4Addr, u16)>,
    pub beacon_ident: u16,
    /// The pause of the crossing under way (see `HandoffMetrics::pause_s`).
    pub pause: PauseTrack,
    /// Data frames lost since the mobile left its cell, before the crossing's handoff entry exists.
    pub lost_between_cells: u64,
}

/// Measures one crossing's pause: when it began, what each flow's receiver must have for the transfer to
/// have resumed, and where the result goes.
#[derive(Default)]
pub(crate) struct PauseTrack {
    pub start: lasthop_wire::Time,
    /// (flow, bytes its receiving application must have read) still outstanding.
    pub marks: Vec<(usize, u64)>,
    /// When every mark was reached, if that happened before the handoff's entry existed.
    pub done: Option<lasthop_wire::Time>,
    /// Index into `handoffs` of the crossing's entry, once the mobile decided.
    pub entry: Option<usize>,
}

/// How many recent (source, IP ID) pairs the mobile remembers for duplicate counting.
pub(crate) const SEEN_WINDOW: usize = 1024;

impl MobState {
    /// Records a data packet's (source, IP ID); true if it was seen recently (a duplicate).
    pub fn seen_before(&mut self, key: (std::net::Ipv4Addr, u16)) -> bool {
        if self.seen_set.contains(&key) {
            return true;
        }
        if self.seen.len() == SEEN_WINDOW {
            if let Some(old) = self.seen.pop_front() {
                self.seen_set.remove(&old);
            }
        }
        self.seen.push_back(key);
        self.seen_set.insert(key);
        false
    }

    /// Time of crossing `k` (0-based): the leave time (non-overlapping) or decision time (overlapping).
    pub fn crossing(&self, k: u32) -> Option<lasthop_wire::Time> {
        let mut t = self.first_s + f64::from(k) * self.interval_s;
        if self.jitter_s > 0.0 {
            let mut r = crate::rng::stream(self.seed, "mobility", &format!("crossing.{k}"));
            t += self.jitter_s * crate::rng::unit_open0(&mut r);
        }
        t.is_finite().then(|| lasthop_wire::Time((t * 1e9).round() as u64))
    }
}
