//! The Web workload of seed 002 §5 ("Web Workload"): a client (the mobile host) browsing pages served by a
//! fixed host, following B. A. Mah's empirical model of HTTP traffic ("An Empirical Model of HTTP Network
//! Traffic", INFOCOM '97, ref. [16] of seed 002). Seed 002 does not print Mah's distributions, so this
//! module approximates what Mah published with parametric samplers and says where each number comes from.
//!
//! ## The model
//!
//! A *page* is a primary document followed by its embedded objects (Mah's "files per Web page"). The
//! primary is fetched alone; once it is complete the embedded objects are fetched over up to
//! `connections` parallel TCP connections (1–4, as in seed 002's figure): with HTTP/1.0 each object is its
//! own connection (handshake included), with persistent HTTP (P-HTTP, RFC 2068, ref. [12] of seed 002) each
//! of the `connections` connections stays open and carries object after object. When every object of the
//! page is in, the user thinks (when `think_time` is on) and asks for the next page. After a visit of
//! "consecutive document retrievals" pages the user moves on to another server: persistent connections are
//! closed and the next page opens new ones (the scenario has one server node, so "another server" is the
//! same fixed host reached over fresh connections; Mah's server-selection popularity therefore has no
//! effect here and is not sampled).
//!
//! ## Distributions
//!
//! Mah's paper gives empirical CDFs and summary statistics, not fitted laws; the numbers below are the
//! summary statistics as publicly quoted (medians and means), matched by the simple laws named. Entries
//! marked *approx.* are recalled from Mah 1997 rather than copied from its tables and are the first thing to
//! revise against the paper; *chosen* entries are ours, with the reason.
//!
//! | quantity | law | parameters | median / mean | source |
//! |---|---|---|---|---|
//! | request size (bytes) | lognormal, clamped to [100, 2000] | median 250, σ = 0.5 | 250 / ≈283 | approx., Mah 1997 §4 "request length" (a few hundred bytes, mostly one segment) |
//! | reply size (bytes) | lognormal, clamped to [100, 4 MB] | median 2000, σ = 1.734 | 2000 / ≈9000 | Mah 1997 §4 "reply length": median ≈ 2 KB, mean 8–10 KB, tail to MBs; σ = √(2 ln(9000/2000)) sets the mean to 9 KB |
//! | objects per page | 1 w.p. 0.55, else 1 + geometric (mean 4), at most 60 | | 1 / 2.8 | Mah 1997 "files per Web page": median 1, mean ≈ 2.8; the mixture is chosen to hit both |
//! | pages per visit ("consecutive document retrievals") | geometric on {1, 2, …}, at most 100 | mean 4 | 3 / 4 | approx., Mah 1997 "consecutive document retrievals" (a few pages per server) |
//! | think time (s) | lognormal, clamped to [1, 600] | median 15, σ = 1.177 | 15 / ≈30 | approx., Mah 1997 "user think time" (median ≈ 15 s, heavy tail); Mah's own 1 s threshold between pages is the lower clamp; the 10 min cap is chosen so one long pause cannot eat a 1000 s run |
//! | server | the scenario's `server` node | | | chosen: one fixed host behind the base station, as in seed 002's topology |
//!
//! Requests travel from client to server as a modelled delay: the one-way latency of the request's bytes
//! over the path (transmission plus propagation on every hop, error free). With that, an HTTP/1.0 object's
//! first byte reaches the client two round trips after it is asked for, as with a real client-opened
//! connection, while the reply (and the connection's handshake, opened by the server) is real TCP through
//! the base station, where Snoop sees it (seed 002 §5 studies transfers *to* the mobile host).
//!
//! Every draw comes from a named [`crate::rng`] stream, one per quantity, so the workload is deterministic
//! and changing one distribution does not shift the others' draws. The normal deviates use Acklam's
//! rational inverse CDF and [`exp`] is built from `+ - * /`, like [`crate::rng::ln`], so results are
//! bit-identical on every platform.

use crate::rng::{self, SimRng};
use lasthop_wire::Time;
use std::collections::VecDeque;
use std::time::Duration;

