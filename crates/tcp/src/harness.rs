//! A test harness in the manner of quinn-proto's `Pair`: one sender and one receiver joined by a path
//! with a one-way delay, an optional bottleneck rate (a FIFO per direction, so ACKs clock the sender
//! as on a real path) and a drop filter; it owns simulated time and steps to the earliest
//! wake-up of either endpoint or the path, so whole transfers run deterministically and instantly.

use crate::{payload, Receiver, Sender, TcpConfig};
use bytes::Bytes;
use lasthop_wire::{SeqNum, Time};
use std::collections::VecDeque;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::Duration;

pub(crate) const SENDER_ADDR: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), 40000);
pub(crate) const RECEIVER_ADDR: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::new(10, 0, 1, 2), 5001);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dir {
    ToReceiver,
    ToSender,
}

type DropFilter = Box<dyn FnMut(Dir, u64, &Bytes) -> bool>;

pub(crate) struct Pair {
    pub now: Time,
    pub delay: Duration,
    /// Bottleneck rate in bytes per second, the same both ways; `None` for an infinitely fast path.
    pub rate: Option<u64>,
    /// When each direction's bottleneck is next free.
    busy_until: [Time; 2],
    pub sender: Sender,
    pub receiver: Receiver,
    /// Packets on the path: (arrival, direction, packet), in arrival order; equal arrivals keep send order.
    in_flight: VecDeque<(Time, Dir, Bytes)>,
    /// Called with the direction and per-direction index of every packet sent; true drops it.
    pub drop: DropFilter,
    sent: [u64; 2],
    /// Bytes read from the receiver so far, all checked against [`payload`].
    pub read: u64,
    /// Called with the time every packet toward the sender is sent; `Some(w)` rewrites its advertised
    /// window to `w` (and fixes the checksum): a box on the path closing or opening the window.
    pub ack_window: Box<dyn FnMut(Time) -> Option<u16>>,
}

impl Pair {
    pub fn new(sender_cfg: TcpConfig, receiver_cfg: TcpConfig, total: u64) -> Pair {
        // ISNs near the wrap so every run crosses 2^32 in sequence space.
        let sender = Sender::new(sender_cfg, SENDER_ADDR, RECEIVER_ADDR, SeqNum(u32::MAX - 20_000), total);
        let receiver = Receiver::new(receiver_cfg, RECEIVER_ADDR, SENDER_ADDR, SeqNum(7));
        Pair {
            now: Time::ZERO,
            delay: Duration::from_millis(50),
            rate: None,
            busy_until: [Time::ZERO; 2],
            sender,
            receiver,
            in_flight: VecDeque::new(),
            drop: Box::new(|_, _, _| false),
            sent: [0; 2],
            read: 0,
            ack_window: Box::new(|_| None),
        }
    }

    fn flush(&mut self) {
        while let Some(p) = self.sender.poll_transmit(self.now) {
            self.put(Dir::ToReceiver, p);
        }
        while let Some(p) = self.receiver.poll_transmit(self.now) {
            self.put(Dir::ToSender, p);
        }
    }

    fn put(&mut self, dir: Dir, mut p: Bytes) {
        if dir == Dir::ToSender {
            if let Some(w) = (self.ack_window)(self.now) {
                let mut buf = p.to_vec();
                let mut ip = lasthop_wire::Ipv4Packet::new_unchecked(&mut buf[..]);
                let (src, dst) = (ip.src_addr(), ip.dst_addr());
                let mut tcp = lasthop_wire::TcpPacket::new_unchecked(ip.payload_mut());
                tcp.set_window_len(w);
                tcp.fill_checksum(src, dst);
                p = Bytes::from(buf);
            }
        }
        let d = dir as usize;
        let mut leave = self.now;
        if let Some(rate) = self.rate {
            let start = self.busy_until[d].max(self.now);
            leave = start + Duration::from_nanos(p.len() as u64 * 1_000_000_000 / rate.max(1));
            self.busy_until[d] = leave;
        }
        let arrival = leave + self.delay;
        let dropped = (self.drop)(dir, self.sent[d], &p);
        self.sent[d] += 1;
        if !dropped {
            let at = self.in_flight.partition_point(|e| e.0 <= arrival);
            self.in_flight.insert(at, (arrival, dir, p));
        }
    }

    /// Advances to the next event and handles everything due then; false when nothing is left to happen.
    pub fn step(&mut self) -> bool {
        self.flush();
        let next = [self.in_flight.front().map(|e| e.0), self.sender.poll_timeout(), self.receiver.poll_timeout()]
            .into_iter()
            .flatten()
            .min();
        let Some(t) = next else { return false };
        self.now = self.now.max(t);
        while self.in_flight.front().is_some_and(|e| e.0 <= self.now) {
            let (_, dir, p) = self.in_flight.pop_front().unwrap();
            match dir {
                Dir::ToReceiver => self.receiver.handle_packet(self.now, &p),
                Dir::ToSender => self.sender.handle_packet(self.now, &p),
            }
            self.flush();
        }
        if self.sender.poll_timeout().is_some_and(|t| t <= self.now) {
            self.sender.handle_timeout(self.now);
        }
        if self.receiver.poll_timeout().is_some_and(|t| t <= self.now) {
            self.receiver.handle_timeout(self.now);
        }
        while let Some(b) = self.receiver.read() {
            assert!(payload::matches(self.read, &b), "corrupt data at offset {}", self.read);
            self.read += b.len() as u64;
        }
        true
    }

    /// Sets the ELN bit (and fixes the checksum) on every ACK in flight toward the sender whose
    /// acknowledgment number satisfies `hole`: a stand-in for the base station's ELN agent.
    pub fn mark_acks(&mut self, hole: impl Fn(u32) -> bool) {
        for (_, dir, p) in self.in_flight.iter_mut() {
            if *dir != Dir::ToSender {
                continue;
            }
            let mut buf = p.to_vec();
            let mut ip = lasthop_wire::Ipv4Packet::new_unchecked(&mut buf[..]);
            let (src, dst) = (ip.src_addr(), ip.dst_addr());
            let mut tcp = lasthop_wire::TcpPacket::new_unchecked(ip.payload_mut());
            if tcp.ack() && !tcp.eln() && hole(tcp.ack_number().0) {
                tcp.set_eln(true);
                tcp.fill_checksum(src, dst);
                *p = Bytes::from(buf);
            }
        }
    }

    /// Connects and runs until the transfer is over or `max_steps` steps have passed; true if it finished.
    pub fn run(&mut self, max_steps: usize) -> bool {
        self.sender.connect(self.now);
        for _ in 0..max_steps {
            if self.sender.is_finished() && self.receiver.fin_received() {
                return true;
            }
            if !self.step() {
                break;
            }
        }
        self.sender.is_finished() && self.receiver.fin_received()
    }
}
