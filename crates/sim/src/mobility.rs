//! Cells and mobility (Balakrishnan 1995 §4–§7, Caceres 1995): the scenario's `[mobility]` table, the motion schedule,
//! and per-handoff measurement.
//!
//! Each base station is a cell; the medium of a cell is the wireless link joining its BS and the mobile host.
//! Motion toggles which of those links are *attached*: a frame sent on a detached link, or in flight when it
//! detaches, is lost (the mobile is out of range). Two cell layouts, as in Caceres 1995's four motion cases:
//!
//! - `overlapping`: the mobile stays in range of every BS (Balakrishnan 1995's testbed, Caceres 1995 case 2); a handoff
//!   is the mobile's decision alone, every `interval_s` seconds, and it is make-before-break.
//! - `non-overlapping`: at each crossing the mobile leaves the old cell (its link detaches) and hears the
//!   new BS only `rendezvous_s` later (Caceres 1995's rendezvous delay), when the new link attaches and it
//!   decides to hand off.
//!
//! The mobile visits the listed base stations in order, cyclically (two BSs: back and forth). Handoff
//! control is the sans-IO `lasthop_agents::handoff` machinery, its messages real packets.
//!
//! Overlapping cells share one half-duplex medium by default (`shared_medium`): Balakrishnan 1995's two WaveLAN cells
//! are in one room on one channel (§6), so frames still queued at the old BS after a handoff go out, but take
//! air time from the new cell. Non-overlapping cells are separate media.
//!
//! # Beacon-driven motion (`motion = "beacons"`, Balakrishnan 1995 §4, §6)
//!
//! The base stations stand on a line (`positions_m`) and the mobile walks along it through `waypoints_m` at
//! `speed_mps`, back and forth (or once). Every BS beacons each `beacon_period_s` (Balakrishnan 1995 §6: 1 s) as a real
//! frame on its cell; the mobile samples each beacon it hears from a log-distance path-loss model with seeded
//! log-normal shadowing ([`Radio`]) and hands its samples to `lasthop_agents::handoff::BeaconMonitor`, which
//! decides with hysteresis when to hand off and which BSs are likely targets (asked to buffer). A BS is out of
//! range when its mean received power at the mobile's position is below `range_dbm`: its cell's link is then
//! detached both ways (no frames, beacons included), so whether cells overlap follows from the geometry.

pub(crate) mod feature;
mod metrics;

pub use metrics::HandoffMetrics;

use crate::registry::Family;
use crate::scenario::{AgentKind, Invalid, LinkKind, Scenario};
use serde::Deserialize;

/// The family's registration: `[mobility]`, checked and built.
pub(crate) const FAMILY: Family = Family {
    name: "mobility",
    present: |s| s.mobility.is_some(),
    validate,
    together: &[],
    columns: Some(metrics::COLUMNS),
    row: None,
    build: |s, world| {
        if let Some(m) = feature::Mobility::build(s, &mut world.setup()) {
            world.register(m);
        }
        Ok(())
    },
};

