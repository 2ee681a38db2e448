//! The relay in both directions (a fixed sender and a mobile receiver, a mobile sender and a fixed
//! receiver): both halves, the buffer limit, FINs, and handoff by moving the relay. A small event loop owns
//! time: a wired path (one-way delay) and a wireless path (one-way delay, a rate) meet at the relay, each
//! with a drop filter toward its host. Hand-built segments drive the relay directly in the state-machine
//! tests at the end.

use super::*;
use crate::{Receiver, Sender, TcpConfig, Variant};
use std::collections::BTreeMap;
use std::net::Ipv4Addr;

const FH: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), 40000);
const MH: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::new(10, 0, 1, 2), 5001);

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum At {
    Fh,
    RelayFromFh,
    RelayFromMh,
    Mh,
}

/// A host's end of its connection with the relay.
#[allow(clippy::large_enum_variant)] // two per test network
enum End {
    Sends(Sender),
    Receives(Receiver),
}

impl End {
    fn handle_packet(&mut self, now: Time, p: &Bytes) {
        match self {
            End::Sends(s) => s.handle_packet(now, p),
            End::Receives(r) => r.handle_packet(now, p),
        }
    }

    fn poll_transmit(&mut self, now: Time) -> Option<Bytes> {
        match self {
            End::Sends(s) => s.poll_transmit(now),
            End::Receives(r) => r.poll_transmit(now),
        }
    }

    fn poll_timeout(&self) -> Option<Time> {
        match self {
            End::Sends(s) => s.poll_timeout(),
            End::Receives(r) => r.poll_timeout(),
        }
    }

    fn handle_timeout(&mut self, now: Time) {
        match self {
            End::Sends(s) => s.handle_timeout(now),
            End::Receives(r) => r.handle_timeout(now),
        }
    }
}

struct Net {
    now: Time,
    fh: End,
    /// `None` while the relay's state is on its way to another base station.
    relay: Option<SplitRelay>,
    mh: End,
    wired_delay: Duration,
    wireless_delay: Duration,
    /// Wireless rate, bytes per second, one queue per direction.
    wireless_rate: u64,
    busy: [Time; 2],
    /// (arrival, insertion order) -> (destination, packet)
    in_flight: BTreeMap<(Time, u64), (At, Bytes)>,
    order: u64,
    /// True drops the n-th packet sent on the wireless hop toward the mobile.
    drop_to_mobile: Box<dyn FnMut(u64) -> bool>,
    to_mobile: u64,
    /// True drops the n-th packet sent on the wired path toward the fixed host.
    drop_to_fixed: Box<dyn FnMut(u64) -> bool>,
    to_fixed: u64,
    /// Bytes the data receiver has read, each checked against the stream's content.
    read: u64,
    /// The mobile is out of reach: everything sent over the air either way is lost.
    cut_off: bool,
}

impl Net {
    /// A fixed host sending `total` bytes to the mobile through the relay.
    fn new(cfg: SplitConfig, total: u64) -> Net {
        Net::with_direction(Direction::ToMobile, cfg, total)
    }

    /// The mobile sending `total` bytes to the fixed host through the relay.
    fn from_mobile(cfg: SplitConfig, total: u64) -> Net {
        Net::with_direction(Direction::FromMobile, cfg, total)
    }

    fn with_direction(direction: Direction, cfg: SplitConfig, total: u64) -> Net {
        let mobile_sack = cfg.wireless.sack || cfg.wireless.variant == Variant::Sack;
        let mh_cfg = TcpConfig { sack: mobile_sack, ..TcpConfig::default() };
        let relay = SplitRelay::new(cfg, direction, FH, MH, SeqNum(1 << 31), SeqNum(12345));
        let (fh, mh) = match direction {
            Direction::ToMobile => {
                let mut fh = Sender::new(TcpConfig::default(), FH, MH, SeqNum(u32::MAX - 3000), total);
                fh.connect(Time::ZERO);
                (End::Sends(fh), End::Receives(Receiver::new(mh_cfg, MH, FH, SeqNum(99))))
            }
            Direction::FromMobile => {
                let mh_cfg = TcpConfig { variant: if mobile_sack { Variant::Sack } else { Variant::Reno }, ..mh_cfg };
                let mut mh = Sender::new(mh_cfg, MH, FH, SeqNum(u32::MAX - 3000), total);
                mh.connect(Time::ZERO);
                (End::Receives(Receiver::new(TcpConfig::default(), FH, MH, SeqNum(99))), End::Sends(mh))
            }
        };
        Net {
            now: Time::ZERO,
            fh,
            relay: Some(relay),
            mh,
            wired_delay: Duration::from_millis(10),
            wireless_delay: Duration::from_millis(2),
            wireless_rate: 250_000,
            busy: [Time::ZERO; 2],
            in_flight: BTreeMap::new(),
            order: 0,
            drop_to_mobile: Box::new(|_| false),
            to_mobile: 0,
            drop_to_fixed: Box::new(|_| false),
            to_fixed: 0,
            read: 0,
            cut_off: false,
        }
    }

