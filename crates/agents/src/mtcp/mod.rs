//! M-TCP's supervisor host (Brown and Singh, "M-TCP: TCP for Mobile Cellular Networks", ACM CCR 1997;
//! Sriramulu (undated) names it beside I-TCP and Snoop): keeps end-to-end semantics while freezing the fixed sender
//! through a disconnection instead of letting it time out and shrink its window.
//!
//! - **Withheld ACK.** For data travelling [`Side::ToMobile`], every ACK from the mobile that acknowledges
//!   data is forwarded with its acknowledgment number one less: the supervisor withholds the ACK of the
//!   last byte the mobile acknowledged. It never acknowledges anything the mobile has not (the agent
//!   contract's end-to-end rule), and the final ACK of a FIN goes through unchanged so the transfer ends.
//! - **Disconnect.** When the host reports the mobile unreachable ([`Mtcp::link_down`]: a handoff gap, a
//!   fade), the supervisor sends the sender the withheld ACK with a zero window. A new ACK always updates
//!   the sender's window (RFC 9293 §3.10.7.4), so the sender stops in persist mode with its congestion
//!   window and RTO intact. Zero-window probes that arrive while the mobile is away are answered with the
//!   same zero-window ACK (and forwarded, in case the mobile hears them).
//! - **Reconnect.** [`Mtcp::link_up`], or any ACK from the mobile while frozen, sends a window update (the
//!   mobile's last advertised window) and the sender resumes at full speed.
//!
//! Packets are classified as by the other agents: malformed ones dropped and counted, non-TCP and
//! fragments forwarded. The ACK number is rewritten with an incremental checksum update (RFC 1624), so a
//! corrupted ACK stays corrupted. At most [`MtcpConfig::max_connections`] connections (least recently
//! active evicted: that connection then loses its withheld byte and is not frozen at the next disconnect,
//! so it falls back to plain TCP).
//!
//! - **Handoff.** In Brown and Singh's architecture one supervisor host serves several cells, so a handoff
//!   between them moves no supervisor state. Where each base station runs its own supervisor, the host
//!   hands the mobile's connections (withheld ACK, the mobile's sequence number, window and timestamps,
//!   frozen or not) from the old supervisor to the new one ([`Mtcp::export`], [`Mtcp::import`]), at
//!   no cost: the same state in the same place as one shared supervisor. The per-mobile
//!   [`Mtcp::mobile_unreachable`] and [`Mtcp::mobile_reachable`] freeze and resume one mobile's senders.
//!
//! Not here yet: the supervisor's own detection of a disconnection from missing link-layer ACKs (the host
//! tells it), and M-TCP's custom wireless-side TCP between supervisor and mobile (the mobile runs plain
//! TCP end to end).

#[cfg(test)]
mod tests;

use crate::eln::parse::{self, Segment};
use crate::eln::table::LruTable;
use crate::flow::FlowKey;
use crate::{Action, Agent, HandoverState, PassCounters, Side, Time};
use bytes::{Bytes, BytesMut};
use lasthop_wire::{checksum, SeqNum, TcpRepr};
use std::net::Ipv4Addr;

const TTL: u8 = 64;

#[derive(Debug, Clone)]
pub struct MtcpConfig {
    /// Most connections with state at once. Default 1024.
    pub max_connections: usize,
}

impl Default for MtcpConfig {
    fn default() -> Self {
        MtcpConfig { max_connections: 1024 }
    }
}

/// What the supervisor did. Exported by [`Agent::counters`] under the field names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MtcpStats {
    /// ACKs from the mobile forwarded with the last byte withheld.
    pub acks_withheld: u64,
    /// ACKs of a FIN released unchanged.
    pub final_acks_released: u64,
    /// Zero-window ACKs sent at a disconnection (one per connection frozen).
    pub freezes: u64,
    /// Window updates sent at a reconnection.
    pub resumes: u64,
    /// Zero-window probes (or data) from the sender answered with a zero window while frozen.
    pub probes_answered: u64,
    /// Connections handed to another supervisor at a handoff, and taken from one.
    pub handed_over: u64,
    pub taken_over: u64,
    /// What passed the supervisor by without a connection of its own (malformed, not TCP, fragments).
    pub pass: PassCounters,
}

#[derive(Debug)]
struct Conn {
    /// The data connection (`src` the fixed sender).
    key: FlowKey,
    /// The mobile's next sequence number and last advertised window, for the ACKs the supervisor makes.
    mh_seq: SeqNum,
    mh_window: u16,
    mh_timestamps: Option<(u32, u32)>,
    /// The first data byte seen: an ACK at or below it acknowledges no data and is not withheld.
    data_start: SeqNum,
    /// Sequence number after the FIN from the sender, once seen.
    fin_end: Option<SeqNum>,
    /// The highest ACK number the mobile sent.
    mh_ack: Option<SeqNum>,
    /// The highest ACK number passed to the sender.
    forwarded: Option<SeqNum>,
    frozen: bool,
}

