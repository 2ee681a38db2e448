//! The wireless-hop emulator for real packets: a sans-IO scheduler of (time, frame).
//!
//! The kernel on the testbed machines has no netem, and even where it has, netem cannot give Snoop its
//! second, high-priority transmit queue (Balakrishnan 1995 §3.1.2). So the base station emulates the hop between
//! itself and the mobile host in userspace, with the same discipline as the simulator's wireless link
//! (`lasthop-sim::link`): per direction two drop-tail queues (high priority for local retransmissions,
//! then normal), a transmitter that sends one frame at a time at `rate_mbps` plus a per-frame MAC
//! overhead, a propagation delay, and an error model drawn once per frame when it starts on the air.
//! The medium is shared (half duplex, data and ACKs contend, as on WaveLAN) or full duplex by option.
//!
//! Access to the shared medium ([`Access`]): by default the two stations (the base station, sending
//! down; the mobile, sending up) take turns, one frame each while both have frames waiting, as CSMA/CA
//! gives saturated stations equal access; local-retransmission priority orders only the base station's
//! own queues. `access = "fifo"` serves the medium in arrival order across both stations instead, so a
//! mobile's ACK waits behind every frame the base station queued before it. The discipline is the one
//! sans-IO scheduler the simulator's links use too (`lasthop_channel::medium`).
//!
//! Like the agents, the emulator never reads a clock: [`Hop::enqueue`] and [`Hop::poll`] take `now`, and
//! [`Hop::next_event`] says when to call again. Transmissions start at the *virtual* time the transmitter
//! became free, not at the (later) time the I/O loop happened to poll, so a late wake-up delays delivery
//! of a frame but never stretches the emulated link's timing.
//!
//! Transmissions can be reported ([`Hop::report_transmissions`]): every frame of a reporting direction is
//! recorded, at the virtual instant it goes on the air, for [`Hop::take_transmissions`] to hand out (the
//! base station tells the agents with `Agent::handle_transmit`, as the simulator does).
//!
//! Same-time order: transmitter completions are handled before arrivals at the same instant, and frames
//! arriving at the same instant are delivered in the order they were put on the air.

use crate::channel::{stream, ErrorModel, ErrorModelConfig};
use lasthop_channel::medium::Stations;
use lasthop_wire::Time;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Direction over the hop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Dir {
    /// Base station → mobile host (packets travelling `Side::ToMobile`).
    Down = 0,
    /// Mobile host → base station (packets travelling `Side::ToWired`).
    Up = 1,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Duplex {
    /// One shared medium: at most one frame on the air in either direction (WaveLAN).
    #[default]
    Half,
    /// Each direction has its own transmitter.
    Full,
}

/// Who gets the shared (half-duplex) medium next when both stations have frames waiting: the scheduler
/// shared with the simulator (`lasthop_channel::medium`). Default `turns`.
pub use lasthop_channel::medium::Access;

/// The emulated hop. `rate_mbps = 0` means no rate limit (frames take no air time).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HopConfig {
    pub rate_mbps: f64,
    pub delay_ms: f64,
    pub mac_overhead_us: f64,
    /// Capacity of each of the four queues (two per direction), in frames.
    pub queue_packets: usize,
    pub duplex: Duplex,
    /// Half duplex: how the two stations share the medium ([`Access`]). Default `turns`.
    pub access: Access,
    /// Error model toward the mobile host.
    pub down: ErrorModelConfig,
    /// Error model toward the base station.
    pub up: ErrorModelConfig,
    pub seed: u64,
    /// Tell the agents when each of their frames goes on the air (`Agent::handle_transmit`), as the simulator
    /// does. Default on. Measured on the testbed (kernel Reno, SACK off, 64 KB window, 2 Mb/s): Snoop resends
    /// exactly the frames the hop lost (at BER 1.6e-5: 154 lost, 146 resent on DUPACKs and 8 by the
    /// round-trip timer, the sender resending none), where queue-timed Snoop waits longer to resend a lost
    /// retransmission. Without a window limit the kernel's megabyte window fills the 100-frame hop queue
    /// and overflows Snoop's 64 KB cache; see the crate README for what that costs under each `access`.
    pub report_transmissions: bool,
    /// One-way delay added on the base station's *wired* side, ms, each way: frames from the wired
    /// interface reach the agents this much later, and frames to it leave this much later. It emulates a
    /// wide-area path between the fixed host and the base station where the kernel has no netem (Balakrishnan 1995
    /// §1: end-to-end recovery over a long wired path is what local recovery saves). Not part of the
    /// wireless hop's scheduler; [`crate::forward::Forwarder`] applies it. Default 0.
    pub wired_delay_ms: f64,
}

