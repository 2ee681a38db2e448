//! The Web workload of Balakrishnan 1998 §5 ("Web Workload"): a client (the mobile host) browsing pages served by a
//! fixed host, following B. A. Mah's empirical model of HTTP traffic ("An Empirical Model of HTTP Network
//! Traffic", INFOCOM '97, ref. [16] of Balakrishnan 1998). Balakrishnan 1998 does not print Mah's distributions; this module
//! samples Mah's own measured CDFs (see *Distributions*).
//!
//! ## The model
//!
//! A *page* is a primary document followed by its embedded objects (Mah's "files per Web page"). The
//! primary is fetched alone; once it is complete the embedded objects are fetched over up to
//! `connections` parallel TCP connections (1–4, as in Balakrishnan 1998's figure): with HTTP/1.0 each object is its
//! own connection (handshake included), with persistent HTTP (P-HTTP, RFC 2068, ref. [12] of Balakrishnan 1998) each
//! of the `connections` connections stays open and carries object after object. When every object of the
//! page is in, the user thinks (when `think_time` is on) and asks for the next page. After a visit of
//! "consecutive document retrievals" pages the user moves on to another server: persistent connections are
//! closed and the next page opens new ones (the scenario has one server node, so "another server" is the
//! same fixed host reached over fresh connections; Mah's server-selection popularity therefore has no
//! effect here and is not sampled).
//!
//! ## Distributions
//!
//! Mah's model is empirical: each quantity is the CDF measured in his packet traces of HTTP/1.0 clients
//! (Berkeley, 1995), published with the paper as data files (`HttpPrimaryReply.cdf`, `HttpSecondaryReply.cdf`,
//! `HttpPrimaryRequest.cdf`, `HttpSecondaryRequest.cdf`, `HttpFilesPerDocument.cdf`, `HttpConsecutiveDocs.cdf`,
//! `HttpThinkTime.cdf`) and used that way by later simulators. This module samples those CDFs by inversion:
//! the size and time tables below are the files' quantiles read at every 5 % (plus the points where the
//! CDF jumps and the upper tail to the maximum), interpolated linearly between points as Mah's own CDF
//! class does; the two count tables are the files' step CDFs, rounded to four decimals. No parameter here
//! is ours. What the tables give (medians and means of our samplers, checked by the tests):
//!
//! | quantity | Mah's file | median | mean | range |
//! |---|---|---|---|---|
//! | primary reply (the page's first document), bytes | `HttpPrimaryReply` | 2.1 KB | ≈ 16 KB | 80 B – 8.1 MB |
//! | secondary reply (an embedded object), bytes | `HttpSecondaryReply` | 2.0 KB | ≈ 7.1 KB | 62 B – 246 KB; 15 % below 110 B |
//! | primary request, bytes | `HttpPrimaryRequest` | 238 | ≈ 400 | 100 – 1825; 19 % ≈ 1.1 KB |
//! | secondary request, bytes | `HttpSecondaryRequest` | 227 | ≈ 335 | 106 – 1288; 13 % ≈ 1.1 KB |
//! | files per Web page (primary included) | `HttpFilesPerDocument` | 2 | ≈ 2.9 | 1 – 65; 49 % are 1 |
//! | consecutive pages from one server | `HttpConsecutiveDocs` | 2 | ≈ 4.1 | 1 – 37 |
//! | user think time between pages, s | `HttpThinkTime` | 15.3 | ≈ 1400 | 1 s (Mah's threshold between pages) – 24 h; 10 % above 9 min |
//!
//! The think time's tail is the trace's: some "think times" are the user leaving for hours. In a 1000 s run
//! a think time past the browsing time ends the browsing (no page starts after `end`).
//! Server selection (Mah: Zipf-like popularity) has no effect with one server node and is not sampled.
//!
//! ## Connections and requests
//!
//! The connection and the reply are real TCP through the base station, where Snoop sees the reply (Balakrishnan 1998
//! §5 studies transfers *to* the mobile host); the request is a real frame the other way. The TCP models
//! are one-way (a data sender and a receiver), so the handshake is mirrored: the client's SYN is a modelled
//! one-way latency (transmission and propagation of a 40-byte frame on every hop), after which the server
//! sends the SYN and the client answers with the SYN-ACK, so one handshake frame crosses the lossy hop each
//! way, as in the real exchange, and a lost one costs the initial RTO (5.5–6 s with BSD's constants). Right
//! after it the client sends its request: one UDP frame as long as the TCP segment that would carry it, over
//! every hop, lossy hop included, resent on the client's retransmission timer (the minimum RTO, doubled per
//! copy, on the timer ticks) until the server has it; the server then queues the reply (and, for HTTP/1.0,
//! its FIN). On an open persistent connection the request goes out at once. An HTTP/1.0 object's first
//! byte therefore reaches the client about two round trips after it is asked for.
//!
//! Two switches of the workload change this for Balakrishnan 1998's own simulator (`examples/web-ns.toml`, Balakrishnan 1998
//! §4: "We use ns as our simulator"). `handshake = false`: ns's one-way agents had no SYN (ns-2
//! `Agent/TCP` `syn_` was false until 2001), so the connection exists at once, the request goes out
//! immediately and the reply's first packet is data; the request is still a frame over the lossy hop, resent
//! on the timer of the client's request agent (ns's own Web model, `WebTrafPool::launchReq` in ns-2's
//! webtraf.cc, carries each request on a one-way TCP agent of its own), whose first RTO is the initial one
//! (6 s with ns's defaults) and later the reply connection's estimate. `request_over_air = false`: the
//! request reaches the server after its modelled one-way latency and is never lost, as in a simulation of
//! the replies alone. Balakrishnan 1998 does not say which its runs did; `experiments/web.toml` runs both.
//!
//! Every draw comes from a named [`crate::rng`] stream, one per quantity, so the workload is deterministic
//! and changing one distribution does not shift the others' draws.

