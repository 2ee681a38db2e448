//! State-machine tests: hand-built packets in, frames and deliveries out, with losses of data frames and of
//! link ACKs placed by hand.

use crate::tcp_aware::{DupAckFilter, Verdict};
use crate::{ArqConfig, ArqReceiver, ArqSender, Delivery, Frame};
use bytes::Bytes;
use lasthop_wire::{SeqNum, TcpRepr, Time};
use std::net::Ipv4Addr;

fn pkt(i: u32) -> Bytes {
    Bytes::from(i.to_be_bytes().to_vec())
}

fn id(p: &Bytes) -> u32 {
    u32::from_be_bytes([p[0], p[1], p[2], p[3]])
}

fn ms(t: u64) -> Time {
    Time::from_millis(t)
}

/// One link direction with its ACK path: frames cross instantly unless the test drops them.
struct Link {
    s: ArqSender,
    r: ArqReceiver,
    delivered: Vec<u32>,
    data_sent: u32,
    acks_sent: u32,
}

impl Link {
    fn new(cfg: ArqConfig) -> Link {
        Link { r: ArqReceiver::new(&cfg), s: ArqSender::new(cfg), delivered: Vec::new(), data_sent: 0, acks_sent: 0 }
    }

    /// Sends every frame the sender will send now; `lose_data(n)` / `lose_ack(n)` decide the fate of the
    /// n-th data frame and n-th ACK ever sent.
    fn pump(&mut self, now: Time, lose_data: &dyn Fn(u32) -> bool, lose_ack: &dyn Fn(u32) -> bool) {
        while let Some(f) = self.s.poll_transmit(now) {
            let n = self.data_sent;
            self.data_sent += 1;
            if !lose_data(n) {
                self.r.handle_frame(now, &f);
            }
            while let Some(a) = self.r.poll_transmit() {
                let n = self.acks_sent;
                self.acks_sent += 1;
                if !lose_ack(n) {
                    self.s.handle_frame(now, &a);
                }
            }
            while let Some(p) = self.r.poll_deliver() {
                self.delivered.push(id(&p));
            }
        }
    }

    /// Pumps, then fires timers, until the sender is idle or `until` passes.
    fn run(&mut self, lose_data: &dyn Fn(u32) -> bool, lose_ack: &dyn Fn(u32) -> bool, until: Time) -> Time {
        let mut now = Time::ZERO;
        loop {
            self.pump(now, lose_data, lose_ack);
            match self.s.poll_timeout() {
                Some(t) if t <= until && !self.s.is_idle() => {
                    now = t;
                    self.s.handle_timeout(now);
                }
                _ => return now,
            }
        }
    }
}

fn never(_: u32) -> bool {
    false
}

#[test]
fn stop_and_wait_keeps_one_frame_in_flight() {
    let mut s = ArqSender::new(ArqConfig { window: 1, ..ArqConfig::default() });
    for i in 0..3 {
        assert!(s.send(pkt(i)));
    }
    let f = s.poll_transmit(ms(0)).unwrap();
    assert_eq!(Frame::parse(&f), Some(Frame::Data { seq: 0, base: 0, payload: pkt(0) }));
    assert_eq!(s.poll_transmit(ms(0)), None, "the window of one is full");
    assert_eq!(s.poll_timeout(), Some(ms(20)));
    s.handle_frame(ms(1), &Frame::Ack { cum: 1, this: 0, bitmap: 0 }.emit());
    let f = s.poll_transmit(ms(1)).unwrap();
    assert_eq!(Frame::parse(&f), Some(Frame::Data { seq: 1, base: 1, payload: pkt(1) }));
    assert_eq!(s.stats().frames_acked, 1);
}

#[test]
fn a_lost_data_frame_is_resent_on_the_timer_and_delivered_once() {
    for window in [1, 8] {
        let mut l = Link::new(ArqConfig { window, ..ArqConfig::default() });
        for i in 0..5 {
            l.s.send(pkt(i));
        }
        let end = l.run(&|n| n == 1, &never, ms(1000));
        assert_eq!(l.delivered, vec![0, 1, 2, 3, 4], "window {window}");
        assert_eq!(l.s.stats().retransmissions, 1);
        assert_eq!(end, ms(20), "resent when its 20 ms timer fired");
        assert_eq!(l.r.stats().duplicates, 0);
        assert!(l.s.is_idle());
    }
}

