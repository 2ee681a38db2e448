//! Link-level ARQ on the wireless hop, the alternative to Snoop that the source papers argue against:
//! frames carry a link header with a sequence number, the receiver answers every data frame with a link
//! ACK (a real frame on the shared medium), and the sender retransmits on its own timer, up to a retry
//! limit (Balakrishnan 1995 §2, "Link-level Retransmissions": "independent retransmission protocols such as these
//! can lead to degraded performance ... a tight coupling of transport- and link-level retransmission
//! timeouts and policies is necessary to avoid redundant retransmissions").
//!
//! The variants compared by Balakrishnan, Padmanabhan, Seshan and Katz (IEEE/ACM ToN, December 1997,
//! reference [12] of Eom 2002), all built from the same two state machines:
//!
//! - **LL** (TCP-unaware): [`ArqSender`] and [`ArqReceiver`] with [`ArqConfig::window`] 1 (stop-and-wait)
//!   or more (selective repeat), delivering in order or out of order ([`Delivery`]).
//! - **LL-SMART**: [`ArqConfig::selective_acks`] on: each link ACK carries a bitmap of the frames received
//!   above the cumulative point, and the sender resends a frame at once when a frame it sent *after* that
//!   frame's last transmission is reported received (the link is FIFO, so the frame was lost), as SMART
//!   does for TCP.
//! - **LL-TCP-AWARE** (either of the above): [`tcp_aware::DupAckFilter`] at the base station drops the
//!   mobile's duplicate TCP ACKs for a segment its link sender still holds, so the fixed sender does not
//!   fast-retransmit what the link is already recovering (Snoop's idea, Balakrishnan 1995 §3.1, at the link layer).
//!
//! Everything is sans-IO: time is handed in, frames come out of `poll_transmit`, and `poll_timeout` says
//! when `handle_timeout` is due. The host polls the sender when the medium can take a frame, so the
//! retransmission timer runs from the moment a frame goes out, not from when a packet was queued.
//!
//! The simulator runs them on a wireless link's a→b direction, or both (`lasthop_sim::arq`, `[links.NAME.arq]`),
//! on every cell of a `[mobility]` run too: a cell's two ends [`ArqSender::restart`] (and
//! [`ArqReceiver::restart`]) when the mobile associates with it, as a reassociation resets a real link layer,
//! and a host that drops its queue toward the mobile [`ArqSender::flush`]es its frames.
//! Not here yet: forward error correction, and the real base station's hop emulator driving them.

pub mod frame;
mod receiver;
mod sender;
pub mod tcp_aware;

pub use frame::Frame;
pub use receiver::{ArqReceiver, ReceiverStats};
pub use sender::{ArqSender, SenderStats};

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// In which order the receiving end hands packets up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Delivery {
    /// Hold frames that arrive after a gap until the gap is filled (or the sender gives the frame up).
    #[default]
    InOrder,
    /// Hand every new frame up at once; TCP's receiver then sees the reordering the link made.
    OutOfOrder,
}

/// Knobs of both ends of one ARQ link direction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ArqConfig {
    /// Frames in flight at once: 1 is stop-and-wait, more is selective repeat. At most
    /// [`frame::MAX_WINDOW`]. Default 8 (a WaveLAN hop of a few milliseconds holds a handful of frames).
    pub window: u32,
    /// Link retransmission timeout from a frame's transmission, milliseconds. Default 20 ms: a 1500-byte
    /// frame at 2 Mb/s takes 6 ms, its link ACK under 1 ms more; the papers leave the value open.
    pub timeout_ms: f64,
    /// Retransmissions of one frame before the sender gives it up (TCP recovers it end to end). Default 3.
    pub retry_limit: u32,
    pub delivery: Delivery,
    /// Selective link ACKs (LL-SMART). Default false.
    pub selective_acks: bool,
    /// Packets waiting for a window slot; more are refused (counted as queue drops). Default 64.
    pub queue_limit: usize,
}

impl Default for ArqConfig {
    fn default() -> ArqConfig {
        ArqConfig {
            window: 8,
            timeout_ms: 20.0,
            retry_limit: 3,
            delivery: Delivery::InOrder,
            selective_acks: false,
            queue_limit: 64,
        }
    }
}

impl ArqConfig {
    /// Checks the ranges a scenario can get wrong; the message names the field and what is expected.
    pub fn validate(&self) -> Result<(), String> {
        if self.window == 0 || self.window > frame::MAX_WINDOW {
            return Err(format!("arq.window = {}: expected 1 ..= {}", self.window, frame::MAX_WINDOW));
        }
        if !(self.timeout_ms.is_finite() && self.timeout_ms > 0.0 && self.timeout_ms <= 60_000.0) {
            return Err(format!(
                "arq.timeout_ms = {}: expected a number of milliseconds in (0, 60000]",
                self.timeout_ms
            ));
        }
        if self.queue_limit == 0 {
            return Err("arq.queue_limit = 0: expected at least one packet".into());
        }
        Ok(())
    }

    fn timeout(&self) -> Duration {
        Duration::from_nanos((self.timeout_ms.clamp(0.0, 60_000.0) * 1e6).round() as u64)
    }
}

#[cfg(test)]
mod tests;
