//! What mobility measures: one [`HandoffMetrics`] per handoff (`handoffs` in `metrics.json`), and the
//! handoff columns every simulator experiment's `results.csv` has (empty cells without `[mobility]`).

use crate::metrics::{median, Value};
use crate::registry::ResultColumns;
use crate::RunResult;
use serde::{Deserialize, Serialize};

/// One handoff: when the mobile decided, the event timeline after it (Balakrishnan 1995 Fig. 10), and its cost.
/// Times after `decided_s` are offsets from it, in seconds; `None` when the event did not happen.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct HandoffMetrics {
    pub index: u32,
    /// Base stations (node names).
    pub from: String,
    pub to: String,
    /// Non-overlapping cells: when the mobile left the old cell (seconds); else equal to `decided_s`.
    pub left_s: f64,
    /// When the mobile decided to hand off (heard the new BS), seconds.
    pub decided_s: f64,
    /// The request (Forward / Greeting) reached the new BS.
    pub request_at_new_bs_s: Option<f64>,
    /// The old BS learned of the handoff (Buffer / Notify).
    pub old_bs_told_s: Option<f64>,
    /// The new BS's Ack / GreetingAck reached the mobile (fast retransmit fires here).
    pub accepted_s: Option<f64>,
    /// Handoff latency: the first data packet from the new BS reached the mobile.
    pub latency_s: Option<f64>,
    /// The mobile first heard from the new BS after deciding: its first data packet or its acceptance
    /// (Ack / GreetingAck), whichever came first. Defined idle and during a transfer (Balakrishnan 1995 Fig. 10).
    pub completion_s: Option<f64>,
    /// Frames lost on detached links (either way) from this handoff to the next.
    pub packets_lost: u64,
    /// Packets the new primary sent from its buffer (multicast scheme).
    pub resent_from_buffer: u64,
    /// Packets the mobile received twice (same source and IP ID) from this handoff to the next.
    pub duplicates: u64,
    /// Frames for the mobile the old BS discarded from its wireless queue when told to stop forwarding
    /// (`mobility.old_bs_drains = false`; else 0).
    pub purged_at_old_bs: u64,
    /// Caceres 1995's pause: seconds from leaving the old cell (from the decision, in overlapping cells) until
    /// every flow to or from the mobile has delivered to its receiving application a byte its sender had not
    /// yet sent at that moment (or its last byte): until what the crossing lost, data or ACKs, is repaired
    /// and the transfer moves on. `None` when the run, or the next crossing, came first, or no flow runs
    /// through the mobile.
    pub pause_s: Option<f64>,
}

/// The handoff columns: `handoffs` (count), `handoff_latency_mean_ms`, `handoff_latency_max_ms` (decision to
/// first packet from the new BS), `handoff_packets_lost`, `handoff_resent`, `handoff_duplicates`,
/// `handoff_purged` (frames the old BS discarded from its queue, `mobility.old_bs_drains = false`) (sums
/// over the run's handoffs), `handoff_pause_mean_s`, `handoff_pause_max_s` (Caceres 1995's pause,
/// [`HandoffMetrics::pause_s`]) and `handoff_resume_mean_ms` (the same pause less the rendezvous delay:
/// from hearing the new BS), `handoff_completion_min_ms`, `handoff_completion_median_ms`,
/// `handoff_completion_max_ms` (decision to the first word from the new BS, data or acceptance: defined idle
/// too, Balakrishnan 1995 Fig. 10); `handoff_latency_ms` and `pause_s`, the medians over the run's handoffs
/// of the latency and the pause (the handoff comparison's names: the columns' contract).
pub(crate) const COLUMNS: ResultColumns = ResultColumns {
    always: true,
    names: &[
        "handoffs",
        "handoff_latency_mean_ms",
        "handoff_latency_max_ms",
        "handoff_packets_lost",
        "handoff_resent",
        "handoff_duplicates",
        "handoff_purged",
        "handoff_pause_mean_s",
        "handoff_pause_max_s",
        "handoff_resume_mean_ms",
        "handoff_completion_min_ms",
        "handoff_completion_median_ms",
        "handoff_completion_max_ms",
        "handoff_latency_ms",
        "pause_s",
    ],
    cells,
};

fn cells(result: &RunResult) -> Vec<Value> {
    let h = &result.families.handoffs;
    let lat: Vec<f64> = h.iter().filter_map(|x| x.latency_s).map(|s| s * 1e3).collect();
    let sum = |f: fn(&HandoffMetrics) -> u64| match h.is_empty() {
        true => Value::Empty,
        false => Value::Int(h.iter().map(f).sum::<u64>() as i64),
    };
    let mean = |v: &[f64]| match v.is_empty() {
        true => Value::Empty,
        false => Value::Float(v.iter().sum::<f64>() / v.len() as f64),
    };
    let float = |x: Option<f64>| x.map_or(Value::Empty, Value::Float);
    let sorted = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v
    };
    let pauses: Vec<f64> = h.iter().filter_map(|x| x.pause_s).collect();
    let resume: Vec<f64> = h.iter().filter_map(|x| Some((x.pause_s? - (x.decided_s - x.left_s)) * 1e3)).collect();
    let done = sorted(h.iter().filter_map(|x| x.completion_s).map(|s| s * 1e3).collect());
    vec![
        Value::Int(h.len() as i64),
        mean(&lat),
        float(lat.iter().copied().reduce(f64::max)),
        sum(|x| x.packets_lost),
        sum(|x| x.resent_from_buffer),
        sum(|x| x.duplicates),
        sum(|x| x.purged_at_old_bs),
        mean(&pauses),
        float(pauses.iter().copied().reduce(f64::max)),
        mean(&resume),
        float(done.first().copied()),
        float(median(&done)),
        float(done.last().copied()),
        float(median(&sorted(lat))),
        float(median(&sorted(pauses))),
    ]
}
