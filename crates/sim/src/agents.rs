//! Builds the agents a scenario names at its nodes, mapping the scenario's `[snoop]` table onto
//! `lasthop_agents::snoop::SnoopConfig` (times in the file are milliseconds).

use crate::scenario::AgentKind;
use lasthop_agents::snoop::{Snoop, SnoopConfig};
use lasthop_agents::Agent;
use serde::Deserialize;
use std::time::Duration;

/// The scenario's `[snoop]` table. An absent field keeps `SnoopConfig::default()`'s value (documented there).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SnoopSettings {
    pub max_connections: Option<usize>,
    pub high_water_bytes: Option<usize>,
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
            if v.is_some_and(|v| !(v.is_finite() && v > 0.0)) {
                return Err((field.into(), "expected a positive number of milliseconds".into()));
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
        let ms = |v: Option<f64>, default: Duration| v.map_or(default, |v| Duration::from_nanos((v * 1e6).round() as u64));
        SnoopConfig {
            max_connections: self.max_connections.unwrap_or(d.max_connections),
            high_water_bytes: self.high_water_bytes.unwrap_or(d.high_water_bytes),
            max_local_rexmit: self.max_local_rexmit.unwrap_or(d.max_local_rexmit),
            min_rtx_timeout: ms(self.min_rtx_timeout_ms, d.min_rtx_timeout),
            max_rtx_timeout: ms(self.max_rtx_timeout_ms, d.max_rtx_timeout),
            max_rtx_backoff: self.max_rtx_backoff.unwrap_or(d.max_rtx_backoff),
            initial_srtt: ms(self.initial_srtt_ms, d.initial_srtt),
            persist_timeout: ms(self.persist_timeout_ms, d.persist_timeout),
            ..d
        }
    }
}

pub fn build_agent(kind: AgentKind, snoop: &SnoopSettings) -> Option<Box<dyn Agent>> {
    match kind {
        AgentKind::None => None,
        AgentKind::Snoop => Some(Box::new(Snoop::new(snoop.config()))),
    }
}