/// See the module documentation.
#[derive(Debug)]
pub struct Mtcp {
    table: LruTable<Conn>,
    ident: u16,
    stats: MtcpStats,
}

impl Mtcp {
    pub fn new(cfg: MtcpConfig) -> Mtcp {
        Mtcp { table: LruTable::new(cfg.max_connections), ident: 0, stats: MtcpStats::default() }
    }

    pub fn stats(&self) -> &MtcpStats {
        &self.stats
    }

    /// The mobile can no longer be reached: freeze every sender with the withheld ACK and a zero window.
    pub fn link_down(&mut self, _now: Time, out: &mut Vec<Action>) {
        self.freeze(|_| true, out);
    }

    /// The mobile is reachable again: a window update resumes every frozen sender.
    pub fn link_up(&mut self, _now: Time, out: &mut Vec<Action>) {
        self.resume_all(|_| true, out);
    }

    /// Mobile `mobile` can no longer be reached: freeze the senders of its connections.
    pub fn mobile_unreachable(&mut self, _now: Time, mobile: Ipv4Addr, out: &mut Vec<Action>) {
        self.freeze(|c| c.key.dst == mobile, out);
    }

    /// Mobile `mobile` is reachable again: resume the frozen senders of its connections.
    pub fn mobile_reachable(&mut self, _now: Time, mobile: Ipv4Addr, out: &mut Vec<Action>) {
        self.resume_all(|c| c.key.dst == mobile, out);
    }

    /// Takes out the state of `mobile`'s connections, for the supervisor of its next base station.
    pub fn export(&mut self, mobile: Ipv4Addr) -> Handover {
        let keys: Vec<FlowKey> = self.table.values_mut().filter(|c| c.key.dst == mobile).map(|c| c.key).collect();
        let conns: Vec<Conn> = keys.iter().filter_map(|k| self.table.remove(k)).collect();
        self.stats.handed_over += conns.len() as u64;
        Handover { conns }
    }

    /// Takes on connections another supervisor handed over (replacing what this one knew of them).
    pub fn import(&mut self, state: Handover) {
        for c in state.conns {
            self.stats.taken_over += 1;
            let _ = self.table.insert(c.key, c);
        }
    }

    fn freeze(&mut self, which: impl Fn(&Conn) -> bool, out: &mut Vec<Action>) {
        let mut acks = Vec::new();
        for c in self.table.values_mut().filter(|c| !c.frozen && which(c)) {
            let Some(ack) = c.mh_ack.or(c.forwarded) else { continue };
            c.frozen = true;
            c.forwarded = Some(ack);
            acks.push((c.key, c.mh_seq, ack, 0, c.mh_timestamps));
        }
        self.stats.freezes += acks.len() as u64;
        for a in acks {
            let p = self.ack(a);
            out.push(Action::Inject(Side::ToWired, p));
        }
    }

    fn resume_all(&mut self, which: impl Fn(&Conn) -> bool, out: &mut Vec<Action>) {
        let mut acks = Vec::new();
        for c in self.table.values_mut().filter(|c| c.frozen && which(c)) {
            acks.push(resume(c));
        }
        self.stats.resumes += acks.len() as u64;
        for a in acks {
            let p = self.ack(a);
            out.push(Action::Inject(Side::ToWired, p));
        }
    }

    /// An ACK from the mobile to the sender of `key`, as the mobile would send it.
    fn ack(&mut self, (key, seq, ack, window, timestamps): AckFields) -> Bytes {
        let repr = TcpRepr {
            src_port: key.dst_port,
            dst_port: key.src_port,
            seq,
            ack: Some(ack),
            window,
            timestamps,
            ..TcpRepr::default()
        };
        self.ident = self.ident.wrapping_add(1);
        repr.emit_ipv4(key.dst, key.src, self.ident, TTL, &[])
    }

    /// Data from the sender: note its end and a FIN; while frozen, answer it with the zero window.
    fn on_data(&mut self, seg: &Segment, out: &mut Vec<Action>) {
        let key = seg.key();
        if self.table.get(&key).is_none() {
            if seg.payload_len == 0 && !seg.fin() {
                return;
            }
            let conn = Conn {
                key,
                mh_seq: seg.tcp.ack.unwrap_or_default(),
                mh_window: u16::MAX,
                mh_timestamps: None,
                data_start: seg.tcp.seq,
                fin_end: None,
                mh_ack: None,
                forwarded: None,
                frozen: false,
            };
            let _ = self.table.insert(key, conn);
        }
        let Some(c) = self.table.get_mut(&key) else { return };
        if seg.fin() {
            c.fin_end = Some(seg.tcp.seq + seg.seg_len());
        }
        if c.frozen {
            if let Some(ack) = c.forwarded {
                let a = (c.key, c.mh_seq, ack, 0, c.mh_timestamps);
                self.stats.probes_answered += 1;
                let p = self.ack(a);
                out.push(Action::Inject(Side::ToWired, p));
            }
        }
    }

