//! The mobile host's driver: its radio and its handoff controller
//! ([`lasthop_agents::handoff::MobileHost`]), between the mobile's kernel and the cells.
//!
//! Port 0 is the mobile's kernel (a veth pair inside the mobile's namespace); ports 1.. are the cells, one
//! per base station. The radio is tuned to one cell at a time: what the kernel sends goes out on that cell,
//! and data from any other cell is not received (it was sent after the mobile left: the break of a
//! break-before-make handoff). Beacons are heard from every cell. The controller sees every packet
//! received (the IP IDs of the last three, Balakrishnan 1995 §6) and decides by a time schedule, as the
//! experiment of Balakrishnan 1995 Table 1 does ("the mobile host uses the time elapsed since the last
//! handoff to determine if a handoff should occur"): every `handoff_every` it retunes to the next cell and
//! sends the handoff's control messages there.
//!
//! Per handoff it measures, at the mobile: the latency from its request to the first packet through the
//! new base station (data, or the base station's acceptance when no data flows); the segments lost, as
//! the hole between what the mobile had and the first data segment through the new base station (full
//! segments; the hole TCP must then repair end to end); and the segments duplicated, data the mobile
//! already had arriving within [`DUPLICATE_WINDOW`] of the request.
//!
//! Two additions to the schedule. A cell whose beacons stop (its base station died) is left for the cell
//! heard most recently, as Caceres 1995's mobile switches "when it receives the first beacon signal from
//! a new MSS after failing to receive a beacon signal from the old MSS". And with fast retransmit after
//! handoff (Caceres 1995), the controller keeps the last pure ACK the mobile's kernel sent (it sees every
//! frame the kernel sends) and, when the new base station's greeting ACK arrives, sends three copies of it
//! through the new cell: "three ordinary TCP ACKs", the fixed host's unmodified TCP counts them as
//! duplicates and fast-retransmits instead of waiting for its timeout.
//!
//! Instead of the schedule, the mobile can decide by beacon strength ([`BeaconDriven`], Balakrishnan 1995
//! §4, §6): it walks along the line between the cells, samples each beacon it hears from the simulator's
//! radio model at its position (`lasthop_sim::mobility::Radio`: log-distance path loss, seeded shadowing),
//! and the agents' [`BeaconMonitor`] decides with hysteresis when to hand off and which base stations buffer.

use super::node::{ipv4_of, Link, Node, Out};
use bytes::Bytes;
use lasthop_agents::handoff::{BeaconMonitor, Control, Kind, MhEvent, MobileHost, Scheme, PROTO_HANDOFF};
use lasthop_sim::mobility::{Radio, Walk};
use lasthop_sim::rng::SimRng;
use lasthop_wire::ipv4::PROTO_TCP;
use lasthop_wire::{Ipv4Packet, SeqNum, TcpPacket, Time};
use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;
use std::time::Duration;

pub const KERNEL: usize = 0;

/// Data arriving within this time of a handoff request that the mobile already had counts as duplicated
/// by that handoff.
pub const DUPLICATE_WINDOW: Duration = Duration::from_secs(1);

/// What one handoff did, as the mobile saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HandoffRecord {
    /// The mobile's handoff number.
    pub seq: u16,
    pub from: Ipv4Addr,
    pub to: Ipv4Addr,
    /// Seconds since the mobile's driver started.
    pub requested_s: f64,
    /// Request to the first packet through the new base station, ms (`None`: none came).
    pub latency_ms: Option<f64>,
    /// Request to the new base station's acceptance (`Ack` or `GreetingAck`), ms.
    pub accepted_ms: Option<f64>,
    /// Full segments missing between what the mobile had and the first data segment through the new base
    /// station (`None`: no data came through it).
    pub lost: Option<u64>,
    /// Data segments the mobile already had, arriving within [`DUPLICATE_WINDOW`] of the request.
    pub duplicated: u64,
    /// Data frames from the old cell after the mobile left it.
    pub missed_old_cell: u64,
    /// Packets the new base station resent from its buffer (filled in from the base station).
    pub resent_from_buffer: u64,
    /// Copies of the mobile's last ACK sent through the new cell at acceptance (fast retransmit).
    #[serde(default)]
    pub dup_acks_sent: u64,
    /// The mobile left its cell because the base station's beacons stopped (not by schedule).
    #[serde(default)]
    pub cell_lost: bool,
    /// Handing off by beacon strength: the mobile's position on the line, metres.
    #[serde(default)]
    pub position_m: Option<f64>,
}