fn validate(s: &Scenario) -> Result<(), Invalid> {
    let Some(m) = &s.mobility else { return Ok(()) };
    m.validate(&|n| s.nodes.contains_key(n)).map_err(|(f, msg)| (format!("mobility.{f}"), msg))?;
    for b in m.base_stations.iter().filter(|_| m.scheme != SchemeKind::None) {
        // The handoff agent runs Snoop or E2E-ELN's notifier itself; split (and M-TCP) relays move between
        // base stations (`crate::split`); the others have no handoff-aware version.
        let kinds = &s.nodes[b].agent.0;
        let handoff_aware = |k: &AgentKind| matches!(k, AgentKind::Snoop | AgentKind::ElnFixed) || k.is_split();
        let alone = [(AgentKind::ElnFixed, "E2E-ELN's notifier", "eln-fixed")];
        if let Some((_, what, name)) = alone.iter().find(|(k, ..)| kinds.len() > 1 && kinds.contains(k)) {
            return Err((
                format!("nodes.{b}.agent"),
                format!("a mobility base station runs {what} alone: expected \"{name}\" without other agents"),
            ));
        }
        if let Some(k) = kinds.iter().find(|k| !handoff_aware(k)) {
            return Err((
                format!("nodes.{b}.agent"),
                format!(
                    "a mobility base station runs \"none\", \"snoop\" or \"eln-fixed\" inside its handoff agent, or \"split\" / \"split-sack\" / \"mtcp\"; `{}` is not supported there",
                    k.name()
                ),
            ));
        }
    }
    if let Some(b) = m.base_stations.iter().find(|b| !s.joined(b, &m.mobile, LinkKind::Wireless)) {
        return Err((
            "mobility.base_stations".into(),
            format!("no wireless link joins `{b}` and the mobile `{}`", m.mobile),
        ));
    }
    Ok(())
}

