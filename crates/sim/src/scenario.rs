//! Scenario files: the TOML description of one simulated run (nodes, links, channel, agents, flows, seed).
//! Every field has a default documented here and in the user guide (docs/src/reference/scenario/); a mistake
//! is reported with the file, the field, the line and what was expected.

pub use crate::bulk::FlowConfig;
use crate::error_model::ErrorModelConfig;
pub use crate::web::WebConfig;
use lasthop_tcp::TcpConfig;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::Path;

/// A parsed and validated scenario.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Seed of every random stream in the run (default 1).
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Simulated-time limit in seconds (default 600).
    #[serde(default = "default_time_limit")]
    pub time_limit_s: f64,
    /// Hosts and routers by name.
    pub nodes: BTreeMap<String, NodeConfig>,
    /// Links by name.
    pub links: BTreeMap<String, LinkConfig>,
    /// Transfers by name.
    #[serde(default)]
    pub flows: BTreeMap<String, FlowConfig>,
    /// Web workloads by name (Balakrishnan 1998 §5, [`crate::web`]).
    #[serde(default)]
    pub web: BTreeMap<String, WebConfig>,
    /// TCP defaults for every flow (see `lasthop_tcp::TcpConfig`); a flow's own `tcp` table overrides them.
    #[serde(default)]
    pub tcp: toml::Table,
    /// Settings of the Snoop agent at every node that runs it.
    #[serde(default)]
    pub snoop: crate::agents::SnoopSettings,
    /// Cells, motion and handoff (see `crate::mobility`); absent: a static topology.
    #[serde(default)]
    pub mobility: Option<crate::mobility::MobilityConfig>,
    /// Mobile IP with Eom 2002's BS buffering (see `crate::mobile_ip`); absent: none.
    #[serde(default)]
    pub mobile_ip: Option<crate::mobile_ip::MobileIpConfig>,
    /// Settings of the ELN agents.
    #[serde(default)]
    pub eln: crate::agents::ElnSettings,
    /// Settings of the NACK agent.
    #[serde(default)]
    pub nack: crate::agents::NackSettings,
    /// Settings of the split-connection relays (nodes with agent "split" or "split-sack").
    #[serde(default)]
    pub split: crate::split::SplitSettings,
    /// A node that fails during the run (see `crate::failure`); absent: nothing fails.
    #[serde(default)]
    pub failure: Option<crate::failure::FailureConfig>,
    /// Many mobiles or flows from one template (see `crate::scale`); expanded, and emptied, when the
    /// scenario is read.
    #[serde(default)]
    pub scale: Option<crate::scale::ScaleConfig>,
    #[serde(skip)]
    origin: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeConfig {
    pub addr: Ipv4Addr,
    /// The agents the node runs on packets it forwards: "none" (default), "snoop", "eln", "eln-filter",
    /// "eln-fixed", "nack", or several joined by `+`; or "split" / "split-sack" (I-TCP) or "mtcp" (M-TCP) alone,
    /// see `[split]`.
    #[serde(default)]
    pub agent: AgentSpec,
}

pub use lasthop_agents::AgentKind;

/// The agents of a node, in the order packets pass through them: `"none"`, one name, or names joined by
/// `+` (e.g. `"snoop+eln"`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AgentSpec(pub Vec<AgentKind>);

