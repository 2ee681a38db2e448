//! A scenario's `[scale]` table: many mobiles or many flows from one template, so that a cell of ten thousand
//! mobiles is three lines of TOML, not ten thousand tables. The expansion happens when the scenario is read,
//! before it is validated, so every copy is checked as if it had been written by hand.
//!
//! - With `mobile`: that node is replaced by `count` copies `NAME-0` … `NAME-(count−1)` at consecutive
//!   addresses from its own; every link with the mobile at one end is copied per mobile (`LINK-i`, keeping
//!   its `medium`, so copies of a link on a named medium share it: N mobiles in one cell), and every flow
//!   from or to the mobile is copied per mobile (`FLOW-i`).
//! - Without `mobile`: every flow is copied `count` times (`FLOW-i`) between the same two nodes (N flows
//!   through one base station to one mobile, each its own TCP connection and port).
//!
//! With `total_bytes`, every copied flow sends `max(total_bytes / count, min_flow_bytes)` bytes, so the
//! work of a run stays comparable as `count` grows (the floor keeps a flow more than a handshake).

use crate::scenario::Scenario;
use serde::Deserialize;
use std::net::Ipv4Addr;

/// Most copies `[scale]` makes. Bulk flows take local ports from 20000 up, one per flow, so at most 45,535
/// flows fit in a scenario; 40,000 copies leave room for flows written by hand.
pub const MAX_COUNT: u64 = 40_000;
/// Most flows a scenario may have (ports 20000–65534, one per flow).
pub const MAX_FLOWS: usize = 45_535;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScaleConfig {
    /// How many copies, 1–[`MAX_COUNT`].
    pub count: u64,
    /// The node to copy `count` times with its links and flows; absent: only the flows are copied.
    #[serde(default)]
    pub mobile: Option<String>,
    /// Bytes of all copied flows together; absent: each copy keeps its template's `bytes`.
    #[serde(default)]
    pub total_bytes: Option<u64>,
    /// The fewest bytes a copied flow sends when `total_bytes` is given (default 1460, one segment).
    #[serde(default = "default_min_flow_bytes")]
    pub min_flow_bytes: u64,
    /// Copy `i` of a flow starts `start_spread_s · i / count` seconds after its template's `start_s`
    /// (default 0: all at once). Spreading the starts over a fixed time keeps the offered load the same
    /// as `count` grows: thousands of flows started together on one 2 Mb/s cell would each wait minutes for
    /// a frame, and every timer (the sender's RTO, Snoop's 200 ms persist timer) would fire over and over.
    #[serde(default)]
    pub start_spread_s: f64,
}

fn default_min_flow_bytes() -> u64 {
    1460
}

impl ScaleConfig {
    /// When copy `i` of a flow whose template starts at `template_s` starts.
    pub fn flow_start(&self, template_s: f64, i: usize) -> f64 {
        template_s + self.start_spread_s * i as f64 / self.count.max(1) as f64
    }

    /// Bytes of each copied flow whose template sends `template` bytes.
    pub fn flow_bytes(&self, template: u64) -> u64 {
        match self.total_bytes {
            Some(total) => (total / self.count.max(1)).max(self.min_flow_bytes),
            None => template,
        }
    }
}

/// Replaces the scenario's `[scale]` table by the copies it asks for. Errors are (field path, message).
pub(crate) fn expand(s: &mut Scenario) -> Result<(), (String, String)> {
    let Some(cfg) = s.scale.take() else { return Ok(()) };
    if !(1..=MAX_COUNT).contains(&cfg.count) {
        return Err(("scale.count".into(), format!("expected 1 to {MAX_COUNT} copies, got {}", cfg.count)));
    }
    if !(cfg.start_spread_s.is_finite() && (0.0..=crate::scenario::MAX_TIME_S).contains(&cfg.start_spread_s)) {
        return Err((
            "scale.start_spread_s".into(),
            format!("expected 0 to {:e} seconds, got {}", crate::scenario::MAX_TIME_S, cfg.start_spread_s),
        ));
    }
    if cfg.total_bytes == Some(0) || cfg.min_flow_bytes == 0 {
        let field = if cfg.total_bytes == Some(0) { "scale.total_bytes" } else { "scale.min_flow_bytes" };
        return Err((field.into(), "expected at least 1 byte".into()));
    }
    let count = cfg.count as usize;
    match cfg.mobile.clone() {
        Some(mobile) => copy_mobile(s, &cfg, &mobile, count)?,
        None => {
            let templates = std::mem::take(&mut s.flows);
            for (name, f) in templates {
                for i in 0..count {
                    let mut copy = f.clone();
                    copy.bytes = cfg.flow_bytes(f.bytes);
                    copy.start_s = cfg.flow_start(f.start_s, i);
                    if s.flows.insert(format!("{name}-{i}"), copy).is_some() {
                        return Err(("scale.count".into(), format!("copy `{name}-{i}` has the name of another flow")));
                    }
                }
            }
        }
    }
    if s.flows.len() > MAX_FLOWS {
        return Err((
            "scale.count".into(),
            format!("{} flows after copying; at most {MAX_FLOWS} fit (one local port each)", s.flows.len()),
        ));
    }
    Ok(())
}

