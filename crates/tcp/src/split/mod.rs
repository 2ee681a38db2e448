//! I-TCP's split connection (Bakre and Badrinath, reference [3, 4] of Balakrishnan 1995; Balakrishnan 1995 §2, "The Split
//! Connection Approach"; Sriramulu (undated) "Indirect-TCP"): "splitting a TCP connection between a fixed and mobile
//! host into two separate connections at the base station" (Balakrishnan 1995 §2), whichever end opened it. The
//! relay ends the data sender's connection with a [`Receiver`] and opens its own toward the data receiver
//! with a [`Sender`], joined by a bounded socket buffer ([`Direction`]):
//!
//! - [`Direction::ToMobile`]: the fixed host opened the connection; the wired half receives and the
//!   wireless half sends to the mobile.
//! - [`Direction::FromMobile`]: the mobile opened it (the mobile is then the sender); the wireless half
//!   receives and acknowledges the mobile's data over the wireless hop, the wired half sends it on to the
//!   fixed host.
//!
//! Over the wireless hop the relay runs whatever [`TcpConfig`] it is given: the same TCP, or one with SACK
//! (the SPLIT-SACK variant of the ToN'97 comparison, reference [12] of Eom 2002).
//!
//! The relay is transparent: it answers each host as the other's address, so neither end is changed. Its
//! acknowledgments to the data sender mean only that the base station has the bytes (Balakrishnan 1995 §2, "Loss of
//! Semantics": "acknowledgments of TCP packets can arrive at the sender even before the packet actually
//! reaches the intended recipient"); what the sender saw acknowledged and the receiver never got is the
//! host's to measure (`snd_una` against the receiver's delivered bytes).
//!
//! The buffer holds the bytes received from the data sender and not yet acknowledged by the data receiver;
//! the window advertised to the sender is the free space ([`Receiver::set_window`]), so the sender stops
//! (persist mode) when the far side falls behind. Its right edge never moves back: it is the receiver's
//! acknowledged point plus the buffer size. A zero-window probe's byte is accepted, so the buffer may hold
//! one byte more than its size. The rules are the same in both directions.
//!
//! Handoff moves the whole relay (both connections and the buffered bytes) to the new base station over
//! the wired network: [`SplitRelay`] is that state, [`SplitRelay::state_bytes`] the bytes that travel with
//! it, [`StateTransferCost`] prices the move, and [`SplitRelay::resume_after_move`] restarts it at the new
//! base station.
//!
//! [`SplitRelay::new_mtcp`] makes M-TCP's supervisor host instead (Brown 1997, [`mtcp`]): the same two
//! connections, but the fixed sender is acknowledged only what the mobile has acknowledged, less one held
//! byte, so end-to-end semantics hold and a zero-window ACK of that byte freezes the sender while the mobile
//! is cut off.
//!
//! The endpoints here are bulk-transfer endpoints whose content is [`crate::payload`]: the relay's sender
//! regenerates the bytes it sends from their offsets, so the relay checks every byte it reads against the
//! same content (`SplitStats::corrupt_bytes`), and the data receiver checks them again end to end.

pub mod mtcp;

use crate::{payload, Receiver, Sender, TcpConfig};
use bytes::Bytes;
use lasthop_wire::{SeqNum, Time};
use mtcp::{Freeze, MtcpStats, ShTcp};
use serde::{Deserialize, Serialize};
use std::net::SocketAddrV4;
use std::time::Duration;

/// Which way a packet the relay emits goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Toward {
    /// To the fixed host.
    Wired,
    /// To the mobile.
    Mobile,
}

impl Toward {
    /// The other side of the relay.
    pub fn opposite(self) -> Toward {
        match self {
            Toward::Wired => Toward::Mobile,
            Toward::Mobile => Toward::Wired,
        }
    }
}

/// Which way the data of a split connection flows, that is, which end opened it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Direction {
    /// From the fixed host to the mobile: the wired half receives, the wireless half sends.
    ToMobile,
    /// From the mobile to the fixed host: the wireless half receives, the wired half sends.
    FromMobile,
}

