//! The Web workload's scenario table (`[web.NAME]`) and its registration: its rules and its build.

use crate::registry::{Family, RowColumns};
use crate::scenario::{check_start_s, positive_s, Invalid, Scenario, MAX_TIME_S};
use serde::Deserialize;

pub(crate) const FAMILY: Family = Family {
    name: "web",
    present: |s| !s.web.is_empty(),
    validate,
    together: &[],
    columns: None,
    row: Some(RowColumns {
        names: super::metrics::WEB_COLUMNS,
        cells: |result, name| Ok(result.families.web_workload(name)?.cells()),
    }),
    build: |s, world| {
        if let Some(w) = super::feature::WebWorkloads::build(s, world.view())? {
            world.register(w);
        }
        Ok(())
    },
};

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

fn validate(s: &Scenario) -> Result<(), Invalid> {
    for (name, w) in &s.web {
        let p = |x: &str| format!("web.{name}.{x}");
        s.check_ends(&format!("web.{name}"), ("client", &w.client), ("server", &w.server))?;
        if !(1..=4).contains(&w.connections) {
            return Err((p("connections"), "expected 1 to 4 parallel connections (Balakrishnan 1998)".into()));
        }
        check_start_s(p("start_s"), w.start_s)?;
        if !positive_s(w.duration_s) {
            return Err((
                p("duration_s"),
                format!("expected a positive duration up to {MAX_TIME_S:e} s, got {}", w.duration_s),
            ));
        }
        if w.start_s + w.duration_s > s.time_limit_s {
            return Err((
                p("duration_s"),
                format!(
                    "browsing ends at {} s, after `time_limit_s` = {} s; raise the limit or shorten the run",
                    w.start_s + w.duration_s,
                    s.time_limit_s
                ),
            ));
        }
        s.validate_own_tcp(&p("tcp"), &w.tcp)?;
    }
    Ok(())
}