mod config;
pub(crate) mod feature;
mod metrics;

pub use config::WebConfig;
pub(crate) use config::FAMILY;
pub use metrics::{WebMetrics, WEB_COLUMNS};

use crate::rng::{self, SimRng};
use lasthop_wire::Time;
use std::collections::VecDeque;
use std::time::Duration;

/// An empirical distribution as (cumulative probability, value) points, sorted in both, first point at
/// probability 0, last at 1. Sampled by inverting the CDF with linear interpolation between points.
pub struct Empirical(pub &'static [(f64, f64)]);

impl Empirical {
    /// The value at cumulative probability `u` in [0, 1].
    pub fn quantile(&self, u: f64) -> f64 {
        let pts = self.0;
        let i = pts.partition_point(|&(p, _)| p < u);
        if i == 0 {
            return pts[0].1;
        }
        if i >= pts.len() {
            return pts[pts.len() - 1].1;
        }
        let ((p0, v0), (p1, v1)) = (pts[i - 1], pts[i]);
        if p1 <= p0 {
            v1
        } else {
            v0 + (v1 - v0) * (u - p0) / (p1 - p0)
        }
    }

    /// One draw (consumes one `u64`).
    pub fn sample(&self, r: &mut SimRng) -> f64 {
        self.quantile(rng::unit_open0(r))
    }

    /// The mean of the interpolated distribution (exact for the piecewise-linear inverse CDF).
    pub fn mean(&self) -> f64 {
        self.0.windows(2).map(|w| (w[1].0 - w[0].0) * (w[0].1 + w[1].1) / 2.0).sum()
    }
}

/// A discrete distribution as a step CDF: (value, P(X ≤ value)), sorted, last probability 1.
pub struct Discrete(pub &'static [(u64, f64)]);

impl Discrete {
    /// The smallest value whose cumulative probability reaches `u`.
    pub fn quantile(&self, u: f64) -> u64 {
        let i = self.0.partition_point(|&(_, p)| p < u).min(self.0.len() - 1);
        self.0[i].0
    }

    pub fn sample(&self, r: &mut SimRng) -> u64 {
        self.quantile(rng::unit_open0(r))
    }

    pub fn mean(&self) -> f64 {
        let mut prev = 0.0;
        let mut m = 0.0;
        for &(v, p) in self.0 {
            m += v as f64 * (p - prev);
            prev = p;
        }
        m
    }
}

/// Mah's `HttpPrimaryReply.cdf`: size of a page's first document, bytes.
pub const PRIMARY_REPLY: Empirical = Empirical(&[
    (0.0, 80.0),
    (0.05, 200.0),
    (0.10, 308.0),
    (0.15, 336.0),
    (0.20, 460.0),
    (0.25, 722.0),
    (0.30, 938.0),
    (0.35, 1165.0),
    (0.40, 1466.0),
    (0.45, 1756.0),
    (0.50, 2099.0),
    (0.55, 2363.0),
    (0.60, 2677.0),
    (0.65, 3211.0),
    (0.70, 3852.0),
    (0.75, 4461.0),
    (0.80, 5496.0),
    (0.85, 6876.0),
    (0.90, 11606.0),
    (0.95, 26241.0),
    (0.97, 54938.0),
    (0.98, 85056.0),
    (0.99, 286568.0),
    (0.9926, 544413.0),
    (0.9959, 649354.0),
    (0.9983, 1047903.0),
    (0.9994, 1636039.0),
    (1.0, 8146976.0),
]);

/// Mah's `HttpSecondaryReply.cdf`: size of an embedded object, bytes (the small mode near 100 bytes is
/// replies without a body, e.g. "not modified").
pub const SECONDARY_REPLY: Empirical = Empirical(&[
    (0.0, 62.0),
    (0.05, 83.0),
    (0.10, 103.0),
    (0.15, 109.0),
    (0.155, 110.0),
    (0.20, 303.0),
    (0.25, 422.0),
    (0.30, 558.0),
    (0.35, 831.0),
    (0.40, 1135.0),
    (0.45, 1496.0),
    (0.50, 1981.0),
    (0.55, 2476.0),
    (0.60, 2905.0),
    (0.65, 3426.0),
    (0.70, 4139.0),
    (0.75, 5640.0),
    (0.80, 7586.0),
    (0.85, 11054.0),
    (0.90, 16918.0),
    (0.95, 29336.0),
    (0.97, 45090.0),
    (0.98, 60356.0),
    (0.99, 73490.0),
    (0.995, 109775.0),
    (0.999, 210795.0),
    (1.0, 246212.0),
]);

/// Mah's `HttpPrimaryRequest.cdf`: bytes of the request for a page's first document.
pub const PRIMARY_REQUEST: Empirical = Empirical(&[
    (0.0, 100.0),
    (0.05, 155.0),
    (0.10, 175.0),
    (0.15, 200.0),
    (0.20, 207.0),
    (0.25, 212.0),
    (0.30, 217.0),
    (0.35, 221.0),
    (0.40, 226.0),
    (0.45, 233.0),
    (0.50, 238.0),
    (0.55, 246.0),
    (0.60, 258.0),
    (0.65, 269.0),
    (0.70, 283.0),
    (0.75, 293.0),
    (0.80, 319.0),
    (0.811, 496.0),
    (0.8135, 1034.0),
    (0.85, 1074.0),
    (0.90, 1114.0),
    (0.95, 1133.0),
    (0.99, 1158.0),
    (1.0, 1825.0),
]);

/// Mah's `HttpSecondaryRequest.cdf`: bytes of the request for an embedded object.
pub const SECONDARY_REQUEST: Empirical = Empirical(&[
    (0.0, 106.0),
    (0.05, 135.0),
    (0.10, 142.0),
    (0.15, 193.0),
    (0.20, 199.0),
    (0.25, 204.0),
    (0.30, 209.0),
    (0.35, 213.0),
    (0.40, 218.0),
    (0.45, 222.0),
    (0.50, 227.0),
    (0.55, 235.0),
    (0.60, 242.0),
    (0.65, 252.0),
    (0.70, 264.0),
    (0.75, 278.0),
    (0.80, 288.0),
    (0.85, 300.0),
    (0.867, 351.0),
    (0.870, 1036.0),
    (0.90, 1057.0),
    (0.95, 1073.0),
    (0.99, 1152.0),
    (1.0, 1288.0),
]);

/// Mah's `HttpThinkTime.cdf`: seconds between the end of a page and the next request (at least Mah's 1 s
/// threshold that separates pages in the traces).
pub const THINK_TIME: Empirical = Empirical(&[
    (0.0, 1.0),
    (0.05, 1.615),
    (0.10, 2.355),
    (0.15, 3.364),
    (0.20, 4.307),
    (0.25, 5.230),
    (0.30, 6.526),
    (0.35, 8.000),
    (0.40, 10.091),
    (0.45, 12.495),
    (0.50, 15.318),
    (0.55, 19.377),
    (0.60, 24.332),
    (0.65, 31.309),
    (0.70, 41.165),
    (0.75, 60.245),
    (0.80, 94.160),
    (0.85, 194.375),
    (0.90, 538.093),
    (0.95, 4038.538),
    (0.96, 6083.311),
    (0.97, 9115.377),
    (0.98, 13889.928),
    (0.985, 21596.407),
    (0.99, 53173.234),
    (1.0, 86394.941),
]);

/// Mah's `HttpFilesPerDocument.cdf`: files per Web page, the primary included.
pub const FILES_PER_PAGE: Discrete = Discrete(&[
    (1, 0.4864),
    (2, 0.6916),
    (3, 0.7814),
    (4, 0.8261),
    (5, 0.8754),
    (6, 0.9043),
    (7, 0.9235),
    (8, 0.9397),
    (9, 0.9507),
    (10, 0.9612),
    (11, 0.9664),
    (12, 0.9722),
    (13, 0.9745),
    (14, 0.9780),
    (15, 0.9803),
    (16, 0.9872),
    (17, 0.9878),
    (18, 0.9896),
    (19, 0.9930),
    (20, 0.9959),
    (21, 0.9965),
    (32, 0.9971),
    (33, 0.9977),
    (35, 0.9983),
    (37, 0.9988),
    (63, 0.9994),
    (65, 1.0),
]);

/// Mah's `HttpConsecutiveDocs.cdf`: pages fetched from one server before the user moves on.
pub const PAGES_PER_VISIT: Discrete = Discrete(&[
    (1, 0.3557),
    (2, 0.5494),
    (3, 0.6640),
    (4, 0.7470),
    (5, 0.7905),
    (6, 0.8142),
    (7, 0.8419),
    (8, 0.8814),
    (9, 0.8933),
    (10, 0.9012),
    (11, 0.9051),
    (12, 0.9091),
    (13, 0.9289),
    (14, 0.9447),
    (15, 0.9565),
    (16, 0.9644),
    (17, 0.9684),
    (18, 0.9763),
    (19, 0.9921),
    (21, 0.9960),
    (37, 1.0),
]);

/// The samplers of one workload, each quantity with its own stream.
pub struct Samplers {
    request: SimRng,
    reply: SimRng,
    page: SimRng,
    visit: SimRng,
    think: SimRng,
}

impl Samplers {
    /// The streams of workload `name` in a run with scenario seed `seed`.
    pub fn new(seed: u64, name: &str) -> Samplers {
        let c = format!("web.{name}");
        Samplers {
            request: rng::stream(seed, &c, "request"),
            reply: rng::stream(seed, &c, "reply"),
            page: rng::stream(seed, &c, "objects_per_page"),
            visit: rng::stream(seed, &c, "pages_per_visit"),
            think: rng::stream(seed, &c, "think"),
        }
    }
    /// Request bytes for a page's primary document (`primary`) or an embedded object.
    pub fn request_bytes(&mut self, primary: bool) -> u64 {
        let d = if primary { &PRIMARY_REQUEST } else { &SECONDARY_REQUEST };
        d.sample(&mut self.request).round() as u64
    }
    /// Reply bytes for a page's primary document (`primary`) or an embedded object; at least 1.
    pub fn reply_bytes(&mut self, primary: bool) -> u64 {
        let d = if primary { &PRIMARY_REPLY } else { &SECONDARY_REPLY };
        (d.sample(&mut self.reply).round() as u64).max(1)
    }
    pub fn objects_per_page(&mut self) -> u64 {
        FILES_PER_PAGE.sample(&mut self.page)
    }
    pub fn pages_per_visit(&mut self) -> u64 {
        PAGES_PER_VISIT.sample(&mut self.visit)
    }
    pub fn think_time(&mut self) -> Duration {
        Duration::from_secs_f64(THINK_TIME.sample(&mut self.think))
    }
}

/// How the client fetches (the knobs of Balakrishnan 1998's figure).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WebParams {
    /// Parallel connections per client, ≥ 1.
    pub connections: usize,
    /// P-HTTP: connections stay open and carry objects one after another.
    pub persistent: bool,
    /// Pause for a think time between pages.
    pub think_time: bool,
}

/// One object to fetch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Object {
    /// Sequence number of the object in the run, from 0.
    pub id: u64,
    /// Sequence number of its page, from 0.
    pub page: u64,
    pub request_bytes: u64,
    pub reply_bytes: u64,
}