    /// The data sender, wherever it is.
    fn sender(&self) -> &Sender {
        match (&self.fh, &self.mh) {
            (End::Sends(s), _) | (_, End::Sends(s)) => s,
            _ => unreachable!("one end sends"),
        }
    }

    /// The data receiver, wherever it is.
    fn receiver(&mut self) -> &mut Receiver {
        match (&mut self.fh, &mut self.mh) {
            (End::Receives(r), _) | (_, End::Receives(r)) => r,
            _ => unreachable!("one end receives"),
        }
    }

    fn send(&mut self, to: At, p: Bytes) {
        let arrival = match to {
            At::RelayFromFh | At::Fh => {
                if to == At::Fh {
                    self.to_fixed += 1;
                    if (self.drop_to_fixed)(self.to_fixed - 1) {
                        return;
                    }
                }
                self.now + self.wired_delay
            }
            At::Mh | At::RelayFromMh => {
                if self.cut_off {
                    return;
                }
                let dir = usize::from(to == At::Mh);
                if to == At::Mh {
                    self.to_mobile += 1;
                    if (self.drop_to_mobile)(self.to_mobile - 1) {
                        return;
                    }
                }
                let start = self.busy[dir].max(self.now);
                self.busy[dir] = start + Duration::from_nanos(p.len() as u64 * 1_000_000_000 / self.wireless_rate);
                self.busy[dir] + self.wireless_delay
            }
        };
        self.order += 1;
        self.in_flight.insert((arrival, self.order), (to, p));
    }

    fn flush(&mut self) {
        while let Some(p) = self.fh.poll_transmit(self.now) {
            self.send(At::RelayFromFh, p);
        }
        if let Some(r) = self.relay.as_mut() {
            let mut out = Vec::new();
            while let Some(x) = r.poll_transmit(self.now) {
                out.push(x);
            }
            for (to, p) in out {
                self.send(if to == Toward::Wired { At::Fh } else { At::Mh }, p);
            }
        }
        while let Some(p) = self.mh.poll_transmit(self.now) {
            self.send(At::RelayFromMh, p);
        }
        let mut read = self.read;
        let receiver = self.receiver();
        while let Some(b) = receiver.read() {
            assert!(payload::matches(read, &b), "corrupt bytes at the receiver at offset {read}");
            read += b.len() as u64;
        }
        self.read = read;
    }

    /// Runs until `until` or until nothing is left to do.
    fn run(&mut self, until: Time) {
        loop {
            self.flush();
            let timers =
                [self.fh.poll_timeout(), self.relay.as_ref().and_then(|r| r.poll_timeout()), self.mh.poll_timeout()];
            let next_timer = timers.into_iter().flatten().min();
            let next_packet = self.in_flight.keys().next().map(|k| k.0);
            let Some(next) = [next_timer, next_packet].into_iter().flatten().min() else { return };
            if next > until {
                self.now = until;
                return;
            }
            self.now = next;
            if next_packet == Some(next) {
                let (_, (to, p)) = self.in_flight.pop_first().unwrap();
                match (to, self.relay.as_mut()) {
                    (At::Fh, _) => self.fh.handle_packet(self.now, &p),
                    (At::Mh, _) => self.mh.handle_packet(self.now, &p),
                    (At::RelayFromFh, Some(r)) => r.handle_packet(self.now, false, &p),
                    (At::RelayFromMh, Some(r)) => r.handle_packet(self.now, true, &p),
                    // The relay is being moved: packets to the base station are lost.
                    (_, None) => {}
                }
            } else {
                self.fh.handle_timeout(self.now);
                if let Some(r) = self.relay.as_mut() {
                    r.handle_timeout(self.now);
                }
                self.mh.handle_timeout(self.now);
            }
        }
    }

