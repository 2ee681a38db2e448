//! M-TCP's supervisor host (Brown 1997): the split connection of [`SplitRelay::new_mtcp`] with
//! end-to-end acknowledgments. Its SH-TCP end (this module's [`ShTcp`]) takes the fixed sender's segments
//! and hands them to the relay's own M-TCP connection to the mobile, which recovers wireless losses
//! itself; unlike I-TCP, SH-TCP acknowledges to the sender only bytes the mobile has acknowledged.
//!
//! - **The ACK rule and the held byte.** The acknowledgment sent to the fixed sender is the mobile's, less
//!   its last byte: "The MING acks segments only when they are ack'ed by the mobile. However, we ensure
//!   that MING does not ack the last byte" (the authors' M-TCP page; MING is the supervisor host). An ACK
//!   goes only when that point moves (or to answer a duplicate or a probe), so the sender never sees
//!   duplicate ACKs for what the relay recovers over the wireless hop.
//! - **Freeze.** When the mobile is cut off the held byte is acknowledged with a zero window: "when MING
//!   senses that the mobile is in a fade, it acks the last byte to the sender and simultaneously shrinks
//!   its receive window to zero". A new ACK always updates the send window (RFC 9293 §3.10.7.4), so the
//!   sender enters persist mode with its congestion window and timer intact. Two causes: the host reports
//!   the mobile gone ([`SplitRelay::mobile_unreachable`]: a handoff, a cell's report), and then the relay's
//!   own connection to the mobile is frozen too (no timer, nothing sent: [`Sender::thaw`] resumes it); or
//!   the mobile has acknowledged nothing new for [`silence`] while the relay waits on it ([`Freeze::Silent`]),
//!   and then the relay's connection keeps retransmitting as it would, its retransmissions probing for the
//!   mobile. The silence is shorter than any retransmission timeout the fixed sender's configuration
//!   allows, so the zero window reaches the sender before its timer can expire: the relay's own recovery
//!   over the wireless hop (a timeout of its own included) never times the fixed sender out.
//! - **Resume.** "When the mobile comes out of the fade, the MING sends a duplicate ack but opens the
//!   receive window all way": a window update of the same acknowledgment, at the mobile's first ACK or when
//!   the host reports it back ([`SplitRelay::mobile_reachable`]).
//! - **A hole in the sender's stream** (a wired loss). Once the mobile has acknowledged everything before
//!   the hole, SH-TCP acknowledges up to the hole itself (the mobile has acknowledged those bytes) and
//!   sends a duplicate ACK for every segment received beyond it, as any receiver would (RFC 5681 §4.2), and
//!   on catching up, one for each such segment that arrived meanwhile (at most three): a held byte there
//!   would make the sender's fast retransmission start one byte short of the hole.
//!
//! - **A new cell under the same supervisor host** ([`SplitRelay::mobile_changed_cell`]): nothing moves; the
//!   sender, if frozen, gets its window update, and the relay's connection resends to the mobile from its
//!   last acknowledgment at once.
//!
//! The mobile's own M-TCP end, for connections on which it sends, is its [`Sender`] frozen while it is cut
//! off ([`Sender::freeze`], [`Sender::thaw`]); a receiving mobile runs the ordinary receiver, whose only
//! timer is the delayed ACK. Not modelled: the bandwidth manager; connections the mobile opens are not split.

use crate::{Receiver, Sender, TcpConfig, TimerStyle};
use bytes::Bytes;
use lasthop_wire::Time;
use serde::Serialize;
use std::time::Duration;

/// How long the mobile may acknowledge nothing new, while the relay waits on it, before SH-TCP freezes the
/// fixed sender (whose TCP configuration is `sender`): half the shortest time the sender's retransmission
/// timer can run. That is its minimum RTO, less one tick of a BSD slow timer (a timer of n ticks expires
/// between n − 1 and n ticks after it was armed), at least half of it; the other half leaves the zero-window
/// ACK time to reach the sender. With 4.4BSD's 1 s minimum and 500 ms tick, 250 ms.
pub fn silence(sender: &TcpConfig) -> Duration {
    let min = sender.min_rto_ms.max(0.0);
    let tick = if sender.timer == TimerStyle::Bsd { sender.tick_ms.max(0.0) } else { 0.0 };
    let shortest = (min - tick).max(min / 2.0);
    Duration::from_secs_f64(shortest / 2.0 / 1e3)
}