/// The mobile decides by beacon strength (Balakrishnan 1995 §4, §6) as it walks between the cells.
pub struct BeaconDriven {
    pub walk: Walk,
    /// Each cell's base station on the line, metres (`cells` order).
    pub positions: Vec<f64>,
    pub radio: Radio,
    /// Each cell's shadowing stream (`cells` order), so that runs with one seed draw the same samples.
    pub shadowing: Vec<SimRng>,
    pub monitor: BeaconMonitor,
}

/// Copies of the last ACK the controller sends after a handoff (Caceres 1995: "three ordinary TCP ACK's").
pub const FAST_REXMIT_ACKS: u64 = 3;

/// Beacon periods without a beacon after which the mobile's cell counts as lost.
pub const BEACONS_MISSED: u32 = 3;

pub struct MhNode {
    ctl: MobileHost,
    scheme: Scheme,
    /// The cells' base stations; port `i + 1` is cell `i`.
    cells: Vec<Ipv4Addr>,
    links: Vec<Link>,
    tuned: usize,
    every: Option<Duration>,
    /// Scheduled handoffs stop after this many (`None`: never).
    max_handoffs: Option<u32>,
    /// A tuned cell silent for this long is left (`None`: never).
    lost_after: Option<Duration>,
    /// When each cell's last beacon was heard.
    last_beacon: Vec<Option<Time>>,
    /// Send [`FAST_REXMIT_ACKS`] copies of the kernel's last ACK when a handoff is accepted.
    fast_rexmit: bool,
    /// The last pure ACK the mobile's kernel sent (a whole IPv4 packet).
    last_ack: Option<Bytes>,
    /// Deciding by beacon strength instead of the schedule.
    beacons: Option<BeaconDriven>,
    started: Option<Time>,
    /// The last silence check.
    checked: Time,
    next_handoff: Option<Time>,
    records: Vec<HandoffRecord>,
    /// Pending measurements of the latest handoff: its request time.
    pending: Option<Time>,
    /// The end of the highest data received, and the largest segment seen.
    high: Option<SeqNum>,
    mss: u32,
    pub beacons_heard: Vec<u64>,
    pub uplink: u64,
    pub downlink: u64,
    pub not_ipv4: u64,
}

impl MhNode {
    /// The mobile `home`, tuned to cell 0 (`cells[0]` is its primary; with the multicast scheme the others
    /// buffer), handing off every `every` (`None`: never). `links[0]` is the kernel's, `links[i + 1]` cell i's.
    pub fn new(
        home: Ipv4Addr,
        scheme: Scheme,
        cells: Vec<Ipv4Addr>,
        links: Vec<Link>,
        every: Option<Duration>,
    ) -> MhNode {
        assert_eq!(links.len(), cells.len() + 1, "one link per cell and one to the kernel");
        let buffering: Vec<Ipv4Addr> = if scheme == Scheme::Multicast { cells[1..].to_vec() } else { Vec::new() };
        let n = cells.len();
        MhNode {
            ctl: MobileHost::new(home, scheme, cells[0], &buffering),
            scheme,
            cells,
            links,
            tuned: 0,
            every,
            max_handoffs: None,
            lost_after: None,
            last_beacon: vec![None; n],
            fast_rexmit: false,
            last_ack: None,
            beacons: None,
            started: None,
            checked: Time(0),
            next_handoff: None,
            records: Vec::new(),
            pending: None,
            high: None,
            mss: 0,
            beacons_heard: vec![0; n],
            uplink: 0,
            downlink: 0,
            not_ipv4: 0,
        }
    }