impl Direction {
    /// Where the data sender is.
    pub fn sender_side(self) -> Toward {
        match self {
            Direction::ToMobile => Toward::Wired,
            Direction::FromMobile => Toward::Mobile,
        }
    }
}

/// The relay's knobs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SplitConfig {
    /// The socket buffer at the base station, bytes. Default 65536 (64 KB).
    pub buffer_bytes: u32,
    /// The relay's end of the connection with the fixed host (its receiver or its sender, by [`Direction`]).
    pub wired: TcpConfig,
    /// The relay's end of the connection with the mobile (`variant = "sack"` for SPLIT-SACK when it sends,
    /// `sack = true` to offer SACK when it receives).
    pub wireless: TcpConfig,
}

impl Default for SplitConfig {
    fn default() -> SplitConfig {
        SplitConfig { buffer_bytes: 65536, wired: TcpConfig::default(), wireless: TcpConfig::default() }
    }
}

/// The cost of moving a relay's state to another base station at handoff: `fixed_ms` plus `per_kb_ms`
/// for every 1024 bytes buffered. Defaults from I-TCP's measurements quoted in Balakrishnan 1995 §2 ("The I-TCP
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
    direction: Direction,
    /// The relay's end of the data sender's connection.
    receiving: Receiver,
    /// The relay's own connection to the data receiver.
    sending: Sender,
    buffer_bytes: u32,
    read: u64,
    stats: SplitStats,
    /// M-TCP's SH-TCP acknowledgment policy (`None`: I-TCP's, the receiver's own).
    mtcp: Option<ShTcp>,
}

impl SplitRelay {
    /// A relay for a connection between `fixed` and `mobile` whose data flows `direction`, waiting for the
    /// data sender's SYN. `iss_wired` and `iss_wireless` are the initial sequence numbers of its two ends.
    pub fn new(
        cfg: SplitConfig,
        direction: Direction,
        fixed: SocketAddrV4,
        mobile: SocketAddrV4,
        iss_wired: SeqNum,
        iss_wireless: SeqNum,
    ) -> SplitRelay {
        let (receiving, sending) = match direction {
            Direction::ToMobile => (
                Receiver::new(cfg.wired, mobile, fixed, iss_wired),
                Sender::new_open(cfg.wireless, fixed, mobile, iss_wireless),
            ),
            Direction::FromMobile => (
                Receiver::new(cfg.wireless, fixed, mobile, iss_wireless),
                Sender::new_open(cfg.wired, mobile, fixed, iss_wired),
            ),
        };
        let mut relay = SplitRelay {
            direction,
            receiving,
            sending,
            buffer_bytes: cfg.buffer_bytes,
            read: 0,
            stats: SplitStats::default(),
            mtcp: None,
        };
        relay.receiving.set_window(cfg.buffer_bytes);
        relay
    }

    /// M-TCP's supervisor host for a connection the fixed host opens to the mobile (Brown 1997; see
    /// [`mtcp`]): the fixed sender is acknowledged what the mobile acknowledged, less the last byte, with
    /// `cfg.buffer_bytes` as the window (at most `cfg.wired.max_window`).
    pub fn new_mtcp(
        cfg: SplitConfig,
        fixed: SocketAddrV4,
        mobile: SocketAddrV4,
        iss_wired: SeqNum,
        iss_wireless: SeqNum,
    ) -> SplitRelay {
        let window = cfg.buffer_bytes.min(cfg.wired.max_window);
        let silence = mtcp::silence(&cfg.wired);
        let mut relay = SplitRelay::new(cfg, Direction::ToMobile, fixed, mobile, iss_wired, iss_wireless);
        relay.mtcp = Some(ShTcp::new(window, silence));
        relay
    }

    /// M-TCP's counters; `None` for an I-TCP relay.
    pub fn mtcp_stats(&self) -> Option<&MtcpStats> {
        self.mtcp.as_ref().map(ShTcp::stats)
    }