    fn relay(&self) -> &SplitRelay {
        self.relay.as_ref().unwrap()
    }

    /// Bytes the data sender saw acknowledged that the data receiver has not received.
    fn acked_not_delivered(&mut self) -> u64 {
        let acked = self.sender().snd_una_offset();
        acked.saturating_sub(self.receiver().delivered_bytes())
    }
}

#[test]
fn both_halves_carry_a_whole_transfer_intact() {
    let total = 300_000;
    let mut n = Net::new(SplitConfig::default(), total);
    n.run(Time::from_secs(60));
    assert_eq!(n.read, total);
    assert!(n.sender().is_finished(), "the fixed sender saw its FIN acknowledged");
    assert!(n.relay().is_finished());
    assert_eq!(n.relay().stats().bytes_relayed, total);
    assert_eq!(n.relay().stats().corrupt_bytes, 0);
}

#[test]
fn the_sender_is_acknowledged_before_the_mobile_has_the_data() {
    let mut n = Net::new(SplitConfig::default(), 300_000);
    // The wired side is faster than the 2 Mb/s hop: the relay's buffer fills and the sender runs ahead.
    n.run(Time::from_millis(600));
    let ahead = n.acked_not_delivered();
    assert!(ahead > 20_000, "acknowledged but not at the mobile: {ahead}");
    assert!(ahead <= 65536 + 1 + 1460 * 2, "bounded by the buffer plus what is on the hop: {ahead}");
}

/// Runs `n`, a relay with a 16 KB buffer whose data receiver has stopped hearing it, for 3 s: the buffer
/// fills, no further, and the data sender waits on a zero window.
fn stall_until_the_buffer_is_full(n: &mut Net) {
    n.run(Time::from_secs(3));
    assert!(n.relay().buffered_bytes() >= 16384 - 1460, "full: {}", n.relay().buffered_bytes());
    assert!(n.relay().stats().max_buffered <= 16384 + 1, "bounded: {}", n.relay().stats().max_buffered);
    assert!(n.sender().is_persisting(), "the sender waits on a zero window");
}

#[test]
fn the_buffer_limit_closes_the_window_and_a_window_update_reopens_it() {
    let cfg = SplitConfig { buffer_bytes: 16384, ..SplitConfig::default() };
    let mut n = Net::new(cfg, 200_000);
    // The mobile hears nothing after the first 5 packets for a while (a fade).
    n.drop_to_mobile = Box::new(|i| i >= 5);
    stall_until_the_buffer_is_full(&mut n);
    let probes = n.sender().stats().persist_probes;
    n.drop_to_mobile = Box::new(|_| false);
    n.run(Time::from_secs(120));
    assert_eq!(n.read, 200_000);
    assert!(n.sender().is_finished());
    assert!(n.relay().receiving().stats().window_updates_sent > 0);
    assert!(n.sender().stats().persist_probes >= probes);
}

#[test]
fn split_sack_recovers_wireless_losses_with_selective_acks() {
    let wireless = TcpConfig { variant: Variant::Sack, sack: true, ..TcpConfig::default() };
    let mut n = Net::new(SplitConfig { wireless, ..SplitConfig::default() }, 200_000);
    n.drop_to_mobile = Box::new(|i| i % 17 == 5);
    n.run(Time::from_secs(120));
    assert_eq!(n.read, 200_000);
    assert!(n.relay().sending().stats().segments_retransmitted > 0);
    assert_eq!(n.sender().stats().segments_retransmitted, 0, "wireless losses never reach the fixed sender");
}

#[test]
fn a_handoff_moves_both_connections_and_the_buffered_bytes() {
    let total = 300_000;
    let mut n = Net::new(SplitConfig::default(), total);
    n.run(Time::from_millis(500));
    let relay = n.relay.take().unwrap();
    let buffered = relay.buffered_bytes();
    assert!(buffered > 0);
    let cost = StateTransferCost::default();
    let latency = cost.latency(buffered);
    // While the state is on the wire, packets to the base station are lost; then the new one carries on.
    n.run(n.now + latency);
    n.relay = Some(relay);
    n.run(Time::from_secs(120));
    assert_eq!(n.read, total, "nothing lost across the handoff");
    assert!(n.sender().is_finished());
}

