//! The passive, receiving end: answers the SYN, reassembles data, and acknowledges it like 4.4BSD —
//! cumulative ACKs, delayed for in-order data, immediate (a duplicate ACK) for out-of-order data and for
//! a segment that fills a hole (RFC 5681 §4.2), with SACK blocks when negotiated (RFC 2018 §4).
//!
//! The delayed ACK is a timer armed `delayed_ack_ms` after the first unacknowledged in-order segment
//! arrives, or, with `delayed_ack_tick`, BSD's fast timer: the next multiple of `delayed_ack_ms` from
//! time 0, so 0 to `delayed_ack_ms` later (what a base station's timers see from a 4.4BSD receiver). The application is taken to read
//! immediately, so the advertised window is always `max_window`; a zero window reaches a sender only from
//! a box on the path that advertises one for the mobile (the sender's persist mode answers it). With
//! `ack_rules = "linux"` the delayed ACK and quick ACKs follow Linux instead (`crate::delack`).

use crate::config::{ms, AckRules, ReceiverStats, TcpConfig};
use crate::delack::{DelayedAck, LinuxAcks};
use crate::rto::Rto;
use crate::segment::{headers_counted, parse_counted, seq_at, signed_offset_of, ts_now};
use bytes::Bytes;
use lasthop_wire::{Headers, SackBlocks, SeqNum, TcpFlags, TcpRepr, Time};
use std::collections::VecDeque;
use std::net::SocketAddrV4;
use std::time::Duration;

const TTL: u8 = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Listen,
    SynReceived,
    Established,
}

/// Receives one connection from a [`Sender`](crate::Sender) (or any TCP) and hands the bytes to
/// [`read`](Self::read) in order.
#[derive(Debug)]
pub struct Receiver {
    cfg: TcpConfig,
    local: SocketAddrV4,
    remote: SocketAddrV4,
    iss: SeqNum,
    irs: SeqNum,
    state: State,
    mss: u32,
    sack_ok: bool,
    ts_ok: bool,
    ts_recent: u32,
    /// Next expected offset from `irs` (the SYN is offset 0).
    rcv_nxt: u64,
    /// Out-of-order data as (offset, bytes), sorted by offset; pieces never overlap. A sorted deque rather
    /// than a tree: it holds at most a window of segments, which mostly arrive in order (a push at the
    /// back) and leave from the front when the hole before them fills, and every search is a binary search
    /// over contiguous memory.
    ooo: VecDeque<(u64, Bytes)>,
    /// Offset of the FIN once seen, even out of order.
    fin_at: Option<u64>,
    fin_received: bool,
    /// SACK blocks to report, most recently changed first (RFC 2018 §4).
    sack_recent: Vec<(u64, u64)>,
    ready: VecDeque<Bytes>,
    delivered: u64,
    /// In-order bytes received since the last ACK.
    unacked: u64,
    ack_deadline: Option<Time>,
    ack_now: bool,
    synack_pending: bool,
    last_ack: Option<u64>,
    delayed_ack: Duration,
    ident: u16,
    stats: ReceiverStats,
    /// Extra ACKs of `rcv_nxt` ordered by [`Receiver::send_dupacks`] (fast retransmit after handoff).
    dupacks_pending: u32,
    /// The next ACK carries the handoff mark, ordered by [`Receiver::send_handoff_mark`].
    mark_pending: bool,
    /// In-order data segments still to be acknowledged at once (`TcpConfig::quick_acks`).
    quick_acks_left: u32,
    /// The window an application that does not read at once leaves ([`Receiver::set_window`]); `None`
    /// advertises `max_window`.
    app_window: Option<u32>,
    /// The window in the last segment sent.
    advertised: u32,
    /// Linux's acknowledgment engine, with `ack_rules = "linux"`; `None` runs 4.4BSD's rules.
    linux_acks: Option<LinuxAcks>,
    /// In-order data segments since the last ACK (Linux's quick-ACK count goes down by these).
    segs_unacked: u32,
    /// When the SYN-ACK was sent, while it was sent once (Linux's receiver takes its RTO from the
    /// SYN-ACK's RTT; Karn: none from a repeated one).
    synack_sent: Option<Time>,
    synacks: u32,
}