    /// Scheduled handoffs stop after `n` (a mobile that moves on and never comes back).
    pub fn with_max_handoffs(mut self, n: u32) -> MhNode {
        self.max_handoffs = Some(n);
        self
    }

    /// Leave the tuned cell when its beacons have not been heard for [`BEACONS_MISSED`] periods of `beacon`.
    pub fn leaving_silent_cells(mut self, beacon: Duration) -> MhNode {
        self.lost_after = Some(beacon * BEACONS_MISSED);
        self
    }

    /// Fast retransmit after handoff (Caceres 1995): three copies of the kernel's last ACK at acceptance.
    pub fn with_fast_retransmit(mut self) -> MhNode {
        self.fast_rexmit = true;
        self
    }

    /// Decide by beacon strength (the schedule, if any, is not used).
    pub fn deciding_by_beacons(mut self, b: BeaconDriven) -> MhNode {
        self.every = None;
        self.beacons = Some(b);
        self
    }

    pub fn records(&self) -> &[HandoffRecord] {
        &self.records
    }

    pub fn into_records(self) -> Vec<HandoffRecord> {
        self.records
    }

    /// The driver's counters, by name.
    pub fn counters(&self) -> Vec<(String, u64)> {
        let mut v = vec![
            ("uplink".to_string(), self.uplink),
            ("downlink".to_string(), self.downlink),
            ("not_ipv4".to_string(), self.not_ipv4),
            ("handoffs".to_string(), self.records.len() as u64),
            ("dup_acks_sent".to_string(), self.records.iter().map(|r| r.dup_acks_sent).sum()),
            ("cells_lost".to_string(), self.records.iter().filter(|r| r.cell_lost).count() as u64),
        ];
        for (i, n) in self.beacons_heard.iter().enumerate() {
            v.push((format!("beacons_heard_cell{}", i + 1), *n));
        }
        v
    }

    fn since_start(&self, t: Time) -> f64 {
        self.started.map_or(0.0, |s| t.saturating_since(s).as_secs_f64())
    }

    /// Retunes to cell `new` and sends the handoff's control messages there, the old cell's base station
    /// buffering (multicast).
    fn hand_off(&mut self, now: Time, new: usize, out: &mut Out) {
        let old = [self.cells[self.tuned]];
        self.hand_off_to(now, new, &old, out);
    }

    /// Retunes to cell `new` and sends the handoff's control messages there, `buffering` (multicast) the
    /// base stations asked to buffer.
    fn hand_off_to(&mut self, now: Time, new: usize, buffering: &[Ipv4Addr], out: &mut Out) {
        let old = self.tuned;
        let buffering = if self.scheme == Scheme::Multicast { buffering } else { &[] };
        let requests = self.ctl.handoff(self.cells[new], buffering);
        self.tuned = new;
        for p in requests {
            out.push((new + 1, self.links[new + 1].frame(&p, false)));
        }
        self.records.push(HandoffRecord {
            seq: self.ctl.seq(),
            from: self.cells[old],
            to: self.cells[new],
            requested_s: self.since_start(now),
            latency_ms: None,
            accepted_ms: None,
            lost: None,
            duplicated: 0,
            missed_old_cell: 0,
            resent_from_buffer: 0,
            dup_acks_sent: 0,
            cell_lost: false,
            position_m: None,
        });
        self.pending = Some(now);
    }