fn copy_mobile(s: &mut Scenario, cfg: &ScaleConfig, mobile: &str, count: usize) -> Result<(), (String, String)> {
    let Some(node) = s.nodes.remove(mobile) else {
        let names = s.nodes.keys().map(String::as_str).collect::<Vec<_>>().join(", ");
        return Err(("scale.mobile".into(), format!("no node named `{mobile}` (nodes: {names})")));
    };
    if s.mobility.is_some() || s.mobile_ip.is_some() || !s.web.is_empty() {
        return Err((
            "scale.mobile".into(),
            "copies of a mobile go with bulk flows on a static topology (no [mobility], [mobile_ip] or [web])".into(),
        ));
    }
    let first = u32::from(node.addr);
    if first.checked_add(count as u32 - 1).is_none() {
        return Err(("scale.count".into(), format!("{count} addresses from {} run past 255.255.255.255", node.addr)));
    }
    let name = |i: usize| format!("{mobile}-{i}");
    for i in 0..count {
        let mut copy = node.clone();
        copy.addr = Ipv4Addr::from(first + i as u32);
        if s.nodes.insert(name(i), copy).is_some() {
            return Err(("scale.mobile".into(), format!("copy `{}` has the name of a node written by hand", name(i))));
        }
    }
    let touches = |ends: &[String]| ends.iter().any(|e| e == mobile);
    let (templates, kept): (Vec<_>, Vec<_>) =
        std::mem::take(&mut s.links).into_iter().partition(|(_, l)| touches(&l.ends));
    s.links.extend(kept);
    for (lname, l) in templates {
        for i in 0..count {
            let mut copy = l.clone();
            for e in copy.ends.iter_mut().filter(|e| *e == mobile) {
                *e = name(i);
            }
            if s.links.insert(format!("{lname}-{i}"), copy).is_some() {
                return Err((
                    "scale.mobile".into(),
                    format!("copy `{lname}-{i}` has the name of a link written by hand"),
                ));
            }
        }
    }
    let (templates, kept): (Vec<_>, Vec<_>) =
        std::mem::take(&mut s.flows).into_iter().partition(|(_, f)| f.from == mobile || f.to == mobile);
    s.flows.extend(kept);
    for (fname, f) in templates {
        for i in 0..count {
            let mut copy = f.clone();
            for end in [&mut copy.from, &mut copy.to] {
                if end == mobile {
                    *end = name(i);
                }
            }
            copy.bytes = cfg.flow_bytes(f.bytes);
            copy.start_s = cfg.flow_start(f.start_s, i);
            if s.flows.insert(format!("{fname}-{i}"), copy).is_some() {
                return Err((
                    "scale.mobile".into(),
                    format!("copy `{fname}-{i}` has the name of a flow written by hand"),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::scenario::Scenario;

    fn cell(scale: &str) -> Result<Scenario, String> {
        let text = format!(
            r#"
[nodes.fh]
addr = "10.0.0.1"
[nodes.bs]
addr = "10.0.0.2"
agent = "snoop"
[nodes.mh]
addr = "10.1.0.1"
[links.ether]
ends = ["fh", "bs"]
kind = "wired"
rate_mbps = 10.0
[links.air]
ends = ["bs", "mh"]
kind = "wireless"
rate_mbps = 2.0
medium = "cell"
[flows.bulk]
from = "fh"
to = "mh"
bytes = 100000
{scale}
"#
        );
        Scenario::from_str(&text, "cell.toml").map_err(|e| e.to_string())
    }

    #[test]
    fn a_mobile_is_copied_with_its_links_and_flows() {
        let s = cell("[scale]\ncount = 3\nmobile = \"mh\"\ntotal_bytes = 90000\nstart_spread_s = 3.0").unwrap();
        assert!(s.scale.is_none(), "expanded once");
        assert_eq!(s.nodes.len(), 5);
        assert_eq!(s.nodes["mh-2"].addr.to_string(), "10.1.0.3");
        assert!(!s.nodes.contains_key("mh"));
        assert_eq!(s.links["air-1"].ends, ["bs", "mh-1"]);
        assert_eq!(s.links["air-1"].medium.as_deref(), Some("cell"));
        assert!(s.links.contains_key("ether") && s.links.len() == 4);
        assert_eq!(s.flows.len(), 3);
        assert_eq!((s.flows["bulk-0"].to.as_str(), s.flows["bulk-0"].bytes), ("mh-0", 30000));
        assert_eq!((s.flows["bulk-0"].start_s, s.flows["bulk-2"].start_s), (0.0, 2.0));
    }

    #[test]
    fn without_a_mobile_only_flows_are_copied_and_the_floor_holds() {
        let s = cell("[scale]\ncount = 4\ntotal_bytes = 1000\nmin_flow_bytes = 500").unwrap();
        assert_eq!(s.nodes.len(), 3);
        assert_eq!(s.flows.len(), 4);
        assert!(s.flows.values().all(|f| f.to == "mh" && f.bytes == 500));
        let s = cell("[scale]\ncount = 4").unwrap();
        assert!(s.flows.values().all(|f| f.bytes == 100000), "no total: the template's bytes");
    }

    #[test]
    fn bad_scale_tables_name_the_field_and_line() {
        for (scale, field) in [
            ("count = 0", "scale.count"),
            ("count = 40001", "scale.count"),
            ("count = 2\nmobile = \"nobody\"", "scale.mobile"),
            ("count = 2\ntotal_bytes = 0", "scale.total_bytes"),
            ("count = 2\nmin_flow_bytes = 0", "scale.min_flow_bytes"),
            ("count = 2\nstart_spread_s = -1.0", "scale.start_spread_s"),
            ("count = 2\ncopies = 3", "copies"),
        ] {
            let e = cell(&format!("[scale]\n{scale}")).unwrap_err();
            assert!(e.contains(field) && e.contains("cell.toml"), "{scale}: {e}");
            if field.starts_with("scale.") {
                assert!(e.contains("(line "), "{scale}: {e}");
            }
        }
        let e = cell("[scale]\ncount = 2\nmobile = \"mh\"\n[nodes.mh-1]\naddr = \"10.9.0.1\"").unwrap_err();
        assert!(e.contains("mh-1"), "a copy colliding with a node written by hand: {e}");
    }
}