impl Receiver {
    pub fn new(cfg: TcpConfig, local: SocketAddrV4, remote: SocketAddrV4, iss: SeqNum) -> Receiver {
        let beh = cfg.behaviours();
        let linux_acks = (beh.ack_rules == AckRules::Linux).then(|| {
            let window = cfg.max_window.min(u32::from(u16::MAX));
            LinuxAcks::new(beh.quick_acks, window, u32::from(cfg.mss.max(1)), Rto::new(&cfg).current())
        });
        Receiver {
            linux_acks,
            segs_unacked: 0,
            synack_sent: None,
            synacks: 0,
            delayed_ack: ms(cfg.delayed_ack_ms),
            mss: u32::from(cfg.mss.max(1)),
            // Linux's engine grants its own quick ACKs at the first data.
            quick_acks_left: if beh.ack_rules == AckRules::Linux { 0 } else { beh.quick_acks },
            app_window: None,
            advertised: cfg.max_window.min(u32::from(u16::MAX)),
            cfg,
            local,
            remote,
            iss,
            irs: SeqNum(0),
            state: State::Listen,
            sack_ok: false,
            ts_ok: false,
            ts_recent: 0,
            rcv_nxt: 0,
            ooo: VecDeque::new(),
            fin_at: None,
            fin_received: false,
            sack_recent: Vec::with_capacity(SackBlocks::MAX + 1),
            ready: VecDeque::new(),
            delivered: 0,
            unacked: 0,
            ack_deadline: None,
            ack_now: false,
            synack_pending: false,
            last_ack: None,
            ident: 0,
            stats: ReceiverStats::default(),
            dupacks_pending: 0,
            mark_pending: false,
        }
    }

    /// A receiver already synchronized with a [`Sender::new_established`](crate::Sender::new_established) of
    /// the same configuration whose initial sequence number is `irs`: ns's one-way `TCPSink` (no SYN, the
    /// first packet it sees is data). SACK is on when [`TcpConfig::sack`] is, timestamps when configured.
    pub fn new_established(
        cfg: TcpConfig,
        local: SocketAddrV4,
        remote: SocketAddrV4,
        iss: SeqNum,
        irs: SeqNum,
    ) -> Receiver {
        let mut r = Receiver::new(cfg, local, remote, iss);
        r.irs = irs;
        r.rcv_nxt = 1;
        r.sack_ok = r.cfg.sack;
        r.ts_ok = r.cfg.timestamps;
        r.state = State::Established;
        r
    }

    /// Sends `n` ACKs of the next expected byte at once, so that the sender sees duplicate ACKs and fast
    /// retransmits: the mobile host's network layer calls this when a handoff completes (Caceres 1995, "Fast
    /// Retransmissions": "three ordinary TCP ACKs" signal the fixed sender). When an ACK of new data is
    /// still owed (a delayed ACK pending), it goes first, so that all `n` are true duplicates. Nothing
    /// before the connection is set up.
    pub fn send_dupacks(&mut self, n: u32) {
        if self.last_ack.is_some() {
            if self.last_ack != Some(self.rcv_nxt) {
                self.ack_now = true;
            }
            self.dupacks_pending = self.dupacks_pending.saturating_add(n);
        }
    }

    /// Sends one ACK of the next expected byte carrying the handoff mark ([`lasthop_wire::handoff_option`]):
    /// the mobile host's network layer calls this when a handoff completes, the "specially marked TCP ACK"
    /// of Caceres 1995 ("Fast Retransmissions", Fig. 9 (b) "Transmitter on the SH"). A handoff-aware sender
    /// ([`TcpConfig::handoff_aware`](crate::TcpConfig)) goes back to its oldest unacknowledged byte at once;
    /// an unmodified one skips the option and sees an ordinary (duplicate) ACK. When an ACK of new data is
    /// owed, that ACK carries the mark. Nothing before the connection is set up.
    pub fn send_handoff_mark(&mut self) {
        if self.last_ack.is_some() {
            self.mark_pending = true;
        }
    }

