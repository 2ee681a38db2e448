//! A toy end-to-end run: a Reno-like sender on the fixed host, a 2 Mb/s wireless hop with a high-priority
//! queue, a cumulative-ACK receiver on the mobile, and Snoop at the base station. Deterministic (a fixed
//! LCG draws the losses). It checks the goal stated for lasthop's Snoop: ns-2's Snoop fell below plain Reno
//! at high loss because its RTT estimate ran away and recovery stalled; this one must keep at least 70 % of
//! the link's ideal goodput, `(1 − p) · rate`, with half the data packets lost on the wireless hop.
//!
//! This is a smoke test of the agent under a crude model, not a result: the simulator's experiments are.

use super::*;
use lasthop_wire::{Ipv4Packet, SeqNum, TcpFlags, TcpPacket, TcpRepr};
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, VecDeque};
use std::net::Ipv4Addr;

const FH: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const MH: Ipv4Addr = Ipv4Addr::new(10, 1, 0, 1);
const MSS: u32 = 1460;
const ISS: u32 = 5000;
const MS: u64 = 1_000_000;

#[derive(Debug)]
enum Ev {
    /// A packet from the FH reaches the BS.
    DataAtBs(Bytes),
    /// The wireless transmitter finished a frame.
    TxDone,
    /// A data segment (index) reaches the MH.
    DataAtMh(u32),
    AckAtBs(Bytes),
    AckAtFh(u32),
    SenderRto(u64),
}

struct Lcg(u64);
impl Lcg {
    fn unit(&mut self) -> f64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

struct Sim {
    now: u64,
    seq: u64,
    events: BinaryHeap<Reverse<(u64, u64, usize)>>,
    payloads: Vec<Option<Ev>>,
    rng: Lcg,
    loss: f64,
    ack_loss: f64,
    snoop: Option<Snoop>,
    out: Vec<Action>,
    // wireless hop
    prio: VecDeque<Bytes>,
    normal: VecDeque<Bytes>,
    busy: Option<Bytes>,
    // sender
    snd_una: u32,
    snd_nxt: u32,
    cwnd: f64,
    ssthresh: f64,
    dupacks: u32,
    rto: u64,
    rto_gen: u64,
    max_win: u32,
    // receiver
    rcv_nxt: u32,
    ooo: BTreeSet<u32>,
}

const TX_NS: u64 = (1500 * 8 * 1000) / 2; // 1500 bytes at 2 Mb/s = 6 ms
const WIRED_NS: u64 = 2 * MS;
const AIR_NS: u64 = 50_000;

fn data(i: u32) -> Bytes {
    let repr = TcpRepr {
        src_port: 5001,
        dst_port: 40000,
        seq: SeqNum(ISS + 1 + i * MSS),
        ack: Some(SeqNum(1)),
        flags: TcpFlags::PSH,
        window: 65535,
        ..TcpRepr::default()
    };
    repr.emit_ipv4(FH, MH, 0, 64, &[0u8; MSS as usize])
}

fn ack(i: u32) -> Bytes {
    let repr = TcpRepr {
        src_port: 40000,
        dst_port: 5001,
        seq: SeqNum(1),
        ack: Some(SeqNum(ISS + 1 + i * MSS)),
        window: 65535,
        ..TcpRepr::default()
    };
    repr.emit_ipv4(MH, FH, 0, 64, &[])
}

fn tcp_field(b: &Bytes, f: impl Fn(&TcpPacket<&[u8]>) -> SeqNum) -> u32 {
    let ip = Ipv4Packet::new_checked(&b[..]).unwrap();
    let t = TcpPacket::new_checked(ip.payload()).unwrap();
    (f(&t).0 - ISS - 1) / MSS
}

impl Sim {
    fn new(loss: f64, ack_loss: f64, snoop: bool) -> Sim {
        let mut s = Sim {
            now: 0,
            seq: 0,
            events: BinaryHeap::new(),
            payloads: Vec::new(),
            rng: Lcg(42),
            loss,
            ack_loss,
            snoop: snoop.then(|| Snoop::new(SnoopConfig::default())),
            out: Vec::new(),
            prio: VecDeque::new(),
            normal: VecDeque::new(),
            busy: None,
            snd_una: 0,
            snd_nxt: 0,
            cwnd: 2.0,
            ssthresh: 64.0,
            dupacks: 0,
            rto: 1000 * MS,
            rto_gen: 0,
            max_win: 44, // 64 KB
            rcv_nxt: 0,
            ooo: BTreeSet::new(),
        };
        s.send();
        s
    }