impl Default for HopConfig {
    /// No emulation at all: infinite rate, no delay, no errors. The base station then only forwards.
    fn default() -> Self {
        HopConfig {
            rate_mbps: 0.0,
            delay_ms: 0.0,
            mac_overhead_us: 0.0,
            queue_packets: 100,
            duplex: Duplex::Half,
            access: Access::Turns,
            down: ErrorModelConfig::None,
            up: ErrorModelConfig::None,
            seed: 1,
            report_transmissions: true,
            wired_delay_ms: 0.0,
        }
    }
}

impl HopConfig {
    pub fn validate(&self) -> Result<(), String> {
        if !(self.rate_mbps.is_finite() && self.rate_mbps >= 0.0) {
            return Err(format!("rate_mbps must be ≥ 0 (0 = unlimited), got {}", self.rate_mbps));
        }
        for (name, v) in [
            ("delay_ms", self.delay_ms),
            ("mac_overhead_us", self.mac_overhead_us),
            ("wired_delay_ms", self.wired_delay_ms),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(format!("{name} must be ≥ 0, got {v}"));
            }
        }
        if self.wired_delay_ms > 60_000.0 {
            return Err(format!(
                "wired_delay_ms must be at most 60000 (a minute each way), got {}",
                self.wired_delay_ms
            ));
        }
        if self.queue_packets == 0 {
            return Err("queue_packets must be at least 1".into());
        }
        self.down.validate().map_err(|e| format!("down error model: {e}"))?;
        self.up.validate().map_err(|e| format!("up error model: {e}"))
    }
}

/// Per-direction counters of the emulated hop.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HopCounters {
    pub frames_sent: u64,
    pub bytes_sent: u64,
    /// Frames the error model corrupted (sent, never delivered).
    pub frames_lost: u64,
    /// Frames refused by a full queue (drop-tail).
    pub queue_drops: u64,
    pub delivered: u64,
}

/// One direction's transmitter, frames in flight, error model and counters (its queues are the hop's
/// [`Stations`]).
struct Direction<T> {
    /// Full duplex: when this direction's transmitter is free again (None: idle).
    busy_until: Option<Time>,
    /// Frames on the air or propagating, in arrival order (monotone: one transmitter, one delay).
    flight: VecDeque<(Time, T)>,
    error: Box<dyn ErrorModel>,
    counters: HopCounters,
}

/// The scheduler. `T` is whatever the host moves over the hop (the base station uses Ethernet frames).
pub struct Hop<T> {
    dirs: [Direction<T>; 2],
    /// Both directions' transmit queues (station 0 sends down, 1 up): frame and its length in bytes.
    queues: Stations<(T, usize)>,
    duplex: Duplex,
    access: Access,
    /// Half duplex: when the shared medium is free again.
    medium_busy_until: Option<Time>,
    rate_mbps: f64,
    delay_ns: u64,
    overhead_ns: u64,
    /// Per direction: record the frames that go on the air in `started`?
    report: [bool; 2],
    /// Frames put on the air since the last [`Hop::take_transmissions`], in order: (start, direction, frame).
    started: Vec<(Time, Dir, T)>,
}

impl<T: Clone> Hop<T> {
    pub fn new(cfg: &HopConfig) -> Hop<T> {
        let dir = |e: &ErrorModelConfig, name: &str| Direction {
            busy_until: None,
            flight: VecDeque::new(),
            error: e.build(stream(cfg.seed, "hop", name)),
            counters: HopCounters::default(),
        };
        Hop {
            dirs: [dir(&cfg.down, "down"), dir(&cfg.up, "up")],
            queues: Stations::new(cfg.queue_packets.max(1)),
            duplex: cfg.duplex,
            access: cfg.access,
            medium_busy_until: None,
            rate_mbps: cfg.rate_mbps,
            delay_ns: (cfg.delay_ms * 1e6).round() as u64,
            overhead_ns: (cfg.mac_overhead_us * 1e3).round() as u64,
            report: [false; 2],
            started: Vec::new(),
        }
    }

    /// Whether frames take air time at a finite rate (`rate_mbps > 0`). If not, the hop is not emulated,
    /// and a frame "goes on the air" only when the host writes it out.
    pub fn is_rate_limited(&self) -> bool {
        self.rate_mbps > 0.0
    }