    /// Limits the advertised window to `bytes` (never above `max_window`): the free space of an application
    /// buffer that is not read at once, such as a split-connection relay's (`crate::split`). The caller
    /// keeps the right edge from moving back (RFC 9293 §3.8.6: a receiver should not shrink the window).
    /// When the window opens by at least one MSS (or half of `max_window`, if smaller), a window update goes
    /// at once; smaller openings wait for the next ACK (RFC 9293 §3.8.6.2.2, receiver-side silly window
    /// avoidance).
    pub fn set_window(&mut self, bytes: u32) {
        let new = bytes.min(self.window_cap());
        self.app_window = Some(bytes);
        let opened = new.saturating_sub(self.advertised);
        if self.last_ack.is_some() && opened > 0 && opened >= self.mss.min(self.window_cap() / 2) {
            self.ack_now = true;
            self.stats.window_updates_sent += 1;
        }
    }

    fn window_cap(&self) -> u32 {
        self.cfg.max_window.min(u32::from(u16::MAX))
    }

    /// Takes in a whole IPv4 packet; other connections' packets are ignored, unreadable ones counted.
    pub fn handle_packet(&mut self, now: Time, packet: &Bytes) {
        if let Some(headers) = headers_counted(packet, &mut self.stats.malformed) {
            self.handle_parsed(now, packet, &headers);
        }
    }

    /// [`Self::handle_packet`] of a packet whose headers its host has read already (`headers`, from
    /// [`Headers::parse`] of `packet`): they are not read again; the checksums are verified here.
    pub fn handle_parsed(&mut self, now: Time, packet: &Bytes, headers: &Headers) {
        let Some(seg) = parse_counted(packet, headers, self.local, self.remote, &mut self.stats.malformed) else {
            return;
        };
        let r = seg.repr;
        if r.flags.contains(TcpFlags::RST) {
            return;
        }
        if r.flags.contains(TcpFlags::SYN) {
            match self.state {
                State::Listen => {
                    self.irs = r.seq;
                    self.rcv_nxt = 1;
                    self.mss = u32::from(self.cfg.mss.min(r.mss.unwrap_or(536)).max(1));
                    self.sack_ok = self.cfg.sack && r.sack_permitted;
                    self.ts_ok = self.cfg.timestamps && r.timestamps.is_some();
                    self.state = State::SynReceived;
                    self.synack_pending = true;
                }
                // A repeated SYN: our SYN-ACK was lost (or is late); answer it again.
                _ if r.seq == self.irs => self.synack_pending = true,
                _ => {}
            }
            if self.ts_ok {
                self.ts_recent = r.timestamps.map_or(0, |t| t.0);
            }
            return;
        }
        if self.state == State::Listen {
            return;
        }
        let Some(ack) = r.ack else { return };
        if self.state == State::SynReceived {
            if ack != self.iss + 1 {
                return;
            }
            self.state = State::Established;
            if let (Some(l), Some(sent)) = (&mut self.linux_acks, self.synack_sent) {
                // `tcp_synack_rtt_meas`: the passive opener's first RTT sample sets its RTO.
                let mut rto = Rto::new(&self.cfg);
                rto.sample_linux(now.as_nanos().saturating_sub(sent.as_nanos()), 1, 1);
                l.set_rto(rto.current());
            }
        }
        if self.ts_ok {
            if let Some((tsval, _)) = r.timestamps {
                self.note_tsval(r.seq, tsval);
            }
        }
        let mut fin = r.flags.contains(TcpFlags::FIN);
        if seg.payload.is_empty() && !fin {
            return; // a pure ACK: nothing to acknowledge
        }
        self.stats.segments_received += 1;
        let mut data = seg.payload;
        let mut start = signed_offset_of(self.irs, self.rcv_nxt, r.seq);
        if start < 1 {
            // Overlaps the SYN's sequence number or lies before it: only what follows can be data.
            let skip = (1 - start).min(data.len() as i64 + i64::from(fin));
            if skip > data.len() as i64 {
                self.stats.duplicate_segments += 1;
                self.ack_now = true;
                return;
            }
            data = data.slice(skip as usize..);
            start = 1;
        }
        let start = start as u64;
        // Beyond the window we advertised: no sender of ours does this; keep nothing, say where we are.
        let wnd_end = self.rcv_nxt + u64::from(self.cfg.max_window.min(u32::from(u16::MAX)));
        if start + data.len() as u64 > wnd_end {
            if start >= wnd_end {
                self.ack_now = true;
                return;
            }
            data = data.slice(..(wnd_end - start) as usize);
            fin = false;
        }
        self.on_data(now, start, data, fin);
    }

