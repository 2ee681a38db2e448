//! I-TCP's split connection (Bakre and Badrinath, reference [3, 4] of seed 000; seed 000 §2, "The Split
//! Connection Approach"; seed 003 "Indirect-TCP"): the base station terminates the fixed host's connection
//! with a [`Receiver`] and opens its own to the mobile with a [`Sender`], joined by a bounded socket
//! buffer. Over the wireless hop the relay runs whatever [`TcpConfig`] it is given: the same TCP, or one
//! with SACK (the SPLIT-SACK variant of the ToN'97 comparison, reference [12] of seed 001).
//!
//! The relay is transparent: it answers the fixed host as the mobile's address and talks to the mobile as
//! the fixed host's, so neither end is changed. Its acknowledgments to the fixed host mean only that the
//! base station has the bytes (seed 000 §2, "Loss of Semantics": "acknowledgments of TCP packets can
//! arrive at the sender even before the packet actually reaches the intended recipient"); what the sender
//! saw acknowledged and the mobile never received is the host's to measure (`snd_una` against the
//! mobile's delivered bytes).
//!
//! The buffer holds the bytes received from the fixed host and not yet acknowledged by the mobile; the
//! window advertised to the fixed host is the free space ([`Receiver::set_window`]), so the fixed sender
//! stops (persist mode) when the wireless side falls behind. Its right edge never moves back: it is the
//! mobile's acknowledged point plus the buffer size. A zero-window probe's byte is accepted, so the
//! buffer may hold one byte more than its size.
//!
//! Handoff moves the whole relay (both connections and the buffered bytes) to the new base station over
//! the wired network: [`SplitRelay`] is that state, [`SplitRelay::state_bytes`] the bytes that travel with
//! it, [`StateTransferCost`] prices the move, and [`SplitRelay::resume_after_move`] restarts it at the new
//! base station.
//!
//! The endpoints here are bulk-transfer endpoints whose content is [`crate::payload`]: the wireless sender
//! regenerates the bytes it sends from their offsets, so the relay checks every byte it reads from the
//! fixed host against the same content (`SplitStats::corrupt_bytes`), and the mobile's receiver checks
//! them again end to end.
//!
//! Not here yet: data from the mobile to the fixed host through a relay (the reverse split).

use crate::{payload, Receiver, Sender, TcpConfig};
use bytes::Bytes;
use lasthop_wire::{SeqNum, Time};
use serde::{Deserialize, Serialize};
use std::net::SocketAddrV4;
use std::time::Duration;

/// Which way a packet the relay emits goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Toward {
    /// To the fixed host (ACKs of its connection).
    Wired,
    /// To the mobile (the relay's own connection).
    Mobile,
}

/// The relay's knobs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SplitConfig {
    /// The socket buffer at the base station, bytes. Default 65536 (64 KB).
    pub buffer_bytes: u32,
    /// The relay's end of the fixed host's connection.
    pub wired: TcpConfig,
    /// The relay's sender toward the mobile (`variant = "sack"` for SPLIT-SACK).
    pub wireless: TcpConfig,
}

impl Default for SplitConfig {
    fn default() -> SplitConfig {
        SplitConfig { buffer_bytes: 65536, wired: TcpConfig::default(), wireless: TcpConfig::default() }
    }
}

/// The cost of moving a relay's state to another base station at handoff: `fixed_ms` plus `per_kb_ms`
/// for every 1024 bytes buffered. Defaults from I-TCP's measurements quoted in seed 000 §2 ("The I-TCP
/// handoffs range from 265 ms for empty socket buffers to 1430 ms for 32KByte socket buffers [4]"):
/// fixed 265 ms, and (1430 − 265) / 32 = 36.4 ms per KB, on 1995 hardware.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StateTransferCost {
    pub fixed_ms: f64,
    pub per_kb_ms: f64,
}

impl Default for StateTransferCost {
    fn default() -> StateTransferCost {
        StateTransferCost { fixed_ms: 265.0, per_kb_ms: (1430.0 - 265.0) / 32.0 }
    }
}

impl StateTransferCost {
    /// How long moving a relay with `buffered` bytes takes.
    pub fn latency(&self, buffered: u64) -> Duration {
        let ms = self.fixed_ms + self.per_kb_ms * buffered as f64 / 1024.0;
        Duration::from_nanos((ms.max(0.0) * 1e6).round().min(u64::MAX as f64) as u64)
    }

    /// Checks both costs are milliseconds in 0 ..= 3600000; the error names the field and what was wrong.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        for (name, v) in [("fixed_ms", self.fixed_ms), ("per_kb_ms", self.per_kb_ms)] {
            if !(v.is_finite() && (0.0..=3_600_000.0).contains(&v)) {
                return Err((name, format!("expected milliseconds in 0 ..= 3600000, got {v}")));
            }
        }
        Ok(())
    }
}