/// Why the fixed sender is frozen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freeze {
    /// The host reported the mobile cut off: the relay's connection to the mobile is frozen too.
    CutOff,
    /// The relay's connection to the mobile timed out: the mobile has gone silent.
    Silent,
}

/// What SH-TCP did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct MtcpStats {
    /// ACKs sent to the fixed sender.
    pub acks: u64,
    /// Acknowledgments that moved while holding back the last byte the mobile acknowledged.
    pub held_acks: u64,
    /// Zero-window ACKs: freezes on the host's report and on the relay's own timeout.
    pub freezes_cut_off: u64,
    pub freezes_silent: u64,
    /// Window updates that resumed a frozen sender.
    pub resumes: u64,
    /// Duplicates and zero-window probes from the sender answered (with a zero window while frozen).
    pub probes_answered: u64,
    /// Duplicate ACKs for segments beyond a hole in the sender's stream.
    pub hole_dupacks: u64,
}

/// SH-TCP's acknowledgment policy: see the module documentation. It owns no connection: the relay's
/// [`Receiver`] keeps the fixed sender's stream and builds the ACKs ([`Receiver::ack_of`]), the relay's
/// [`Sender`] says what the mobile acknowledged.
#[derive(Debug)]
pub(super) struct ShTcp {
    /// The acknowledgment last sent to the fixed sender (an offset; 1 once only the SYN is acknowledged).
    acked: u64,
    /// The window advertised while not frozen.
    window: u16,
    frozen: Option<Freeze>,
    /// See [`silence`].
    silence: Duration,
    /// The mobile's acknowledgment point and since when it has not moved (or the relay has had nothing
    /// outstanding).
    progress: (u64, Time),
    ack_pending: bool,
    dupacks_pending: u32,
    /// The receiver's counters as last seen, to notice duplicates and out-of-order segments.
    seen_duplicates: u64,
    seen_out_of_order: u64,
    seen_rcv_nxt: u64,
    /// Segments received beyond a hole the mobile had not yet caught up with.
    unreported_beyond_hole: u32,
    stats: MtcpStats,
}

/// At most this many duplicate ACKs when the mobile catches up with a hole: the sender's threshold.
const CATCH_UP_DUPACKS: u32 = 3;

impl ShTcp {
    pub(super) fn new(window: u32, silence: Duration) -> ShTcp {
        ShTcp {
            acked: 1,
            window: window.min(u32::from(u16::MAX)) as u16,
            frozen: None,
            silence,
            progress: (0, Time::ZERO),
            ack_pending: false,
            dupacks_pending: 0,
            seen_duplicates: 0,
            seen_out_of_order: 0,
            seen_rcv_nxt: 0,
            unreported_beyond_hole: 0,
            stats: MtcpStats::default(),
        }
    }

    pub(super) fn frozen(&self) -> Option<Freeze> {
        self.frozen
    }

    pub(super) fn stats(&self) -> &MtcpStats {
        &self.stats
    }

    /// The fixed sender's segment has been taken in by `receiving`: answers a probe or a duplicate, and
    /// notes a segment beyond a hole. A duplicate is answered only while frozen (a zero-window probe) or
    /// when the mobile has acknowledged all the relay has (no later ACK of the mobile's will answer it):
    /// otherwise it is the sender going back after persist mode over bytes the relay holds, and answering
    /// each would give it duplicate ACKs, and a needless fast retransmission.
    pub(super) fn on_sender_segment(&mut self, receiving: &Receiver, mobile: &Sender) {
        let s = receiving.stats();
        let all_acked = mobile.is_finished() || acked_by(mobile) >= receiving.rcv_nxt_offset();
        if s.duplicate_segments > self.seen_duplicates && (self.frozen.is_some() || all_acked) {
            self.ack_pending = true;
            self.stats.probes_answered += s.duplicate_segments - self.seen_duplicates;
        }
        let beyond_hole = s.out_of_order_segments.saturating_sub(self.seen_out_of_order) as u32;
        if beyond_hole > 0 {
            if acked_by(mobile) >= receiving.rcv_nxt_offset() {
                self.ack_pending = true; // the mobile has all before the hole: a duplicate ACK at once
            } else {
                self.unreported_beyond_hole = self.unreported_beyond_hole.saturating_add(beyond_hole);
            }
        }
        self.seen_duplicates = s.duplicate_segments;
        self.seen_out_of_order = s.out_of_order_segments;
    }