/// What the client asks the network to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// Request `object` on connection slot `slot`; `new_connection`: open a fresh connection for it (always
    /// for HTTP/1.0; for P-HTTP when the slot has no open connection).
    Fetch { slot: usize, object: Object, new_connection: bool },
    /// Close the persistent connection of `slot` (the visit to this server is over).
    Close { slot: usize },
    /// Call [`WebClient::wake`] at this time (the end of a think time).
    Wake { at: Time },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// No connection.
    Closed,
    /// A persistent connection with nothing outstanding.
    Idle,
    /// Fetching an object.
    Busy,
}

/// The browsing client as a sans-IO state machine: [`start`](Self::start), then
/// [`object_done`](Self::object_done) when an object's last byte has been read and [`wake`](Self::wake)
/// when asked; each returns the [`Command`]s to carry out. Stops starting pages at `end`.
pub struct WebClient {
    params: WebParams,
    samplers: Samplers,
    end: Time,
    slots: Vec<Slot>,
    /// Embedded objects of the current page not yet requested.
    queue: VecDeque<Object>,
    /// The current page's primary is still being fetched.
    primary_pending: bool,
    in_page: bool,
    thinking_until: Option<Time>,
    pages_left_in_visit: u64,
    next_object: u64,
    next_page: u64,
    pub objects_completed: u64,
    pub pages_completed: u64,
    pub pages_started: u64,
    pub visits: u64,
}

