//! Scenario files: the TOML description of one simulated run (nodes, links, channel, agents, flows, seed).
//! Every field has a default documented here and in the user guide (docs/src/reference/scenario/); a mistake
//! is reported with the file, the field, the line and what was expected.

use crate::error_model::ErrorModelConfig;
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

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowConfig {
    /// Node that sends (the TCP sender: active opener).
    pub from: String,
    /// Node that receives.
    pub to: String,
    /// Application bytes to transfer.
    pub bytes: u64,
    /// When the sender connects, seconds (default 0).
    #[serde(default)]
    pub start_s: f64,
    /// Overrides of the scenario's `[tcp]` table for this flow.
    #[serde(default)]
    pub tcp: toml::Table,
}

/// A browsing client (Balakrishnan 1998 §5's Web workload after Mah 1997; the model is documented in [`crate::web`]).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebConfig {
    /// The browsing node (the mobile host): it reads the replies.
    pub client: String,
    /// The node serving every page (the fixed host): it opens each reply connection and sends the reply.
    pub server: String,
    /// Parallel connections per client, 1–4 (default 1).
    #[serde(default = "default_connections")]
    pub connections: u32,
    /// Persistent HTTP: connections stay open across objects (default false: one connection per object).
    #[serde(default)]
    pub persistent: bool,
    /// User think time between pages (default true; Balakrishnan 1998's P-HTTP runs have none).
    #[serde(default = "default_true")]
    pub think_time: bool,
    /// Open each connection with a handshake over the air (default true: the server's SYN, the client's
    /// SYN-ACK). false: ns's one-way agents, which Balakrishnan 1998's Web runs used (§4: "We use ns as our
    /// simulator"; ns's `Agent/TCP` had no SYN until 2001): the connection exists at once, the request goes
    /// out immediately and the reply's first packet is data (`examples/web-ns.toml`, [`crate::web`]).
    #[serde(default = "default_true")]
    pub handshake: bool,
    /// Send each request as a frame over every hop, the lossy hop included, resent on the client's timer
    /// until it arrives (default true). false: the request reaches the server after its modelled one-way
    /// latency (transmission and propagation on every hop) and is never lost, as in a simulation that
    /// models only the replies (Balakrishnan 1998 does not say how its ns runs carried requests; see
    /// `experiments/web.toml`).
    #[serde(default = "default_true")]
    pub request_over_air: bool,
    /// When browsing starts, seconds (default 0).
    #[serde(default)]
    pub start_s: f64,
    /// How long the user browses, seconds (default 1000, Balakrishnan 1998's run length); no page starts after it and
    /// downloads are counted up to it. Must end within `time_limit_s`.
    #[serde(default = "default_web_duration")]
    pub duration_s: f64,
    /// Overrides of the scenario's `[tcp]` table for this workload's connections.
    #[serde(default)]
    pub tcp: toml::Table,
}

