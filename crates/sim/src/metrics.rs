//! What a run measures: per flow, per link, per agent; and optional time series; then each protocol
//! family's section ([`crate::registry::FamilyMetrics`]). Serialised as `metrics.json`.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct RunResult {
    pub seed: u64,
    /// Simulated time at which the run ended, seconds.
    pub sim_time_s: f64,
    /// True when the simulated-time limit stopped the run before every flow completed.
    pub hit_time_limit: bool,
    /// Events the engine processed (for benchmarks).
    pub events: u64,
    pub flows: Vec<FlowMetrics>,
    pub links: Vec<LinkMetrics>,
    /// Per node with agents: counter name -> value, summed over that node's agents.
    pub agents: BTreeMap<String, BTreeMap<String, u64>>,
    /// Packets dropped because no node could route or deliver them (no route, no matching endpoint).
    pub undeliverable_packets: u64,
    /// Present when `RunOptions::trace` was set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub series: Option<Vec<FlowSeries>>,
    /// The protocol families' sections, each typed in its family's module (at the top level of
    /// metrics.json: `web`, `handoffs`, `mobile_ip`).
    #[serde(flatten)]
    pub families: crate::registry::FamilyMetrics,
}

impl RunResult {
    /// The metrics of bulk flow `name` (or the first flow).
    pub fn flow(&self, name: Option<&str>) -> Result<&FlowMetrics, String> {
        named(&self.flows, name, |f| &f.name, "flow")
    }
}

/// The item called `name` among a run's `items` (or the first), each named by `item_name`; an error names
/// `what` the items are and, for a name not found, the names there are.
pub(crate) fn named<'a, T>(
    items: &'a [T],
    name: Option<&str>,
    item_name: fn(&T) -> &String,
    what: &str,
) -> Result<&'a T, String> {
    match name {
        Some(n) => items.iter().find(|i| item_name(i) == n).ok_or_else(|| {
            let have: Vec<&str> = items.iter().map(|i| item_name(i).as_str()).collect();
            format!("the run has no {what} `{n}` (it has {have:?})")
        }),
        None => items.first().ok_or_else(|| format!("the run has no {what}s")),
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct FlowMetrics {
    pub name: String,
    pub tcp: String,
    /// Bytes the application was asked to send.
    pub bytes_total: u64,
    /// Bytes the receiving application read, in order, and verified against what was sent.
    pub bytes_delivered: u64,
    pub completed: bool,
    /// From the flow's start to the last byte read by the receiving application (or to the end of the run).
    pub duration_s: f64,
    pub completion_time_s: Option<f64>,
    /// bytes_delivered · 8 / duration, in Mb/s.
    pub goodput_mbps: f64,
    /// The wireless hop's error-free goodput C times (1 − PER) for a full-sized segment: an upper bound.
    pub ideal_goodput_mbps: Option<f64>,
    pub sender_timeouts: u64,
    pub fast_retransmits: u64,
    pub segments_sent: u64,
    pub segments_retransmitted: u64,
    /// Retransmissions an ELN-aware sender made on ELN ACKs, without congestion response (Balakrishnan 1998 §3).
    pub eln_retransmits: u64,
    /// Local retransmissions of this flow's segments by agents on its path (Snoop): this connection's own,
    /// not the base station's total over every flow through it (that is in `RunResult::agents`).
    pub local_retransmissions: u64,
    /// This flow's duplicate ACKs that agents on its path kept from its sender.
    pub dupacks_suppressed: u64,
    /// Delivered data that did not match what was sent (must be 0: end-to-end integrity).
    pub corrupt_bytes: u64,
    /// The longest time the receiving application got no new byte, from the flow's start to its end, s.
    pub longest_pause_s: f64,
    /// Bytes the sender saw acknowledged that the receiving application never got: 0 whenever the path
    /// keeps end-to-end semantics; a split connection that loses its buffer leaves them (Balakrishnan 1995 §2).
    pub bytes_acked_not_delivered: u64,
    /// Useful bytes over the bytes sent on the path's first wireless hop in the data's direction (IP
    /// bytes, local and link-level retransmissions included): the ToN'97 comparison's wireless goodput.
    pub wireless_goodput: Option<f64>,
    /// Useful bytes over the application bytes the sender sent, retransmissions included: its wired goodput.
    pub wired_goodput: f64,
    /// Data segments that reached the receiver carrying no new byte: redundant retransmissions (the
    /// sender's, a base station's or a link's) whose first copy had arrived (Balakrishnan 1995 §8).
    #[serde(default)]
    pub duplicate_segments: u64,
    /// Fast retransmissions of which two copies reached the receiver: the segment was not lost, or was
    /// still being delivered (a link layer recovering it, reordering), when TCP resent it (Balakrishnan 1995 §2). A
    /// later timeout retransmission of the same segment, arriving as a duplicate, would count too.
    #[serde(default)]
    pub spurious_fast_retransmits: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct LinkMetrics {
    pub name: String,
    /// "a->b" direction label.
    pub direction: String,
    pub frames_sent: u64,
    pub frames_lost_to_errors: u64,
    pub frames_dropped_queue: u64,
    pub bytes_sent: u64,
    /// Fraction of the run the transmitter was busy (for half duplex: the shared medium).
    pub utilisation: f64,
}

/// Time series of one flow, for sequence plots (Balakrishnan 1995 Fig. 8).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct FlowSeries {
    pub name: String,
    /// (time s, stream offset of the first byte) of every data segment the sender sent.
    pub sent: Vec<(f64, u64)>,
    /// (time s, stream offset of the first byte) of every data segment that reached the receiver.
    pub received: Vec<(f64, u64)>,
    /// (time s, cumulative ACK as stream offset) of every ACK that reached the sender.
    pub acked: Vec<(f64, u64)>,
    /// (time s, congestion window in bytes) at every change.
    pub cwnd: Vec<(f64, u64)>,
    /// Times (s) of handoff decisions, for marking sequence plots.
    pub handoffs: Vec<f64>,
}

/// One cell of a results row that a family gives for its columns (`crate::registry::ResultColumns`,
/// `crate::registry::RowColumns`).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Empty,
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(String),
}