#[test]
fn a_lost_link_ack_makes_a_duplicate_the_receiver_drops_and_acks_again() {
    let mut l = Link::new(ArqConfig { window: 1, ..ArqConfig::default() });
    l.s.send(pkt(7));
    l.s.send(pkt(8));
    l.run(&never, &|n| n == 0, ms(1000));
    assert_eq!(l.delivered, vec![7, 8]);
    assert_eq!(l.s.stats().retransmissions, 1);
    assert_eq!(l.r.stats().duplicates, 1);
    assert_eq!(l.r.stats().acks_sent, 3, "the duplicate is acknowledged too");
}

#[test]
fn the_retry_limit_gives_a_frame_up_and_the_receiver_skips_it() {
    let cfg = ArqConfig { window: 4, retry_limit: 2, ..ArqConfig::default() };
    let mut l = Link::new(cfg);
    l.s.send(pkt(0));
    l.s.send(pkt(1));
    // Frame 0 is lost on every one of its 3 transmissions (data frames 0, 2, 3).
    l.run(&|n| matches!(n, 0 | 2 | 3), &never, ms(1000));
    assert_eq!(l.s.stats().frames_abandoned, 1);
    assert_eq!(l.s.stats().retransmissions, 2);
    assert!(l.s.is_idle());
    // Frame 1 is held in order until the next frame says the sender gave frame 0 up.
    assert_eq!(l.delivered, Vec::<u32>::new());
    l.s.send(pkt(2));
    l.run(&never, &never, ms(2000));
    assert_eq!(l.delivered, vec![1, 2]);
    assert_eq!(l.r.stats().frames_skipped, 1);
}

/// The mobile leaves the cell: every frame into it is lost, so the sender gives each up after the retry limit.
/// Once more than two windows are given up the receiver, which never heard of them, takes the next frames for
/// ones outside its window and refuses them: only a restart of both ends (the reassociation at a handoff back
/// to the cell, `lasthop_sim::arq`) brings the link back.
#[test]
fn frames_into_a_left_cell_are_abandoned_and_only_a_restart_of_both_ends_resumes_the_link() {
    let cfg = ArqConfig { window: 2, retry_limit: 1, ..ArqConfig::default() };
    let mut l = Link::new(cfg);
    l.s.send(pkt(0));
    l.run(&never, &never, ms(1000));
    assert_eq!(l.delivered, vec![0]);
    for i in 1..=6 {
        l.s.send(pkt(i));
    }
    let gone = l.data_sent;
    l.run(&|n| n >= gone, &never, ms(10_000));
    assert_eq!(l.s.stats().frames_abandoned, 6, "each given up after its one retransmission");
    assert!(l.s.is_idle());
    // Back in the cell without a restart: frame 7 lies 6 frames past what the receiver expects (window 2).
    l.s.send(pkt(7));
    let f = l.s.poll_transmit(ms(20_000)).unwrap();
    l.r.handle_frame(ms(20_000), &f);
    assert_eq!((l.r.stats().malformed, l.r.poll_transmit()), (1, None), "refused, not acknowledged");
    // The reassociation: both ends restart; the sender's held frame is flushed and counted.
    let stale_ack = Frame::Ack { cum: 7, this: 6, bitmap: 0 }.emit();
    assert_eq!(l.s.restart(), 1);
    l.r.restart();
    assert_eq!((l.s.stats().frames_flushed, l.s.stats().restarts), (1, 1));
    assert!(l.s.is_idle());
    l.s.send(pkt(8));
    let f = l.s.poll_transmit(ms(21_000)).unwrap();
    assert_eq!(Frame::parse(&f), Some(Frame::Data { seq: 0, base: 0, payload: pkt(8) }), "numbering starts again");
    // A link ACK from before the restart acknowledges nothing sent after it.
    l.s.handle_frame(ms(21_000), &stale_ack);
    assert_eq!((l.s.stats().malformed, l.s.in_flight()), (1, 1));
    l.r.handle_frame(ms(21_000), &f);
    assert_eq!(l.r.poll_deliver(), Some(pkt(8)));
    let ack = l.r.poll_transmit().unwrap();
    assert_eq!(Frame::parse(&ack), Some(Frame::Ack { cum: 1, this: 0, bitmap: 0 }));
    l.s.handle_frame(ms(21_000), &ack);
    assert!(l.s.is_idle());
    assert_eq!(l.s.stats().frames_abandoned, 6, "a restart gives nothing up: it flushes");
}