fn default_connections() -> u32 {
    1
}
fn default_true() -> bool {
    true
}
fn default_web_duration() -> f64 {
    1000.0
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

    /// Checks what serde cannot: references between tables, ranges. Errors are (field path, message).
    fn validate(&self) -> Result<(), (String, String)> {
        // Times in seconds, bounded so that they stay exact as integer nanoseconds.
        let positive = |v: f64| v.is_finite() && v > 0.0 && v <= MAX_TIME_S;
        let non_negative = |v: f64| v.is_finite() && (0.0..=MAX_TIME_S).contains(&v);
        if !positive(self.time_limit_s) {
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
            if !non_negative(l.delay_ms / 1e3) {
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
            if let Some(a) = &l.arq {
                if l.kind != LinkKind::Wireless {
                    return Err((p("arq"), "link-level ARQ runs on wireless links only".into()));
                }
                a.validate().map_err(|(f, m)| (p(&format!("arq.{f}")), m))?;
                if self.mobile_ip.is_some() {
                    // Mobile IP's base stations and mobile send on their cells themselves (`crate::mobile_ip`),
                    // past any link layer; its `buffer_cleanup = "link-ack"` models the link's acknowledgements.
                    return Err((
                        p("arq"),
                        "link-level ARQ does not run with `[mobile_ip]` (its base stations send to the mobile \
                         themselves; `mobile_ip.buffer_cleanup = \"link-ack\"` models the link's acknowledgements): \
                         remove it or use `[mobility]`"
                            .into(),
                    ));
                }
                let senders = if a.both_directions { &l.ends[..] } else { &l.ends[..1] };
                if let Some(end) = senders.iter().find(|e| !self.nodes[*e].agent.is_none()) {
                    return Err((
                        format!("nodes.{end}.agent"),
                        format!("`{end}` sends on link `{name}` with link-level ARQ; its agent must be \"none\" (ARQ's TCP awareness is `arq.tcp_aware`)"),
                    ));
                }
            }
            l.error.validate().map_err(|m| (p("error"), m))?;
            if let Some(e) = &l.error_reverse {
                e.validate().map_err(|m| (p("error_reverse"), m))?;
            }
        }
        let base_tcp = self.merged_tcp(None).map_err(|(f, m)| (f.map_or("tcp".into(), |f| format!("tcp.{f}")), m))?;
        base_tcp.check_behaviours().map_err(|(f, m)| (format!("tcp.{f}"), m))?;
        for (name, f) in &self.flows {
            let p = |x: &str| format!("flows.{name}.{x}");
            for (field, node) in [("from", &f.from), ("to", &f.to)] {
                if !self.nodes.contains_key(node) {
                    return Err((p(field), format!("no node named `{node}` (nodes: {})", self.node_names())));
                }
            }
            if f.from == f.to {
                return Err((p("to"), "expected a node other than `from`".into()));
            }
            if f.bytes == 0 {
                return Err((p("bytes"), "expected at least 1 byte".into()));
            }
            if !non_negative(f.start_s) {
                return Err((
                    p("start_s"),
                    format!("expected a start time from 0 to {MAX_TIME_S:e} s, got {}", f.start_s),
                ));
            }
            let tcp = self.merged_tcp(Some(&f.tcp)).map_err(|(k, m)| match k {
                Some(k) => (tcp_path(&p("tcp"), &f.tcp, k), m),
                None => (p("tcp"), m),
            })?;
            check_tcp(&tcp).map_err(|(k, m)| (tcp_path(&p("tcp"), &f.tcp, &k), m))?;
        }
        for (name, w) in &self.web {
            let p = |x: &str| format!("web.{name}.{x}");
            for (field, node) in [("client", &w.client), ("server", &w.server)] {
                if !self.nodes.contains_key(node) {
                    return Err((p(field), format!("no node named `{node}` (nodes: {})", self.node_names())));
                }
            }
            if w.client == w.server {
                return Err((p("server"), "expected a node other than `client`".into()));
            }
            if !(1..=4).contains(&w.connections) {
                return Err((p("connections"), "expected 1 to 4 parallel connections (Balakrishnan 1998)".into()));
            }
            if !non_negative(w.start_s) {
                return Err((
                    p("start_s"),
                    format!("expected a start time from 0 to {MAX_TIME_S:e} s, got {}", w.start_s),
                ));
            }
            if !positive(w.duration_s) {
                return Err((
                    p("duration_s"),
                    format!("expected a positive duration up to {MAX_TIME_S:e} s, got {}", w.duration_s),
                ));
            }
            if w.start_s + w.duration_s > self.time_limit_s {
                return Err((
                    p("duration_s"),
                    format!(
                        "browsing ends at {} s, after `time_limit_s` = {} s; raise the limit or shorten the run",
                        w.start_s + w.duration_s,
                        self.time_limit_s
                    ),
                ));
            }
            let tcp = self.merged_tcp(Some(&w.tcp)).map_err(|(k, m)| match k {
                Some(k) => (tcp_path(&p("tcp"), &w.tcp, k), m),
                None => (p("tcp"), m),
            })?;
            check_tcp(&tcp).map_err(|(k, m)| (tcp_path(&p("tcp"), &w.tcp, &k), m))?;
        }
        for (name, n) in &self.nodes {
            if n.agent.0.len() > 1 && n.agent.0.iter().any(|k| k.is_split()) {
                return Err((
                    format!("nodes.{name}.agent"),
                    "\"split\", \"split-sack\" and \"mtcp\" terminate TCP at the node and cannot be chained with other agents"
                        .into(),
                ));
            }
        }
        self.split.validate().map_err(|(f, m)| (format!("split.{f}"), m))?;
        if let Some(f) = &self.failure {
            f.validate(&|n| self.nodes.contains_key(n)).map_err(|(f, m)| (format!("failure.{f}"), m))?;
        }
        self.snoop.validate().map_err(|(f, m)| (format!("snoop.{f}"), m))?;
        if let Some(m) = &self.mobility {
            m.validate(&|n| self.nodes.contains_key(n)).map_err(|(f, msg)| (format!("mobility.{f}"), msg))?;
            self.validate_split_cells(m)?;
            for b in m.base_stations.iter().filter(|_| m.scheme != crate::mobility::SchemeKind::None) {
                // The handoff agent runs Snoop or E2E-ELN's notifier itself; split (and M-TCP) relays move
                // between base stations (`crate::split`); the others have no handoff-aware version.
                let kinds = &self.nodes[b].agent.0;
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
            for b in &m.base_stations {
                let joined = self
                    .links
                    .values()
                    .any(|l| l.kind == LinkKind::Wireless && l.ends.contains(b) && l.ends.contains(&m.mobile));
                if !joined {
                    return Err((
                        "mobility.base_stations".into(),
                        format!("no wireless link joins `{b}` and the mobile `{}`", m.mobile),
                    ));
                }
            }
        }
        if let Some(m) = &self.mobile_ip {
            if self.mobility.is_some() {
                return Err(("mobile_ip".into(), "a scenario has `[mobility]` or `[mobile_ip]`, not both".into()));
            }
            let joined = |a: &str, b: &str, wireless: bool| {
                self.links.values().any(|l| {
                    (l.kind == LinkKind::Wireless) == wireless
                        && l.ends.contains(&a.to_string())
                        && l.ends.contains(&b.to_string())
                })
            };
            let neighbours = |n: &str| {
                self.links
                    .values()
                    .filter_map(|l| match (&l.ends[0], &l.ends[1]) {
                        (a, b) if a == n => Some(b.clone()),
                        (a, b) if b == n => Some(a.clone()),
                        _ => None,
                    })
                    .collect::<Vec<_>>()
            };
            m.validate(&|n| self.nodes.contains_key(n), &joined, &neighbours)
                .map_err(|(f, msg)| (format!("mobile_ip.{f}"), msg))?;
            // The Mobile IP entities take these nodes' packets; only a base station hands what it passes on to
            // the node's own agent, so an agent anywhere else would never see a packet.
            let entities = [&m.correspondent, &m.home_agent, &m.mobile]
                .into_iter()
                .chain(m.cells.iter().map(|c| &c.foreign_agent));
            for n in entities {
                if !self.nodes[n].agent.is_none() {
                    return Err((
                        format!("nodes.{n}.agent"),
                        "under `[mobile_ip]` only a cell's base station runs an agent (the correspondent, home \
                         agent, foreign agents and mobile are Mobile IP's entities): expected \"none\""
                            .into(),
                    ));
                }
            }
        }
        self.eln.validate().map_err(|(f, m)| (format!("eln.{f}"), m))?;
        self.nack.validate().map_err(|(f, m)| (format!("nack.{f}"), m))?;
        Ok(())
    }

    /// Split connections at mobility base stations hand off by moving their relays (`crate::split`): every
    /// base station must split the same way, and the routing must be the plain scheme's (the multicast
    /// scheme's buffering base stations would send the fixed host's segments into the relay's connection).
    fn validate_split_cells(&self, m: &crate::mobility::MobilityConfig) -> Result<(), (String, String)> {
        if m.scheme == crate::mobility::SchemeKind::None {
            return Ok(());
        }
        let supervisors = self.supervisor_cells(m);
        if !supervisors.is_empty() {
            return self.validate_supervisors(m, &supervisors);
        }
        let split = |b: &String| self.nodes[b].agent.0.iter().find(|k| k.is_split()).copied();
        let first = split(&m.base_stations[0]);
        if let Some(b) = m.base_stations.iter().find(|b| split(b) != first) {
            return Err((
                format!("nodes.{b}.agent"),
                "split connections hand off between base stations that all split: expected every mobility base station to run the same \"split\" / \"split-sack\" / \"mtcp\" or none".into(),
            ));
        }
        if first.is_some() && m.scheme != crate::mobility::SchemeKind::Plain {
            return Err((
                "mobility.scheme".into(),
                "I-TCP and M-TCP hand off by moving their relays' state (`[split.handoff]`): expected scheme = \"plain\" with split base stations".into(),
            ));
        }
        Ok(())
    }

    /// M-TCP's supervisor hosts above mobility cells (Brown 1997): every `"mtcp"` node that is not itself a
    /// mobility base station, with the base stations a wired link joins it to (its cells), in the order of
    /// `mobility.base_stations`. Nodes with no such base station are left out.
    pub(crate) fn supervisor_cells<'a>(
        &'a self,
        m: &'a crate::mobility::MobilityConfig,
    ) -> BTreeMap<&'a str, Vec<&'a str>> {
        let wired = |a: &str, b: &str| {
            self.links
                .values()
                .any(|l| l.kind == LinkKind::Wired && l.ends.iter().any(|e| e == a) && l.ends.iter().any(|e| e == b))
        };
        self.nodes
            .iter()
            .filter(|(name, n)| n.agent.0.contains(&AgentKind::Mtcp) && !m.base_stations.contains(name))
            .map(|(name, _)| {
                (
                    name.as_str(),
                    m.base_stations.iter().filter(|b| wired(name, b)).map(String::as_str).collect::<Vec<_>>(),
                )
            })
            .filter(|(_, cells)| !cells.is_empty())
            .collect()
    }

    /// Supervisor hosts above the cells route the mobile's packets through the base station of its cell
    /// (`crate::split`): every base station is under exactly one of them and runs no split agent itself, and
    /// routing is the plain scheme's.
    fn validate_supervisors(
        &self,
        m: &crate::mobility::MobilityConfig,
        supervisors: &BTreeMap<&str, Vec<&str>>,
    ) -> Result<(), (String, String)> {
        if m.scheme != crate::mobility::SchemeKind::Plain {
            return Err((
                "mobility.scheme".into(),
                "M-TCP's supervisor hosts above the cells need the plain scheme's routing: expected scheme = \"plain\""
                    .into(),
            ));
        }
        for b in &m.base_stations {
            if self.nodes[b].agent.0.iter().any(|k| k.is_split()) {
                return Err((
                    format!("nodes.{b}.agent"),
                    "a base station under an M-TCP supervisor host runs no split agent itself: expected \"none\""
                        .into(),
                ));
            }
            let above: Vec<&str> =
                supervisors.iter().filter(|(_, c)| c.contains(&b.as_str())).map(|(s, _)| *s).collect();
            if above.len() != 1 {
                return Err((
                    "mobility.base_stations".into(),
                    format!(
                        "expected every base station joined by a wired link to exactly one \"mtcp\" supervisor host; `{b}` has {}",
                        if above.is_empty() { "none".to_string() } else { above.join(", ") }
                    ),
                ));
            }
        }
        Ok(())
    }

    fn node_names(&self) -> String {
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