impl Value {
    /// A count (a float beyond `i64`, as `metrics.json` would carry it).
    pub fn count(n: u64) -> Value {
        i64::try_from(n).map_or(Value::Float(n as f64), Value::Int)
    }

    /// A measurement: empty when there is none or it is not finite (`metrics.json` writes it as null).
    pub fn real(x: impl Into<Option<f64>>) -> Value {
        x.into().filter(|x| x.is_finite()).map_or(Value::Empty, Value::Float)
    }
}

impl FlowMetrics {
    /// The flow's cells in a results row, in the order of [`FLOW_COLUMNS`] (`flow` is its name).
    pub fn cells(&self) -> Vec<Value> {
        let c = Value::count;
        vec![
            Value::Str(self.name.clone()),
            Value::Str(self.tcp.clone()),
            c(self.bytes_total),
            c(self.bytes_delivered),
            Value::Bool(self.completed),
            Value::real(self.duration_s),
            Value::real(self.completion_time_s),
            Value::real(self.goodput_mbps),
            Value::real(self.ideal_goodput_mbps),
            c(self.sender_timeouts),
            c(self.fast_retransmits),
            c(self.segments_sent),
            c(self.segments_retransmitted),
            c(self.eln_retransmits),
            c(self.local_retransmissions),
            c(self.dupacks_suppressed),
            c(self.corrupt_bytes),
            Value::real(self.longest_pause_s),
            c(self.bytes_acked_not_delivered),
            Value::real(self.wireless_goodput),
            Value::real(self.wired_goodput),
            c(self.duplicate_segments),
            c(self.spurious_fast_retransmits),
        ]
    }
}

/// The columns of a bulk flow's row in a results table, in CSV order: [`FlowMetrics`]'s fields, `name`
/// called `flow`.
pub const FLOW_COLUMNS: &[&str] = &[
    "flow",
    "tcp",
    "bytes_total",
    "bytes_delivered",
    "completed",
    "duration_s",
    "completion_time_s",
    "goodput_mbps",
    "ideal_goodput_mbps",
    "sender_timeouts",
    "fast_retransmits",
    "segments_sent",
    "segments_retransmitted",
    "eln_retransmits",
    "local_retransmissions",
    "dupacks_suppressed",
    "corrupt_bytes",
    "longest_pause_s",
    "bytes_acked_not_delivered",
    "wireless_goodput",
    "wired_goodput",
    "duplicate_segments",
    "spurious_fast_retransmits",
];

/// The median of sorted values (the mean of the middle two for an even count).
pub fn median(sorted: &[f64]) -> Option<f64> {
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

#[cfg(test)]
mod tests {
    use crate::{run, RunOptions, Scenario};

    /// Metrics cross process boundaries as JSON (the Python package's Dask workers send them back for
    /// `reproduce`): reading them back must give the very same numbers, series and handoffs included.
    #[test]
    fn json_round_trip_is_exact() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/handoff.toml");
        let mut s = Scenario::load(std::path::Path::new(path)).unwrap();
        s.set_seed(3);
        let r = run(&s, &RunOptions { trace: true, pcap_dir: None }).unwrap();
        assert!(r.series.is_some() && !r.families.handoffs.is_empty());
        let back: super::RunResult = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back, r);
    }
}