    fn at(&mut self, dt: u64, ev: Ev) {
        self.payloads.push(Some(ev));
        self.seq += 1;
        self.events.push(Reverse((self.now + dt, self.seq, self.payloads.len() - 1)));
    }

    fn arm_rto(&mut self) {
        self.rto_gen += 1;
        let g = self.rto_gen;
        self.at(self.rto, Ev::SenderRto(g));
    }

    fn send(&mut self) {
        let win = (self.cwnd as u32).min(self.max_win).max(1);
        while self.snd_nxt < self.snd_una + win {
            let i = self.snd_nxt;
            self.snd_nxt += 1;
            self.at(WIRED_NS, Ev::DataAtBs(data(i)));
            if i == self.snd_una {
                self.arm_rto();
            }
        }
    }

    fn kick_link(&mut self) {
        if self.busy.is_none() {
            if let Some(p) = self.prio.pop_front().or_else(|| self.normal.pop_front()) {
                // The link reports the transmission (Agent::handle_transmit), as the simulator does.
                if let Some(s) = self.snoop.as_mut() {
                    s.handle_transmit(Time(self.now), Side::ToMobile, &p);
                }
                self.busy = Some(p);
                self.at(TX_NS, Ev::TxDone);
            }
        }
    }

    fn apply(&mut self) {
        for a in std::mem::take(&mut self.out) {
            match a {
                Action::Forward(Side::ToMobile, p) => {
                    if self.normal.len() < 100 {
                        self.normal.push_back(p)
                    }
                }
                Action::ForwardPriority(Side::ToMobile, p) => {
                    self.trace(&format!("BS local rexmit {}", tcp_field(&p, |t| t.seq_number())));
                    self.prio.push_back(p)
                }
                Action::Forward(Side::ToWired, p) | Action::Inject(Side::ToWired, p) => {
                    let i = tcp_field(&p, |t| t.ack_number());
                    self.at(WIRED_NS, Ev::AckAtFh(i));
                }
                Action::Drop(r) => self.trace(&format!("BS drop {r:?}")),
                other => panic!("{other:?}"),
            }
        }
        self.kick_link();
    }

    fn trace(&self, what: &str) {
        if std::env::var("SNOOP_TRACE").is_ok() && self.now < 3000 * MS {
            eprintln!(
                "{:>9.3} ms {what} | una {} nxt {} cwnd {:.1} rcv {} q {}+{}",
                self.now as f64 / 1e6,
                self.snd_una,
                self.snd_nxt,
                self.cwnd,
                self.rcv_nxt,
                self.prio.len(),
                self.normal.len()
            );
        }
    }

    fn step(&mut self) {
        let next_ev = self.events.peek().map(|Reverse((t, _, _))| *t);
        let next_timer = self.snoop.as_ref().and_then(|s| s.poll_timeout()).map(|t| t.0);
        if let Some(t) = next_timer {
            if next_ev.is_none_or(|e| t < e) {
                self.now = t;
                self.snoop.as_mut().unwrap().handle_timeout(Time(t), &mut self.out);
                self.apply();
                return;
            }
        }
        let Reverse((t, _, idx)) = self.events.pop().unwrap();
        self.now = t;
        match self.payloads[idx].take().unwrap() {
            Ev::DataAtBs(p) => {
                match self.snoop.as_mut() {
                    Some(s) => s.handle_packet(Time(t), Side::ToMobile, p, &mut self.out),
                    None => self.out.push(Action::Forward(Side::ToMobile, p)),
                }
                self.apply();
            }
            Ev::TxDone => {
                let p = self.busy.take().unwrap();
                let i = tcp_field(&p, |t| t.seq_number());
                let lost = self.rng.unit() < self.loss;
                self.trace(&format!("air {i}{}", if lost { " LOST" } else { "" }));
                if !lost {
                    self.at(AIR_NS, Ev::DataAtMh(i));
                }
                self.kick_link();
            }
            Ev::DataAtMh(i) => {
                if i == self.rcv_nxt {
                    self.rcv_nxt += 1;
                    while self.ooo.remove(&self.rcv_nxt) {
                        self.rcv_nxt += 1;
                    }
                } else if i > self.rcv_nxt {
                    self.ooo.insert(i);
                }
                if self.rng.unit() >= self.ack_loss {
                    let a = ack(self.rcv_nxt);
                    self.at(AIR_NS + 200_000, Ev::AckAtBs(a));
                }
            }
            Ev::AckAtBs(p) => {
                match self.snoop.as_mut() {
                    Some(s) => s.handle_packet(Time(t), Side::ToWired, p, &mut self.out),
                    None => self.out.push(Action::Forward(Side::ToWired, p)),
                }
                self.apply();
            }
            Ev::AckAtFh(a) => {
                self.trace(&format!("FH ack {a}"));
                self.sender_ack(a)
            }
            Ev::SenderRto(g) => {
                if g == self.rto_gen && self.snd_una < self.snd_nxt {
                    self.trace("FH RTO");
                    let flight = (self.snd_nxt - self.snd_una) as f64;
                    self.ssthresh = (flight / 2.0).max(2.0);
                    self.cwnd = 1.0;
                    self.dupacks = 0;
                    self.snd_nxt = self.snd_una;
                    self.rto = (self.rto * 2).min(64_000 * MS);
                    self.send();
                }
            }
        }
    }

