//! Builds the agents a scenario names at its nodes, mapping the scenario's `[snoop]` table onto
//! `lasthop_agents::snoop::SnoopConfig` (times in the file are milliseconds).

use crate::scenario::{AgentKind, AgentSpec, Scenario};
use lasthop_agents::eln::{Eln, ElnConfig, ElnRole};
use lasthop_agents::nack::{Nack, NackConfig};
use lasthop_agents::snoop::{Snoop, SnoopConfig};
use lasthop_agents::{Agent, Chain};
use serde::Deserialize;
use std::time::Duration;

/// The scenario's `[snoop]` table. An absent field keeps `SnoopConfig::default()`'s value (documented there).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SnoopSettings {
    pub max_connections: Option<usize>,
    pub high_water_bytes: Option<usize>,
    /// Hard per-connection cache memory limit, bytes the cache holds: packets whole (headers included)
    /// plus their cache entries (Balakrishnan 1998 "Scaling behavior").
    pub max_cache_bytes: Option<usize>,
    pub max_local_rexmit: Option<u8>,
    pub min_rtx_timeout_ms: Option<f64>,
    pub max_rtx_timeout_ms: Option<f64>,
    pub max_rtx_backoff: Option<u32>,
    pub initial_srtt_ms: Option<f64>,
    pub persist_timeout_ms: Option<f64>,
}

impl SnoopSettings {
    fn durations(&self) -> [(&'static str, Option<f64>); 4] {
        [
            ("min_rtx_timeout_ms", self.min_rtx_timeout_ms),
            ("max_rtx_timeout_ms", self.max_rtx_timeout_ms),
            ("initial_srtt_ms", self.initial_srtt_ms),
            ("persist_timeout_ms", self.persist_timeout_ms),
        ]
    }

    pub fn validate(&self) -> Result<(), (String, String)> {
        for (field, v) in self.durations() {
            if let Some(v) = v.filter(|&v| !(v.is_finite() && v > 0.0 && v <= lasthop_tcp::MAX_TIME_MS)) {
                return Err((field.into(), format!("expected a positive number of milliseconds up to 1e12, got {v}")));
            }
            if let Some(v) = v {
                crate::floors::at_least(field, v, crate::floors::AGENT_TIMER_MS, "ms")?;
            }
        }
        if let (Some(lo), Some(hi)) = (self.min_rtx_timeout_ms, self.max_rtx_timeout_ms) {
            if lo > hi {
                return Err(("max_rtx_timeout_ms".into(), "expected at least min_rtx_timeout_ms".into()));
            }
        }
        Ok(())
    }

    pub fn config(&self) -> SnoopConfig {
        let d = SnoopConfig::default();
        let ms =
            |v: Option<f64>, default: Duration| v.map_or(default, |v| Duration::from_nanos((v * 1e6).round() as u64));
        SnoopConfig {
            max_connections: self.max_connections.unwrap_or(d.max_connections),
            high_water_bytes: self.high_water_bytes.unwrap_or(d.high_water_bytes),
            max_cache_bytes: self.max_cache_bytes.unwrap_or(d.max_cache_bytes),
            max_local_rexmit: self.max_local_rexmit.unwrap_or(d.max_local_rexmit),
            min_rtx_timeout: ms(self.min_rtx_timeout_ms, d.min_rtx_timeout),
            max_rtx_timeout: ms(self.max_rtx_timeout_ms, d.max_rtx_timeout),
            max_rtx_backoff: self.max_rtx_backoff.unwrap_or(d.max_rtx_backoff),
            initial_srtt: ms(self.initial_srtt_ms, d.initial_srtt),
            persist_timeout: ms(self.persist_timeout_ms, d.persist_timeout),
            // A run is bounded and reports each flow's own counts (`RunResult::flows`).
            keep_closed_connection_stats: true,
            ..d
        }
    }
}

/// The scenario's `[eln]` table (Balakrishnan 1998 §3). Absent fields keep `ElnConfig::default()`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ElnSettings {
    /// Fraction of a queue's capacity above which a new hole is taken for congestion, not corruption (0.75).
    pub congestion_threshold: Option<f64>,
    pub max_connections: Option<usize>,
    pub max_blocks: Option<usize>,
}