    /// RFC 7323 §4.3 (Linux `tcp_replace_ts_recent`): the timestamp to echo is taken only from a segment
    /// that starts at or before the point the last ACK acknowledged, and never moves back. So a delayed ACK
    /// of two segments echoes the first one's, a DUPACK for an out-of-order segment echoes the last
    /// in-order one's, and the ACK of a retransmission that fills the hole echoes the retransmission's:
    /// the sender's RTT from the echo spans what the ACK was waiting for.
    fn note_tsval(&mut self, seq: SeqNum, tsval: u32) {
        // Before any ACK, the SYN-ACK acknowledged the SYN: offset 1 (Linux's `rcv_wup` starts at `rcv_nxt`).
        let last_acked = self.last_ack.unwrap_or(1) as i64;
        let at_or_before_last_ack = signed_offset_of(self.irs, self.rcv_nxt, seq) <= last_acked;
        if at_or_before_last_ack && tsval.wrapping_sub(self.ts_recent) as i32 >= 0 {
            self.ts_recent = tsval;
        }
    }

    fn on_data(&mut self, now: Time, start: u64, mut data: Bytes, fin: bool) {
        if fin {
            self.fin_at.get_or_insert(start + data.len() as u64);
        }
        // Nothing follows the FIN (RFC 793 §3.9): bytes claimed beyond it are not the stream's.
        if let Some(f) = self.fin_at {
            if start >= f && !data.is_empty() {
                self.stats.duplicate_segments += 1;
                self.ack_now = true;
                return;
            }
            if start < f && start + data.len() as u64 > f {
                data = data.slice(..(f - start) as usize);
            }
        }
        let end = start + data.len() as u64;
        let seg_end = end + u64::from(fin);
        if seg_end <= self.rcv_nxt {
            self.stats.duplicate_segments += 1;
            self.ack_now = true; // re-ACK so a sender whose ACKs were lost learns where we are
            if let Some(l) = &mut self.linux_acks {
                // "A retransmit, 2nd most common case. Force an immediate ack." (`tcp_data_queue`)
                l.enter_quickack_mode();
            }
            return;
        }
        if start > self.rcv_nxt {
            self.stats.out_of_order_segments += 1;
            if end > start && !self.store_out_of_order(start, data) {
                self.stats.duplicate_segments += 1;
            }
            self.ack_now = true; // a duplicate ACK, which drives the sender's fast retransmit
            return;
        }
        let filled_hole = !self.ooo.is_empty();
        if end > self.rcv_nxt {
            data = data.slice((self.rcv_nxt - start) as usize..);
            self.deliver(data);
        }
        while self.ooo.front().is_some_and(|&(s, _)| s <= self.rcv_nxt) {
            let (s, piece) = self.ooo.pop_front().expect("checked");
            let piece_end = s + piece.len() as u64;
            if piece_end > self.rcv_nxt {
                self.deliver(piece.slice((self.rcv_nxt - s) as usize..));
            }
        }
        let nxt = self.rcv_nxt;
        self.sack_recent.retain(|&(l, _)| l > nxt);
        if self.fin_at == Some(self.rcv_nxt) && !self.fin_received {
            self.fin_received = true;
            self.rcv_nxt += 1;
            self.ack_now = true;
        }
        self.segs_unacked = self.segs_unacked.saturating_add(1);
        if self.linux_acks.is_some() {
            self.linux_ack_check(now, filled_hole);
            return;
        }
        let full = u64::from(self.cfg.ack_every.max(1)) * u64::from(self.mss);
        // Quick ACKs for the connection's first data segments (Linux `tcp_event_data_recv`), so a sender in
        // slow start from one segment does not wait out the delayed-ACK timer.
        let quick = self.quick_acks_left > 0;
        self.quick_acks_left = self.quick_acks_left.saturating_sub(1);
        if filled_hole || quick || self.delayed_ack.is_zero() || self.unacked >= full {
            self.ack_now = true;
        } else if self.ack_deadline.is_none() {
            self.ack_deadline = Some(if self.cfg.delayed_ack_tick {
                // tcp_fasttimo: the next tick strictly after now (a segment arriving on a tick waits a whole one).
                let tick = self.delayed_ack.as_nanos() as u64;
                Time((now.as_nanos() / tick).saturating_add(1).saturating_mul(tick))
            } else {
                now + self.delayed_ack
            });
        }
    }

