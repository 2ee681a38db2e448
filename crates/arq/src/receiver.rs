//! The receiving end of one ARQ link direction: acknowledges every data frame (duplicates too: the
//! earlier link ACK may have been lost), discards duplicates, and hands packets up in order or at once.

use crate::frame::{unwrap_seq, Frame, BITMAP_FRAMES};
use crate::{ArqConfig, Delivery};
use bytes::Bytes;
use lasthop_wire::Time;
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};

/// What the receiver did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ReceiverStats {
    /// Data frames taken in, duplicates included.
    pub frames_received: u64,
    /// Frames received before (a link retransmission whose first copy arrived, or its ACK was lost).
    pub duplicates: u64,
    pub packets_delivered: u64,
    /// Frames the sender gave up on that this end skipped (never delivered).
    pub frames_skipped: u64,
    pub acks_sent: u64,
    pub malformed: u64,
}

/// See the crate documentation.
#[derive(Debug)]
pub struct ArqReceiver {
    delivery: Delivery,
    selective_acks: bool,
    window: u64,
    /// The next frame expected in order: everything below has been delivered or skipped.
    cum: u64,
    /// Frames above `cum` already received: held here (in-order delivery) with their packet, or only
    /// remembered (out-of-order delivery, already handed up).
    above: BTreeMap<u64, Option<Bytes>>,
    ready: VecDeque<Bytes>,
    acks: VecDeque<Bytes>,
    stats: ReceiverStats,
}

impl ArqReceiver {
    pub fn new(cfg: &ArqConfig) -> ArqReceiver {
        ArqReceiver {
            delivery: cfg.delivery,
            selective_acks: cfg.selective_acks,
            window: u64::from(cfg.window.clamp(1, crate::frame::MAX_WINDOW)),
            cum: 0,
            above: BTreeMap::new(),
            ready: VecDeque::new(),
            acks: VecDeque::new(),
            stats: ReceiverStats::default(),
        }
    }

    /// Takes in a frame from the other end. Unreadable frames, link ACKs and frames outside the window are
    /// counted as malformed and dropped without an answer.
    pub fn handle_frame(&mut self, _now: Time, frame: &Bytes) {
        let Some(Frame::Data { seq, base, payload }) = Frame::parse(frame) else {
            self.stats.malformed += 1;
            return;
        };
        let seq = unwrap_seq(self.cum, seq);
        let base = unwrap_seq(self.cum, base);
        if seq >= self.cum + 2 * self.window || base > seq {
            self.stats.malformed += 1;
            return;
        }
        self.stats.frames_received += 1;
        // The sender no longer holds anything below `base`: stop waiting for it.
        if base > self.cum {
            self.skip_to(base);
        }
        if seq < self.cum || self.above.contains_key(&seq) {
            self.stats.duplicates += 1;
        } else {
            match self.delivery {
                Delivery::OutOfOrder => {
                    self.deliver(payload);
                    self.above.insert(seq, None);
                }
                Delivery::InOrder => {
                    self.above.insert(seq, Some(payload));
                }
            }
            self.advance();
        }
        self.queue_ack(seq);
    }

    /// Moves `cum` to `to`, handing up (in order) what was held below it and counting the gaps.
    fn skip_to(&mut self, to: u64) {
        let mut expect = self.cum;
        let rest = self.above.split_off(&to);
        for (seq, held) in std::mem::replace(&mut self.above, rest) {
            self.stats.frames_skipped += seq - expect;
            expect = seq + 1;
            if let Some(p) = held {
                self.deliver(p);
            }
        }
        self.stats.frames_skipped += to - expect;
        self.cum = to;
    }

    /// Moves `cum` over the frames received contiguously from it.
    fn advance(&mut self) {
        while let Some(held) = self.above.remove(&self.cum) {
            if let Some(p) = held {
                self.deliver(p);
            }
            self.cum += 1;
        }
    }

    fn deliver(&mut self, p: Bytes) {
        self.stats.packets_delivered += 1;
        self.ready.push_back(p);
    }

    fn queue_ack(&mut self, this: u64) {
        let bitmap = if self.selective_acks {
            self.above
                .range(self.cum + 1..self.cum + 1 + BITMAP_FRAMES)
                .fold(0u32, |m, (&s, _)| m | 1 << (s - self.cum - 1))
        } else {
            0
        };
        self.stats.acks_sent += 1;
        self.acks.push_back(Frame::Ack { cum: self.cum as u16, this: this as u16, bitmap }.emit());
    }

    /// Restarts with fresh sequence state (see [`crate::ArqSender::restart`]): packets held above a gap are
    /// handed up at once, in order (the sender's restart gave up the frames they waited for, counted in
    /// `frames_skipped`), link ACKs not yet sent are dropped, and the next frame expected is number 0.
    pub fn restart(&mut self) {
        if let Some(&last) = self.above.keys().next_back() {
            self.skip_to(last + 1);
        }
        self.acks.clear();
        self.cum = 0;
    }

    /// The next link ACK to send.
    pub fn poll_transmit(&mut self) -> Option<Bytes> {
        self.acks.pop_front()
    }

    /// The next packet to hand up.
    pub fn poll_deliver(&mut self) -> Option<Bytes> {
        self.ready.pop_front()
    }

    pub fn stats(&self) -> &ReceiverStats {
        &self.stats
    }
}