#[test]
fn a_restarting_receiver_hands_up_what_it_held_above_a_gap() {
    let mut l = Link::new(ArqConfig { window: 4, ..ArqConfig::default() });
    for i in 0..3 {
        l.s.send(pkt(i));
    }
    // Frame 0 is lost; 1 and 2 wait above the gap (in-order delivery).
    l.pump(Time::ZERO, &|n| n == 0, &never);
    assert_eq!(l.delivered, Vec::<u32>::new());
    assert_eq!(l.s.restart(), 1, "frame 0, still unacknowledged");
    l.r.restart();
    while let Some(p) = l.r.poll_deliver() {
        l.delivered.push(id(&p));
    }
    assert_eq!(l.delivered, vec![1, 2]);
    assert_eq!(l.r.stats().frames_skipped, 1, "frame 0 never came");
    // Fresh numbering on both ends: the next packet is frame 0 and goes up at once.
    l.s.send(pkt(3));
    l.pump(ms(1), &never, &never);
    assert_eq!(l.delivered, vec![1, 2, 3]);
    assert!(l.s.is_idle());
}

#[test]
fn a_flush_discards_what_the_sender_held_and_the_receiver_skips_it_by_the_next_base() {
    let mut l = Link::new(ArqConfig { window: 4, ..ArqConfig::default() });
    for i in 0..6 {
        l.s.send(pkt(i));
    }
    // Frames 0..4 go out and are lost; 4 and 5 wait in the queue.
    l.pump(Time::ZERO, &|_| true, &never);
    assert_eq!((l.s.in_flight(), l.s.queued()), (4, 2));
    assert_eq!(l.s.flush(), 6);
    assert!(l.s.is_idle() && l.s.poll_timeout().is_none());
    assert_eq!((l.s.stats().frames_flushed, l.s.stats().restarts), (6, 0));
    // Numbering goes on: the next frame is number 4, and its base tells the receiver 0..4 are gone.
    l.s.send(pkt(9));
    let f = l.s.poll_transmit(ms(1)).unwrap();
    assert_eq!(Frame::parse(&f), Some(Frame::Data { seq: 4, base: 4, payload: pkt(9) }));
    l.r.handle_frame(ms(1), &f);
    assert_eq!((l.r.poll_deliver(), l.r.stats().frames_skipped), (Some(pkt(9)), 4));
}

#[test]
fn out_of_order_delivery_hands_up_at_once_in_order_delivery_waits() {
    for (delivery, want) in [(Delivery::InOrder, vec![0, 1, 2, 3]), (Delivery::OutOfOrder, vec![0, 2, 3, 1])] {
        let mut l = Link::new(ArqConfig { window: 8, delivery, ..ArqConfig::default() });
        for i in 0..4 {
            l.s.send(pkt(i));
        }
        l.run(&|n| n == 1, &never, ms(1000));
        assert_eq!(l.delivered, want, "{delivery:?}");
    }
}

#[test]
fn selective_link_acks_resend_a_gap_at_once_cumulative_ones_wait_for_the_timer() {
    for selective_acks in [false, true] {
        let mut l = Link::new(ArqConfig { window: 8, selective_acks, ..ArqConfig::default() });
        for i in 0..4 {
            l.s.send(pkt(i));
        }
        l.pump(ms(0), &|n| n == 0, &never);
        if selective_acks {
            assert_eq!(l.s.stats().gap_retransmissions, 1);
            assert_eq!(l.delivered, vec![0, 1, 2, 3], "recovered with no timer");
            assert!(l.s.is_idle());
        } else {
            assert_eq!(l.s.stats().retransmissions, 0);
            assert_eq!(l.delivered, Vec::<u32>::new());
            assert_eq!(l.s.in_flight(), 1, "the ACKs of frames 1-3 removed them individually");
        }
    }
}

