//! The sending end of one ARQ link direction: numbers frames, keeps each until it is link-acknowledged
//! or given up, and retransmits on its timer or, with selective ACKs, as soon as a gap is reported.

use crate::frame::{unwrap_seq, Frame, BITMAP_FRAMES};
use crate::ArqConfig;
use bytes::Bytes;
use lasthop_wire::Time;
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

/// What the sender did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SenderStats {
    /// Data frames transmitted, first copies and retransmissions.
    pub frames_sent: u64,
    pub retransmissions: u64,
    /// Of `retransmissions`, those made at once on a selective ACK's evidence (LL-SMART).
    pub gap_retransmissions: u64,
    /// Frames given up after `retry_limit` retransmissions.
    pub frames_abandoned: u64,
    /// Frames acknowledged by the receiver.
    pub frames_acked: u64,
    pub acks_received: u64,
    /// Packets refused because `queue_limit` packets were already waiting.
    pub queue_drops: u64,
    /// Link frames that could not be read, or ACKs for frames never sent.
    pub malformed: u64,
    /// Packets discarded, in flight or queued, by [`ArqSender::flush`] or [`ArqSender::restart`].
    pub frames_flushed: u64,
    /// Restarts of the link's sequence state.
    pub restarts: u64,
}

#[derive(Debug)]
struct InFlight {
    payload: Bytes,
    /// Transmissions so far.
    sent: u32,
    /// The sender's transmission counter at its last transmission (orders transmissions on the FIFO link).
    order: u64,
    /// When the retransmission timer fires; `None` while it waits to be (re)sent.
    deadline: Option<Time>,
}

/// See the crate documentation.
#[derive(Debug)]
pub struct ArqSender {
    cfg: ArqConfig,
    timeout: Duration,
    queue: VecDeque<Bytes>,
    /// Frames sent and not yet acknowledged or given up, by frame number.
    in_flight: BTreeMap<u64, InFlight>,
    /// The next new frame number.
    next: u64,
    transmissions: u64,
    stats: SenderStats,
}

impl ArqSender {
    /// `cfg` should have passed [`ArqConfig::validate`]; out-of-range values are clamped.
    pub fn new(cfg: ArqConfig) -> ArqSender {
        ArqSender {
            timeout: cfg.timeout(),
            cfg,
            queue: VecDeque::new(),
            in_flight: BTreeMap::new(),
            next: 0,
            transmissions: 0,
            stats: SenderStats::default(),
        }
    }

    /// Hands a packet to the link. Returns false (and counts a queue drop) when the queue is full.
    pub fn send(&mut self, packet: Bytes) -> bool {
        if self.queue.len() >= self.cfg.queue_limit.max(1) {
            self.stats.queue_drops += 1;
            return false;
        }
        self.queue.push_back(packet);
        true
    }

    /// The oldest frame still held (the `base` of data frames).
    fn base(&self) -> u64 {
        self.in_flight.keys().next().copied().unwrap_or(self.next)
    }

    /// The next frame to put on the medium: a retransmission that is due first, else a new frame when the
    /// window has room.
    pub fn poll_transmit(&mut self, now: Time) -> Option<Bytes> {
        if let Some((&seq, f)) = self.in_flight.iter_mut().find(|(_, f)| f.deadline.is_none()) {
            f.sent += 1;
            self.transmissions += 1;
            f.order = self.transmissions;
            f.deadline = Some(now + self.timeout);
            self.stats.frames_sent += 1;
            self.stats.retransmissions += 1;
            let payload = f.payload.clone();
            let base = self.base() as u16;
            return Some(Frame::Data { seq: seq as u16, base, payload }.emit());
        }
        let window = u64::from(self.cfg.window.clamp(1, crate::frame::MAX_WINDOW));
        if self.next - self.base() >= window {
            return None;
        }
        let payload = self.queue.pop_front()?;
        let seq = self.next;
        let base = self.base();
        self.next += 1;
        self.transmissions += 1;
        let frame = Frame::Data { seq: seq as u16, base: base as u16, payload: payload.clone() }.emit();
        self.in_flight
            .insert(seq, InFlight { payload, sent: 1, order: self.transmissions, deadline: Some(now + self.timeout) });
        self.stats.frames_sent += 1;
        Some(frame)
    }