    /// Linux's `tcp_event_data_recv` and `__tcp_ack_snd_check` for in-order data: at once for the
    /// second full segment, in quick-ACK mode, and when a hole was filled; else the delayed-ACK timer.
    fn linux_ack_check(&mut self, now: Time, filled_hole: bool) {
        let full = u64::from(self.cfg.ack_every.max(1)) * u64::from(self.mss);
        let Some(l) = &mut self.linux_acks else { return };
        l.on_data(now);
        if self.ack_now || filled_hole || l.in_quickack_mode() || self.unacked >= full {
            self.ack_now = true;
            return;
        }
        match l.delayed_ack(now, self.ack_deadline) {
            DelayedAck::Now => self.ack_now = true,
            DelayedAck::At(t) => self.ack_deadline = Some(t),
        }
    }

    fn deliver(&mut self, data: Bytes) {
        let n = data.len() as u64;
        self.rcv_nxt += n;
        self.unacked += n;
        self.delivered += n;
        self.ready.push_back(data);
    }

    /// Keeps the parts of `data` (at `start`, above `rcv_nxt`) not held yet; false if it held them all.
    /// Then, with SACK, makes the block containing it the first SACK block.
    fn store_out_of_order(&mut self, start: u64, data: Bytes) -> bool {
        let end = start + data.len() as u64;
        // The first piece at or after `start`; the one before it may reach into the segment.
        let first = self.first_piece_from(start);
        let mut gaps: [(u64, u64); 8] = [(0, 0); 8];
        let mut ngaps = 0;
        let mut overflow = false;
        let mut cur = start;
        if first > 0 {
            cur = cur.max(piece_end(&self.ooo[first - 1]));
        }
        for piece in self.ooo.range(first..).take_while(|&&(s, _)| s < end) {
            if piece.0 > cur {
                if ngaps == gaps.len() {
                    overflow = true;
                    break;
                }
                gaps[ngaps] = (cur, piece.0);
                ngaps += 1;
            }
            cur = cur.max(piece_end(piece));
        }
        if !overflow && cur < end && ngaps < gaps.len() {
            gaps[ngaps] = (cur, end);
            ngaps += 1;
        }
        // A segment overlapping more than eight held pieces cannot come from our sender; keep what fits.
        for &(a, b) in &gaps[..ngaps] {
            let at = self.first_piece_from(a);
            self.ooo.insert(at, (a, data.slice((a - start) as usize..(b - start) as usize)));
        }
        if ngaps == 0 {
            return false;
        }
        if self.sack_ok {
            let (l, r) = self.held_block_around(start, end);
            self.sack_recent.retain(|&(a, b)| b < l || a > r);
            self.sack_recent.insert(0, (l, r));
            self.sack_recent.truncate(SackBlocks::MAX);
        }
        true
    }

    /// Index of the first held piece that starts at or after `at` (`ooo` is sorted by start). Segments
    /// mostly arrive in order, so the answer is mostly the end of the store: that is checked before
    /// searching.
    fn first_piece_from(&self, at: u64) -> usize {
        match self.ooo.back() {
            Some(&(last, _)) if last >= at => self.ooo.partition_point(|&(s, _)| s < at),
            _ => self.ooo.len(),
        }
    }

    /// The contiguous block of held data around `start .. end` (pieces that touch count as contiguous).
    fn held_block_around(&self, start: u64, end: u64) -> (u64, u64) {
        let mut l = start;
        let mut i = self.first_piece_from(l);
        while i > 0 && piece_end(&self.ooo[i - 1]) >= l {
            i -= 1;
            l = self.ooo[i].0;
        }
        let mut i = self.first_piece_from(end);
        let mut r = if i > 0 { end.max(piece_end(&self.ooo[i - 1])) } else { end };
        while i < self.ooo.len() && self.ooo[i].0 == r {
            r = piece_end(&self.ooo[i]);
            i += 1;
        }
        (l, r)
    }