#[test]
fn selective_acks_do_not_resend_a_frame_whose_retransmission_is_still_on_its_way() {
    let mut s = ArqSender::new(ArqConfig { window: 8, selective_acks: true, ..ArqConfig::default() });
    for i in 0..3 {
        s.send(pkt(i));
    }
    for _ in 0..3 {
        s.poll_transmit(ms(0)).unwrap();
    }
    // Frame 0 lost; the ACK of frame 1 reports the gap, and frame 0 goes again.
    s.handle_frame(ms(1), &Frame::Ack { cum: 0, this: 1, bitmap: 0b1 }.emit());
    assert!(s.poll_transmit(ms(1)).is_some());
    // The ACK of frame 2 (sent before the retransmission) must not order a third copy.
    s.handle_frame(ms(1), &Frame::Ack { cum: 0, this: 2, bitmap: 0b11 }.emit());
    assert_eq!(s.poll_transmit(ms(1)), None);
    assert_eq!(s.stats().gap_retransmissions, 1);
}

#[test]
fn bad_frames_are_counted_and_change_nothing() {
    let cfg = ArqConfig::default();
    let mut s = ArqSender::new(cfg.clone());
    let mut r = ArqReceiver::new(&cfg);
    s.send(pkt(0));
    s.poll_transmit(ms(0)).unwrap();
    for junk in [Bytes::new(), Bytes::from_static(&[2, 0]), Frame::Data { seq: 0, base: 0, payload: pkt(1) }.emit()] {
        s.handle_frame(ms(0), &junk);
    }
    // An ACK of frames never sent.
    s.handle_frame(ms(0), &Frame::Ack { cum: 40, this: 39, bitmap: 0 }.emit());
    assert_eq!(s.stats().malformed, 4);
    assert_eq!(s.in_flight(), 1);
    r.handle_frame(ms(0), &Frame::Ack { cum: 0, this: 0, bitmap: 0 }.emit());
    r.handle_frame(ms(0), &Bytes::from_static(&[1, 0]));
    // Far outside the window, and a base after the frame itself.
    r.handle_frame(ms(0), &Frame::Data { seq: 1000, base: 1000, payload: pkt(0) }.emit());
    r.handle_frame(ms(0), &Frame::Data { seq: 0, base: 3, payload: pkt(0) }.emit());
    assert_eq!(r.stats().malformed, 4);
    assert_eq!((r.poll_transmit(), r.poll_deliver()), (None, None));
}

#[test]
fn the_queue_limit_refuses_and_counts() {
    let mut s = ArqSender::new(ArqConfig { queue_limit: 2, ..ArqConfig::default() });
    assert!(s.send(pkt(0)) && s.send(pkt(1)));
    assert!(!s.send(pkt(2)));
    assert_eq!(s.stats().queue_drops, 1);
}

#[test]
fn validate_names_the_field() {
    assert!(ArqConfig::default().validate().is_ok());
    let e = ArqConfig { window: 0, ..ArqConfig::default() }.validate().unwrap_err();
    assert!(e.contains("arq.window"), "{e}");
    let e = ArqConfig { timeout_ms: f64::NAN, ..ArqConfig::default() }.validate().unwrap_err();
    assert!(e.contains("arq.timeout_ms"), "{e}");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]
    /// Across the 16-bit wrap, with any pattern of data and ACK losses short of the retry limit, every
    /// packet is delivered exactly once and in order.
    #[test]
    fn every_packet_arrives_once_in_order(
        window in 1u32..32,
        selective_acks: bool,
        data_loss in proptest::collection::vec(proptest::bool::weighted(0.2), 64),
        ack_loss in proptest::collection::vec(proptest::bool::weighted(0.2), 64),
    ) {
        let n = 70_000u32;
        let mut l = Link::new(ArqConfig { window, selective_acks, retry_limit: 1000, queue_limit: n as usize, ..ArqConfig::default() });
        for i in 0..n {
            l.s.send(pkt(i));
        }
        // Losses repeat every 64 frames but never hit 8 transmissions in a row of one frame.
        let lose_data = |k: u32| data_loss[(k % 64) as usize] && !k.is_multiple_of(8);
        let lose_ack = |k: u32| ack_loss[(k % 64) as usize];
        l.run(&lose_data, &lose_ack, Time::from_secs(1_000_000));
        proptest::prop_assert_eq!(l.delivered.len(), n as usize);
        proptest::prop_assert!(l.delivered.iter().enumerate().all(|(i, &p)| p == i as u32));
        proptest::prop_assert_eq!(l.s.stats().frames_abandoned, 0);
    }
}