impl AgentSpec {
    pub fn is_none(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::str::FromStr for AgentSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<AgentSpec, String> {
        if s == "none" {
            return Ok(AgentSpec(Vec::new()));
        }
        s.split('+')
            .map(|name| {
                // `none` stands alone: it is no agent, so not one to chain.
                name.trim().parse::<AgentKind>().ok().filter(|k| *k != AgentKind::None).ok_or_else(|| {
                    format!("unknown agent `{name}`, expected \"none\", \"split\", \"split-sack\", \"mtcp\", or names from snoop, eln, eln-filter, eln-fixed, nack joined by +")
                })
            })
            .collect::<Result<Vec<_>, _>>()
            .and_then(|kinds| {
                // One agent of a kind per node: a second would see the first one's output as its input
                // (two Snoop caches of the same packets, two ELN marks), which no paper describes.
                match kinds.iter().enumerate().find(|(i, k)| kinds[..*i].contains(k)) {
                    Some(_) => Err(format!("`{s}` names an agent twice, expected each of snoop, eln, eln-filter, eln-fixed, nack at most once")),
                    None => Ok(AgentSpec(kinds)),
                }
            })
    }
}

impl<'de> Deserialize<'de> for AgentSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<AgentSpec, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LinkKind {
    Wired,
    Wireless,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Duplex {
    /// One transmitter at a time for both directions (a shared radio medium such as WaveLAN).
    Half,
    /// An independent channel each way.
    Full,
}

/// Who gets a half-duplex link's medium next (the scheduler shared with the real base station).
pub use lasthop_channel::medium::Access;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkConfig {
    /// The two node names it joins.
    pub ends: [String; 2],
    pub kind: LinkKind,
    /// Bit rate in Mb/s (10^6 bit/s).
    pub rate_mbps: f64,
    /// One-way propagation delay in ms (default 0).
    #[serde(default)]
    pub delay_ms: f64,
    /// Drop-tail capacity of each transmit queue, packets (default 100).
    #[serde(default = "default_queue")]
    pub queue_packets: usize,
    /// Default: half for wireless links, full for wired ones.
    #[serde(default)]
    pub duplex: Option<Duplex>,
    /// Medium time added to every frame, µs (default 0): preamble, contention, MAC header.
    #[serde(default)]
    pub mac_overhead_us: f64,
    /// Half-duplex links with the same medium name share one medium: one frame at a time over all of them
    /// (several cells on one channel). Default: the link is its own medium.
    #[serde(default)]
    pub medium: Option<String>,
    /// Half duplex: how the link's two stations share its medium (default turns, as CSMA/CA gives two busy
    /// stations; the paper scenarios in `examples/` pin fifo). Between links sharing one `medium` the links
    /// still take turns frame by frame, local retransmissions first.
    #[serde(default)]
    pub access: Option<Access>,
    /// Error model of the a→b direction, and of b→a too unless `error_reverse` is given (default none).
    #[serde(default)]
    pub error: ErrorModelConfig,
    /// Error model of the b→a direction.
    #[serde(default)]
    pub error_reverse: Option<ErrorModelConfig>,
    /// Link-level ARQ on the a→b direction of a wireless link, or both (see `crate::arq`); absent: none.
    #[serde(default)]
    pub arq: Option<crate::arq::ArqSettings>,
}

impl LinkConfig {
    pub fn duplex(&self) -> Duplex {
        self.duplex.unwrap_or(match self.kind {
            LinkKind::Wireless => Duplex::Half,
            LinkKind::Wired => Duplex::Full,
        })
    }
    pub fn access(&self) -> Access {
        self.access.unwrap_or(Access::Turns)
    }
    /// Time on the medium for a frame of `bytes` bytes.
    pub fn airtime_ns(&self, bytes: usize) -> u64 {
        let bits = bytes as f64 * 8.0;
        (bits / (self.rate_mbps * 1e6) * 1e9 + self.mac_overhead_us * 1e3).round() as u64
    }
}

fn default_seed() -> u64 {
    1
}
fn default_time_limit() -> f64 {
    600.0
}
fn default_queue() -> usize {
    100
}

/// Longest time a scenario may give, in seconds (about 31 years, the limit of `lasthop_tcp::MAX_TIME_MS`):
/// every time becomes integer nanoseconds (a `u64` lasts 584 years), and sums of a few must not overflow.
pub const MAX_TIME_S: f64 = 1e9;
/// Link rates, Mb/s: from 1 bit/s (a 64 KB frame then takes 6 days) to 1 Pb/s (a 40-byte frame still
/// takes a whole nanosecond: a frame never takes zero time on the medium).
pub const RATE_MBPS: std::ops::RangeInclusive<f64> = 1e-6..=1e9;
/// Most packets a transmit queue may hold: far above any buffer the papers or real routers use.
pub const MAX_QUEUE_PACKETS: usize = 1_000_000;

/// A time in seconds that is positive and bounded (so that it stays exact as integer nanoseconds).
pub(crate) fn positive_s(v: f64) -> bool {
    v.is_finite() && v > 0.0 && v <= MAX_TIME_S
}

/// A time in seconds from 0, bounded as [`positive_s`].
pub(crate) fn non_negative_s(v: f64) -> bool {
    v.is_finite() && (0.0..=MAX_TIME_S).contains(&v)
}

/// `field`, a workload's start time: from 0 to [`MAX_TIME_S`].
pub(crate) fn check_start_s(field: String, v: f64) -> Result<(), Invalid> {
    match non_negative_s(v) {
        true => Ok(()),
        false => Err((field, format!("expected a start time from 0 to {MAX_TIME_S:e} s, got {v}"))),
    }
}

/// A rule broken by a scenario: the field at fault, dotted from the scenario's top, and what was expected.
pub(crate) type Invalid = (String, String);

/// A scenario that could not be read or does not make sense, with where and why.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioError {
    pub origin: String,
    /// The field at fault (dotted: `links.wavelan.error.ber`), when the mistake is in one field.
    pub field: Option<String>,
    /// The 1-based line of the mistake, when the scenario was read from text (a TOML syntax error's message
    /// gives it too).
    pub line: Option<usize>,
    /// What is wrong; for a field, what was expected.
    pub message: String,
}

impl ScenarioError {
    /// A mistake in the scenario as a whole (unreadable, not TOML).
    pub fn new(origin: &str, message: impl Into<String>) -> ScenarioError {
        ScenarioError { origin: origin.to_string(), field: None, line: None, message: message.into() }
    }