impl WebClient {
    pub fn new(params: WebParams, samplers: Samplers, end: Time) -> WebClient {
        let n = params.connections.max(1);
        WebClient {
            params: WebParams { connections: n, ..params },
            samplers,
            end,
            slots: vec![Slot::Closed; n],
            queue: VecDeque::new(),
            primary_pending: false,
            in_page: false,
            thinking_until: None,
            pages_left_in_visit: 0,
            next_object: 0,
            next_page: 0,
            objects_completed: 0,
            pages_completed: 0,
            pages_started: 0,
            visits: 0,
        }
    }

    pub fn params(&self) -> WebParams {
        self.params
    }

    /// Begins the first page.
    pub fn start(&mut self, now: Time) -> Vec<Command> {
        let mut out = Vec::new();
        self.start_page(now, &mut out);
        out
    }

    /// The think time ended (a [`Command::Wake`] came due).
    pub fn wake(&mut self, now: Time) -> Vec<Command> {
        let mut out = Vec::new();
        if self.thinking_until.is_some_and(|t| t <= now) {
            self.thinking_until = None;
            self.start_page(now, &mut out);
        }
        out
    }

    /// The object on `slot` has been read completely.
    pub fn object_done(&mut self, now: Time, slot: usize) -> Vec<Command> {
        let mut out = Vec::new();
        if self.slots.get(slot) != Some(&Slot::Busy) {
            return out;
        }
        self.objects_completed += 1;
        self.slots[slot] = if self.params.persistent { Slot::Idle } else { Slot::Closed };
        if self.primary_pending {
            // The primary document is in: now the browser knows (and asks for) the embedded objects.
            self.primary_pending = false;
        }
        self.dispatch(&mut out);
        if self.queue.is_empty() && !self.slots.contains(&Slot::Busy) {
            self.page_done(now, &mut out);
        }
        out
    }