    /// Start (or stop) recording the frames of `dir` as they go on the air (off by default: a clone of
    /// each frame is kept until [`Hop::take_transmissions`]).
    pub fn report_transmissions(&mut self, dir: Dir, on: bool) {
        self.report[dir as usize] = on;
    }

    /// Moves the recorded transmissions, oldest first, to the end of `out`: (the virtual instant the
    /// frame went on the air, its direction, the frame). Transmissions start only inside
    /// [`Hop::enqueue`] and [`Hop::poll`], so a host that calls this after each of them sees them all,
    /// in order, with starts never later than the `now` it passed.
    pub fn take_transmissions(&mut self, out: &mut Vec<(Time, Dir, T)>) {
        out.append(&mut self.started);
    }

    /// Air time of a frame of `len` bytes (the IP packet, as in the simulator), MAC overhead included.
    pub fn airtime_ns(&self, len: usize) -> u64 {
        if self.rate_mbps <= 0.0 {
            return self.overhead_ns;
        }
        // bits / (Mb/s) = µs; integer ns with one rounding, as the simulator does.
        (len as f64 * 8.0 * 1e3 / self.rate_mbps).round() as u64 + self.overhead_ns
    }

    /// Queues a frame of `len` bytes; false when its queue is full and the frame was dropped.
    pub fn enqueue(&mut self, now: Time, dir: Dir, item: T, len: usize, priority: bool) -> bool {
        // Bring the transmitters up to `now` first, so a frame that became free earlier is not
        // handed a transmitter in the past ahead of frames it should follow.
        self.advance_transmitters(now);
        if self.queues.enqueue(dir as usize, (item, len), priority).is_err() {
            self.dirs[dir as usize].counters.queue_drops += 1;
            return false;
        }
        self.start_transmissions(now);
        true
    }

    /// Delivers every frame that has reached the far end by `now`, in arrival order.
    pub fn poll(&mut self, now: Time, out: &mut Vec<(Dir, T)>) {
        while let Some(x) = self.poll_one(now) {
            out.push(x);
        }
        self.advance_transmitters(now);
    }

    /// The next frame to reach its far end by `now`, if any, after starting exactly the transmissions that
    /// begin before its arrival (completions first at the same instant): a host that handles each frame
    /// before polling again, and takes the reported transmissions before each frame, sees the two in
    /// virtual-time order (an ACK that arrived before a retransmission left is seen before it).
    pub fn poll_one(&mut self, now: Time) -> Option<(Dir, T)> {
        loop {
            let arrival = (0..2).filter_map(|d| self.dirs[d].flight.front().map(|(t, _)| (*t, d))).min();
            // The earliest transmitter to free up while a frame waits for it (None: the medium).
            let free = match self.duplex {
                Duplex::Half => self.medium_busy_until.filter(|_| self.has_any_frame()).map(|t| (t, None)),
                Duplex::Full => (0..2)
                    .filter(|&d| self.queues.has_frame(d))
                    .filter_map(|d| self.dirs[d].busy_until.map(|t| (t, Some(d))))
                    .min(),
            };
            match (free, arrival) {
                (Some((t, which)), a) if t <= now && a.is_none_or(|(ta, _)| t <= ta) => match which {
                    None => {
                        self.medium_busy_until = None;
                        self.start_half(t);
                    }
                    Some(d) => {
                        self.dirs[d].busy_until = None;
                        self.start_on(d, t);
                    }
                },
                (_, Some((t, d))) if t <= now => {
                    let (_, item) = self.dirs[d].flight.pop_front().expect("front checked");
                    self.dirs[d].counters.delivered += 1;
                    return Some((if d == 0 { Dir::Down } else { Dir::Up }, item));
                }
                _ => return None,
            }
        }
    }

    /// The previous, batch form of [`Hop::poll`] (kept for the comparison test).
    #[cfg(test)]
    fn poll_batch(&mut self, now: Time, out: &mut Vec<(Dir, T)>) {
        loop {
            self.advance_transmitters(now);
            // The earliest arrival across both directions.
            let next = (0..2).filter_map(|d| self.dirs[d].flight.front().map(|(t, _)| (*t, d))).min();
            match next {
                Some((t, d)) if t <= now => {
                    let (_, item) = self.dirs[d].flight.pop_front().expect("front checked");
                    self.dirs[d].counters.delivered += 1;
                    out.push((if d == 0 { Dir::Down } else { Dir::Up }, item));
                }
                _ => break,
            }
        }
    }