    /// A mistake in `field`.
    pub fn at(
        origin: &str,
        field: impl Into<String>,
        line: Option<usize>,
        message: impl Into<String>,
    ) -> ScenarioError {
        ScenarioError { origin: origin.to_string(), field: Some(field.into()), line, message: message.into() }
    }

    /// The error without its origin: "`field` (line N): message", or the message alone.
    pub fn detail(&self) -> String {
        match (&self.field, self.line) {
            (Some(f), Some(l)) => format!("`{f}` (line {l}): {}", self.message),
            (Some(f), None) => format!("`{f}`: {}", self.message),
            (None, _) => self.message.clone(),
        }
    }
}

impl std::fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.origin, self.detail())
    }
}

impl std::error::Error for ScenarioError {}

impl Scenario {
    /// Reads and validates a scenario file.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let origin = path.display().to_string();
        let text =
            std::fs::read_to_string(path).map_err(|e| ScenarioError::new(&origin, format!("cannot read: {e}")))?;
        Scenario::parse(&text, &origin, path.parent().unwrap_or(Path::new("")))
    }

    /// Parses and validates scenario text; `origin` names it in errors.
    /// Relative file names in it (an empirical channel's CDFs) are taken from the current directory.
    pub fn from_str(text: &str, origin: &str) -> Result<Scenario, ScenarioError> {
        Scenario::parse(text, origin, Path::new(""))
    }

    fn parse(text: &str, origin: &str, base_dir: &Path) -> Result<Scenario, ScenarioError> {
        let mut s: Scenario = toml::from_str(text).map_err(|e: toml::de::Error| ScenarioError {
            line: e.span().map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1),
            ..ScenarioError::new(origin, e.to_string())
        })?;
        s.origin = origin.to_string();
        s.resolve_paths(base_dir);
        crate::scale::expand(&mut s)
            .and_then(|()| s.validate())
            .map_err(|(path, message)| ScenarioError::at(origin, &path, line_of(text, &path), message))?;
        Ok(s)
    }

    /// Builds a scenario from an already-parsed TOML value (experiments apply overrides this way).
    /// Relative file names in it are taken from the current directory; see [`Scenario::from_toml_in`].
    pub fn from_toml(value: toml::Value, origin: &str) -> Result<Scenario, ScenarioError> {
        Scenario::from_toml_in(value, origin, Path::new(""))
    }

    /// As [`Scenario::from_toml`], with relative file names taken from `base_dir` (the scenario file's folder).
    pub fn from_toml_in(value: toml::Value, origin: &str, base_dir: &Path) -> Result<Scenario, ScenarioError> {
        let mut s = Scenario::deserialize(value).map_err(|e| ScenarioError::new(origin, e.to_string()))?;
        s.origin = origin.to_string();
        s.resolve_paths(base_dir);
        crate::scale::expand(&mut s)
            .and_then(|()| s.validate())
            .map_err(|(path, message)| ScenarioError::at(origin, path, None, message))?;
        Ok(s)
    }

    fn resolve_paths(&mut self, base_dir: &Path) {
        for l in self.links.values_mut() {
            l.error.resolve_paths(base_dir);
            if let Some(e) = l.error_reverse.as_mut() {
                e.resolve_paths(base_dir);
            }
        }
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }
    pub fn set_seed(&mut self, seed: u64) {
        self.seed = seed;
    }
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The TCP configuration of flow `name`: the scenario's `[tcp]` table with the flow's own on top.
    pub fn flow_tcp(&self, name: &str) -> Result<TcpConfig, String> {
        self.merged_tcp(self.flows.get(name).map(|f| &f.tcp)).map_err(profile_error)
    }

    /// The TCP configuration of web workload `name`: the scenario's `[tcp]` table with the workload's on top.
    pub fn web_tcp(&self, name: &str) -> Result<TcpConfig, String> {
        self.merged_tcp(self.web.get(name).map(|w| &w.tcp)).map_err(profile_error)
    }

    /// The scenario's `[tcp]` table with `own` on top, its profile applied to the fields neither gives
    /// (`TcpConfig::apply_profile`). Errors name the field when it is one the profile refuses.
    fn merged_tcp(&self, own: Option<&toml::Table>) -> Result<TcpConfig, (Option<&'static str>, String)> {
        let mut merged = self.tcp.clone();
        for (k, v) in own.into_iter().flatten() {
            merged.insert(k.clone(), v.clone());
        }
        let mut tcp = TcpConfig::deserialize(toml::Value::Table(merged.clone()))
            .map_err(|e| (None, e.to_string().trim().to_string()))?;
        tcp.apply_profile(|k| merged.contains_key(k)).map_err(|(f, m)| (Some(f), m))?;
        Ok(tcp)
    }

    /// Checks what serde cannot: references between tables, ranges. Errors are (field path, message):
    /// the core's own tables (the time limit, nodes, links, the agents' and TCP's settings), then every
    /// family's rules ([`crate::registry::validate`]).
    fn validate(&self) -> Result<(), Invalid> {
        if !positive_s(self.time_limit_s) {
            return Err((
                "time_limit_s".into(),
                format!("expected a positive number of seconds up to {MAX_TIME_S:e}, got {}", self.time_limit_s),
            ));
        }
        if self.nodes.is_empty() {
            return Err(("nodes".into(), "expected at least one node".into()));
        }
        let mut seen = BTreeMap::new();
        for (name, n) in &self.nodes {
            if let Some(other) = seen.insert(n.addr, name) {
                return Err((format!("nodes.{name}.addr"), format!("address {} is also node `{other}`'s", n.addr)));
            }
        }
        for (name, l) in &self.links {
            let p = |f: &str| format!("links.{name}.{f}");
            for end in &l.ends {
                if !self.nodes.contains_key(end) {
                    return Err((p("ends"), format!("no node named `{end}` (nodes: {})", self.node_names())));
                }
            }
            if l.ends[0] == l.ends[1] {
                return Err((p("ends"), "expected two different nodes".into()));
            }
            if !RATE_MBPS.contains(&l.rate_mbps) {
                return Err((
                    p("rate_mbps"),
                    format!(
                        "expected a rate from {:e} Mb/s (1 bit/s) to {:e} Mb/s, got {}",
                        RATE_MBPS.start(),
                        RATE_MBPS.end(),
                        l.rate_mbps
                    ),
                ));
            }
            if !non_negative_s(l.delay_ms / 1e3) {
                return Err((
                    p("delay_ms"),
                    format!("expected a delay from 0 to {:e} ms, got {}", MAX_TIME_S * 1e3, l.delay_ms),
                ));
            }
            if !(l.mac_overhead_us.is_finite() && (0.0..=1e6).contains(&l.mac_overhead_us)) {
                return Err((
                    p("mac_overhead_us"),
                    format!("expected an overhead from 0 to 1e6 µs, got {}", l.mac_overhead_us),
                ));
            }
            if !(1..=MAX_QUEUE_PACKETS).contains(&l.queue_packets) {
                return Err((
                    p("queue_packets"),
                    format!("expected 1 to {MAX_QUEUE_PACKETS} packets, got {}", l.queue_packets),
                ));
            }
            if let Some(m) = &l.medium {
                if l.duplex() != Duplex::Half {
                    return Err((p("medium"), "only half-duplex links share a medium (set duplex = \"half\")".into()));
                }
                if m.is_empty() {
                    return Err((p("medium"), "expected a medium name".into()));
                }
            }
            if l.access.is_some() && l.duplex() != Duplex::Half {
                return Err((
                    p("access"),
                    "only a half-duplex link's stations share access (set duplex = \"half\")".into(),
                ));
            }
            l.error.validate().map_err(|m| (p("error"), m))?;
            if let Some(e) = &l.error_reverse {
                e.validate().map_err(|m| (p("error_reverse"), m))?;
            }
        }
        let base_tcp = self.merged_tcp(None).map_err(|(f, m)| (f.map_or("tcp".into(), |f| format!("tcp.{f}")), m))?;
        base_tcp.check_behaviours().map_err(|(f, m)| (format!("tcp.{f}"), m))?;
        self.snoop.validate().map_err(|(f, m)| (format!("snoop.{f}"), m))?;
        self.eln.validate().map_err(|(f, m)| (format!("eln.{f}"), m))?;
        self.nack.validate().map_err(|(f, m)| (format!("nack.{f}"), m))?;
        crate::registry::validate(self)
    }

    /// The TCP configuration of a flow or workload whose own `[tcp]` overrides are `own`, written at `path`
    /// (`flows.bulk.tcp`), checked: errors name the key where it is set, in `own` or the scenario's `[tcp]`.
    pub(crate) fn validate_own_tcp(&self, path: &str, own: &toml::Table) -> Result<(), Invalid> {
        let tcp = self.merged_tcp(Some(own)).map_err(|(k, m)| match k {
            Some(k) => (tcp_path(path, own, k), m),
            None => (path.to_string(), m),
        })?;
        check_tcp(&tcp).map_err(|(k, m)| (tcp_path(path, own, &k), m))
    }

    /// Whether a link of `kind` joins nodes `a` and `b`.
    pub(crate) fn joined(&self, a: &str, b: &str, kind: LinkKind) -> bool {
        self.links.values().any(|l| l.kind == kind && l.ends.iter().any(|e| e == a) && l.ends.iter().any(|e| e == b))
    }

    /// "no node named `x` (nodes: a, b, c)" when `node` is not a node of the scenario.
    pub(crate) fn check_node(&self, node: &str) -> Result<(), String> {
        match self.nodes.contains_key(node) {
            true => Ok(()),
            false => Err(format!("no node named `{node}` (nodes: {})", self.node_names())),
        }
    }

    /// A workload's two ends, `prefix.FIELD = node` each: nodes of the scenario, and two different ones.
    pub(crate) fn check_ends(
        &self,
        prefix: &str,
        (a, a_node): (&str, &str),
        (b, b_node): (&str, &str),
    ) -> Result<(), Invalid> {
        for (field, node) in [(a, a_node), (b, b_node)] {
            self.check_node(node).map_err(|m| (format!("{prefix}.{field}"), m))?;
        }
        match a_node == b_node {
            true => Err((format!("{prefix}.{b}"), format!("expected a node other than `{a}`"))),
            false => Ok(()),
        }
    }

    pub(crate) fn node_names(&self) -> String {
        self.nodes.keys().map(String::as_str).collect::<Vec<_>>().join(", ")
    }
}