    /// Moves the acknowledgment to what the mobile has acknowledged, less the held byte.
    pub(super) fn update(&mut self, now: Time, receiving: &Receiver, mobile: &Sender) {
        if acked_by(mobile) != self.progress.0 || !waiting_on(mobile) {
            self.progress = (acked_by(mobile), now);
        }
        let rcv_nxt = receiving.rcv_nxt_offset();
        if rcv_nxt != self.seen_rcv_nxt {
            self.seen_rcv_nxt = rcv_nxt;
            self.unreported_beyond_hole = 0; // the hole filled (or moved on)
        }
        let by_mobile = if mobile.is_finished() { rcv_nxt } else { acked_by(mobile).min(rcv_nxt) };
        let hole_at_ack = by_mobile == rcv_nxt && receiving.out_of_order_bytes() > 0;
        let target = if mobile.is_finished() || hole_at_ack || self.frozen.is_some() {
            by_mobile // the FIN acknowledged, a hole to report, or the held byte already released
        } else {
            by_mobile.saturating_sub(1).max(1)
        };
        if target > self.acked {
            self.acked = target;
            self.ack_pending = true;
            if target < by_mobile {
                self.stats.held_acks += 1;
            }
            if hole_at_ack {
                self.dupacks_pending = std::mem::take(&mut self.unreported_beyond_hole).min(CATCH_UP_DUPACKS);
            }
        }
    }

    /// When the mobile will have been silent too long (see [`silence`]), while the relay waits on it.
    pub(super) fn silence_deadline(&self, mobile: &Sender) -> Option<Time> {
        (self.frozen.is_none() && waiting_on(mobile)).then(|| self.progress.1 + self.silence)
    }

    /// The mobile is cut off (`why`): the held byte acknowledged with a zero window.
    pub(super) fn freeze(&mut self, now: Time, why: Freeze, receiving: &Receiver, mobile: &Sender) {
        if self.frozen == Some(Freeze::Silent) && why == Freeze::CutOff {
            // Already frozen by the mobile's silence; the host's report now holds the relay's connection still
            // too (the sender has its zero window already: no new freeze is counted).
            self.frozen = Some(Freeze::CutOff);
            return;
        }
        if self.frozen.is_some() || !receiving.is_synchronized() {
            return;
        }
        self.frozen = Some(why);
        match why {
            Freeze::CutOff => self.stats.freezes_cut_off += 1,
            Freeze::Silent => self.stats.freezes_silent += 1,
        }
        self.update(now, receiving, mobile);
        self.ack_pending = true;
    }

    /// The mobile is back: a window update. Returns how the sender had been frozen.
    pub(super) fn thaw(&mut self, now: Time) -> Option<Freeze> {
        let was = self.frozen.take()?;
        self.progress.1 = now;
        self.stats.resumes += 1;
        self.ack_pending = true;
        Some(was)
    }

    /// The next ACK for the fixed sender, if one is due.
    pub(super) fn poll_transmit(&mut self, now: Time, receiving: &mut Receiver) -> Option<Bytes> {
        if !self.ack_pending && self.dupacks_pending == 0 {
            return None;
        }
        if self.ack_pending {
            self.ack_pending = false;
        } else {
            self.dupacks_pending -= 1;
            self.stats.hole_dupacks += 1;
        }
        let window = if self.frozen.is_some() { 0 } else { self.window };
        let p = receiving.ack_of(now, self.acked, window)?;
        self.stats.acks += 1;
        Some(p)
    }
}

/// The offset in the fixed sender's stream up to which the mobile has acknowledged (the SYN is offset 0,
/// application byte `i` offset `1 + i`; the relay's connection to the mobile carries the same bytes).
fn acked_by(mobile: &Sender) -> u64 {
    1 + mobile.snd_una_offset()
}

/// The relay waits on the mobile: its connection's retransmission (or persist) timer runs, for data or
/// for its SYN.
fn waiting_on(mobile: &Sender) -> bool {
    mobile.poll_timeout().is_some()
}

/// Whether `packet` (an IPv4 packet a [`Receiver`] built) is its SYN-ACK: SH-TCP sends that one as the
/// receiver made it, and its own ACKs instead of the receiver's others.
pub(super) fn is_syn(packet: &Bytes) -> bool {
    let ihl = usize::from(packet.first().map_or(0, |b| b & 0x0f)) * 4;
    packet.get(ihl + 13).is_some_and(|flags| flags & 0x02 != 0)
}