    /// The next instant at which something happens (a transmitter frees up or a frame arrives).
    pub fn next_event(&self) -> Option<Time> {
        let mut t: Option<Time> = None;
        let mut consider = |x: Option<Time>| {
            if let Some(x) = x {
                t = Some(t.map_or(x, |t| t.min(x)));
            }
        };
        for (i, d) in self.dirs.iter().enumerate() {
            consider(d.flight.front().map(|(t, _)| *t));
            // A busy transmitter matters only when a frame waits for it.
            if self.queues.has_frame(i) {
                consider(d.busy_until);
            }
        }
        if self.has_any_frame() {
            consider(self.medium_busy_until);
        }
        t
    }

    pub fn counters(&self, dir: Dir) -> HopCounters {
        self.dirs[dir as usize].counters
    }

    /// Frames waiting in `dir`'s two queues.
    pub fn queued(&self, dir: Dir) -> usize {
        let (high, normal) = self.queues.waiting(dir as usize);
        high + normal
    }

    fn has_any_frame(&self) -> bool {
        self.queues.has_frame(0) || self.queues.has_frame(1)
    }

    /// Frees transmitters whose frame ended by `now` and starts the next frames at the instant each
    /// became free, repeating until nothing more can start before `now`.
    fn advance_transmitters(&mut self, now: Time) {
        loop {
            let mut progressed = false;
            match self.duplex {
                Duplex::Half => {
                    if let Some(t) = self.medium_busy_until {
                        if t <= now {
                            self.medium_busy_until = None;
                            progressed |= self.start_half(t);
                        }
                    }
                }
                Duplex::Full => {
                    for d in 0..2 {
                        if let Some(t) = self.dirs[d].busy_until {
                            if t <= now {
                                self.dirs[d].busy_until = None;
                                progressed |= self.start_on(d, t);
                            }
                        }
                    }
                }
            }
            if !progressed {
                return;
            }
        }
    }

    fn start_transmissions(&mut self, now: Time) {
        match self.duplex {
            Duplex::Half => {
                if self.medium_busy_until.is_none() {
                    self.start_half(now);
                }
            }
            Duplex::Full => {
                for d in 0..2 {
                    if self.dirs[d].busy_until.is_none() {
                        self.start_on(d, now);
                    }
                }
            }
        }
    }

    /// Shared medium: the station the shared scheduler picks ([`Stations::next`] under the hop's [`Access`])
    /// sends its next frame at `at`.
    fn start_half(&mut self, at: Time) -> bool {
        let Some((d, _)) = self.queues.next(self.access) else {
            return false;
        };
        let done = self.transmit(d, at);
        self.medium_busy_until = Some(done);
        true
    }

    fn start_on(&mut self, d: usize, at: Time) -> bool {
        if !self.queues.has_frame(d) {
            return false;
        }
        let done = self.transmit(d, at);
        self.dirs[d].busy_until = Some(done);
        true
    }