    fn received_on_cell(&mut self, now: Time, cell: usize, packet: Bytes, out: &mut Out) {
        let ip = Ipv4Packet::new_unchecked(&packet[..]);
        let control = ip.protocol() == PROTO_HANDOFF;
        if control && Control::parse(&packet).is_some_and(|c| c.kind == Kind::Beacon) {
            self.beacons_heard[cell] += 1;
            self.last_beacon[cell] = Some(now);
            self.beacon_decision(now, cell, out);
            return;
        }
        if cell != self.tuned {
            if let Some(r) = self.records.last_mut().filter(|_| !control) {
                r.missed_old_cell += 1;
            }
            return;
        }
        let ms = |t: Time| t.saturating_since(self.pending.unwrap_or(t)).as_secs_f64() * 1e3;
        if let (Some(_), Some(r)) = (self.pending, self.records.last()) {
            if r.latency_ms.is_none() {
                let l = ms(now);
                self.records.last_mut().expect("checked").latency_ms = Some(l);
            }
        }
        if let Some(MhEvent::Accepted { .. }) = self.ctl.handle_received(&packet) {
            let l = ms(now);
            if let Some(r) = self.records.last_mut() {
                r.accepted_ms = Some(l);
            }
            self.send_duplicate_acks(out);
        }
        if control {
            return;
        }
        if ip.protocol() == PROTO_TCP {
            self.track_data(now, &packet);
        }
        self.downlink += 1;
        out.push((KERNEL, self.links[KERNEL].frame(&packet, false)));
    }

    /// Beacon-driven: samples the beacon of `cell` at the mobile's position, and hands off (or changes the
    /// buffering base stations) as the hysteresis rule says.
    fn beacon_decision(&mut self, now: Time, cell: usize, out: &mut Out) {
        let t = self.since_start(now);
        let Some(b) = self.beacons.as_mut() else { return };
        let x = b.walk.position(t);
        let d = x - b.positions[cell];
        if !b.radio.in_range(d) {
            return;
        }
        let dbm = b.radio.sample(d, &mut b.shadowing[cell]);
        b.monitor.handle_beacon(now, self.cells[cell], dbm);
        // Not yet heard is not out of range: the first beacons of the two cells arrive in either order.
        let listening = Duration::from_nanos(b.monitor.config().max_age.0);
        if self.last_beacon[self.tuned].is_none() && now.saturating_since(self.started.unwrap_or(now)) < listening {
            return;
        }
        let decision = b.monitor.decide(now, self.cells[self.tuned]);
        match decision.handoff_to.and_then(|bs| self.cells.iter().position(|c| *c == bs)) {
            Some(new) => {
                self.hand_off_to(now, new, &decision.likely, out);
                if let Some(r) = self.records.last_mut() {
                    r.position_m = Some(x);
                }
            }
            None => {
                let cell = self.tuned + 1;
                for p in self.ctl.set_buffering(&decision.likely) {
                    out.push((cell, self.links[cell].frame(&p, false)));
                }
            }
        }
    }

    /// Fast retransmit after handoff: the kernel's last ACK, [`FAST_REXMIT_ACKS`] times, on the new cell.
    fn send_duplicate_acks(&mut self, out: &mut Out) {
        let (true, Some(ack)) = (self.fast_rexmit, self.last_ack.clone()) else { return };
        let cell = self.tuned + 1;
        for _ in 0..FAST_REXMIT_ACKS {
            out.push((cell, self.links[cell].frame(&ack, false)));
        }
        if let Some(r) = self.records.last_mut() {
            r.dup_acks_sent += FAST_REXMIT_ACKS;
        }
    }

    /// Keeps `packet` if it is a pure ACK of the mobile's kernel (no data, no SYN, FIN or RST).
    fn note_kernel_ack(&mut self, packet: &Bytes) {
        let ip = Ipv4Packet::new_unchecked(&packet[..]);
        if ip.protocol() != PROTO_TCP {
            return;
        }
        let Ok(tcp) = TcpPacket::new_checked(ip.payload()) else { return };
        if tcp.ack() && tcp.payload().is_empty() && !tcp.syn() && !tcp.fin() && !tcp.rst() {
            self.last_ack = Some(packet.clone());
        }
    }