    fn new_object(&mut self, primary: bool) -> Object {
        let o = Object {
            id: self.next_object,
            page: self.next_page - 1,
            request_bytes: self.samplers.request_bytes(primary),
            reply_bytes: self.samplers.reply_bytes(primary),
        };
        self.next_object += 1;
        o
    }

    fn start_page(&mut self, now: Time, out: &mut Vec<Command>) {
        if now >= self.end || self.in_page {
            return;
        }
        if self.pages_left_in_visit == 0 {
            self.pages_left_in_visit = self.samplers.pages_per_visit();
            self.visits += 1;
        }
        self.next_page += 1;
        self.pages_started += 1;
        self.in_page = true;
        let n = self.samplers.objects_per_page();
        let primary = self.new_object(true);
        for _ in 1..n {
            let o = self.new_object(false);
            self.queue.push_back(o);
        }
        self.primary_pending = true;
        let slot = self.slots.iter().position(|s| *s == Slot::Idle).unwrap_or(0);
        self.fetch(slot, primary, out);
    }

    fn fetch(&mut self, slot: usize, object: Object, out: &mut Vec<Command>) {
        let new_connection = !(self.params.persistent && self.slots[slot] == Slot::Idle);
        self.slots[slot] = Slot::Busy;
        out.push(Command::Fetch { slot, object, new_connection });
    }