#[test]
fn state_transfer_cost_follows_the_i_tcp_measurements() {
    let c = StateTransferCost::default();
    assert_eq!(c.latency(0), Duration::from_millis(265));
    assert_eq!(c.latency(32 * 1024), Duration::from_millis(1430));
    assert!(c.validate().is_ok());
    let bad = StateTransferCost { per_kb_ms: f64::NAN, ..c };
    let (field, message) = bad.validate().unwrap_err();
    assert_eq!(field, "per_kb_ms");
    assert!(message.contains("NaN"), "{message}");
}

#[test]
fn set_window_limits_the_advertised_window_and_sends_an_update_when_it_opens() {
    use lasthop_wire::{Ipv4Packet, TcpPacket, TcpRepr};
    let window =
        |p: &Bytes| TcpPacket::new_checked(Ipv4Packet::new_checked(&p[..]).unwrap().payload()).unwrap().window_len();
    let mut r = Receiver::new(TcpConfig { delayed_ack_ms: 0.0, ..TcpConfig::default() }, MH, FH, SeqNum(5));
    r.set_window(3000);
    let syn = TcpRepr {
        src_port: FH.port(),
        dst_port: MH.port(),
        seq: SeqNum(100),
        flags: lasthop_wire::TcpFlags::SYN,
        mss: Some(1000),
        ..TcpRepr::default()
    };
    r.handle_packet(Time::ZERO, &syn.emit_ipv4(*FH.ip(), *MH.ip(), 0, 64, &[]));
    assert_eq!(window(&r.poll_transmit(Time::ZERO).unwrap()), 3000, "the SYN-ACK advertises the limit");
    let data = TcpRepr {
        src_port: FH.port(),
        dst_port: MH.port(),
        seq: SeqNum(101),
        ack: Some(SeqNum(6)),
        ..TcpRepr::default()
    };
    r.handle_packet(Time::ZERO, &data.emit_ipv4(*FH.ip(), *MH.ip(), 0, 64, &[0u8; 1000]));
    r.set_window(0);
    assert_eq!(window(&r.poll_transmit(Time::ZERO).unwrap()), 0);
    r.set_window(500);
    assert_eq!(r.poll_transmit(Time::ZERO), None, "opened by less than one MSS: no update yet");
    r.set_window(1200);
    assert_eq!(window(&r.poll_transmit(Time::ZERO).expect("opened by an MSS")), 1200);
    r.set_window(70_000);
    assert_eq!(window(&r.poll_transmit(Time::ZERO).unwrap()), 65535, "never above max_window");
    assert_eq!(r.stats().window_updates_sent, 2);
}

#[test]
fn a_moved_relay_carries_its_buffers_and_resends_from_the_mobiles_last_ack_at_once() {
    use lasthop_wire::{Ipv4Packet, TcpPacket};
    let mut n = Net::new(SplitConfig::default(), 300_000);
    n.run(Time::from_millis(500));
    let mut relay = n.relay.take().unwrap();
    // Everything in order from the fixed host: the state is the bytes the mobile has not acknowledged.
    assert_eq!(relay.receiving().out_of_order_bytes(), 0);
    assert_eq!(relay.state_bytes(), relay.buffered_bytes());
    assert!(relay.state_bytes() > 20_000, "a full buffer moves: {}", relay.state_bytes());
    let (una, max) = (relay.sending().snd_una_offset(), relay.sending().snd_max_offset());
    assert!(una < max, "segments were in flight into the old cell");
    // Resumed at the new base station 300 ms later: the first segment goes out at once, from SND.UNA.
    let later = n.now + Duration::from_millis(300);
    assert!(relay.poll_timeout().is_some_and(|t| t > later), "no timer would have fired by then");
    relay.resume_after_move(later);
    let (toward, p) = relay.poll_transmit(later).expect("a retransmission at once");
    assert_eq!(toward, Toward::Mobile);
    let ip = Ipv4Packet::new_checked(&p[..]).unwrap();
    let seg = TcpPacket::new_checked(ip.payload()).unwrap();
    assert_eq!(seg.seq_number(), SeqNum(12345) + 1 + una as u32);
    assert_eq!(relay.poll_transmit(later), None, "slow start: one segment");
    assert_eq!(relay.sending().stats().fast_retransmits, 1);
}