    /// The host reports the mobile cut off (it left the cell, the cell lost it): M-TCP freezes the fixed
    /// sender with a zero-window ACK of the held byte and holds its own connection to the mobile still. An
    /// I-TCP relay carries on.
    pub fn mobile_unreachable(&mut self, now: Time) {
        if let Some(m) = self.mtcp.as_mut() {
            m.freeze(now, Freeze::CutOff, &self.receiving, &self.sending);
        }
    }

    /// The host reports the mobile back: M-TCP resumes the fixed sender with a window update and its own
    /// connection to the mobile from the mobile's last acknowledgment, at the window it had.
    pub fn mobile_reachable(&mut self, now: Time) {
        if let Some(Freeze::CutOff) = self.mtcp.as_mut().and_then(|m| m.thaw(now)) {
            self.sending.thaw(now);
        }
    }

    /// The host reports the mobile in a new cell under this relay's supervisor host (Brown 1997: one SH serves
    /// several cells, and a handoff between them moves nothing): the fixed sender, if frozen, is resumed with
    /// a window update, and the relay's connection to the mobile resends from the mobile's last
    /// acknowledgment at once, with the window and timeout it had ([`Sender::thaw`]), rather than waiting
    /// for a timer that may have backed off while the mobile was between cells. An I-TCP relay carries on.
    pub fn mobile_changed_cell(&mut self, now: Time) {
        if let Some(m) = self.mtcp.as_mut() {
            m.thaw(now);
            self.sending.thaw(now);
        }
    }

    /// M-TCP's connection to the mobile is held still while the host reports the mobile cut off.
    fn wireless_frozen(&self) -> bool {
        self.mtcp.as_ref().is_some_and(|m| m.frozen() == Some(Freeze::CutOff))
    }

    /// Which way the data flows.
    pub fn direction(&self) -> Direction {
        self.direction
    }

    /// Takes in a packet from the fixed host (`from_mobile` false) or from the mobile.
    pub fn handle_packet(&mut self, now: Time, from_mobile: bool, packet: &Bytes) {
        let from = if from_mobile { Toward::Mobile } else { Toward::Wired };
        if from == self.direction.sender_side() {
            self.receiving.handle_packet(now, packet);
            if self.receiving.is_synchronized() {
                // I-TCP: the base station opens its own connection onward when the data sender's arrives.
                self.sending.connect(now);
            }
            if let Some(m) = self.mtcp.as_mut() {
                m.on_sender_segment(&self.receiving, &self.sending);
            }
        } else {
            // M-TCP: anything from the mobile says it is back.
            self.mobile_reachable(now);
            self.sending.handle_packet(now, packet);
        }
        self.relay(now);
    }

    /// Moves what the data sender's connection received into the relay's own, and sets the window.
    fn relay(&mut self, now: Time) {
        while let Some(b) = self.receiving.read() {
            if !payload::matches(self.read, &b) {
                self.stats.corrupt_bytes += b.len() as u64;
            }
            self.read += b.len() as u64;
            self.stats.bytes_relayed += b.len() as u64;
            self.sending.push(b.len() as u64);
        }
        if self.receiving.fin_received() && self.sending.is_open() {
            self.sending.close();
        }
        let buffered = self.buffered_bytes();
        self.stats.max_buffered = self.stats.max_buffered.max(buffered);
        match self.mtcp.as_mut() {
            Some(m) => m.update(now, &self.receiving, &self.sending),
            None => self
                .receiving
                .set_window(u64::from(self.buffer_bytes).saturating_sub(buffered).min(u64::from(u32::MAX)) as u32),
        }
    }

    /// Bytes received from the data sender that the data receiver has not acknowledged.
    pub fn buffered_bytes(&self) -> u64 {
        self.read.saturating_sub(self.sending.snd_una_offset())
    }