    /// Takes in a frame from the other end (a link ACK). Data frames and unreadable frames are counted as
    /// malformed and ignored.
    pub fn handle_frame(&mut self, _now: Time, frame: &Bytes) {
        let Some(Frame::Ack { cum, this, bitmap }) = Frame::parse(frame) else {
            self.stats.malformed += 1;
            return;
        };
        let base = self.base();
        let cum = unwrap_seq(base, cum);
        if cum > self.next {
            // Acknowledges frames never sent: not an ACK of ours.
            self.stats.malformed += 1;
            return;
        }
        self.stats.acks_received += 1;
        let mut received = vec![unwrap_seq(base, this)];
        if self.cfg.selective_acks {
            received.extend((0..BITMAP_FRAMES).filter(|i| bitmap & (1 << i) != 0).map(|i| cum + 1 + i));
        }
        let before = self.in_flight.len();
        let mut newest_order = 0;
        self.in_flight.retain(|&seq, f| {
            if seq < cum {
                newest_order = newest_order.max(f.order);
            }
            seq >= cum
        });
        for seq in received {
            if let Some(f) = self.in_flight.remove(&seq) {
                newest_order = newest_order.max(f.order);
            }
        }
        self.stats.frames_acked += (before - self.in_flight.len()) as u64;
        if self.cfg.selective_acks && newest_order > 0 {
            // A frame sent after these arrived, so on a FIFO link these were lost: resend them now.
            for f in self.in_flight.values_mut() {
                if f.order < newest_order && f.deadline.is_some() {
                    f.deadline = None;
                    self.stats.gap_retransmissions += 1;
                }
            }
        }
    }

    /// The earliest retransmission timer.
    pub fn poll_timeout(&self) -> Option<Time> {
        self.in_flight.values().filter_map(|f| f.deadline).min()
    }

    /// Expired frames are queued for retransmission, or given up past the retry limit.
    pub fn handle_timeout(&mut self, now: Time) {
        let limit = self.cfg.retry_limit;
        let mut abandoned = 0;
        self.in_flight.retain(|_, f| {
            if f.deadline.is_some_and(|d| d <= now) {
                if f.sent > limit {
                    abandoned += 1;
                    return false;
                }
                f.deadline = None;
            }
            true
        });
        self.stats.frames_abandoned += abandoned;
    }

    /// Discards what this end holds, frames in flight and packets queued, counting them in `frames_flushed`
    /// (a host that drops its queue toward a station, or loses it in a failure). Numbering goes on: the next
    /// frame's `base` tells the receiver to skip the discarded ones, as it skips frames given up. Returns the
    /// packets discarded.
    pub fn flush(&mut self) -> u64 {
        let flushed = (self.in_flight.len() + self.queue.len()) as u64;
        self.in_flight.clear();
        self.queue.clear();
        self.stats.frames_flushed += flushed;
        flushed
    }

    /// Restarts the link with fresh sequence state, as a station's (re)association with a cell does: the
    /// link layer does not hand over, so what this end still held is discarded ([`ArqSender::flush`]), the next
    /// frame is number 0 again, and a link ACK from before the restart acknowledges nothing it sends after
    /// (counted as malformed while it is ahead of `next`). Counters keep running. Returns the packets
    /// discarded.
    pub fn restart(&mut self) -> u64 {
        let flushed = self.flush();
        self.next = 0;
        self.stats.restarts += 1;
        flushed
    }

    /// Whether a frame is ready to go now (a retransmission or a new frame the window allows).
    pub fn wants_to_transmit(&self) -> bool {
        self.in_flight.values().any(|f| f.deadline.is_none())
            || (!self.queue.is_empty()
                && self.next - self.base() < u64::from(self.cfg.window.clamp(1, crate::frame::MAX_WINDOW)))
    }

    /// Every packet the link still holds, queued or in flight (for [`crate::tcp_aware::DupAckFilter`]).
    pub fn held_packets(&self) -> impl Iterator<Item = &Bytes> {
        self.in_flight.values().map(|f| &f.payload).chain(self.queue.iter())
    }

    /// Frames sent and not yet acknowledged or given up.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    pub fn is_idle(&self) -> bool {
        self.queue.is_empty() && self.in_flight.is_empty()
    }

    pub fn stats(&self) -> &SenderStats {
        &self.stats
    }
}