#[test]
fn a_mobile_senders_transfer_crosses_the_relay_intact() {
    let total = 300_000;
    let mut n = Net::from_mobile(SplitConfig::default(), total);
    n.run(Time::from_secs(60));
    assert_eq!(n.read, total);
    assert!(n.sender().is_finished(), "the mobile saw its FIN acknowledged");
    assert_eq!(n.relay().direction(), Direction::FromMobile);
    assert!(n.relay().is_finished());
    assert_eq!(n.relay().stats().bytes_relayed, total);
    assert_eq!(n.relay().stats().corrupt_bytes, 0);
    assert_eq!(n.relay().sending().stats().segments_retransmitted, 0, "nothing lost on the wired half");
}

#[test]
fn a_stalled_wired_half_fills_the_buffer_closes_the_mobiles_window_and_the_mobile_runs_ahead() {
    let cfg = SplitConfig { buffer_bytes: 16384, ..SplitConfig::default() };
    let mut n = Net::from_mobile(cfg, 200_000);
    // The fixed host hears nothing from the relay after its first 5 packets for a while.
    n.drop_to_fixed = Box::new(|i| i >= 5);
    stall_until_the_buffer_is_full(&mut n);
    let ahead = n.acked_not_delivered();
    assert!((16384 - 1460..=16384 + 1).contains(&ahead), "acknowledged to the mobile, not at the fixed host: {ahead}");
    n.drop_to_fixed = Box::new(|_| false);
    n.run(Time::from_secs(120));
    assert_eq!(n.read, 200_000);
    assert!(n.sender().is_finished());
    assert_eq!(n.acked_not_delivered(), 0);
    assert!(n.relay().receiving().stats().window_updates_sent > 0, "the mobile's window reopened");
    assert!(n.relay().sending().stats().segments_retransmitted > 0, "the relay resent on the wired half");
    assert_eq!(n.sender().stats().segments_retransmitted, 0, "wired losses never reach the mobile");
}

#[test]
fn a_moved_reverse_relay_carries_its_buffers_and_prompts_the_mobile_with_three_duplicate_acks() {
    use lasthop_wire::{Ipv4Packet, TcpPacket};
    let total = 300_000;
    let mut n = Net::from_mobile(SplitConfig::default(), total);
    n.run(Time::from_millis(500));
    let mut relay = n.relay.take().unwrap();
    let latency = StateTransferCost::default().latency(relay.state_bytes());
    // While the state is on the wire, packets to the base station are lost: the mobile's window with them.
    n.run(n.now + latency);
    let expected = relay.receiving().delivered_bytes();
    relay.resume_after_move(n.now);
    let mut acks = Vec::new();
    while let Some((toward, p)) = relay.poll_transmit(n.now) {
        if toward == Toward::Mobile {
            let ip = Ipv4Packet::new_checked(&p[..]).unwrap();
            acks.push(TcpPacket::new_checked(ip.payload()).unwrap().ack_number());
        }
        n.send(if toward == Toward::Wired { At::Fh } else { At::Mh }, p);
    }
    // An ACK still owed (a delayed ACK) goes first; then three duplicates.
    assert!((3..=4).contains(&acks.len()), "three duplicate ACKs toward the mobile: {acks:?}");
    assert!(
        acks.iter().all(|&a| a == SeqNum(u32::MAX - 3000) + 1 + expected as u32),
        "all of the next byte expected: {expected} {acks:?}"
    );
    n.relay = Some(relay);
    n.run(Time::from_secs(120));
    assert_eq!(n.read, total, "nothing lost across the handoff");
    assert!(n.sender().is_finished());
    assert!(
        n.sender().stats().fast_retransmits > 0,
        "the mobile resent at once, on the duplicate ACKs: {:?}",
        n.sender().stats()
    );
}

/// A hand-built segment from `from` to `to` carrying the stream's bytes `data` (offsets) if any.
fn segment(
    from: SocketAddrV4,
    to: SocketAddrV4,
    seq: u32,
    ack: Option<u32>,
    flags: lasthop_wire::TcpFlags,
    data: std::ops::Range<u64>,
) -> Bytes {
    let repr = lasthop_wire::TcpRepr {
        src_port: from.port(),
        dst_port: to.port(),
        seq: SeqNum(seq),
        ack: ack.map(SeqNum),
        flags,
        window: 65535,
        mss: flags.contains(lasthop_wire::TcpFlags::SYN).then_some(1000),
        ..lasthop_wire::TcpRepr::default()
    };
    let mut bytes = vec![0; (data.end - data.start) as usize];
    payload::fill(data.start, &mut bytes);
    repr.emit_ipv4(*from.ip(), *to.ip(), 0, 64, &bytes)
}