/// A TCP configuration error as one line, led by the field it names, if any.
fn profile_error((field, message): (Option<&'static str>, String)) -> String {
    match field {
        Some(f) => format!("`{f}`: {message}"),
        None => message,
    }
}

/// Where TCP key `key` of a flow or workload is set: its own table (`own`, at `own_path`) if it sets it,
/// else the scenario's `[tcp]`.
fn tcp_path(own_path: &str, own: &toml::Table, key: &str) -> String {
    if own.contains_key(key) {
        format!("{own_path}.{key}")
    } else {
        format!("tcp.{key}")
    }
}

/// The TCP ranges of a flow or workload: the MSS here, the rest in `TcpConfig::validate` and
/// `TcpConfig::check_behaviours`.
fn check_tcp(tcp: &TcpConfig) -> Result<(), (String, String)> {
    if tcp.mss < 64 || usize::from(tcp.mss) > 65_000 {
        return Err(("mss".into(), "expected an MSS between 64 and 65000 bytes".into()));
    }
    tcp.validate().map_err(|(f, m)| (f.to_string(), m))?;
    // Timers that re-arm, and the clock (0: exact), have floors (`crate::floors`).
    let timers = [
        ("initial_rto_ms", tcp.initial_rto_ms),
        ("max_rto_ms", tcp.max_rto_ms),
        ("persist_min_ms", tcp.persist_min_ms),
        ("persist_max_ms", tcp.persist_max_ms),
    ];
    let tick = (tcp.tick_ms != 0.0).then_some(("tick_ms", tcp.tick_ms));
    for (f, v) in timers.into_iter().chain(tick) {
        crate::floors::at_least(f, v, crate::floors::TCP_TIMER_MS, "ms")?;
    }
    tcp.check_behaviours().map_err(|(f, m)| (f.to_string(), m))
}

/// The 1-based line where the key or table named by a dotted `path` is written, if it can be found: the
/// key's own line when it is written in the innermost table found (or at the top of the file), else the
/// table's header.
fn line_of(text: &str, path: &str) -> Option<usize> {
    let parts: Vec<&str> = path.split('.').collect();
    let lines: Vec<&str> = text.lines().map(str::trim_start).collect();
    for n in (0..=parts.len()).rev() {
        let start = if n == 0 {
            0
        } else {
            let header = format!("[{}]", parts[..n].join("."));
            match lines.iter().position(|l| l.starts_with(&header)) {
                Some(i) => i + 1,
                None => continue,
            }
        };
        if let Some(key) = parts.get(n) {
            let written_here = lines[start..]
                .iter()
                .take_while(|l| !l.starts_with('['))
                .position(|l| l.strip_prefix(key).is_some_and(|rest| rest.trim_start().starts_with('=')));
            if let Some(j) = written_here {
                return Some(start + j + 1);
            }
        }
        if n > 0 {
            return Some(start);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example() -> String {
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/snoop.toml")).unwrap()
    }

    #[test]
    fn every_agent_kind_is_a_node_agent_by_its_name_and_none_stands_alone() {
        for k in AgentKind::ALL.into_iter().filter(|k| *k != AgentKind::None) {
            assert_eq!(k.name().parse::<AgentSpec>(), Ok(AgentSpec(vec![k])));
        }
        let e = "snoop+none".parse::<AgentSpec>().unwrap_err();
        assert!(e.starts_with("unknown agent `none`, expected \"none\", \"split\""), "{e}");
    }

    #[test]
    fn example_parses_with_defaults() {
        let s = Scenario::from_str(&example(), "snoop.toml").unwrap();
        assert_eq!(s.nodes["bs"].agent, AgentSpec(vec![AgentKind::Snoop]));
        assert_eq!("snoop+eln".parse::<AgentSpec>().unwrap().0, vec![AgentKind::Snoop, AgentKind::Eln]);
        assert!("none".parse::<AgentSpec>().unwrap().is_none());
        assert_eq!(s.links["wavelan"].duplex(), Duplex::Half);
        assert_eq!(s.links["ether"].duplex(), Duplex::Full);
        assert_eq!(s.flow_tcp("bulk").unwrap().mss, 1460);
    }

    #[test]
    fn unknown_field_names_field_and_line() {
        let text = example().replace("rate_mbps = 10.0", "rate_mpbs = 10.0");
        let e = Scenario::from_str(&text, "x.toml").unwrap_err().to_string();
        assert!(e.starts_with("x.toml: "), "{e}");
        assert!(e.contains("rate_mpbs") && e.contains("line"), "{e}");
    }

    #[test]
    fn dangling_reference_names_path_and_line() {
        let text = example().replace("ends = [\"bs\", \"mh\"]", "ends = [\"bs\", \"mobile\"]");
        let e = Scenario::from_str(&text, "x.toml").unwrap_err().to_string();
        assert!(e.contains("links.wavelan.ends") && e.contains("mobile") && e.contains("line"), "{e}");
    }

    #[test]
    fn the_refused_field_is_typed_whether_read_from_text_or_a_document() {
        let text = example().replace("ends = [\"bs\", \"mh\"]", "ends = [\"bs\", \"mobile\"]");
        let line = text.lines().position(|l| l.contains("\"mobile\"")).unwrap() + 1;
        let e = Scenario::from_str(&text, "x.toml").unwrap_err();
        assert_eq!((e.field.as_deref(), e.line), (Some("links.wavelan.ends"), Some(line)));
        assert_eq!(e.to_string(), format!("x.toml: `links.wavelan.ends` (line {line}): {}", e.message));
        let e = Scenario::from_toml(toml::from_str(&text).unwrap(), "x.toml").unwrap_err();
        assert_eq!((e.field.as_deref(), e.line), (Some("links.wavelan.ends"), None));
        assert_eq!(e.to_string(), format!("x.toml: `links.wavelan.ends`: {}", e.message));
        assert!(e.message.starts_with("no node named `mobile`"), "{e}");
        let e = Scenario::from_str("seed = [", "x.toml").unwrap_err();
        assert_eq!((e.field, e.line), (None, Some(1)));
    }

    #[test]
    fn bad_values_are_rejected() {
        for (from, to, needle) in [
            ("rate_mbps = 2.0", "rate_mbps = -2.0", "rate_mbps"),
            ("bytes = 10_000_000", "bytes = 0", "bytes"),
            ("ber = 3.9e-6", "ber = 2.0", "ber"),
            ("variant = \"reno\"", "variant = \"hybla\"", "hybla"),
            ("agent = \"snoop\"", "agent = \"spoof\"", "spoof"),
        ] {
            let text = example().replace(from, to);
            let e = Scenario::from_str(&text, "x.toml").unwrap_err().to_string();
            assert!(e.contains(needle), "{to}: {e}");
        }
    }

    #[test]
    fn tcp_behaviour_fields_parse_with_profiles_and_are_range_checked() {
        use lasthop_tcp::{BackoffReset, Profile, RecoverGuard, RtoRestart, SsthreshFrom};
        let mss = "mss = 1460\n";
        let text = example().replace(
            mss,
            "mss = 1460\nprofile = \"linux\"\nssthresh_from = \"flight\"\nrto_restart = \"rfc6298\"\npersist_max_ms = 30000\n",
        );
        let s = Scenario::from_str(&text, "x.toml").unwrap();
        let tcp = s.flow_tcp("bulk").unwrap();
        assert_eq!(tcp.profile, Some(Profile::Linux));
        let b = tcp.behaviours();
        assert!(b.limited_transmit, "from the profile");
        assert_eq!(b.ssthresh_from, SsthreshFrom::Flight, "an explicit field wins over the profile");
        assert_eq!(b.rto_restart, RtoRestart::Rfc6298);
        assert_eq!(
            (b.recover_guard, b.quick_acks, b.rto_backoff_reset),
            (RecoverGuard::Careful, 16, BackoffReset::RttSample)
        );
        assert_eq!(tcp.persist_max_ms, 30000.0);
        for (field, bad, needle) in [
            ("profile", "\"solaris\"", "solaris"),
            ("recover_guard", "\"sloppy\"", "sloppy"),
            ("quick_acks", "70000", "tcp.quick_acks"),
            ("quick_acks", "-1", "quick_acks"),
            ("persist_min_ms", "0", "tcp.persist_min_ms"),
            ("persist_max_ms", "1000", "tcp.persist_max_ms"),
            ("limited_transmit", "1", "limited_transmit"),
        ] {
            let text = example().replace(mss, &format!("mss = 1460\n{field} = {bad}\n"));
            let e = Scenario::from_str(&text, "x.toml").unwrap_err().to_string();
            assert!(e.contains(needle) && e.contains("line"), "{field} = {bad}: {e}");
        }
        // A flow's own table is checked too, and named.
        let text = example().replace("start_s = 0.0\n", "start_s = 0.0\ntcp = { quick_acks = 100000 }\n");
        let e = Scenario::from_str(&text, "x.toml").unwrap_err().to_string();
        assert!(e.contains("flows.bulk.tcp.quick_acks") && e.contains("line"), "{e}");
    }

    #[test]
    fn the_linux_profile_fills_the_timer_fields_left_unset_and_names_the_ones_it_refuses() {
        use lasthop_tcp::{Profile, TimerStyle};
        let mss = "mss = 1460\n";
        let with = |extra: &str| example().replace(mss, &format!("mss = 1460\nprofile = \"linux\"\n{extra}"));
        let tcp = Scenario::from_str(&with(""), "x.toml").unwrap().flow_tcp("bulk").unwrap();
        assert_eq!(tcp, TcpConfig { variant: tcp.variant, ..TcpConfig::with_profile(Profile::Linux) });
        // Given fields win where Linux can run with them (a route's `initcwnd`, `rto_min`).
        let tcp = Scenario::from_str(&with("initial_cwnd = 1\nmin_rto_ms = 1000\n"), "x.toml").unwrap();
        let tcp = tcp.flow_tcp("bulk").unwrap();
        assert_eq!((tcp.initial_cwnd, tcp.min_rto_ms, tcp.timer), (1, 1000.0, TimerStyle::Linux));
        // A BSD tick or another timer contradicts the profile, named with its line, in either table.
        for (extra, needle) in [("tick_ms = 500\n", "tcp.tick_ms"), ("timer = \"ns\"\n", "tcp.timer")] {
            let e = Scenario::from_str(&with(extra), "x.toml").unwrap_err().to_string();
            assert!(e.contains(needle) && e.contains("line") && e.contains("linux"), "{extra}: {e}");
        }
        let text = with("").replace("start_s = 0.0\n", "start_s = 0.0\ntcp = { tick_ms = 200 }\n");
        let e = Scenario::from_str(&text, "x.toml").unwrap_err().to_string();
        assert!(e.contains("flows.bulk.tcp.tick_ms"), "{e}");
        assert!(Scenario::from_str(&with("tick_ms = 0\n"), "x.toml").is_ok(), "0 is Linux's exact clock");
    }

    #[test]
    fn absurd_values_are_rejected_with_field_and_line() {
        // Each becomes integer time, a size or a count; each is named with the line it is written on.
        for (from, to, field, line) in [
            ("delay_ms = 1.0", "delay_ms = 1e300", "links.ether.delay_ms", "delay_ms = 1e300"),
            ("rate_mbps = 2.0", "rate_mbps = 1e-300", "links.wavelan.rate_mbps", "rate_mbps = 1e-300"),
            (
                "queue_packets = 100\n\n[links.wavelan]",
                "queue_packets = 9_000_000_000_000_000_000\n\n[links.wavelan]",
                "links.ether.queue_packets",
                "queue_packets = 9_000",
            ),
            ("time_limit_s = 600", "time_limit_s = 1e300", "time_limit_s", "time_limit_s = 1e300"),
            ("max_window = 65535", "max_window = 0", "tcp.max_window", "max_window = 0"),
            ("agent = \"snoop\"", "agent = \"snoop+snoop\"", "snoop+snoop", "agent = \"snoop+snoop\""),
            ("start_s = 0.0", "start_s = 1e300", "flows.bulk.start_s", "start_s = 1e300"),
        ] {
            let text = example().replacen(from, to, 1);
            assert_ne!(text, example(), "{from}");
            let e = Scenario::from_str(&text, "x.toml").unwrap_err().to_string();
            let n = text.lines().position(|l| l.trim_start().starts_with(line)).unwrap() + 1;
            assert!(e.starts_with("x.toml: "), "{e}");
            assert!(e.contains(field) && e.contains("expected"), "{to}: {e}");
            if field.contains('.') || field == "time_limit_s" {
                assert!(e.contains(&format!("(line {n})")), "{to}: {e} (line {n})");
            }
        }
        let tcp_fields =
            [("initial_cwnd", "0"), ("dupack_threshold", "0"), ("ack_every", "0"), ("min_rto_ms", "100000.0")];
        for (field, v) in tcp_fields {
            let text = example()
                .lines()
                .map(|l| if l.starts_with("[tcp]") { format!("{l}\n{field} = {v}") } else { l.to_string() })
                .collect::<Vec<_>>()
                .join("\n");
            let e = Scenario::from_str(&text, "x.toml").unwrap_err().to_string();
            assert!(e.contains(&format!("`tcp.{field}` (line ")) && e.contains("expected"), "{field} = {v}: {e}");
        }
    }

    #[test]
    fn absurdly_short_timers_are_refused_with_field_line_and_floor() {
        for (table, field, value) in [
            ("snoop", "persist_timeout_ms", "1e-6"), // 1 ns
            ("snoop", "min_rtx_timeout_ms", "0.5"),
            ("nack", "timeout_ms", "1e-6"),
            ("tcp", "tick_ms", "1e-6"),
            ("tcp", "initial_rto_ms", "0.1"),
        ] {
            let setting = format!("{field} = {value}");
            let text = with_setting(table, &setting);
            let e = Scenario::from_str(&text, "x.toml").unwrap_err().to_string();
            let line = text.lines().position(|l| l == setting).unwrap() + 1;
            assert!(e.starts_with("x.toml: "), "{e}");
            assert!(e.contains(&format!("`{table}.{field}` (line {line})")), "{setting}: {e}");
            let got = format!("got {}", value.parse::<f64>().unwrap());
            assert!(e.contains("expected at least 1 ms") && e.contains(&got), "{setting}: {e}");
        }
        // An exact clock (tick 0) and a zero delayed-ACK time stay allowed: neither re-arms.
        assert!(Scenario::from_str(&with_setting("tcp", "tick_ms = 0\ndelayed_ack_ms = 0"), "x.toml").is_ok());
    }

    /// The example with `setting` written first in its `[table]` (added at the end if it has none).
    fn with_setting(table: &str, setting: &str) -> String {
        let mut lines: Vec<String> = example().lines().map(String::from).collect();
        match lines.iter().position(|l| l.starts_with(&format!("[{table}]"))) {
            Some(i) => lines.insert(i + 1, setting.to_string()),
            None => lines.extend([format!("[{table}]"), setting.to_string()]),
        }
        lines.join("\n")
    }

    #[test]
    fn duplex_full_on_a_wireless_link_parses_and_bad_duplex_values_are_rejected() {
        // The example pins the half-duplex medium's access, which a full-duplex link does not take.
        let full = example().replace("access = \"fifo\"", "").replace("duplex = \"half\"", "duplex = \"full\"");
        let s = Scenario::from_str(&full, "x.toml").unwrap();
        assert_eq!(s.links["wavelan"].duplex(), Duplex::Full);
        assert_eq!(s.links["wavelan"].kind, LinkKind::Wireless, "still the wireless hop, with one channel each way");
        let bad = example().replace("duplex = \"half\"", "duplex = \"both\"");
        let e = Scenario::from_str(&bad, "x.toml").unwrap_err().to_string();
        assert!(e.contains("both") && e.contains("half") && e.contains("full") && e.contains("line"), "{e}");
    }

    #[test]
    fn access_defaults_to_turns_parses_fifo_and_rejects_bad_values() {
        let s = Scenario::from_str(&example(), "x.toml").unwrap();
        assert_eq!(s.links["wavelan"].access(), Access::Fifo, "the paper scenario pins fifo");
        let unpinned = example().replace("access = \"fifo\"", "");
        assert_eq!(Scenario::from_str(&unpinned, "x.toml").unwrap().links["wavelan"].access(), Access::Turns);
        let bad = example().replace("access = \"fifo\"", "access = \"round-robin\"");
        let e = Scenario::from_str(&bad, "x.toml").unwrap_err().to_string();
        assert!(e.contains("round-robin") && e.contains("fifo") && e.contains("turns"), "{e}");
        let full = unpinned.replace("duplex = \"half\"", "duplex = \"full\"\naccess = \"turns\"");
        let e = Scenario::from_str(&full, "x.toml").unwrap_err().to_string();
        assert!(e.contains("links.wavelan.access") && e.contains("half-duplex"), "{e}");
    }

    #[test]
    fn bad_mobility_is_rejected_with_the_field() {
        let handoff =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/handoff.toml")).unwrap();
        let walk = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/walk.toml")).unwrap();
        let cases = [
            (&handoff, "agent = \"none\"           #", "agent = \"eln\" #", "nodes.bs1.agent"),
            (&handoff, "interval_s = 5.0", "interval_s = 5.0\nmotion = \"beacons\"", "interval_s"),
            (&walk, "positions_m = [0.0, 100.0]", "positions_m = [0.0]", "mobility.positions_m"),
            (&walk, "hysteresis_db = 6.0", "hysteresis_db = -1.0", "mobility.hysteresis_db"),
            (&walk, "beacon_samples = 3", "beacon_samples = 0", "mobility.beacon_samples"),
            (&walk, "beacon_period_s = 1.0", "beacon_period_s = 0.0", "mobility.beacon_period_s"),
            (&walk, "speed_mps = 2.0", "speed_mps = -2.0", "mobility.speed_mps"),
            (&walk, "repeat = \"back-and-forth\"", "repeat = \"twice\"", "twice"),
        ];
        for (text, from, to, needle) in cases {
            assert!(text.contains(from), "{from}");
            let e = Scenario::from_str(&text.replace(from, to), "x.toml").unwrap_err().to_string();
            assert!(e.contains(needle), "{to}: {e}");
        }
        let mut shared = example().replace("[links.wavelan]", "[links.wavelan]\nmedium = \"air\"");
        assert!(Scenario::from_str(&shared, "x.toml").is_ok());
        shared = shared.replace("[links.ether]", "[links.ether]\nmedium = \"air\"");
        let e = Scenario::from_str(&shared, "x.toml").unwrap_err().to_string();
        assert!(e.contains("links.ether.medium") && e.contains("half-duplex"), "{e}");
    }
}