/// The scenario's `[nack]` table (Balakrishnan 1995 §3.2). Absent fields keep `NackConfig::default()`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NackSettings {
    /// Packets past a gap, from one window, before a NACK goes out (3).
    pub threshold_packets: Option<u32>,
    /// Silence from the mobile after which a NACK goes out, ms (50).
    pub timeout_ms: Option<f64>,
    /// NACK even when the SYNs were not seen to negotiate SACK.
    pub assume_sack_permitted: Option<bool>,
}

impl ElnSettings {
    pub fn validate(&self) -> Result<(), (String, String)> {
        if self.congestion_threshold.is_some_and(|t| !(0.0..=1.0).contains(&t)) {
            return Err(("congestion_threshold".into(), "expected a fraction in [0, 1]".into()));
        }
        Ok(())
    }
    pub fn config(&self, role: ElnRole) -> ElnConfig {
        let d = ElnConfig::default();
        ElnConfig {
            role,
            congestion_threshold: self.congestion_threshold.unwrap_or(d.congestion_threshold),
            max_connections: self.max_connections.unwrap_or(d.max_connections),
            max_blocks: self.max_blocks.unwrap_or(d.max_blocks),
        }
    }
}

impl NackSettings {
    pub fn validate(&self) -> Result<(), (String, String)> {
        if let Some(t) = self.timeout_ms.filter(|&t| !(t.is_finite() && t > 0.0 && t <= lasthop_tcp::MAX_TIME_MS)) {
            return Err((
                "timeout_ms".into(),
                format!("expected a positive number of milliseconds up to 1e12, got {t}"),
            ));
        }
        if let Some(t) = self.timeout_ms {
            crate::floors::at_least("timeout_ms", t, crate::floors::AGENT_TIMER_MS, "ms")?;
        }
        if self.threshold_packets == Some(0) {
            return Err(("threshold_packets".into(), "expected at least 1".into()));
        }
        Ok(())
    }
    pub fn config(&self) -> NackConfig {
        let d = NackConfig::default();
        NackConfig {
            threshold_packets: self.threshold_packets.unwrap_or(d.threshold_packets),
            timeout: self.timeout_ms.map_or(d.timeout, |ms| Duration::from_nanos((ms * 1e6).round() as u64)),
            assume_sack_permitted: self.assume_sack_permitted.unwrap_or(d.assume_sack_permitted),
            ..d
        }
    }
}

/// The agents of a node: none, one, or a [`Chain`] of several in the order the spec names them. A split
/// connection is not an agent: [`crate::split`] runs it, and the node gets none here.
pub fn build_agent(spec: &AgentSpec, s: &Scenario) -> Option<Box<dyn Agent>> {
    let one = |kind: AgentKind| -> Box<dyn Agent + Send> {
        match kind {
            AgentKind::Snoop => Box::new(Snoop::new(s.snoop.config())),
            AgentKind::Eln => Box::new(Eln::new(s.eln.config(ElnRole::Mark))),
            AgentKind::ElnFilter => Box::new(Eln::new(s.eln.config(ElnRole::Filter))),
            AgentKind::ElnFixed => Box::new(Eln::new(s.eln.config(ElnRole::MarkForwarded))),
            AgentKind::Nack => Box::new(Nack::new(s.nack.config())),
            AgentKind::None | AgentKind::Split | AgentKind::SplitSack | AgentKind::Mtcp => {
                unreachable!("validated: an AgentSpec names no `none`, and a split node has no other agent")
            }
        }
    };
    match spec.0.as_slice() {
        [] => None,
        [k] if k.is_split() => None,
        [kind] => Some(one(*kind)),
        kinds => Some(Box::new(Chain::new(kinds.iter().map(|k| one(*k)).collect()))),
    }
}