/// What the relay sends now: (where, source, destination, its TCP header, its payload).
fn sent(relay: &mut SplitRelay) -> Vec<(Toward, Ipv4Addr, Ipv4Addr, lasthop_wire::TcpRepr, Bytes)> {
    use lasthop_wire::{Ipv4Packet, TcpPacket, TcpRepr};
    let mut out = Vec::new();
    while let Some((toward, p)) = relay.poll_transmit(Time::ZERO) {
        let ip = Ipv4Packet::new_checked(&p[..]).unwrap();
        let tcp = TcpPacket::new_checked(ip.payload()).unwrap();
        let payload = Bytes::copy_from_slice(tcp.payload());
        out.push((toward, ip.src_addr(), ip.dst_addr(), TcpRepr::parse(&tcp).unwrap(), payload));
    }
    out
}

/// A relay with a 3000-byte buffer whose ends use 1000-byte segments and acknowledge at once.
fn small_relay(direction: Direction) -> SplitRelay {
    let tcp = TcpConfig { mss: 1000, delayed_ack_ms: 0.0, ..TcpConfig::default() };
    let cfg = SplitConfig { buffer_bytes: 3000, wired: tcp.clone(), wireless: tcp };
    SplitRelay::new(cfg, direction, FH, MH, SeqNum(5000), SeqNum(7000))
}

#[test]
fn a_syn_from_the_mobile_is_answered_as_the_fixed_host_and_opens_the_wired_half() {
    use lasthop_wire::TcpFlags;
    let mut relay = small_relay(Direction::FromMobile);
    relay.handle_packet(Time::ZERO, true, &segment(MH, FH, 100, None, TcpFlags::SYN, 0..0));
    let out = sent(&mut relay);
    assert_eq!(out.len(), 2, "{out:?}");
    let (toward, src, dst, synack, _) = &out[0];
    assert_eq!((*toward, *src, *dst), (Toward::Mobile, *FH.ip(), *MH.ip()), "answered as the fixed host");
    assert_eq!((synack.flags, synack.seq, synack.ack), (TcpFlags::SYN, SeqNum(7000), Some(SeqNum(101))));
    assert_eq!(synack.window, 3000, "the buffer's free space");
    let (toward, src, dst, syn, _) = &out[1];
    assert_eq!((*toward, *src, *dst), (Toward::Wired, *MH.ip(), *FH.ip()), "sent as the mobile");
    assert_eq!(
        (syn.flags, syn.seq, syn.ack, syn.src_port, syn.dst_port),
        (TcpFlags::SYN, SeqNum(5000), None, 5001, 40000)
    );
    // A segment from the fixed host before its SYN-ACK goes to the wired half, not to the mobile's connection.
    assert!(relay.sending().snd_una_offset() == 0 && relay.receiving().delivered_bytes() == 0);
}

#[test]
fn the_mobiles_data_is_relayed_and_a_full_buffer_closes_its_window_until_the_fixed_host_acknowledges() {
    use lasthop_wire::TcpFlags;
    let mut relay = small_relay(Direction::FromMobile);
    relay.handle_packet(Time::ZERO, true, &segment(MH, FH, 100, None, TcpFlags::SYN, 0..0));
    relay.handle_packet(Time::ZERO, false, &segment(FH, MH, 900, Some(5001), TcpFlags::SYN, 0..0));
    sent(&mut relay);
    // Three segments fill the 3000-byte buffer: each is acknowledged to the mobile with less window.
    let mut windows = Vec::new();
    let mut relayed = Vec::new();
    for i in 0..3u32 {
        let off = u64::from(i) * 1000;
        relay.handle_packet(
            Time::ZERO,
            true,
            &segment(MH, FH, 101 + i * 1000, Some(7001), TcpFlags::NONE, off..off + 1000),
        );
        for (toward, _, _, tcp, data) in sent(&mut relay) {
            match toward {
                Toward::Mobile => windows.push((tcp.ack.unwrap(), tcp.window)),
                Toward::Wired if !data.is_empty() => {
                    assert!(payload::matches(u64::from(tcp.seq.0 - 5001), &data), "the mobile's bytes, unchanged");
                    relayed.push(tcp.seq);
                }
                Toward::Wired => {}
            }
        }
    }
    assert_eq!(windows, [(SeqNum(1101), 2000), (SeqNum(2101), 1000), (SeqNum(3101), 0)]);
    assert_eq!(relayed.first(), Some(&SeqNum(5001)), "relayed from the start, sent as the mobile");
    assert_eq!(relay.buffered_bytes(), 3000);
    // The fixed host acknowledges 1000 bytes: a window update of one segment reaches the mobile.
    relay.handle_packet(Time::ZERO, false, &segment(FH, MH, 901, Some(6001), TcpFlags::NONE, 0..0));
    let updates: Vec<_> = sent(&mut relay)
        .into_iter()
        .filter(|o| o.0 == Toward::Mobile)
        .map(|o| (o.3.ack.unwrap(), o.3.window))
        .collect();
    assert_eq!(updates, [(SeqNum(3101), 1000)]);
    assert_eq!(relay.stats().bytes_relayed, 3000);
    assert_eq!(relay.stats().max_buffered, 3000);
}