/// Request size: lognormal median (bytes) and σ.
pub const REQUEST_MEDIAN: f64 = 250.0;
pub const REQUEST_SIGMA: f64 = 0.5;
pub const REQUEST_RANGE: (f64, f64) = (100.0, 2000.0);
/// Reply size: lognormal median (bytes) and σ (mean 9000 bytes).
pub const REPLY_MEDIAN: f64 = 2000.0;
pub const REPLY_SIGMA: f64 = 1.734;
pub const REPLY_RANGE: (f64, f64) = (100.0, 4_000_000.0);
/// Objects per page: probability of a single object, mean of the geometric rest, cap.
pub const PAGE_SINGLE: f64 = 0.55;
pub const PAGE_EXTRA_MEAN: f64 = 4.0;
pub const PAGE_MAX: u64 = 60;
/// Pages per visit to one server.
pub const VISIT_MEAN: f64 = 4.0;
pub const VISIT_MAX: u64 = 100;
/// Think time: lognormal median (s) and σ (mean ≈ 30 s).
pub const THINK_MEDIAN_S: f64 = 15.0;
pub const THINK_SIGMA: f64 = 1.177;
pub const THINK_RANGE_S: (f64, f64) = (1.0, 600.0);

/// `e^x` from `+ - * /` only: x = k·ln 2 + r with |r| ≤ ln2/2, a Taylor series for e^r, then 2^k by
/// building the exponent bits. Relative error below 1e-13 over the range the samplers use.
pub fn exp(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    if x > 709.0 {
        return f64::INFINITY;
    }
    if x < -708.0 {
        return 0.0;
    }
    const LN2: f64 = std::f64::consts::LN_2;
    let k = (x / LN2 + if x >= 0.0 { 0.5 } else { -0.5 }) as i64;
    let r = x - k as f64 * LN2;
    let mut term = 1.0;
    let mut sum = 1.0;
    for n in 1..=22 {
        term = term * r / f64::from(n);
        sum += term;
    }
    sum * f64::from_bits(((k + 1023) as u64) << 52)
}

/// The standard normal quantile at `p` in (0, 1) (P. J. Acklam's rational approximation, relative error
/// below 1.2e-9), from `+ - * /`, [`rng::ln`] and `sqrt` (which IEEE 754 rounds exactly).
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] =
        [-3.969683028665376e1, 2.209460984245205e2, -2.759285104469687e2, 1.383_577_518_672_69e2, -3.066479806614716e1, 2.506628277459239];
    const B: [f64; 5] = [-5.447609879822406e1, 1.615858368580409e2, -1.556989798598866e2, 6.680131188771972e1, -1.328068155288572e1];
    const C: [f64; 6] =
        [-7.784894002430293e-3, -3.223964580411365e-1, -2.400758277161838, -2.549732539343734, 4.374664141464968, 2.938163982698783];
    const D: [f64; 4] = [7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416];
    const LOW: f64 = 0.02425;
    let tail = |q: f64| {
        let q = (-2.0 * rng::ln(q)).sqrt();
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5]) / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < LOW {
        tail(p)
    } else if p > 1.0 - LOW {
        -tail(1.0 - p)
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// A lognormal draw with the given median and σ, clamped to `range`. Consumes one `u64`.
pub fn lognormal(r: &mut SimRng, median: f64, sigma: f64, range: (f64, f64)) -> f64 {
    // unit_open0 is in (0, 1]; 1 - u is in [0, 1), so use u itself and keep it off 1.
    let u = rng::unit_open0(r).min(1.0 - f64::EPSILON / 2.0);
    (median * exp(sigma * normal_quantile(u))).clamp(range.0, range.1)
}

/// A geometric draw on {1, 2, …} with the given mean (≥ 1), at most `max`. Consumes one `u64`.
pub fn geometric(r: &mut SimRng, mean: f64, max: u64) -> u64 {
    if mean <= 1.0 {
        return 1;
    }
    let q = 1.0 - 1.0 / mean; // continuation probability
    let n = 1.0 + (rng::ln(rng::unit_open0(r)) / rng::ln(q)).floor();
    if n.is_finite() && n < max as f64 {
        n as u64
    } else {
        max
    }
}

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
    pub fn request_bytes(&mut self) -> u64 {
        lognormal(&mut self.request, REQUEST_MEDIAN, REQUEST_SIGMA, REQUEST_RANGE).round() as u64
    }
    pub fn reply_bytes(&mut self) -> u64 {
        lognormal(&mut self.reply, REPLY_MEDIAN, REPLY_SIGMA, REPLY_RANGE).round() as u64
    }
    pub fn objects_per_page(&mut self) -> u64 {
        if rng::unit_open0(&mut self.page) <= PAGE_SINGLE {
            1
        } else {
            (1 + geometric(&mut self.page, PAGE_EXTRA_MEAN, PAGE_MAX - 1)).min(PAGE_MAX)
        }
    }
    pub fn pages_per_visit(&mut self) -> u64 {
        geometric(&mut self.visit, VISIT_MEAN, VISIT_MAX)
    }
    pub fn think_time(&mut self) -> Duration {
        Duration::from_secs_f64(lognormal(&mut self.think, THINK_MEDIAN_S, THINK_SIGMA, THINK_RANGE_S))
    }
}