    /// What a handoff moves to the new base station besides the connections' control blocks: the socket
    /// buffers' bytes, those received from the data sender and not yet acknowledged by the receiver plus
    /// those held out of order on the sender's connection (Balakrishnan 1995 §2: "The state maintained at a base
    /// station in I-TCP consists mainly of a set of socket buffers").
    pub fn state_bytes(&self) -> u64 {
        self.buffered_bytes() + self.receiving.out_of_order_bytes()
    }

    /// The relay has been moved to a new base station and resumes there at `now`. What it had sent toward
    /// the mobile went into the old cell, and so did what the mobile sent it, so the half facing the mobile
    /// restarts at once rather than waiting for a retransmission timer armed before the move:
    ///
    /// - [`Direction::ToMobile`]: its connection to the mobile goes back to the mobile's last acknowledgment
    ///   (slow start, as after a timeout but without backing the timer off: the handoff-aware retransmission
    ///   of [`Sender::retransmit_now`], Caceres 1995).
    /// - [`Direction::FromMobile`]: it sends the mobile three duplicate ACKs of the next byte it expects, so
    ///   that the mobile fast retransmits from there (Caceres 1995, "Fast Retransmissions": "three ordinary TCP
    ///   ACKs"; here the base station's end of the wireless connection sends them, as the mobile's does when
    ///   the fixed host sends).
    ///
    /// The fixed host's connection carries on as it was.
    ///
    /// An M-TCP relay instead resumes as when the mobile comes back ([`mobile_reachable`](Self::mobile_reachable)).
    pub fn resume_after_move(&mut self, now: Time) {
        if self.mtcp.is_some() {
            return self.mobile_reachable(now);
        }
        match self.direction {
            Direction::ToMobile => self.sending.retransmit_now(now),
            Direction::FromMobile => self.receiving.send_dupacks(3),
        }
    }

    /// The next packet to send, and where.
    pub fn poll_transmit(&mut self, now: Time) -> Option<(Toward, Bytes)> {
        let to_sender = self.direction.sender_side();
        while let Some(p) = self.receiving.poll_transmit(now) {
            // SH-TCP sends the receiver's SYN-ACK, and its own ACKs for the others.
            if self.mtcp.is_none() || mtcp::is_syn(&p) {
                return Some((to_sender, p));
            }
        }
        if let Some(p) = self.mtcp.as_mut().and_then(|m| m.poll_transmit(now, &mut self.receiving)) {
            return Some((to_sender, p));
        }
        if self.wireless_frozen() {
            return None;
        }
        self.sending.poll_transmit(now).map(|p| (to_sender.opposite(), p))
    }

    pub fn poll_timeout(&self) -> Option<Time> {
        let sending = if self.wireless_frozen() { None } else { self.sending.poll_timeout() };
        let silence = self.mtcp.as_ref().and_then(|m| m.silence_deadline(&self.sending));
        [self.receiving.poll_timeout(), sending, silence].into_iter().flatten().min()
    }

    pub fn handle_timeout(&mut self, now: Time) {
        self.receiving.handle_timeout(now);
        if !self.wireless_frozen() {
            self.sending.handle_timeout(now);
        }
        self.relay(now);
        if let Some(m) = self.mtcp.as_mut() {
            if m.silence_deadline(&self.sending).is_some_and(|t| t <= now) {
                // M-TCP: the mobile has gone silent; freeze the fixed sender while this end keeps trying.
                m.freeze(now, Freeze::Silent, &self.receiving, &self.sending);
            }
        }
    }

    /// The data sender's connection has ended and the data receiver has acknowledged everything, FIN
    /// included.
    pub fn is_finished(&self) -> bool {
        self.receiving.fin_received() && self.sending.is_finished()
    }

    /// The relay's own connection to the data receiver (its counters, its window): toward the mobile for
    /// [`Direction::ToMobile`], toward the fixed host for [`Direction::FromMobile`].
    pub fn sending(&self) -> &Sender {
        &self.sending
    }

    /// The relay's end of the data sender's connection.
    pub fn receiving(&self) -> &Receiver {
        &self.receiving
    }

    pub fn stats(&self) -> &SplitStats {
        &self.stats
    }
}

#[cfg(test)]
mod tests;
