//! What Mobile IP measures (Eom 2002): [`MobileIpMetrics`] (`mobile_ip` in `metrics.json`), and the
//! columns an experiment whose scenario has `[mobile_ip]` adds to `results.csv`.

use crate::metrics::Value;
use crate::registry::ResultColumns;
use crate::RunResult;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What Mobile IP did in a run (Eom 2002).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct MobileIpMetrics {
    /// One entry per handoff, in order.
    pub handoffs: Vec<MipHandoffMetrics>,
    /// Data segments the mobile received more than once (same connection and sequence number).
    pub duplicates_delivered: u64,
    /// Fast retransmits, by the correspondent, of a segment the mobile already had (Eom 2002 §3.2).
    pub erroneous_fast_retransmits: u64,
    /// Per node: the counters of the Mobile IP entity it runs.
    pub agents: BTreeMap<String, BTreeMap<String, u64>>,
}

/// One Mobile IP handoff: when the mobile left its cell, the local protocol's and the registration's
/// progress after it (seconds from leaving; `None` when it did not happen before the next handoff or the
/// end), and what it cost.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct MipHandoffMetrics {
    pub index: u32,
    /// Base stations (node names).
    pub from: String,
    pub to: String,
    pub left_s: f64,
    /// The mobile heard the new BS's beacon and sent its handoff request.
    pub handoff_request_s: Option<f64>,
    /// The new FA's agent advertisement arrived and the registration request went out.
    pub registration_sent_s: Option<f64>,
    /// The HA's reply reached the mobile.
    pub registered_s: Option<f64>,
    /// Frames lost in the air (out of range) from leaving the cell to the next handoff: the data the old BS
    /// sent after the mobile left, and at most a delayed ACK of the mobile's own.
    pub packets_lost: u64,
    /// Packets the old BS sent up from its buffer on *forward*.
    pub sent_from_buffer: u64,
    /// Data segments the mobile received twice, from this handoff to the next.
    pub duplicates_delivered: u64,
    /// Erroneous fast retransmits from this handoff to the next.
    pub erroneous_fast_retransmits: u64,
    /// The loss period t_loss (Eom 2002 §2.2, Fig. 3), ms: from T1, the mobile leaving less the delay from
    /// the forwarding point (HA under base Mobile IP, old FA under route optimisation) to the old FA, to T2,
    /// when the forwarding point learns the new care-of address; `None` when it never did.
    pub t_loss_ms: Option<f64>,
    /// Eq. (2) (base Mobile IP) or Eq. (3) (route optimisation) of Eom 2002 §2.2, ms, from this handoff's own
    /// timeline: t_beacon (entering the cell to the handoff request), t_new_fa (to the registration request
    /// leaving the mobile, plus the BS–FA hop to the new FA), and the delay stations' one-way delays for
    /// t_delay and t_ha (HA–FA) or t_old_fa (FA–FA); `None` when the registration never went out.
    #[serde(default)]
    pub predicted_t_loss_ms: Option<f64>,
    /// Eq. (1) with that t_loss: min(mws / rtt × t_loss, mws), mws the maximum window in segments and rtt
    /// Table 1's round trip (twice the one-way delay from the correspondent to the first FA, plus α, the
    /// FA–mobile round trip of a full segment and an ACK).
    #[serde(default)]
    pub predicted_packets_dropped: Option<f64>,
}

/// After the core's and the handoff columns, in experiments whose scenario has `[mobile_ip]`, summed over the
/// run's handoffs ([`MipHandoffMetrics`]): `packets_dropped` (frames lost in the air), `t_loss_ms` (mean over
/// the handoffs that lost a segment's first copy), `erroneous_fast_retransmits`, `duplicates_delivered`,
/// `sent_from_buffer`, `mip_handoffs` (how many; `handoffs` counts `[mobility]`'s); then Eom 2002 §2.2's
/// Eq. (1)–(3) beside them (`predicted_packets_dropped`, `predicted_t_loss_ms`, summed and averaged alike) and
/// the measured over the predicted (`drop_ratio`, `t_loss_ratio`).
pub(crate) const COLUMNS: ResultColumns = ResultColumns {
    always: false,
    names: &[
        "packets_dropped",
        "t_loss_ms",
        "erroneous_fast_retransmits",
        "duplicates_delivered",
        "sent_from_buffer",
        "mip_handoffs",
        "predicted_packets_dropped",
        "predicted_t_loss_ms",
        "drop_ratio",
        "t_loss_ratio",
    ],
    cells,
};

fn cells(result: &RunResult) -> Vec<Value> {
    let Some(m) = &result.families.mobile_ip else {
        return COLUMNS.names.iter().map(|_| Value::Empty).collect();
    };
    let h = &m.handoffs;
    let sum = |f: fn(&MipHandoffMetrics) -> u64| h.iter().map(f).sum::<u64>();
    let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    let t: Vec<f64> = h.iter().filter_map(|h| h.t_loss_ms).collect();
    let predicted_drops: Option<f64> = h.iter().map(|h| h.predicted_packets_dropped).sum();
    let pt: Vec<f64> = h.iter().filter(|h| h.t_loss_ms.is_some()).filter_map(|h| h.predicted_t_loss_ms).collect();
    let (measured_t, mean_pt) = (mean(&t), mean(&pt));
    let dropped = sum(|h| h.packets_lost);
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Value::Float(a / b),
        _ => Value::Empty,
    };
    let float = |x: Option<f64>| x.map_or(Value::Empty, Value::Float);
    vec![
        Value::Int(dropped as i64),
        float(measured_t),
        Value::Int(m.erroneous_fast_retransmits as i64),
        Value::Int(m.duplicates_delivered as i64),
        Value::Int(sum(|h| h.sent_from_buffer) as i64),
        Value::Int(h.len() as i64),
        float(predicted_drops),
        float(mean_pt),
        ratio(Some(dropped as f64), predicted_drops),
        ratio(measured_t, mean_pt),
    ]
}
