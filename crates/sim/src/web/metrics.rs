//! What the Web workload measures: one [`WebMetrics`] per workload (`web` in `metrics.json`; a web
//! experiment's rows are made from them, [`WEB_COLUMNS`]).

use crate::metrics::Value;
use serde::{Deserialize, Serialize};

/// The columns of a web workload's row in a results table (Balakrishnan 1998 §5), in CSV order: `downloads`
/// is [`WebMetrics::downloads_completed`], `pages` [`WebMetrics::pages_completed`], `workload` its name.
pub const WEB_COLUMNS: &[&str] = &[
    "workload",
    "tcp",
    "downloads",
    "pages",
    "objects_requested",
    "connections_opened",
    "bytes_delivered",
    "corrupt_bytes",
    "mean_download_time_s",
    "sender_timeouts",
    "fast_retransmits",
    "segments_retransmitted",
    "local_retransmissions",
];

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

impl WebMetrics {
    /// The workload's cells in a results row, in the order of [`WEB_COLUMNS`].
    pub fn cells(&self) -> Vec<Value> {
        let c = Value::count;
        vec![
            Value::Str(self.name.clone()),
            Value::Str(self.tcp.clone()),
            c(self.downloads_completed),
            c(self.pages_completed),
            c(self.objects_requested),
            c(self.connections_opened),
            c(self.bytes_delivered),
            c(self.corrupt_bytes),
            self.mean_download_time_s.map_or(Value::Empty, Value::Float),
            c(self.sender_timeouts),
            c(self.fast_retransmits),
            c(self.segments_retransmitted),
            c(self.local_retransmissions),
        ]
    }
}