/// The scenario's `[mobility]` table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MobilityConfig {
    /// "multicast" (Balakrishnan 1995, buffering BSs), "plain" (Caceres 1995 break-before-make), or "none" (the table is
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
    /// the run's seed (default 0: exactly on schedule). Caceres 1995's crossings fall at arbitrary moments of
    /// the TCP's 500 ms timer ticks; a jitter of at least one tick lets seeds sample that phase.
    #[serde(default)]
    pub jitter_s: f64,
    /// Non-overlapping cells: seconds from leaving a cell to hearing the next BS's beacon (default 0).
    #[serde(default)]
    pub rendezvous_s: f64,
    /// Caceres 1995's motion cases in one field (overrides `cells`, `rendezvous_s`, and for "still" the
    /// interval): "still" | "overlapping" | "rendezvous-0s" | "rendezvous-1s".
    #[serde(default)]
    pub case: Option<String>,
    /// On handoff completion the mobile's TCP sends three DUPACKs / retransmits at once (Caceres 1995).
    #[serde(default)]
    pub fast_retransmit: bool,
    /// With `fast_retransmit`, the signal a mobile *receiver* sends its stationary sender (Caceres 1995,
    /// Fig. 9 (b): "This special signal can be specially marked TCP ACK or three ordinary TCP ACKs"):
    /// "dupacks" (default; any sender's fast retransmit answers) or "marked-ack" (one ACK with the handoff
    /// option, answered by a sender with `tcp.handoff_aware`; others see one ordinary ACK).
    #[serde(default)]
    pub receiver_signal: ReceiverSignal,
    /// Packets a buffering BS keeps for the new primary to send (Balakrishnan 1995 §6: 12).
    #[serde(default = "twelve")]
    pub buffer_packets: usize,
    /// Snoop at the base stations gets the link's transmission reports (lasthop's transmit-timed recovery;
    /// default true) or not (Balakrishnan 1995 §6's queue-timed Snoop). A Snoop that takes over at a handoff never
    /// gets them (`lasthop_agents::handoff::BsConfig::transmit_reports` says why).
    #[serde(default = "yes")]
    pub snoop_transmit_reports: bool,
    /// A base station told to stop forwarding to the mobile (Buffer, Stop, or the plain scheme's Notify) still
    /// sends the frames it had already queued for it (default true: what a real driver does with its
    /// interface queue; Balakrishnan 1995 does not say). false discards them from the BS's wireless queue when the
    /// request arrives, a deviation for measuring what those frames cost: in overlapping cells on one
    /// channel they are the duplicates of what the new primary re-sends from its buffer (handoff-rate).
    #[serde(default = "yes")]
    pub old_bs_drains: bool,
    /// Milliseconds a host spends on a handoff control message before acting on it: the mobile between its
    /// decision and sending its request, a base station between a request's arrival and its answer (default
    /// 0: not modelled). Balakrishnan 1995 §6 runs the beacon analyser and routing daemons at user level on i486 base
    /// stations and ThinkPads and measures 5-10 ms idle handoffs (§7, Fig. 10), but gives no per-message
    /// time; Seshan's Daedalus measurements give whole handoffs (5-15 ms), not their parts. So no default can
    /// be sourced: the field is there to ask what a given processing time does (`handoff-latency` shows it).
    #[serde(default)]
    pub host_processing_ms: f64,
    /// Packets a buffering BS's Snoop mirror keeps, freed FIFO (default 48, about one 64 KB window).
    #[serde(default = "forty_eight")]
    pub mirror_packets: usize,
    /// Seconds between beacons of each BS, real frames on its wireless link (Balakrishnan 1995 §6: 1 s; 0 = none).
    #[serde(default = "one")]
    pub beacon_period_s: f64,
    /// The base stations' cells share one half-duplex medium (one channel). Default: true, except for
    /// scheduled motion in non-overlapping cells.
    #[serde(default)]
    pub shared_medium: Option<bool>,
    /// "scheduled" (default: handoffs at `first_s` + k·`interval_s`) or "beacons" (the mobile walks and hands
    /// off on beacon strength; the fields below).
    #[serde(default)]
    pub motion: MotionKind,
    /// Beacon motion: each base station's position on the line, metres (default 0, 50, 100, …).
    #[serde(default)]
    pub positions_m: Option<Vec<f64>>,
    /// Beacon motion: the points the mobile walks through, metres (default: the first and the last BS).
    #[serde(default)]
    pub waypoints_m: Option<Vec<f64>>,
    /// Beacon motion: walking speed, m/s (default 1; 0 stands still at the first waypoint).
    #[serde(default = "one")]
    pub speed_mps: f64,
    /// Beacon motion: "back-and-forth" (default: through the waypoints and back, forever) or "once" (stop at
    /// the last one).
    #[serde(default)]
    pub repeat: Repeat,
    /// Beacon motion: transmit power of a BS, dBm (default 20).
    #[serde(default = "twenty")]
    pub tx_power_dbm: f64,
    /// Beacon motion: path loss at 1 m, dB (default 40).
    #[serde(default = "forty")]
    pub ref_loss_db: f64,
    /// Beacon motion: log-distance path-loss exponent (default 3, indoors).
    #[serde(default = "three")]
    pub path_loss_exponent: f64,
    /// Beacon motion: standard deviation of the log-normal shadowing of each beacon sample, dB (default 4).
    #[serde(default = "four")]
    pub shadowing_db: f64,
    /// Beacon motion: a BS whose mean received power is below this (dBm) is out of range (default -85).
    #[serde(default = "minus_85")]
    pub range_dbm: f64,
    /// Beacon motion: hand off only to a BS this much stronger than the current one, dB (default 6).
    #[serde(default = "six")]
    pub hysteresis_db: f64,
    /// Beacon motion: beacons averaged per BS (default 3).
    #[serde(default = "three_usize")]
    pub beacon_samples: usize,
    /// Beacon motion: BSs heard at least this strong (dBm) are likely targets and buffer (default -75).
    #[serde(default = "minus_75")]
    pub buffer_threshold_dbm: f64,
    /// Beacon motion: how often the mobile's position is updated for range, seconds (default 0.05).
    #[serde(default = "step")]
    pub motion_step_s: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MotionKind {
    #[default]
    Scheduled,
    Beacons,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Repeat {
    #[default]
    BackAndForth,
    Once,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SchemeKind {
    #[default]
    Multicast,
    Plain,
    None,
}

/// How a mobile receiver's TCP tells the stationary sender that a handoff is over (Caceres 1995, "Fast
/// Retransmissions", Fig. 9 (b) "Transmitter on the SH").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReceiverSignal {
    /// "three ordinary TCP ACKs": duplicates of the last ACK, so that an unmodified sender fast-retransmits
    /// (`lasthop_tcp::Receiver::send_dupacks`).
    #[default]
    Dupacks,
    /// "specially marked TCP ACK": one ACK carrying the handoff option (`lasthop_wire::handoff_option`,
    /// `lasthop_tcp::Receiver::send_handoff_mark`); a handoff-aware sender goes back to SND.UNA at once.
    MarkedAck,
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
fn yes() -> bool {
    true
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
fn twenty() -> f64 {
    20.0
}
fn forty() -> f64 {
    40.0
}
fn three() -> f64 {
    3.0
}
fn four() -> f64 {
    4.0
}
fn six() -> f64 {
    6.0
}
fn minus_85() -> f64 {
    -85.0
}
fn minus_75() -> f64 {
    -75.0
}
fn three_usize() -> usize {
    3
}
fn step() -> f64 {
    0.05
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
        // Every time becomes integer nanoseconds: past `MAX_TIME_S` it would no longer be exact (inf, where
        // `interval_s` allows it, means never and is not converted).
        let max = crate::scenario::MAX_TIME_S;
        for (f, v) in [
            ("interval_s", self.interval_s),
            ("first_s", self.first_s.unwrap_or(0.0)),
            ("rendezvous_s", self.rendezvous_s),
            ("jitter_s", self.jitter_s),
            ("beacon_period_s", self.beacon_period_s),
            ("motion_step_s", self.motion_step_s),
        ] {
            if v.is_finite() && v.abs() > max {
                return Err((f.into(), format!("expected at most {max:e} s, got {v}")));
            }
        }
        if self.interval_s.is_nan() || self.interval_s <= 0.0 {
            return Err(("interval_s".into(), "expected a positive number of seconds (or inf)".into()));
        }
        for (f, v) in [
            ("interval_s", self.interval_s),
            ("beacon_period_s", self.beacon_period_s),
            ("motion_step_s", self.motion_step_s),
        ] {
            // A zero or negative beacon period or motion step is refused below with its own message.
            if v > 0.0 {
                crate::floors::at_least(f, v, crate::floors::MOBILITY_PERIOD_S, "s")?;
            }
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
        if !(self.host_processing_ms.is_finite() && (0.0..=max * 1e3).contains(&self.host_processing_ms)) {
            return Err(("host_processing_ms".into(), format!("expected a time from 0 to {:e} ms", max * 1e3)));
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
        if self.motion == MotionKind::Beacons {
            self.validate_beacons()?;
        }
        Ok(())
    }

    fn validate_beacons(&self) -> Result<(), (String, String)> {
        let err = |f: &str, m: &str| Err((f.to_string(), m.to_string()));
        if self.beacon_period_s <= 0.0 {
            return err("beacon_period_s", "beacon motion needs beacons: expected a period > 0 s");
        }
        if self.case.is_some() || self.interval_s.is_finite() || self.first_s.is_some() || self.jitter_s > 0.0 {
            return err(
                "motion",
                "beacon motion decides handoffs itself: remove `case`, `interval_s`, `first_s` and `jitter_s`",
            );
        }
        if self.cells != Cells::Overlapping || self.rendezvous_s != 0.0 {
            return err(
                "motion",
                "with beacon motion, range follows from the positions: remove `cells` and `rendezvous_s`",
            );
        }
        if let Some(p) = &self.positions_m {
            if p.len() != self.base_stations.len() {
                return err("positions_m", "expected one position per base station");
            }
            if !p.iter().all(|x| x.is_finite()) {
                return err("positions_m", "expected finite positions in metres");
            }
        }
        if let Some(w) = &self.waypoints_m {
            if w.is_empty() || !w.iter().all(|x| x.is_finite()) {
                return err("waypoints_m", "expected at least one finite position in metres");
            }
        }
        let checks: [(&str, bool, &str); 8] = [
            ("speed_mps", self.speed_mps.is_finite() && self.speed_mps >= 0.0, "expected a speed ≥ 0 m/s"),
            ("tx_power_dbm", self.tx_power_dbm.is_finite(), "expected a power in dBm"),
            ("ref_loss_db", self.ref_loss_db.is_finite(), "expected a loss in dB"),
            (
                "path_loss_exponent",
                self.path_loss_exponent.is_finite() && self.path_loss_exponent > 0.0,
                "expected an exponent > 0",
            ),
            (
                "shadowing_db",
                self.shadowing_db.is_finite() && self.shadowing_db >= 0.0,
                "expected a standard deviation ≥ 0 dB",
            ),
            ("range_dbm", self.range_dbm.is_finite(), "expected a power in dBm"),
            ("hysteresis_db", self.hysteresis_db.is_finite() && self.hysteresis_db >= 0.0, "expected a margin ≥ 0 dB"),
            ("buffer_threshold_dbm", self.buffer_threshold_dbm.is_finite(), "expected a power in dBm"),
        ];
        for (f, ok, m) in checks {
            if !ok {
                return err(f, m);
            }
        }
        if self.beacon_samples == 0 {
            return err("beacon_samples", "expected at least 1 sample");
        }
        if !(self.motion_step_s.is_finite() && self.motion_step_s > 0.0) {
            return err("motion_step_s", "expected a step > 0 s");
        }
        Ok(())
    }

    /// Whether the base stations' cells share one medium.
    pub fn shares_medium(&self) -> bool {
        self.shared_medium.unwrap_or(self.motion == MotionKind::Beacons || self.motion().0 == Cells::Overlapping)
    }

    /// Base-station positions for beacon motion (given, or 0, 50, 100, … m).
    pub fn positions(&self) -> Vec<f64> {
        self.positions_m.clone().unwrap_or_else(|| (0..self.base_stations.len()).map(|i| 50.0 * i as f64).collect())
    }

    /// The radio model of beacon motion.
    pub fn radio(&self) -> Radio {
        Radio {
            tx_power_dbm: self.tx_power_dbm,
            ref_loss_db: self.ref_loss_db,
            exponent: self.path_loss_exponent,
            shadowing_db: self.shadowing_db,
            range_dbm: self.range_dbm,
        }
    }

    /// The mobile's walk for beacon motion.
    pub fn walk(&self) -> Walk {
        let p = self.positions();
        let waypoints = self.waypoints_m.clone().unwrap_or_else(|| {
            let (a, b) = (p[0], p[p.len() - 1]);
            if a == b {
                vec![a]
            } else {
                vec![a, b]
            }
        });
        Walk { waypoints, speed_mps: self.speed_mps, repeat: self.repeat }
    }
}

/// Received signal strength of a beacon: log-distance path loss with log-normal shadowing,
/// `P(d) = tx_power_dbm − ref_loss_db − 10·n·log10(max(d, 1 m)) + X`, `X ~ N(0, shadowing_db²)` drawn afresh
/// for every beacon from the BS's own seeded stream. Logarithms come from `lasthop_channel::rng::ln`
/// (basic IEEE operations only), so the samples are the same on every machine.
#[derive(Debug, Clone, PartialEq)]
pub struct Radio {
    pub tx_power_dbm: f64,
    pub ref_loss_db: f64,
    pub exponent: f64,
    pub shadowing_db: f64,
    /// Mean power below which the BS is out of range.
    pub range_dbm: f64,
}

impl Radio {
    /// Mean received power at `d` metres, dBm.
    pub fn mean_dbm(&self, d: f64) -> f64 {
        let log10 = crate::rng::ln(d.abs().max(1.0)) / crate::rng::ln(10.0);
        self.tx_power_dbm - self.ref_loss_db - 10.0 * self.exponent * log10
    }

    pub fn in_range(&self, d: f64) -> bool {
        self.mean_dbm(d) >= self.range_dbm
    }

    /// One beacon's received power at `d` metres: the mean plus a shadowing draw from `rng`.
    pub fn sample<R: rand::RngCore + ?Sized>(&self, d: f64, rng: &mut R) -> f64 {
        self.mean_dbm(d) + self.shadowing_db * standard_normal(rng)
    }
}

/// A standard normal draw by Marsaglia's polar method, from `+ − × ÷`, `sqrt` (exact in IEEE 754) and
/// `rng::ln` only, so it is bit-identical on every platform.
pub fn standard_normal<R: rand::RngCore + ?Sized>(rng: &mut R) -> f64 {
    loop {
        let u = 2.0 * crate::rng::unit_open0(rng) - 1.0;
        let v = 2.0 * crate::rng::unit_open0(rng) - 1.0;
        let s = u * u + v * v;
        if s > 0.0 && s < 1.0 {
            return u * (-2.0 * crate::rng::ln(s) / s).sqrt();
        }
    }
}

/// The mobile's walk along the line: through `waypoints` at `speed_mps`, then back (or stopping at the end).
#[derive(Debug, Clone, PartialEq)]
pub struct Walk {
    pub waypoints: Vec<f64>,
    pub speed_mps: f64,
    pub repeat: Repeat,
}

impl Walk {
    /// Position (m) at `t` seconds.
    pub fn position(&self, t: f64) -> f64 {
        let w = &self.waypoints;
        let legs: Vec<f64> = w.windows(2).map(|p| (p[1] - p[0]).abs()).collect();
        let total: f64 = legs.iter().sum();
        if total == 0.0 || self.speed_mps == 0.0 {
            return w[0];
        }
        let mut s = self.speed_mps * t.max(0.0);
        s = match self.repeat {
            Repeat::Once => s.min(total),
            Repeat::BackAndForth => {
                let r = s % (2.0 * total);
                if r > total {
                    2.0 * total - r
                } else {
                    r
                }
            }
        };
        for (i, &len) in legs.iter().enumerate() {
            if s <= len {
                let dir = if w[i + 1] >= w[i] { 1.0 } else { -1.0 };
                return w[i] + dir * s;
            }
            s -= len;
        }
        w[w.len() - 1]
    }
}

/// Run-time state of beacon motion.
pub(crate) struct BeaconState {
    pub radio: Radio,
    pub walk: Walk,
    /// Per base station (same order as `MobState::bss`): position, and its shadowing stream.
    pub positions: Vec<f64>,
    pub shadowing: Vec<crate::rng::SimRng>,
    pub monitor: lasthop_agents::handoff::BeaconMonitor,
    pub step: lasthop_wire::Time,
}

/// Run-time state of mobility inside a world (node and link indices are the world's).
pub(crate) struct MobState {
    pub fast_retransmit: bool,
    /// The cells are M-TCP's (a node runs `"mtcp"`): the mobile's sending TCPs are M-TCP's mobile end, frozen
    /// while it is out of every cell (`feature::Mobility::freeze_mobile_senders`).
    pub mtcp_mobile: bool,
    /// `MobilityConfig::receiver_signal`.
    pub receiver_signal: ReceiverSignal,
    /// `MobilityConfig::old_bs_drains`.
    pub old_bs_drains: bool,
    pub cells: Cells,
    pub rendezvous: lasthop_wire::Time,
    /// `MobilityConfig::host_processing_ms`.
    pub processing: lasthop_wire::Time,
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
    pub controller: lasthop_agents::handoff::MobileHost,
    /// Index into `bss` of the cell the mobile's uplink goes to (its default gateway).
    pub current: usize,
    pub handoffs: Vec<HandoffMetrics>,
    /// When the mobile left its last cell (non-overlapping), for the next handoff's `left_s`.
    pub left_at: Option<lasthop_wire::Time>,
    /// Sum of the base stations' `resent_from_buffer` when the current handoff began.
    pub resent_mark: u64,
    /// (source, IP ID) of recent data packets the mobile received, to count duplicates.
    pub seen: std::collections::VecDeque<(std::net::Ipv4Addr, u16)>,
    pub seen_set: std::collections::BTreeSet<(std::net::Ipv4Addr, u16)>,
    pub beacon_ident: u16,
    /// Beacon motion (`None`: scheduled).
    pub beacons: Option<BeaconState>,
    /// The pause of the crossing under way (see `HandoffMetrics::pause_s`).
    pub pause: PauseTrack,
    /// Data frames lost since the mobile left its cell, before the crossing's handoff entry exists.
    pub lost_between_cells: u64,
    /// The core's out-of-range loss count already attributed (see `feature::Mobility::settle_losses`).
    pub losses_seen: u64,
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

    /// Time of crossing `k` (0-based): the leave time (non-overlapping) or decision time (overlapping);
    /// none with beacon motion.
    pub fn crossing(&self, k: u32) -> Option<lasthop_wire::Time> {
        if self.beacons.is_some() {
            return None;
        }
        let mut t = self.first_s + f64::from(k) * self.interval_s;
        if self.jitter_s > 0.0 {
            let mut r = crate::rng::stream(self.seed, "mobility", &format!("crossing.{k}"));
            t += self.jitter_s * crate::rng::unit_open0(&mut r);
        }
        t.is_finite().then(|| lasthop_wire::Time((t * 1e9).round() as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walk_goes_back_and_forth_or_stops() {
        let mut w = Walk { waypoints: vec![0.0, 100.0], speed_mps: 10.0, repeat: Repeat::BackAndForth };
        let at = |w: &Walk| [0.0, 5.0, 10.0, 15.0, 20.0, 25.0].map(|t| w.position(t));
        assert_eq!(at(&w), [0.0, 50.0, 100.0, 50.0, 0.0, 50.0]);
        w.repeat = Repeat::Once;
        assert_eq!(at(&w), [0.0, 50.0, 100.0, 100.0, 100.0, 100.0]);
        let legs = Walk { waypoints: vec![10.0, 30.0, 20.0], speed_mps: 1.0, repeat: Repeat::Once };
        assert_eq!([0.0, 20.0, 25.0, 40.0].map(|t| legs.position(t)), [10.0, 30.0, 25.0, 20.0]);
        let still = Walk { waypoints: vec![7.0], speed_mps: 3.0, repeat: Repeat::BackAndForth };
        assert_eq!(still.position(100.0), 7.0);
    }

    #[test]
    fn log_distance_path_loss_and_range() {
        let r = Radio { tx_power_dbm: 20.0, ref_loss_db: 40.0, exponent: 3.0, shadowing_db: 0.0, range_dbm: -80.0 };
        assert!((r.mean_dbm(1.0) + 20.0).abs() < 1e-9);
        assert!((r.mean_dbm(0.2) + 20.0).abs() < 1e-9, "closer than 1 m counts as 1 m");
        assert!((r.mean_dbm(100.0) + 80.0).abs() < 1e-9, "30 dB per decade");
        assert!(r.in_range(99.0) && !r.in_range(101.0));
    }

    #[test]
    fn shadowing_has_the_configured_spread_and_repeats() {
        let r = Radio { tx_power_dbm: 20.0, ref_loss_db: 40.0, exponent: 3.0, shadowing_db: 4.0, range_dbm: -80.0 };
        let draw = |seed| {
            let mut g = crate::rng::stream(seed, "mobility.bs1", "shadowing");
            (0..20_000).map(|_| r.sample(10.0, &mut g) - r.mean_dbm(10.0)).collect::<Vec<f64>>()
        };
        let x = draw(1);
        assert_eq!(x, draw(1), "same seed, same draws");
        assert_ne!(x, draw(2));
        let mean = x.iter().sum::<f64>() / x.len() as f64;
        let sd = (x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / x.len() as f64).sqrt();
        assert!(mean.abs() < 0.1 && (sd - 4.0).abs() < 0.1, "mean {mean}, sd {sd}");
    }
}