    /// The next packet to send: a SYN-ACK or an ACK.
    pub fn poll_transmit(&mut self, now: Time) -> Option<Bytes> {
        if self.synack_pending {
            self.synack_pending = false;
            self.synacks += 1;
            self.synack_sent = (self.synacks == 1).then_some(now);
            let repr = TcpRepr {
                seq: self.iss,
                ack: Some(self.irs + 1),
                flags: TcpFlags::SYN,
                mss: Some(self.cfg.mss),
                sack_permitted: self.sack_ok,
                timestamps: self.ts_ok.then(|| (ts_now(now), self.ts_recent)),
                ..self.base_repr()
            };
            return Some(self.emit(&repr));
        }
        if !self.ack_now && self.dupacks_pending > 0 {
            // One of the ACKs ordered by send_dupacks; it repeats the last ACK, so it is a DUPACK.
            self.dupacks_pending -= 1;
            self.ack_now = true;
        }
        if self.mark_pending {
            self.ack_now = true;
        }
        if !self.ack_now {
            return None;
        }
        self.ack_now = false;
        self.ack_deadline = None;
        self.unacked = 0;
        if let Some(l) = &mut self.linux_acks {
            l.on_ack_sent(self.segs_unacked);
        }
        self.segs_unacked = 0;
        let mut repr = TcpRepr {
            seq: self.iss + 1,
            ack: Some(seq_at(self.irs, self.rcv_nxt)),
            timestamps: self.ts_ok.then(|| (ts_now(now), self.ts_recent)),
            handoff_mark: std::mem::take(&mut self.mark_pending),
            ..self.base_repr()
        };
        if repr.handoff_mark {
            self.stats.handoff_marks_sent += 1;
        }
        if self.sack_ok {
            let max = repr.max_sack_blocks();
            for &(l, r) in self.sack_recent.iter().take(max) {
                repr.sack.push(seq_at(self.irs, l), seq_at(self.irs, r));
            }
        }
        self.stats.acks_sent += 1;
        if self.last_ack == Some(self.rcv_nxt) {
            self.stats.dupacks_sent += 1;
        }
        self.last_ack = Some(self.rcv_nxt);
        Some(self.emit(&repr))
    }

    fn base_repr(&mut self) -> TcpRepr {
        self.advertised = self.app_window.map_or(self.window_cap(), |w| w.min(self.window_cap()));
        TcpRepr {
            src_port: self.local.port(),
            dst_port: self.remote.port(),
            window: self.advertised as u16,
            ..TcpRepr::default()
        }
    }

    fn emit(&mut self, repr: &TcpRepr) -> Bytes {
        let pkt = repr.emit_ipv4(*self.local.ip(), *self.remote.ip(), self.ident, TTL, &[]);
        self.ident = self.ident.wrapping_add(1);
        pkt
    }

    /// The delayed-ACK timer.
    pub fn poll_timeout(&self) -> Option<Time> {
        self.ack_deadline
    }

    pub fn handle_timeout(&mut self, now: Time) {
        if self.ack_deadline.is_some_and(|d| d <= now) {
            self.ack_deadline = None;
            self.ack_now = true;
        }
    }

    /// The next in-order application bytes, as slices of the received packets.
    pub fn read(&mut self) -> Option<Bytes> {
        self.ready.pop_front()
    }

    /// Application bytes received in order so far (read or not).
    pub fn delivered_bytes(&self) -> u64 {
        self.delivered
    }

    /// Bytes held out of order, waiting for a hole before them to fill.
    pub fn out_of_order_bytes(&self) -> u64 {
        self.ooo.iter().map(|(_, b)| b.len() as u64).sum()
    }

    /// The next expected offset (the SYN is offset 0, application byte `i` is offset `1 + i`).
    pub fn rcv_nxt_offset(&self) -> u64 {
        self.rcv_nxt
    }