    /// Hands queued embedded objects to free slots, open (idle) persistent connections first.
    fn dispatch(&mut self, out: &mut Vec<Command>) {
        if self.primary_pending {
            return;
        }
        for want in [Slot::Idle, Slot::Closed] {
            for slot in 0..self.slots.len() {
                if self.slots[slot] == want {
                    let Some(o) = self.queue.pop_front() else { return };
                    self.fetch(slot, o, out);
                }
            }
        }
    }

    fn page_done(&mut self, now: Time, out: &mut Vec<Command>) {
        self.in_page = false;
        self.pages_completed += 1;
        self.pages_left_in_visit = self.pages_left_in_visit.saturating_sub(1);
        if self.pages_left_in_visit == 0 {
            // On to another server: persistent connections to this one are of no further use.
            for slot in 0..self.slots.len() {
                if self.slots[slot] == Slot::Idle {
                    self.slots[slot] = Slot::Closed;
                    out.push(Command::Close { slot });
                }
            }
        }
        if self.params.think_time {
            let at = now + self.samplers.think_time();
            if at < self.end {
                self.thinking_until = Some(at);
                out.push(Command::Wake { at });
            }
        } else {
            self.start_page(now, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(mut xs: Vec<f64>) -> (f64, f64) {
        xs.sort_by(f64::total_cmp);
        let median = xs[xs.len() / 2];
        (median, xs.iter().sum::<f64>() / xs.len() as f64)
    }

    #[test]
    fn tables_are_valid_cdfs() {
        for (name, d) in [
            ("primary reply", &PRIMARY_REPLY),
            ("secondary reply", &SECONDARY_REPLY),
            ("primary request", &PRIMARY_REQUEST),
            ("secondary request", &SECONDARY_REQUEST),
            ("think", &THINK_TIME),
        ] {
            let pts = d.0;
            assert_eq!(pts[0].0, 0.0, "{name}");
            assert_eq!(pts[pts.len() - 1].0, 1.0, "{name}");
            assert!(pts.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1), "{name}");
        }
        for (name, d) in [("files", &FILES_PER_PAGE), ("visit", &PAGES_PER_VISIT)] {
            let pts = d.0;
            assert_eq!(pts[pts.len() - 1].1, 1.0, "{name}");
            assert!(pts.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1), "{name}");
        }
    }

    #[test]
    fn quantiles_interpolate_and_clamp() {
        const D: Empirical = Empirical(&[(0.0, 10.0), (0.5, 20.0), (1.0, 60.0)]);
        assert_eq!(D.quantile(0.0), 10.0);
        assert_eq!(D.quantile(0.25), 15.0);
        assert_eq!(D.quantile(0.75), 40.0);
        assert_eq!(D.quantile(1.0), 60.0);
        assert_eq!(D.mean(), 0.5 * 15.0 + 0.5 * 40.0);
        const K: Discrete = Discrete(&[(1, 0.5), (3, 0.75), (9, 1.0)]);
        assert_eq!(K.quantile(0.1), 1);
        assert_eq!(K.quantile(0.5), 1);
        assert_eq!(K.quantile(0.6), 3);
        assert_eq!(K.quantile(0.99), 9);
        assert_eq!(K.mean(), 0.5 + 0.25 * 3.0 + 0.25 * 9.0);
    }

    #[test]
    fn samplers_match_mahs_medians_and_means() {
        let mut s = Samplers::new(7, "t");
        let n = 400_000;
        let close = |x: f64, want: f64, tol: f64| (x - want).abs() <= tol * want;
        for (primary, median, mean) in [(true, 2099.0, PRIMARY_REPLY.mean()), (false, 1981.0, SECONDARY_REPLY.mean())] {
            let (m, avg) = stats((0..n).map(|_| s.reply_bytes(primary) as f64).collect());
            assert!(close(m, median, 0.03), "reply median {m}");
            assert!(close(avg, mean, 0.1), "reply mean {avg} vs {mean}");
        }
        assert!(close(PRIMARY_REPLY.mean(), 16_000.0, 0.05), "{}", PRIMARY_REPLY.mean());
        assert!(close(SECONDARY_REPLY.mean(), 7_100.0, 0.05), "{}", SECONDARY_REPLY.mean());
        let (m, _) = stats((0..n).map(|_| s.request_bytes(true) as f64).collect());
        assert!(close(m, 238.0, 0.02), "primary request {m}");
        let (m, _) = stats((0..n).map(|_| s.request_bytes(false) as f64).collect());
        assert!(close(m, 227.0, 0.02), "secondary request {m}");
        let (m, mean) = stats((0..n).map(|_| s.objects_per_page() as f64).collect());
        assert!(m == 2.0 && close(mean, FILES_PER_PAGE.mean(), 0.02), "files per page {m} {mean}");
        assert!(close(FILES_PER_PAGE.mean(), 2.92, 0.02), "{}", FILES_PER_PAGE.mean());
        let singles = (0..n).filter(|_| s.objects_per_page() == 1).count() as f64 / n as f64;
        assert!(close(singles, 0.4864, 0.02), "{singles}");
        let (m, mean) = stats((0..n).map(|_| s.pages_per_visit() as f64).collect());
        assert!(m == 2.0 && close(mean, PAGES_PER_VISIT.mean(), 0.02), "pages per visit {m} {mean}");
        let (m, _) = stats((0..n).map(|_| s.think_time().as_secs_f64()).collect());
        assert!(close(m, 15.318, 0.03), "think {m}");
        // every draw stays within the measured range
        assert!((0..n).all(|_| (80..=8_146_976).contains(&s.reply_bytes(true))));
        assert!((0..n).all(|_| (62..=246_212).contains(&s.reply_bytes(false))));
        assert!((0..n).all(|_| (1.0..=86_395.0).contains(&s.think_time().as_secs_f64())));
    }

    #[test]
    fn samplers_are_deterministic_and_independent_per_stream() {
        let draw = |seed| {
            let mut s = Samplers::new(seed, "w");
            (0..50).map(|_| (s.reply_bytes(false), s.objects_per_page())).collect::<Vec<_>>()
        };
        assert_eq!(draw(3), draw(3));
        assert_ne!(draw(3), draw(4));
        // drawing think times in between does not shift the reply sizes
        let mut a = Samplers::new(3, "w");
        let mut b = Samplers::new(3, "w");
        let ra: Vec<u64> = (0..20).map(|_| a.reply_bytes(true)).collect();
        let rb: Vec<u64> = (0..20)
            .map(|_| {
                b.think_time();
                b.reply_bytes(true)
            })
            .collect();
        assert_eq!(ra, rb);
    }

    fn fetches(cmds: &[Command]) -> Vec<(usize, u64, bool)> {
        cmds.iter()
            .filter_map(|c| match c {
                Command::Fetch { slot, object, new_connection } => Some((*slot, object.id, *new_connection)),
                _ => None,
            })
            .collect()
    }

    /// Finds a seed whose first page has at least `n` objects.
    fn client(params: WebParams, n: u64) -> (WebClient, u64) {
        for seed in 1.. {
            let mut probe = Samplers::new(seed, "t");
            probe.pages_per_visit();
            let objects = probe.objects_per_page();
            if objects >= n {
                return (WebClient::new(params, Samplers::new(seed, "t"), Time::from_secs(1000)), objects);
            }
        }
        unreachable!()
    }

    #[test]
    fn primary_first_then_embedded_objects_over_parallel_connections() {
        let p = WebParams { connections: 3, persistent: false, think_time: true };
        let (mut c, n) = client(p, 5);
        let t = Time::from_secs(1);
        assert_eq!(fetches(&c.start(t)), vec![(0, 0, true)]); // the primary alone
        let cmds = c.object_done(t, 0);
        assert_eq!(fetches(&cmds), vec![(0, 1, true), (1, 2, true), (2, 3, true)]);
        // a finished slot takes the next object on a new connection (HTTP/1.0)
        assert_eq!(fetches(&c.object_done(t, 1)), vec![(1, 4, true)]);
        // finish everything: the page completes and a think time is scheduled
        let mut wake = None;
        for _ in 0..n {
            for s in 0..3 {
                for cmd in c.object_done(t, s) {
                    if let Command::Wake { at } = cmd {
                        wake = Some(at);
                    }
                }
            }
        }
        assert_eq!(c.objects_completed, n);
        assert_eq!(c.pages_completed, 1);
        let at = wake.expect("think time");
        assert!(at >= t + Duration::from_secs(1));
        assert!(c.wake(Time::from_nanos(at.as_nanos() - 1)).is_empty());
        let next = fetches(&c.wake(at));
        assert_eq!(next, vec![(0, n, true)]);
    }

    #[test]
    fn persistent_connections_are_reused_and_closed_after_a_visit() {
        let p = WebParams { connections: 1, persistent: true, think_time: false };
        let (mut c, n) = client(p, 3);
        let t = Time::from_secs(1);
        assert_eq!(fetches(&c.start(t)), vec![(0, 0, true)]);
        let mut opened = 1;
        let mut closes = 0;
        for _ in 0..200 {
            let cmds = c.object_done(t, 0);
            for cmd in &cmds {
                match cmd {
                    Command::Fetch { slot, new_connection, .. } => {
                        assert_eq!(*slot, 0);
                        opened += u64::from(*new_connection);
                    }
                    Command::Close { .. } => closes += 1,
                    Command::Wake { .. } => panic!("no think time"),
                }
            }
        }
        assert!(c.pages_completed > 10, "{}", c.pages_completed);
        assert_eq!(c.objects_completed, 200);
        // one connection per visit: opened after every close
        assert_eq!(opened, closes + 1);
        assert_eq!(closes, c.visits - 1);
        assert!(n >= 3);
    }

    #[test]
    fn no_page_starts_after_the_end() {
        let p = WebParams { connections: 2, persistent: false, think_time: false };
        let mut c = WebClient::new(p, Samplers::new(1, "t"), Time::from_secs(10));
        assert!(c.start(Time::from_secs(10)).is_empty());
        assert_eq!(c.pages_started, 0);
    }
}