    /// An ACK from the mobile: returns the packet to forward (its ACK number perhaps one less).
    fn on_ack(&mut self, seg: &Segment, packet: Bytes, out: &mut Vec<Action>) -> Bytes {
        let Some(ack) = seg.tcp.ack else { return packet };
        let Some(c) = self.table.get_mut(&seg.key().reversed()) else { return packet };
        c.mh_seq = seg.tcp.seq + seg.seg_len();
        c.mh_window = seg.tcp.window;
        c.mh_timestamps = seg.tcp.timestamps;
        if c.mh_ack.is_none_or(|m| ack > m) {
            c.mh_ack = Some(ack);
        }
        if c.frozen {
            // The mobile is back before the host said so.
            let a = resume(c);
            self.stats.resumes += 1;
            let p = self.ack(a);
            out.push(Action::Inject(Side::ToWired, p));
            return self.on_ack(seg, packet, out);
        }
        let send = if c.fin_end == Some(ack) {
            self.stats.final_acks_released += 1;
            ack
        } else if ack <= c.data_start {
            ack
        } else {
            // Never below what the sender already has, so the mobile's DUPACKs stay DUPACKs.
            let held = ack + u32::MAX; // ack - 1
            match c.forwarded {
                Some(f) if held < f => f,
                _ => held,
            }
        };
        if c.forwarded.is_none_or(|f| send > f) {
            c.forwarded = Some(send);
        }
        if send == ack {
            return packet;
        }
        self.stats.acks_withheld += 1;
        with_ack(&packet, seg.tcp_at, send)
    }
}

type AckFields = (FlowKey, SeqNum, SeqNum, u16, Option<(u32, u32)>);

/// One mobile's connections as a supervisor knew them, on their way to the next one ([`Mtcp::export`]).
#[derive(Debug, Default)]
pub struct Handover {
    conns: Vec<Conn>,
}

impl Handover {
    /// How many connections it carries.
    pub fn connections(&self) -> usize {
        self.conns.len()
    }
}

/// Unfreezes `c`: the window update to send.
fn resume(c: &mut Conn) -> AckFields {
    c.frozen = false;
    let ack = c.forwarded.or(c.mh_ack).unwrap_or_default();
    (c.key, c.mh_seq, ack, c.mh_window, c.mh_timestamps)
}

/// A copy of `packet` with the TCP acknowledgment number `ack`, the checksum updated incrementally
/// (RFC 1624 eqn. 3, one 16-bit word at a time) so that a bad checksum stays bad.
fn with_ack(packet: &Bytes, tcp_at: usize, ack: SeqNum) -> Bytes {
    let mut buf = BytesMut::from(&packet[..]);
    let at = tcp_at + 8;
    let mut hc = u16::from_be_bytes([buf[tcp_at + 16], buf[tcp_at + 17]]);
    for (i, new) in ack.0.to_be_bytes().chunks(2).enumerate() {
        let w = at + 2 * i;
        let old = u16::from_be_bytes([buf[w], buf[w + 1]]);
        let new = u16::from_be_bytes([new[0], new[1]]);
        hc = !checksum::fold(u64::from(!hc) + u64::from(!old) + u64::from(new));
        buf[w..w + 2].copy_from_slice(&new.to_be_bytes());
    }
    buf[tcp_at + 16..tcp_at + 18].copy_from_slice(&hc.to_be_bytes());
    buf.freeze()
}

impl Agent for Mtcp {
    fn on_packet(&mut self, _now: Time, side: Side, packet: Bytes, out: &mut Vec<Action>) {
        let count = &mut self.stats.pass;
        let Some(seg) = parse::classify(&packet).tcp_or_pass(side, &packet, out, count) else { return };
        let packet = match side {
            Side::ToMobile => {
                self.on_data(&seg, out);
                packet
            }
            Side::ToWired => self.on_ack(&seg, packet, out),
        };
        out.push(Action::Forward(side, packet));
    }

    fn on_timeout(&mut self, _now: Time, _out: &mut Vec<Action>) {}

    fn poll_timeout(&self) -> Option<Time> {
        None
    }

    fn on_reachability(&mut self, now: Time, mobile: Ipv4Addr, reachable: bool, out: &mut Vec<Action>) {
        if reachable {
            self.mobile_reachable(now, mobile, out);
        } else {
            self.mobile_unreachable(now, mobile, out);
        }
    }

    fn hand_over(&mut self, mobile: Ipv4Addr) -> HandoverState {
        HandoverState { mtcp: Some(self.export(mobile)) }
    }

    fn take_over(&mut self, state: &mut HandoverState) {
        if let Some(h) = state.mtcp.take() {
            self.import(h);
        }
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let s = &self.stats;
        let mut c = vec![
            ("acks_withheld", s.acks_withheld),
            ("final_acks_released", s.final_acks_released),
            ("freezes", s.freezes),
            ("resumes", s.resumes),
            ("probes_answered", s.probes_answered),
            ("handed_over", s.handed_over),
            ("taken_over", s.taken_over),
        ];
        c.extend(s.pass.named());
        c
    }
}