// --- LL-TCP-AWARE ---

const FH: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const MH: Ipv4Addr = Ipv4Addr::new(10, 0, 1, 2);

fn data(seq: u32, len: usize) -> Bytes {
    let r = TcpRepr {
        src_port: 5000,
        dst_port: 6000,
        seq: SeqNum(seq),
        ack: Some(SeqNum(1)),
        window: 65535,
        ..TcpRepr::default()
    };
    r.emit_ipv4(FH, MH, 0, 64, &vec![0u8; len])
}

fn ack(n: u32) -> Bytes {
    let r = TcpRepr {
        src_port: 6000,
        dst_port: 5000,
        seq: SeqNum(1),
        ack: Some(SeqNum(n)),
        window: 65535,
        ..TcpRepr::default()
    };
    r.emit_ipv4(MH, FH, 0, 64, &[])
}

#[test]
fn a_dupack_for_a_segment_the_link_holds_is_suppressed() {
    let mut f = DupAckFilter::new(8);
    let held = [data(1000, 500), data(1500, 500)];
    assert_eq!(f.judge(&ack(1000), &held), Verdict::Pass, "the first ACK of 1000 is new");
    assert_eq!(f.judge(&ack(1000), &held), Verdict::Suppress, "segment 1000 is still on the link");
    assert_eq!(f.judge(&ack(1000), &[data(1500, 500)]), Verdict::Pass, "the link gave 1000 up: TCP must recover it");
    assert_eq!(f.judge(&ack(2000), &held), Verdict::Pass);
    assert_eq!(f.stats().dupacks_seen, 2);
    assert_eq!(f.stats().dupacks_suppressed, 1);
}

#[test]
fn a_dupack_inside_a_held_segment_counts_and_other_connections_do_not() {
    let mut f = DupAckFilter::new(8);
    f.judge(&ack(1200), &[]);
    assert_eq!(f.judge(&ack(1200), &[data(1000, 500)]), Verdict::Suppress);
    let other =
        TcpRepr { src_port: 5001, dst_port: 6000, seq: SeqNum(1000), ack: Some(SeqNum(1)), ..TcpRepr::default() }
            .emit_ipv4(FH, MH, 0, 64, &[0u8; 500]);
    assert_eq!(f.judge(&ack(1200), &[other]), Verdict::Pass);
}

#[test]
fn the_filter_passes_non_tcp_and_flags_malformed() {
    let mut f = DupAckFilter::new(1);
    assert_eq!(f.judge(&Bytes::from_static(&[0x45, 0]), &[]), Verdict::Malformed);
    let mut udp = ack(5).to_vec();
    udp[9] = 17;
    assert_eq!(f.judge(&Bytes::from(udp), &[]), Verdict::Pass);
    assert_eq!(f.stats().malformed, 1);
}

#[test]
fn the_table_is_bounded_and_forgets_the_least_recent_connection() {
    let mut f = DupAckFilter::new(1);
    f.judge(&ack(1000), &[]);
    let other = TcpRepr { src_port: 6001, dst_port: 5000, seq: SeqNum(1), ack: Some(SeqNum(7)), ..TcpRepr::default() }
        .emit_ipv4(MH, FH, 0, 64, &[]);
    f.judge(&other, &[]);
    // The first connection was forgotten: its repeated ACK is not known to be a duplicate.
    assert_eq!(f.judge(&ack(1000), &[data(1000, 10)]), Verdict::Pass);
    assert_eq!(f.stats().dupacks_seen, 0);
}