    /// A pure ACK of `offset` (at most the next expected byte) advertising `window`, built now outside the
    /// receiver's own acknowledgment policy: for a relay that acknowledges to its sender only what the far
    /// end has acknowledged (M-TCP's SH-TCP, `crate::split::mtcp`). Nothing before the connection is set up.
    pub fn ack_of(&mut self, now: Time, offset: u64, window: u16) -> Option<Bytes> {
        if self.state == State::Listen {
            return None;
        }
        let repr = TcpRepr {
            src_port: self.local.port(),
            dst_port: self.remote.port(),
            seq: self.iss + 1,
            ack: Some(seq_at(self.irs, offset.min(self.rcv_nxt))),
            window,
            timestamps: self.ts_ok.then(|| (ts_now(now), self.ts_recent)),
            ..TcpRepr::default()
        };
        self.stats.acks_sent += 1;
        Some(self.emit(&repr))
    }

    /// The peer's SYN has been seen (the connection is half open or open): an application on this side could
    /// send now.
    pub fn is_synchronized(&self) -> bool {
        self.state != State::Listen
    }

    pub fn fin_received(&self) -> bool {
        self.fin_received
    }

    pub fn stats(&self) -> &ReceiverStats {
        &self.stats
    }
}

/// The offset just past an out-of-order piece.
fn piece_end((start, piece): &(u64, Bytes)) -> u64 {
    start + piece.len() as u64
}

#[cfg(test)]
mod ooo_tests {
    use super::*;
    use std::net::Ipv4Addr;

    /// Held bytes as one flag per offset: the plainest model of the out-of-order store.
    struct Model {
        held: Vec<bool>,
    }

    impl Model {
        /// The unheld runs of `start .. end`, the first eight of them (what the store keeps).
        fn gaps(&self, start: u64, end: u64) -> Vec<(u64, u64)> {
            let mut gaps: Vec<(u64, u64)> = Vec::new();
            for i in start..end {
                if self.held[i as usize] {
                    continue;
                }
                match gaps.last_mut() {
                    Some(g) if g.1 == i => g.1 = i + 1,
                    _ => gaps.push((i, i + 1)),
                }
            }
            gaps.truncate(8);
            gaps
        }

        /// The held run around `start .. end`.
        fn block(&self, start: u64, end: u64) -> (u64, u64) {
            let (mut l, mut r) = (start, end);
            while l > 0 && self.held[l as usize - 1] {
                l -= 1;
            }
            while self.held[r as usize] {
                r += 1;
            }
            (l, r)
        }
    }

    proptest::proptest! {
        /// Segments stored in any order keep exactly the bytes not held before (non-overlapping, sorted,
        /// each with its own content), and the first SACK block is the held run around the segment.
        #[test]
        fn store_keeps_new_bytes_and_reports_the_block_around(
            segments in proptest::collection::vec((1u64..400, 1usize..40), 1..60),
        ) {
            let addr = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), 1);
            let mut r = Receiver::new(TcpConfig { sack: true, ..TcpConfig::default() }, addr, addr, SeqNum(0));
            r.sack_ok = true;
            let mut model = Model { held: vec![false; 600] };
            let stream: Vec<u8> = (0..600u32).map(|i| (i * 7 + 3) as u8).collect();
            for (start, len) in segments {
                let end = start + len as u64;
                let gaps = model.gaps(start, end);
                let data = Bytes::copy_from_slice(&stream[start as usize..end as usize]);
                let stored = r.store_out_of_order(start, data);
                proptest::prop_assert_eq!(stored, !gaps.is_empty());
                for (a, b) in gaps {
                    model.held[a as usize..b as usize].fill(true);
                }
                if stored {
                    proptest::prop_assert_eq!(r.sack_recent[0], model.block(start, end));
                }
                let mut last_end = 0;
                let mut held = vec![false; 600];
                for (s, p) in &r.ooo {
                    proptest::prop_assert!(*s >= last_end, "sorted, no overlap");
                    proptest::prop_assert_eq!(&p[..], &stream[*s as usize..*s as usize + p.len()]);
                    held[*s as usize..*s as usize + p.len()].fill(true);
                    last_end = s + p.len() as u64;
                }
                proptest::prop_assert_eq!(&held, &model.held);
            }
        }
    }
}
