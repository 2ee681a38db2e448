//! The relay between a fixed sender and a mobile receiver: both halves, the buffer limit, and handoff by
//! moving the relay. A small event loop owns time: a wired path (one-way delay) and a wireless path
//! (one-way delay, a rate, a drop filter) meet at the relay.

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

struct Net {
    now: Time,
    fh: Sender,
    /// `None` while the relay's state is on its way to another base station.
    relay: Option<SplitRelay>,
    mh: Receiver,
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
    read: u64,
}

impl Net {
    fn new(cfg: SplitConfig, total: u64) -> Net {
        let mh_cfg =
            TcpConfig { sack: cfg.wireless.sack || cfg.wireless.variant == Variant::Sack, ..TcpConfig::default() };
        let mut fh = Sender::new(TcpConfig::default(), FH, MH, SeqNum(u32::MAX - 3000), total);
        fh.connect(Time::ZERO);
        Net {
            now: Time::ZERO,
            fh,
            relay: Some(SplitRelay::new(cfg, FH, MH, SeqNum(1 << 31), SeqNum(12345))),
            mh: Receiver::new(mh_cfg, MH, FH, SeqNum(99)),
            wired_delay: Duration::from_millis(10),
            wireless_delay: Duration::from_millis(2),
            wireless_rate: 250_000,
            busy: [Time::ZERO; 2],
            in_flight: BTreeMap::new(),
            order: 0,
            drop_to_mobile: Box::new(|_| false),
            to_mobile: 0,
            read: 0,
        }
    }

    fn send(&mut self, to: At, p: Bytes) {
        let arrival = match to {
            At::RelayFromFh | At::Fh => self.now + self.wired_delay,
            At::Mh | At::RelayFromMh => {
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
        while let Some(b) = self.mh.read() {
            assert!(payload::matches(self.read, &b), "corrupt bytes at the mobile at offset {}", self.read);
            self.read += b.len() as u64;
        }
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

    /// Bytes the fixed sender saw acknowledged that the mobile has not received.
    fn acked_not_delivered(&self) -> u64 {
        self.fh.snd_una_offset().saturating_sub(self.mh.delivered_bytes())
    }
}

#[test]
fn both_halves_carry_a_whole_transfer_intact() {
    let total = 300_000;
    let mut n = Net::new(SplitConfig::default(), total);
    n.run(Time::from_secs(60));
    assert_eq!(n.read, total);
    assert!(n.fh.is_finished(), "the fixed sender saw its FIN acknowledged");
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

#[test]
fn the_buffer_limit_closes_the_window_and_a_window_update_reopens_it() {
    let cfg = SplitConfig { buffer_bytes: 16384, ..SplitConfig::default() };
    let mut n = Net::new(cfg, 200_000);
    // The mobile hears nothing after the first 5 packets for a while (a fade).
    n.drop_to_mobile = Box::new(|i| i >= 5);
    n.run(Time::from_secs(3));
    assert!(n.relay().buffered_bytes() >= 16384 - 1460, "full: {}", n.relay().buffered_bytes());
    assert!(n.relay().stats().max_buffered <= 16384 + 1, "bounded: {}", n.relay().stats().max_buffered);
    assert!(n.fh.is_persisting(), "the fixed sender waits on a zero window");
    let probes = n.fh.stats().persist_probes;
    n.drop_to_mobile = Box::new(|_| false);
    n.run(Time::from_secs(120));
    assert_eq!(n.read, 200_000);
    assert!(n.fh.is_finished());
    assert!(n.relay().wired().stats().window_updates_sent > 0);
    assert!(n.fh.stats().persist_probes >= probes);
}

#[test]
fn split_sack_recovers_wireless_losses_with_selective_acks() {
    let wireless = TcpConfig { variant: Variant::Sack, sack: true, ..TcpConfig::default() };
    let mut n = Net::new(SplitConfig { wireless, ..SplitConfig::default() }, 200_000);
    n.drop_to_mobile = Box::new(|i| i % 17 == 5);
    n.run(Time::from_secs(120));
    assert_eq!(n.read, 200_000);
    assert!(n.relay().wireless().stats().segments_retransmitted > 0);
    assert_eq!(n.fh.stats().segments_retransmitted, 0, "wireless losses never reach the fixed sender");
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
    assert!(n.fh.is_finished());
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
    assert_eq!(relay.wired().out_of_order_bytes(), 0);
    assert_eq!(relay.state_bytes(), relay.buffered_bytes());
    assert!(relay.state_bytes() > 20_000, "a full buffer moves: {}", relay.state_bytes());
    let (una, max) = (relay.wireless().snd_una_offset(), relay.wireless().snd_max_offset());
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
    assert_eq!(relay.wireless().stats().fast_retransmits, 1);
}