    /// The cell to leave for when the tuned one's beacons stopped: the one heard most recently within
    /// the same time (`None`: the tuned cell is not silent, or no other is heard).
    fn lost_cell_replacement(&self, now: Time) -> Option<usize> {
        let lost_after = self.lost_after?;
        let fresh = |t: Option<Time>| t.is_some_and(|t| now.saturating_since(t) <= lost_after);
        let since = self.last_beacon[self.tuned].or(self.started)?;
        if now.saturating_since(since) <= lost_after {
            return None;
        }
        (0..self.cells.len())
            .filter(|&c| c != self.tuned && fresh(self.last_beacon[c]))
            .max_by_key(|&c| self.last_beacon[c])
    }

    /// The mobile has made its last handoff ([`MhNode::with_max_handoffs`]).
    fn schedule_done(&self) -> bool {
        self.max_handoffs.is_some_and(|m| self.records.len() as u64 >= u64::from(m))
    }

    /// Sequence bookkeeping of the data the mobile receives: the hole at the first segment through the new
    /// base station, and duplicates shortly after a handoff.
    fn track_data(&mut self, now: Time, packet: &[u8]) {
        let ip = Ipv4Packet::new_unchecked(packet);
        let Ok(tcp) = TcpPacket::new_checked(ip.payload()) else { return };
        let len = tcp.payload().len() as u32;
        if len == 0 {
            return;
        }
        self.mss = self.mss.max(len);
        let (seq, end) = (tcp.seq_number(), tcp.seq_number() + len);
        let recent = self.pending.is_some_and(|t| now.saturating_since(t) <= DUPLICATE_WINDOW);
        if let (Some(r), true) = (self.records.last_mut(), recent) {
            if r.lost.is_none() {
                let hole = self.high.map_or(0, |h| seq.diff(h).max(0) as u64);
                r.lost = Some(hole.div_ceil(u64::from(self.mss)));
            }
            if self.high.is_some_and(|h| end.diff(h) <= 0) {
                r.duplicated += 1;
            }
        }
        self.high = Some(self.high.map_or(end, |h| h.max(end)));
    }
}

impl Node for MhNode {
    fn handle_frame(&mut self, now: Time, port: usize, frame: &[u8], out: &mut Out) {
        self.started.get_or_insert(now);
        let Some(packet) = ipv4_of(frame) else {
            self.not_ipv4 += 1;
            return;
        };
        if port == KERNEL {
            self.uplink += 1;
            if self.fast_rexmit {
                self.note_kernel_ack(&packet);
            }
            let cell = self.tuned + 1;
            out.push((cell, self.links[cell].frame(&packet, false)));
        } else {
            self.received_on_cell(now, port - 1, packet, out);
        }
    }

    fn poll_timeout(&self) -> Option<Time> {
        if self.started.is_none() && (self.every.is_some() || self.lost_after.is_some() || self.beacons.is_some()) {
            return Some(Time(0));
        }
        // The silence check runs a few times per beacon period.
        let check = self.lost_after.zip(self.started).map(|(d, s)| s.max(self.checked) + d / 4);
        [self.next_handoff, check].into_iter().flatten().min()
    }

    fn handle_timeout(&mut self, now: Time, out: &mut Out) {
        let start = *self.started.get_or_insert(now);
        self.checked = now;
        if let Some(new) = self.lost_cell_replacement(now) {
            self.hand_off(now, new, out);
            if let Some(r) = self.records.last_mut() {
                r.cell_lost = true;
            }
        }
        let Some(every) = self.every else { return };
        match self.next_handoff {
            None => self.next_handoff = Some(start + every),
            Some(_) if self.schedule_done() => self.next_handoff = None,
            Some(t) if t <= now => {
                self.hand_off(now, (self.tuned + 1) % self.cells.len(), out);
                self.next_handoff = (!self.schedule_done()).then_some(t + every);
            }
            Some(_) => {}
        }
    }
}