    /// Puts the head frame of direction `d` on the air at `at`; returns when the transmitter is free.
    fn transmit(&mut self, d: usize, at: Time) -> Time {
        let delay = self.delay_ns;
        let (item, len) = self.queues.take(d).expect("caller checked a frame waits");
        let air = self.airtime_ns(len);
        let done = Time(at.0.saturating_add(air));
        if self.report[d] {
            self.started.push((at, if d == 0 { Dir::Down } else { Dir::Up }, item.clone()));
        }
        let dir = &mut self.dirs[d];
        let corrupted = dir.error.corrupts(at, done, len as u64 * 8);
        dir.counters.frames_sent += 1;
        dir.counters.bytes_sent += len as u64;
        if corrupted {
            dir.counters.frames_lost += 1;
        } else {
            dir.flight.push_back((Time(done.0.saturating_add(delay)), item));
        }
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hop(duplex: Duplex, rate: f64, delay_ms: f64, queue: usize) -> Hop<u32> {
        hop_with(duplex, Access::default(), rate, delay_ms, queue)
    }

    fn hop_with(duplex: Duplex, access: Access, rate: f64, delay_ms: f64, queue: usize) -> Hop<u32> {
        Hop::new(&HopConfig {
            rate_mbps: rate,
            delay_ms,
            mac_overhead_us: 0.0,
            queue_packets: queue,
            duplex,
            access,
            ..HopConfig::default()
        })
    }

    fn drain(h: &mut Hop<u32>, now: Time) -> Vec<(Dir, u32)> {
        let mut v = Vec::new();
        h.poll(now, &mut v);
        v
    }

    #[test]
    fn timing_is_airtime_plus_delay_back_to_back() {
        // 1000 bytes at 2 Mb/s = 4 ms on the air, 1 ms propagation.
        let mut h = hop(Duplex::Half, 2.0, 1.0, 10);
        assert!(h.enqueue(Time::ZERO, Dir::Down, 1, 1000, false));
        assert!(h.enqueue(Time::ZERO, Dir::Down, 2, 1000, false));
        assert_eq!(h.next_event(), Some(Time::from_millis(4)));
        assert!(drain(&mut h, Time::from_micros(4_999)).is_empty());
        assert_eq!(drain(&mut h, Time::from_millis(5)), vec![(Dir::Down, 1)]);
        // The second frame started at 4 ms (when the medium freed), not at the 5 ms poll.
        assert_eq!(h.next_event(), Some(Time::from_millis(9)));
        assert_eq!(drain(&mut h, Time::from_millis(9)), vec![(Dir::Down, 2)]);
        assert_eq!(h.next_event(), None);
    }

    #[test]
    fn late_poll_does_not_stretch_the_link() {
        let mut h = hop(Duplex::Half, 2.0, 0.0, 10);
        for i in 0..3 {
            h.enqueue(Time::ZERO, Dir::Down, i, 1000, false);
        }
        // One poll long after: all three delivered, in order.
        assert_eq!(drain(&mut h, Time::from_millis(100)).len(), 3);
        assert_eq!(h.counters(Dir::Down).delivered, 3);
    }

    #[test]
    fn priority_queue_goes_first_and_queues_are_drop_tail() {
        let mut h = hop(Duplex::Half, 1.0, 0.0, 2);
        // Frame 0 goes on the air at once; 1 and 2 fill the normal queue; 3 is dropped.
        for i in 0..4 {
            h.enqueue(Time::ZERO, Dir::Down, i, 125, false);
        }
        assert_eq!(h.counters(Dir::Down).queue_drops, 1);
        assert!(h.enqueue(Time::ZERO, Dir::Down, 9, 125, true), "the high queue has its own room");
        // 125 bytes at 1 Mb/s = 1 ms each.
        let got: Vec<u32> = drain(&mut h, Time::from_millis(10)).into_iter().map(|(_, x)| x).collect();
        assert_eq!(got, vec![0, 9, 1, 2]);
    }

    #[test]
    fn half_duplex_fifo_shares_the_medium_first_come_first_served() {
        let mut h = hop_with(Duplex::Half, Access::Fifo, 1.0, 0.0, 10);
        h.enqueue(Time::ZERO, Dir::Up, 100, 125, false); // on the air 0..1 ms
        h.enqueue(Time::ZERO, Dir::Down, 1, 125, false); // waits: 1..2 ms
        h.enqueue(Time::ZERO, Dir::Up, 101, 125, false); // 2..3 ms
        assert_eq!(drain(&mut h, Time::from_millis(1)), vec![(Dir::Up, 100)]);
        assert_eq!(drain(&mut h, Time::from_millis(2)), vec![(Dir::Down, 1)]);
        assert_eq!(drain(&mut h, Time::from_millis(3)), vec![(Dir::Up, 101)]);
        // A deep downlink queue: an ACK queued after it waits for all of it.
        let mut h = hop_with(Duplex::Half, Access::Fifo, 1.0, 0.0, 10);
        for i in 0..5 {
            h.enqueue(Time::ZERO, Dir::Down, i, 125, false);
        }
        h.enqueue(Time::from_micros(100), Dir::Up, 100, 125, false);
        let got = drain(&mut h, Time::from_millis(6));
        assert_eq!(got.last(), Some(&(Dir::Up, 100)), "{got:?}");
        assert!(drain(&mut h, Time::from_millis(5)).is_empty());
    }

    /// Delivery instants of everything, polling every 10 µs (delay 0: arrival = end of air time).
    fn timeline(h: &mut Hop<u32>, until_us: u64) -> Vec<(u64, Dir, u32)> {
        let mut v = Vec::new();
        for t in 0..=until_us / 10 {
            let mut out = Vec::new();
            h.poll(Time::from_micros(t * 10), &mut out);
            v.extend(out.into_iter().map(|(d, x)| (t * 10, d, x)));
        }
        v
    }

    #[test]
    fn half_duplex_turns_lets_the_mobile_in_after_one_data_frame() {
        // 125 bytes at 1 Mb/s = 1 ms. Five data frames queued at the base station at 0; the mobile's ACK
        // (125 bytes too) at 0.1 ms goes right after the frame on the air, not after the whole queue.
        let mut h = hop_with(Duplex::Half, Access::Turns, 1.0, 0.0, 10);
        for i in 0..5 {
            h.enqueue(Time::ZERO, Dir::Down, i, 125, false);
        }
        h.enqueue(Time::from_micros(100), Dir::Up, 100, 125, false);
        let got = timeline(&mut h, 10_000);
        assert_eq!(
            got,
            vec![
                (1_000, Dir::Down, 0),
                (2_000, Dir::Up, 100),
                (3_000, Dir::Down, 1),
                (4_000, Dir::Down, 2),
                (5_000, Dir::Down, 3),
                (6_000, Dir::Down, 4),
            ]
        );
        // The same load under fifo: the ACK last, at 6 ms.
        let mut f = hop_with(Duplex::Half, Access::Fifo, 1.0, 0.0, 10);
        for i in 0..5 {
            f.enqueue(Time::ZERO, Dir::Down, i, 125, false);
        }
        f.enqueue(Time::from_micros(100), Dir::Up, 100, 125, false);
        assert_eq!(timeline(&mut f, 10_000).last(), Some(&(6_000, Dir::Up, 100)));
    }

    #[test]
    fn half_duplex_turns_alternates_while_both_stations_wait() {
        // Both stations saturated: strictly one frame each, whichever queued first; the first frame ever
        // goes first come first served (here the mobile's, queued first).
        let mut h = hop_with(Duplex::Half, Access::Turns, 1.0, 0.0, 10);
        for i in 0..3 {
            h.enqueue(Time::ZERO, Dir::Up, 100 + i, 125, false);
        }
        for i in 0..4 {
            h.enqueue(Time::ZERO, Dir::Down, i, 125, false);
        }
        let order: Vec<(Dir, u32)> = timeline(&mut h, 10_000).into_iter().map(|(_, d, x)| (d, x)).collect();
        assert_eq!(
            order,
            vec![
                (Dir::Up, 100),
                (Dir::Down, 0),
                (Dir::Up, 101),
                (Dir::Down, 1),
                (Dir::Up, 102),
                (Dir::Down, 2),
                (Dir::Down, 3),
            ]
        );
        assert_eq!(h.counters(Dir::Down).delivered, 4);
        assert_eq!(h.counters(Dir::Up).delivered, 3);
    }

    #[test]
    fn half_duplex_turns_keeps_priority_within_the_base_station() {
        // Down: 0 on the air at 0, 1 and 2 queued, then a local retransmission 9 at 0.5 ms; the mobile's
        // ACK 100 at 0.6 ms. At 1 ms it is the mobile's turn (the base station just sent); then the base
        // station sends its priority frame before its normal ones.
        let mut h = hop_with(Duplex::Half, Access::Turns, 1.0, 0.0, 10);
        h.report_transmissions(Dir::Down, true);
        for i in 0..3 {
            h.enqueue(Time::ZERO, Dir::Down, i, 125, false);
        }
        h.enqueue(Time::from_micros(500), Dir::Down, 9, 125, true);
        h.enqueue(Time::from_micros(600), Dir::Up, 100, 125, false);
        let got = timeline(&mut h, 10_000);
        assert_eq!(
            got,
            vec![
                (1_000, Dir::Down, 0),
                (2_000, Dir::Up, 100),
                (3_000, Dir::Down, 9),
                (4_000, Dir::Down, 1),
                (5_000, Dir::Down, 2),
            ]
        );
        let starts: Vec<(Time, u32)> = taken(&mut h).into_iter().map(|(t, _, x)| (t, x)).collect();
        assert_eq!(
            starts,
            vec![(Time::ZERO, 0), (Time::from_millis(2), 9), (Time::from_millis(3), 1), (Time::from_millis(4), 2)],
            "transmissions start at the virtual instant the medium freed"
        );
    }

    #[test]
    fn half_duplex_turns_station_alone_sends_back_to_back() {
        // No waiting for a turn that nobody takes: an idle mobile costs the base station nothing.
        let mut h = hop_with(Duplex::Half, Access::Turns, 1.0, 0.5, 10);
        for i in 0..3 {
            h.enqueue(Time::ZERO, Dir::Down, i, 125, false);
        }
        let got = timeline(&mut h, 5_000);
        assert_eq!(got, vec![(1_500, Dir::Down, 0), (2_500, Dir::Down, 1), (3_500, Dir::Down, 2)]);
        // An ACK arriving while the medium is idle goes at once, whoever sent last.
        h.enqueue(Time::from_millis(6), Dir::Up, 100, 125, false);
        assert_eq!(h.next_event(), Some(Time::from_micros(7_500)));
        assert_eq!(drain(&mut h, Time::from_micros(7_500)), vec![(Dir::Up, 100)]);
    }

    #[test]
    fn access_is_configured_and_defaults_to_turns() {
        assert_eq!(HopConfig::default().access, Access::Turns);
        let cfg: HopConfig = serde_json::from_str(r#"{"rate_mbps": 2, "access": "fifo"}"#).unwrap();
        assert_eq!(cfg.access, Access::Fifo);
        assert!(serde_json::from_str::<HopConfig>(r#"{"access": "round-robin"}"#).is_err());
    }

    #[test]
    fn full_duplex_sends_both_ways_at_once() {
        let mut h = hop(Duplex::Full, 1.0, 0.0, 10);
        h.enqueue(Time::ZERO, Dir::Up, 100, 125, false);
        h.enqueue(Time::ZERO, Dir::Down, 1, 125, false);
        assert_eq!(drain(&mut h, Time::from_millis(1)).len(), 2);
    }

    #[test]
    fn unlimited_rate_and_no_delay_passes_through_immediately() {
        let mut h = hop(Duplex::Half, 0.0, 0.0, 10);
        h.enqueue(Time::from_millis(3), Dir::Down, 7, 1500, false);
        assert_eq!(drain(&mut h, Time::from_millis(3)), vec![(Dir::Down, 7)]);
    }

    fn taken(h: &mut Hop<u32>) -> Vec<(Time, Dir, u32)> {
        let mut v = Vec::new();
        h.take_transmissions(&mut v);
        v
    }

    #[test]
    fn transmissions_are_reported_in_order_at_their_virtual_start() {
        let mut h = hop_with(Duplex::Half, Access::Fifo, 1.0, 2.0, 10);
        h.report_transmissions(Dir::Down, true);
        // 125 bytes at 1 Mb/s = 1 ms on the air. Frame 0 starts at once; 1 and 2 wait.
        for i in 0..3 {
            h.enqueue(Time::ZERO, Dir::Down, i, 125, false);
        }
        assert_eq!(taken(&mut h), vec![(Time::ZERO, Dir::Down, 0)]);
        // A local retransmission overtakes the queued frames; an uplink frame holds the medium, unreported.
        h.enqueue(Time::from_micros(500), Dir::Down, 9, 125, true);
        h.enqueue(Time::from_micros(600), Dir::Up, 100, 125, false);
        assert!(taken(&mut h).is_empty(), "nothing new went on the air");
        // One late poll: every start is at the instant the medium freed, not at the poll.
        let _ = drain(&mut h, Time::from_micros(4_500));
        assert_eq!(
            taken(&mut h),
            vec![
                (Time::from_millis(1), Dir::Down, 9),
                (Time::from_millis(2), Dir::Down, 1),
                (Time::from_millis(3), Dir::Down, 2),
            ],
            "the uplink frame (4–5 ms, first come first served) is not reported"
        );
        assert!(taken(&mut h).is_empty(), "each transmission is reported once");
        // A frame lost on the air was still transmitted: reported as well.
        let mut lossy: Hop<u32> = Hop::new(&HopConfig {
            rate_mbps: 1.0,
            down: ErrorModelConfig::Packet { loss: 1.0 },
            ..HopConfig::default()
        });
        lossy.report_transmissions(Dir::Down, true);
        lossy.enqueue(Time::from_millis(7), Dir::Down, 5, 125, false);
        assert_eq!(taken(&mut lossy), vec![(Time::from_millis(7), Dir::Down, 5)]);
        // Not asked for: nothing recorded.
        let mut quiet = hop(Duplex::Half, 1.0, 0.0, 10);
        quiet.enqueue(Time::ZERO, Dir::Down, 1, 125, false);
        assert!(taken(&mut quiet).is_empty());
    }

    #[test]
    fn transmissions_and_arrivals_come_in_virtual_time_order() {
        // An ACK arriving at 1.5 ms, then a retransmission leaving at 2 ms (the medium frees), polled late.
        let mut h = hop(Duplex::Full, 1.0, 0.5, 10);
        h.report_transmissions(Dir::Down, true);
        h.enqueue(Time::ZERO, Dir::Down, 1, 250, false); // 0–2 ms
        h.enqueue(Time::ZERO, Dir::Down, 2, 250, true); // 2–4 ms
        h.enqueue(Time::ZERO, Dir::Up, 100, 125, false); // 0–1 ms, arrives 1.5 ms
        let _ = taken(&mut h);
        assert_eq!(h.poll_one(Time::from_millis(10)), Some((Dir::Up, 100)));
        assert!(taken(&mut h).is_empty(), "frame 2 leaves after the ACK has arrived");
        assert_eq!(h.poll_one(Time::from_millis(10)), Some((Dir::Down, 1)));
        assert_eq!(taken(&mut h), vec![(Time::from_millis(2), Dir::Down, 2)]);
        assert_eq!(h.poll_one(Time::from_millis(10)), Some((Dir::Down, 2)));
        assert_eq!(h.poll_one(Time::from_millis(10)), None);
        // Polling one by one delivers what the batch poll did, in the same order.
        let load = |h: &mut Hop<u32>| {
            for i in 0..20u32 {
                let dir = if i % 3 == 0 { Dir::Up } else { Dir::Down };
                h.enqueue(Time::from_micros(i as u64 * 300), dir, i, 100 + 10 * i as usize, i % 5 == 0);
            }
        };
        for (duplex, access) in
            [(Duplex::Half, Access::Turns), (Duplex::Half, Access::Fifo), (Duplex::Full, Access::Turns)]
        {
            let (mut a, mut b) = (hop_with(duplex, access, 1.0, 0.7, 10), hop_with(duplex, access, 1.0, 0.7, 10));
            load(&mut a);
            load(&mut b);
            let (mut va, mut vb) = (Vec::new(), Vec::new());
            for t in [3u64, 9, 50] {
                a.poll(Time::from_millis(t), &mut va);
                b.poll_batch(Time::from_millis(t), &mut vb);
                assert_eq!(va, vb, "{duplex:?} {access:?} at {t} ms");
            }
            assert_eq!(va.len(), 20);
        }
    }

    #[test]
    fn error_models_are_configured_as_in_the_simulator() {
        // The shapes users write; the models are lasthop-channel's.
        let cfg: HopConfig = serde_json::from_str(
            r#"{"rate_mbps": 2, "down": {"model": "ber", "ber": 3.9e-6}, "up": {"model": "packet", "loss": 0.1}}"#,
        )
        .unwrap();
        assert_eq!(cfg.down, ErrorModelConfig::Ber { ber: 3.9e-6 });
        assert_eq!(cfg.up, ErrorModelConfig::Packet { loss: 0.1 });
        cfg.validate().unwrap();
        let bad = HopConfig { down: ErrorModelConfig::Ber { ber: -1.0 }, ..HopConfig::default() };
        assert!(bad.validate().unwrap_err().starts_with("down error model: ber"), "{:?}", bad.validate());
        // The hop draws from the shared model: a frame's loss rate matches its closed form.
        let mut h: Hop<u32> = Hop::new(&HopConfig { rate_mbps: 100.0, down: cfg.down.clone(), ..HopConfig::default() });
        let n = 100_000u64;
        for i in 0..n {
            h.enqueue(Time::from_millis(i), Dir::Down, 0, 1500, false);
        }
        let p = cfg.down.frame_loss_probability(1500 * 8).unwrap();
        let got = h.counters(Dir::Down).frames_lost as f64 / n as f64;
        assert!((got - p).abs() < 0.1 * p, "measured {got}, expected {p}");
    }

    #[test]
    fn corrupted_frames_use_air_time_but_are_not_delivered() {
        let mut h: Hop<u32> = Hop::new(&HopConfig {
            rate_mbps: 1.0,
            down: ErrorModelConfig::Packet { loss: 1.0 },
            ..HopConfig::default()
        });
        h.enqueue(Time::ZERO, Dir::Down, 1, 125, false);
        h.enqueue(Time::ZERO, Dir::Up, 2, 125, false);
        assert!(drain(&mut h, Time::from_micros(1_500)).is_empty(), "the lost frame still held the medium");
        assert_eq!(drain(&mut h, Time::from_millis(2)), vec![(Dir::Up, 2)]);
        assert_eq!(h.counters(Dir::Down).frames_lost, 1);
    }
}