/// How the client fetches (the knobs of seed 002's figure).
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

    fn new_object(&mut self) -> Object {
        let o = Object {
            id: self.next_object,
            page: self.next_page - 1,
            request_bytes: self.samplers.request_bytes(),
            reply_bytes: self.samplers.reply_bytes(),
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
        let primary = self.new_object();
        for _ in 1..n {
            let o = self.new_object();
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
    fn exp_and_quantile_are_accurate() {
        for x in [-30.0, -2.5, -0.1, 0.0, 0.3, 1.0, 7.7, 50.0] {
            let (a, b) = (exp(x), f64::exp(x));
            assert!((a - b).abs() <= 1e-13 * b, "exp({x}) = {a}, std {b}");
        }
        for (p, z) in [(0.5, 0.0), (0.975, 1.959963984540054), (0.001, -3.090232306167813), (0.8413447460685429, 1.0)] {
            assert!((normal_quantile(p) - z).abs() < 1e-8, "{p}");
        }
    }

    #[test]
    fn samplers_match_documented_medians_and_means() {
        let mut s = Samplers::new(7, "t");
        let n = 400_000;
        let (m, mean) = stats((0..n).map(|_| s.reply_bytes() as f64).collect());
        assert!((m - 2000.0).abs() < 40.0, "reply median {m}");
        assert!((mean - 9000.0).abs() < 600.0, "reply mean {mean}");
        let (m, mean) = stats((0..n).map(|_| s.request_bytes() as f64).collect());
        assert!((m - 250.0).abs() < 3.0 && (mean - 283.0).abs() < 4.0, "request {m} {mean}");
        let (m, mean) = stats((0..n).map(|_| s.objects_per_page() as f64).collect());
        assert!(m == 1.0 && (mean - 2.8).abs() < 0.03, "objects per page {m} {mean}");
        let (m, mean) = stats((0..n).map(|_| s.pages_per_visit() as f64).collect());
        assert!(m == 3.0 && (mean - 4.0).abs() < 0.05, "pages per visit {m} {mean}");
        let (m, mean) = stats((0..n).map(|_| s.think_time().as_secs_f64()).collect());
        assert!((m - 15.0).abs() < 0.3 && (mean - 29.5).abs() < 1.5, "think {m} {mean}");
        // the tail reaches megabytes, and every draw stays in range
        let max = (0..n).map(|_| s.reply_bytes()).max().unwrap();
        assert!(max > 1_000_000 && max <= 4_000_000, "{max}");
    }

    #[test]
    fn samplers_are_deterministic_and_independent_per_stream() {
        let draw = |seed| {
            let mut s = Samplers::new(seed, "w");
            (0..50).map(|_| (s.reply_bytes(), s.objects_per_page())).collect::<Vec<_>>()
        };
        assert_eq!(draw(3), draw(3));
        assert_ne!(draw(3), draw(4));
        // drawing think times in between does not shift the reply sizes
        let mut a = Samplers::new(3, "w");
        let mut b = Samplers::new(3, "w");
        let ra: Vec<u64> = (0..20).map(|_| a.reply_bytes()).collect();
        let rb: Vec<u64> = (0..20)
            .map(|_| {
                b.think_time();
                b.reply_bytes()
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