/// What the relay did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SplitStats {
    /// Bytes read from the fixed host's connection and handed to the mobile's.
    pub bytes_relayed: u64,
    /// Of those, bytes whose content was not the stream's (a corrupted segment accepted upstream).
    pub corrupt_bytes: u64,
    /// The most bytes ever held.
    pub max_buffered: u64,
}

/// One split connection: see the module documentation.
#[derive(Debug)]
pub struct SplitRelay {
    wired: Receiver,
    wireless: Sender,
    buffer_bytes: u32,
    read: u64,
    stats: SplitStats,
}

impl SplitRelay {
    /// A relay for the connection from `fixed` to `mobile`, waiting for the fixed host's SYN. `iss_wired`
    /// and `iss_wireless` are the initial sequence numbers of its two ends.
    pub fn new(
        cfg: SplitConfig,
        fixed: SocketAddrV4,
        mobile: SocketAddrV4,
        iss_wired: SeqNum,
        iss_wireless: SeqNum,
    ) -> SplitRelay {
        let mut relay = SplitRelay {
            wired: Receiver::new(cfg.wired, mobile, fixed, iss_wired),
            wireless: Sender::new_open(cfg.wireless, fixed, mobile, iss_wireless),
            buffer_bytes: cfg.buffer_bytes,
            read: 0,
            stats: SplitStats::default(),
        };
        relay.wired.set_window(cfg.buffer_bytes);
        relay
    }

    /// Takes in a packet from the fixed host (`from_mobile` false) or from the mobile.
    pub fn handle_packet(&mut self, now: Time, from_mobile: bool, packet: &Bytes) {
        if from_mobile {
            self.wireless.handle_packet(now, packet);
        } else {
            self.wired.handle_packet(now, packet);
            if self.wired.is_synchronized() {
                // I-TCP: the base station opens its own connection to the mobile when the fixed host's arrives.
                self.wireless.connect(now);
            }
        }
        self.relay();
    }

    /// Moves what the fixed host's connection received into the mobile's, and sets the window.
    fn relay(&mut self) {
        while let Some(b) = self.wired.read() {
            if !payload::matches(self.read, &b) {
                self.stats.corrupt_bytes += b.len() as u64;
            }
            self.read += b.len() as u64;
            self.stats.bytes_relayed += b.len() as u64;
            self.wireless.push(b.len() as u64);
        }
        if self.wired.fin_received() && self.wireless.is_open() {
            self.wireless.close();
        }
        let buffered = self.buffered_bytes();
        self.stats.max_buffered = self.stats.max_buffered.max(buffered);
        self.wired.set_window(u64::from(self.buffer_bytes).saturating_sub(buffered).min(u64::from(u32::MAX)) as u32);
    }

    /// Bytes received from the fixed host that the mobile has not acknowledged.
    pub fn buffered_bytes(&self) -> u64 {
        self.read.saturating_sub(self.wireless.snd_una_offset())
    }

    /// What a handoff moves to the new base station besides the connections' control blocks: the socket
    /// buffers' bytes, those received from the fixed host and not yet acknowledged by the mobile plus those
    /// held out of order on the fixed host's connection (seed 000 §2: "The state maintained at a base station
    /// in I-TCP consists mainly of a set of socket buffers").
    pub fn state_bytes(&self) -> u64 {
        self.buffered_bytes() + self.wired.out_of_order_bytes()
    }

    /// The relay has been moved to a new base station and resumes there at `now`. What it had sent toward the
    /// mobile went into the old cell, so its connection to the mobile goes back to the mobile's last
    /// acknowledgment at once (slow start, as after a timeout but without backing the timer off: the
    /// handoff-aware retransmission of [`Sender::retransmit_now`], seed 004) rather than waiting for a
    /// retransmission timer armed at the old base station. The fixed host's connection carries on as it was.
    pub fn resume_after_move(&mut self, now: Time) {
        self.wireless.retransmit_now(now);
    }

    /// The next packet to send, and where.
    pub fn poll_transmit(&mut self, now: Time) -> Option<(Toward, Bytes)> {
        if let Some(p) = self.wired.poll_transmit(now) {
            return Some((Toward::Wired, p));
        }
        self.wireless.poll_transmit(now).map(|p| (Toward::Mobile, p))
    }

    pub fn poll_timeout(&self) -> Option<Time> {
        [self.wired.poll_timeout(), self.wireless.poll_timeout()].into_iter().flatten().min()
    }

    pub fn handle_timeout(&mut self, now: Time) {
        self.wired.handle_timeout(now);
        self.wireless.handle_timeout(now);
        self.relay();
    }

    /// The fixed host's connection has ended and the mobile has acknowledged everything, FIN included.
    pub fn is_finished(&self) -> bool {
        self.wired.fin_received() && self.wireless.is_finished()
    }

    /// The relay's connection to the mobile (its counters, its window).
    pub fn wireless(&self) -> &Sender {
        &self.wireless
    }

    /// The relay's end of the fixed host's connection.
    pub fn wired(&self) -> &Receiver {
        &self.wired
    }

    pub fn stats(&self) -> &SplitStats {
        &self.stats
    }
}

#[cfg(test)]
mod tests;