    fn sender_ack(&mut self, a: u32) {
        if a > self.snd_una {
            self.snd_una = a;
            self.snd_nxt = self.snd_nxt.max(a);
            if self.dupacks >= 3 {
                self.cwnd = self.ssthresh;
            } else if self.cwnd < self.ssthresh {
                self.cwnd += 1.0;
            } else {
                self.cwnd += 1.0 / self.cwnd;
            }
            self.dupacks = 0;
            self.rto = 1000 * MS;
            if self.snd_una < self.snd_nxt {
                self.arm_rto();
            } else {
                self.rto_gen += 1;
            }
            self.send();
        } else if a == self.snd_una && self.snd_una < self.snd_nxt {
            self.dupacks += 1;
            if self.dupacks == 3 {
                let flight = (self.snd_nxt - self.snd_una) as f64;
                self.ssthresh = (flight / 2.0).max(2.0);
                self.cwnd = self.ssthresh + 3.0;
                self.at(WIRED_NS, Ev::DataAtBs(data(self.snd_una)));
            } else if self.dupacks > 3 {
                self.cwnd += 1.0;
                self.send();
            }
        }
    }

    /// Goodput as a fraction of the ideal `(1 − loss) · rate` over `secs` of simulated time.
    fn run(&mut self, secs: u64) -> f64 {
        while self.now < secs * 1000 * MS {
            self.step();
        }
        let delivered = f64::from(self.rcv_nxt) * 1500.0 * 8.0;
        let ideal = (1.0 - self.loss) * 2e6 * secs as f64;
        delivered / ideal
    }
}

/// Met since Snoop times everything from transmission (`Agent::handle_transmit`, which this toy link now reports
/// like the simulator): 0.83 of the ideal at 50 % data loss (plain Reno ~0), 0.72 with 10 % ACK loss too.
/// Before, it reached ~0.25 (holes repaired serially, each lost local retransmission costing a ≥ 40 ms
/// timer on an idle link; inferring losses at partial ACKs from queueing times resent queued packets).
/// What fixed it: exact loss inference from transmission order (a partial ACK or a DUPACK that shows a
/// later transmission arrived), and a round-trip timer of twice the hop's unqueued RTT counted from the
/// latest transmission, without backoff for the first expiries. `SNOOP_TRACE=1` prints the first 3 s.
#[test]
fn snoop_keeps_70_percent_of_ideal_goodput_at_50_percent_loss() {
    let reno = Sim::new(0.5, 0.0, false).run(60);
    let mut sim = Sim::new(0.5, 0.0, true);
    let snoop = sim.run(60);
    let st = sim.snoop.as_ref().unwrap().stats().clone();
    eprintln!("50% data loss: snoop {snoop:.3} of ideal, reno alone {reno:.3}; {st:?}");
    assert!(snoop >= 0.7, "snoop reached only {snoop:.3} of the ideal goodput");
    assert!(snoop > 2.0 * reno);
    // And with ACKs lost too (10 %), recovery must not stall.
    let mut sim = Sim::new(0.5, 0.1, true);
    let with_ack_loss = sim.run(60);
    eprintln!("and 10% ACK loss: snoop {with_ack_loss:.3}");
    assert!(with_ack_loss >= 0.6, "{with_ack_loss:.3}");
}

#[test]
fn snoop_is_close_to_ideal_without_loss_and_at_low_loss() {
    for loss in [0.0, 0.01, 0.1] {
        let g = Sim::new(loss, 0.0, true).run(30);
        eprintln!("loss {loss}: snoop {g:.3} of ideal");
        assert!(g >= 0.85, "loss {loss}: {g:.3}");
    }
}
