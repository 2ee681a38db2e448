//! What a run measures: per flow, per link, per agent; and optional time series. Serialised as `metrics.json`.

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
    /// Per web workload (absent from metrics.json when the scenario has none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub web: Vec<WebMetrics>,
    /// Present when `RunOptions::trace` was set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub series: Option<Vec<FlowSeries>>,
    /// One entry per handoff, in order (empty without `[mobility]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub handoffs: Vec<HandoffMetrics>,
    /// Present with `[mobile_ip]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mobile_ip: Option<MobileIpMetrics>,
}

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

/// What one web workload achieved (Balakrishnan 1998 §5: "successfully completed individual downloads in 1000 s").
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct WebMetrics {
    pub name: String,
    pub tcp: String,
    pub connections: u32,
    pub persistent: bool,
    pub think_time: bool,
    /// Objects (replies) read completely by the client within the browsing time, every byte verified:
    /// Balakrishnan 1998's "downloads".
    pub downloads_completed: u64,
    /// Pages whose primary and every embedded object were read within the browsing time.
    pub pages_completed: u64,
    pub pages_started: u64,
    /// Objects requested (a request may still be in progress at the end).
    pub objects_requested: u64,
    /// Requests sent again by the client because the first copy was lost on the way to the server.
    pub request_retransmissions: u64,
    /// TCP connections the server opened (one per object, or one per persistent connection).
    pub connections_opened: u64,
    /// Reply bytes read by the client, in order, verified against what was sent.
    pub bytes_delivered: u64,
    /// Delivered bytes that did not match what was sent (must be 0).
    pub corrupt_bytes: u64,
    /// Mean time from an object's request to its last byte read, over completed downloads.
    pub mean_download_time_s: Option<f64>,
    /// Summed over every connection of the workload.
    pub sender_timeouts: u64,
    pub fast_retransmits: u64,
    pub segments_sent: u64,
    pub segments_retransmitted: u64,
    /// Counters of the agents on the client–server path, over this workload's connections only.
    pub local_retransmissions: u64,
    pub dupacks_suppressed: u64,
    /// Segments the client received whose data it already had (needless retransmissions, by the server or
    /// by an agent), over every connection.
    pub duplicate_segments_received: u64,
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
        assert!(r.series.is_some() && !r.handoffs.is_empty());
        let back: super::RunResult = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back, r);
    }
}