/// Sets up `relay` (either direction) with its data sender, carries 1000 bytes, and ends the stream with the
/// sender's FIN; returns what the relay sent toward the data receiver after the FIN.
fn fin_through(relay: &mut SplitRelay) -> Vec<(Toward, Ipv4Addr, Ipv4Addr, lasthop_wire::TcpRepr, Bytes)> {
    use lasthop_wire::TcpFlags;
    let from_mobile = relay.direction() == Direction::FromMobile;
    let (snd, rcv) = if from_mobile { (MH, FH) } else { (FH, MH) };
    let (relay_snd_iss, relay_rcv_iss) = if from_mobile { (5000, 7000) } else { (7000, 5000) };
    relay.handle_packet(Time::ZERO, from_mobile, &segment(snd, rcv, 100, None, TcpFlags::SYN, 0..0));
    relay.handle_packet(
        Time::ZERO,
        !from_mobile,
        &segment(rcv, snd, 900, Some(relay_snd_iss + 1), TcpFlags::SYN, 0..0),
    );
    relay.handle_packet(
        Time::ZERO,
        from_mobile,
        &segment(snd, rcv, 101, Some(relay_rcv_iss + 1), TcpFlags::NONE, 0..1000),
    );
    sent(relay);
    relay.handle_packet(
        Time::ZERO,
        from_mobile,
        &segment(snd, rcv, 1101, Some(relay_rcv_iss + 1), TcpFlags::FIN, 0..0),
    );
    let out = sent(relay);
    let to_sender = if from_mobile { Toward::Mobile } else { Toward::Wired };
    assert!(
        out.iter().any(|o| o.0 == to_sender && o.3.ack == Some(SeqNum(1102))),
        "the sender's FIN is acknowledged: {out:?}"
    );
    // The data receiver acknowledges the bytes; the relay's FIN follows them.
    relay.handle_packet(
        Time::ZERO,
        !from_mobile,
        &segment(rcv, snd, 901, Some(relay_snd_iss + 1001), TcpFlags::NONE, 0..0),
    );
    let mut out2 = sent(relay);
    out2.extend(out);
    out2.into_iter().filter(|o| o.0 != to_sender).collect()
}

#[test]
fn the_fin_passes_through_the_relay_both_ways() {
    use lasthop_wire::TcpFlags;
    for direction in [Direction::ToMobile, Direction::FromMobile] {
        let mut relay = small_relay(direction);
        let onward = fin_through(&mut relay);
        let fin = onward.iter().find(|o| o.3.flags.contains(TcpFlags::FIN)).expect("the relay's FIN goes on");
        let (relay_snd_iss, to_receiver) =
            if direction == Direction::FromMobile { (5000, Toward::Wired) } else { (7000, Toward::Mobile) };
        assert_eq!((fin.0, fin.3.seq), (to_receiver, SeqNum(relay_snd_iss + 1001)), "{direction:?}: after the data");
        assert!(!relay.is_finished(), "{direction:?}: its FIN is not acknowledged yet");
        let (rcv, snd) = if direction == Direction::FromMobile { (FH, MH) } else { (MH, FH) };
        relay.handle_packet(
            Time::ZERO,
            direction == Direction::ToMobile,
            &segment(rcv, snd, 901, Some(relay_snd_iss + 1002), TcpFlags::NONE, 0..0),
        );
        assert!(relay.is_finished(), "{direction:?}");
    }
}

#[path = "mtcp_tests.rs"]
mod mtcp;
