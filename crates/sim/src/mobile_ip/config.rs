//! The scenario's `[mobile_ip]` table: which nodes play Mobile IP's roles, the scheme (base Mobile IP or
//! route optimisation), Eom 2002's BS buffering and its §4 fixes, the local handoff protocol's timing, and
//! the handoff schedule. Every field is documented with its default in
//! the user guide, docs/src/reference/scenario/mobile-ip.md.

use crate::registry::{Family, Together};
use crate::scenario::{Invalid, LinkKind, Scenario};
use serde::Deserialize;

/// The family's registration: `[mobile_ip]`, checked and built. Its handoffs are its own, so it does not
/// run with `[mobility]`'s.
pub(crate) const FAMILY: Family = Family {
    name: "mobile_ip",
    present: |s| s.mobile_ip.is_some(),
    validate,
    together: &[Together::Not {
        other: "mobility",
        field: |_| "mobile_ip".into(),
        message: "a scenario has `[mobility]` or `[mobile_ip]`, not both",
    }],
    columns: Some(super::metrics::COLUMNS),
    row: None,
    build: |s, world| {
        if let Some(m) = super::feature::MobileIp::build(s, &mut world.setup()) {
            world.register(m);
        }
        Ok(())
    },
};

fn validate(s: &Scenario) -> Result<(), Invalid> {
    let Some(m) = &s.mobile_ip else { return Ok(()) };
    let joined =
        |a: &str, b: &str, wireless: bool| s.joined(a, b, if wireless { LinkKind::Wireless } else { LinkKind::Wired });
    let neighbours = |n: &str| {
        s.links
            .values()
            .filter_map(|l| match (&l.ends[0], &l.ends[1]) {
                (a, b) if a == n => Some(b.clone()),
                (a, b) if b == n => Some(a.clone()),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    m.validate(&|n| s.nodes.contains_key(n), &joined, &neighbours)
        .map_err(|(f, msg)| (format!("mobile_ip.{f}"), msg))?;
    // The Mobile IP entities take these nodes' packets; only a base station hands what it passes on to the
    // node's own agent, so an agent anywhere else would never see a packet.
    let entities =
        [&m.correspondent, &m.home_agent, &m.mobile].into_iter().chain(m.cells.iter().map(|c| &c.foreign_agent));
    for n in entities {
        if !s.nodes[n].agent.is_none() {
            return Err((
                format!("nodes.{n}.agent"),
                "under `[mobile_ip]` only a cell's base station runs an agent (the correspondent, home agent, \
                 foreign agents and mobile are Mobile IP's entities): expected \"none\""
                    .into(),
            ));
        }
    }
    Ok(())
}

/// Base Mobile IP or the route-optimisation extension (Eom 2002 §2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MipScheme {
    /// Base Mobile IP: everything goes through the HA; the old FA keeps no forwarding pointer.
    #[default]
    Base,
    /// Route optimisation with smooth handoff: binding updates to the old FA and, via the HA's answer to a
    /// binding warning, to the correspondent, which tunnels directly to the care-of address.
    Ro,
}

/// How the BS buffer learns what the mobile already has (Eom 2002 §4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CleanupKind {
    #[default]
    None,
    TcpAck,
    LinkAck,
}

/// One subnetwork: its FA (the router) and the BS of its wireless cell.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CellConfig {
    pub foreign_agent: String,
    pub base_station: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MobileIpConfig {
    /// "base" (default) or "ro".
    #[serde(default)]
    pub scheme: MipScheme,
    /// The correspondent host (node name). Its binding cache (route optimisation) runs where its one link
    /// ends, on the packets it sends; give that link no delay (see
    /// docs/src/reference/scenario/mobile-ip.md).
    pub correspondent: String,
    pub home_agent: String,
    pub mobile: String,
    /// The subnetworks; the mobile starts in the first cell and visits them in order, cyclically.
    pub cells: Vec<CellConfig>,
    /// Per-mobile buffer at every BS, packets (Eom 2002 §3.3: 32); 0 (default): no buffering.
    #[serde(default)]
    pub buffer_packets: usize,
    /// "none" (default), "tcp-ack" or "link-ack" (Eom 2002 §4.1).
    #[serde(default)]
    pub buffer_cleanup: CleanupKind,
    /// The re-ordering rule of Eom 2002 §4.2 (Fig. 17): the old FA sends later arrivals through the old BS.
    #[serde(default)]
    pub reorder: bool,
    /// The mobile's own last data packets kept and re-sent once it is registered in the new cell (Eom 2002
    /// §4.2: "a buffer enough to store one or two data packets on the mobile host"): 0 (default), 1 or 2.
    #[serde(default)]
    pub own_buffer_packets: usize,
    /// Beacon period of the local handoff protocol, ms (Eom 2002 §3.1: 50).
    #[serde(default = "default_beacon_ms")]
    pub beacon_interval_ms: f64,
    /// Period of the FAs' broadcast agent advertisements, s (default 1; RFC 5944 §2.3.1: at most one a second).
    #[serde(default = "default_adv_s")]
    pub advertisement_interval_s: f64,
    /// How long the old FA keeps the binding a smooth handoff gives it, s (default 10).
    #[serde(default = "default_binding_s")]
    pub binding_lifetime_s: u16,
    /// Time of the first handoff, s (default `inf`: none).
    #[serde(default = "inf")]
    pub first_handoff_s: f64,
    /// Time between handoffs after the first, s (default `inf`: one handoff); 0.001 to 1e6. The mobile visits
    /// the cells in order, cyclically (with two cells it bounces between them, Eom 2002 Fig. 16).
    #[serde(default = "inf")]
    pub handoff_every_s: f64,
    /// Time between leaving a cell and entering the next, ms (default 0; the cells do not overlap).
    #[serde(default)]
    pub gap_ms: f64,
}

fn default_beacon_ms() -> f64 {
    50.0
}
fn default_adv_s() -> f64 {
    1.0
}
fn default_binding_s() -> u16 {
    10
}
fn inf() -> f64 {
    f64::INFINITY
}

impl MobileIpConfig {
    /// Checks what serde cannot; `node` says whether a node exists, `link` whether a link joins two nodes
    /// (`wireless` or wired). Errors are (field, message) with the field relative to `mobile_ip`.
    pub fn validate(
        &self,
        node: &dyn Fn(&str) -> bool,
        link: &dyn Fn(&str, &str, bool) -> bool,
        neighbours: &dyn Fn(&str) -> Vec<String>,
    ) -> Result<(), (String, String)> {
        let err = |f: &str, m: String| Err((f.to_string(), m));
        for (f, n) in
            [("correspondent", &self.correspondent), ("home_agent", &self.home_agent), ("mobile", &self.mobile)]
        {
            if !node(n) {
                return err(f, format!("no node named `{n}`"));
            }
        }
        let first_hop = neighbours(&self.correspondent);
        if first_hop.len() != 1 || first_hop[0] == self.home_agent {
            return err(
                "correspondent",
                "expected a host with exactly one link, to a router other than the home agent (that router runs the \
                 correspondent's binding cache on what it sends)"
                    .into(),
            );
        }
        if self.cells.is_empty() {
            return err("cells", "expected at least one cell".into());
        }
        for (i, c) in self.cells.iter().enumerate() {
            for (f, n) in [("foreign_agent", &c.foreign_agent), ("base_station", &c.base_station)] {
                if !node(n) {
                    return err(&format!("cells.{i}.{f}"), format!("no node named `{n}`"));
                }
            }
            if !link(&c.base_station, &c.foreign_agent, false) {
                return err(
                    &format!("cells.{i}.base_station"),
                    format!(
                        "no wired link joins the base station `{}` to its FA `{}`",
                        c.base_station, c.foreign_agent
                    ),
                );
            }
            if !link(&c.base_station, &self.mobile, true) {
                return err(
                    &format!("cells.{i}.base_station"),
                    format!("no wireless link joins `{}` and the mobile `{}`", c.base_station, self.mobile),
                );
            }
        }
        for (i, c) in self.cells.iter().enumerate() {
            if self.cells[..i].iter().any(|d| d.foreign_agent == c.foreign_agent || d.base_station == c.base_station) {
                return err(&format!("cells.{i}"), "expected one cell per FA and per base station".into());
            }
        }
        if self.buffer_packets > 0 && self.scheme != MipScheme::Ro {
            return err(
                "buffer_packets",
                "BS buffering is a change to route optimisation (Eom 2002 §2.2): expected scheme = \"ro\"".into(),
            );
        }
        if self.buffer_packets == 0 && self.buffer_cleanup != CleanupKind::None {
            return err("buffer_cleanup", "a buffer cleanup needs a buffer: expected buffer_packets ≥ 1".into());
        }
        if self.buffer_packets == 0 && self.reorder {
            return err(
                "reorder",
                "the re-ordering rule goes through the BS buffer: expected buffer_packets ≥ 1".into(),
            );
        }
        if self.own_buffer_packets > 2 {
            return err(
                "own_buffer_packets",
                "expected 0, 1 or 2 packets (Eom 2002 §4.2: \"one or two data packets on the mobile host\")".into(),
            );
        }
        if self.buffer_packets > 100_000 {
            return err("buffer_packets", "expected at most 100000 packets".into());
        }
        if !(self.beacon_interval_ms.is_finite()
            && self.beacon_interval_ms >= 1.0
            && self.beacon_interval_ms <= 60_000.0)
        {
            return err("beacon_interval_ms", "expected a period between 1 and 60000 ms".into());
        }
        if !(self.advertisement_interval_s.is_finite() && (1.0..=3600.0).contains(&self.advertisement_interval_s)) {
            return err(
                "advertisement_interval_s",
                "expected 1 to 3600 s (RFC 5944 §2.3.1: at most one broadcast advertisement a second)".into(),
            );
        }
        if self.binding_lifetime_s == 0 {
            return err("binding_lifetime_s", "expected at least 1 s".into());
        }
        if self.first_handoff_s.is_nan()
            || self.first_handoff_s < 0.0
            || self.first_handoff_s > 1e6 && self.first_handoff_s.is_finite()
        {
            return err("first_handoff_s", "expected a time between 0 and 1e6 s (or inf)".into());
        }
        // Periodic handoffs (Eom 2002 Fig. 16: up to one a second, "a mobile host roams around the boundary of
        // two adjacent wireless cells"): a millisecond is far below any handoff the local protocol can finish.
        if self.handoff_every_s.is_nan()
            || self.handoff_every_s < 0.001
            || self.handoff_every_s > 1e6 && self.handoff_every_s.is_finite()
        {
            return err("handoff_every_s", "expected a period between 0.001 and 1e6 s (or inf)".into());
        }
        if !(self.gap_ms.is_finite() && self.gap_ms >= 0.0) || self.gap_ms >= self.handoff_every_s * 1000.0 {
            return err("gap_ms", "expected a gap ≥ 0 ms, shorter than handoff_every_s".into());
        }
        if self.first_handoff_s.is_finite() && self.cells.len() < 2 {
            return err("cells", "handoffs need at least two cells".into());
        }
        Ok(())
    }
}
