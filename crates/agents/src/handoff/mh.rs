//! The mobile host's side: the table of what each nearby base station should do (at most one primary),
//! the IP IDs of the last packets received, the control messages of a handoff, and the signal that a
//! handoff has completed (for fast retransmit, Caceres 1995).

use super::bs::Role;
use super::msg::{seq_after, Control, Kind, PROTO_HANDOFF};
use bytes::Bytes;
use lasthop_wire::ipv4::Ipv4Packet;
use std::collections::{BTreeMap, VecDeque};
use std::net::Ipv4Addr;

/// Which handoff protocol the mobile runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// Balakrishnan 1995: multicast to primary and buffering BSs, MH-initiated requests with the last IP IDs.
    Multicast,
    /// Caceres 1995: break-before-make, greeting / notify / ack; no buffering.
    Plain,
}

/// What a received packet meant to the mobile's handoff layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MhEvent {
    /// The new primary accepted handoff `seq` (multicast: its Ack; plain: the greeting ACK). The network
    /// layer tells TCP now (fast retransmit after handoff, Caceres 1995).
    Accepted { seq: u16, bs: Ipv4Addr },
    /// Plain scheme: the new BS reports the old one forwards (end of the greeting / notify / ack exchange).
    Completed { seq: u16, bs: Ipv4Addr },
    /// A beacon from `bs`.
    Beacon { bs: Ipv4Addr },
}

/// The mobile host's handoff controller (sans-IO: packets out are returned, nothing is sent by itself).
pub struct MobileHost {
    home: Ipv4Addr,
    scheme: Scheme,
    /// Desired role per known base station; exactly one `Primary` once started.
    table: BTreeMap<Ipv4Addr, Role>,
    seq: u16,
    accepted: bool,
    /// Every BS ever asked to buffer or forward: each handoff restates its role to all of them, so a lost
    /// request is repaired by the next handoff (requests are idempotent and numbered).
    known: std::collections::BTreeSet<Ipv4Addr>,
    /// IP IDs of the last three data packets received (Balakrishnan 1995 §6), oldest first.
    last_ids: VecDeque<u16>,
    ident: u16,
}

/// How many IP IDs go with a Forward request (Balakrishnan 1995 §6: "the last three packets").
pub const IDS_SENT: usize = 3;

impl MobileHost {
    /// A mobile whose primary (or, plain, current) BS is `primary` and whose buffering BSs are `buffering`.
    pub fn new(home: Ipv4Addr, scheme: Scheme, primary: Ipv4Addr, buffering: &[Ipv4Addr]) -> MobileHost {
        let mut table = BTreeMap::new();
        if scheme == Scheme::Multicast {
            for &b in buffering {
                table.insert(b, Role::Buffering);
            }
        }
        table.insert(primary, Role::Primary);
        let known = table.keys().copied().collect();
        MobileHost { home, scheme, table, known, seq: 0, accepted: true, last_ids: VecDeque::new(), ident: 0 }
    }

    pub fn primary(&self) -> Ipv4Addr {
        *self.table.iter().find(|(_, r)| **r == Role::Primary).expect("one primary").0
    }

    pub fn role_of(&self, bs: Ipv4Addr) -> Role {
        self.table.get(&bs).copied().unwrap_or(Role::Idle)
    }

    /// The number of the last handoff started.
    pub fn seq(&self) -> u16 {
        self.seq
    }

    pub fn last_ids(&self) -> Vec<u16> {
        self.last_ids.iter().copied().collect()
    }

    /// Hands in every packet the mobile receives. Data packets update the last IP IDs; control messages
    /// may report an event.
    pub fn handle_received(&mut self, packet: &[u8]) -> Option<MhEvent> {
        let ip = Ipv4Packet::new_checked(packet).ok()?;
        if ip.protocol() != PROTO_HANDOFF {
            if self.last_ids.len() == IDS_SENT {
                self.last_ids.pop_front();
            }
            self.last_ids.push_back(ip.ident());
            return None;
        }
        let c = Control::parse(packet)?;
        if c.mobile != self.home && c.kind != Kind::Beacon {
            return None;
        }
        match c.kind {
            Kind::Beacon => Some(MhEvent::Beacon { bs: ip.src_addr() }),
            Kind::Ack | Kind::GreetingAck if c.seq == self.seq && !self.accepted && ip.src_addr() == self.primary() => {
                self.accepted = true;
                Some(MhEvent::Accepted { seq: c.seq, bs: ip.src_addr() })
            }
            Kind::Complete if c.seq == self.seq => Some(MhEvent::Completed { seq: c.seq, bs: ip.src_addr() }),
            _ => None,
        }
    }

    /// Starts a handoff to `new_primary`; `buffering` are the likely next targets (multicast scheme; the old
    /// primary is kept buffering if listed). Returns the control packets to send, the request to the new
    /// primary first. The table keeps exactly one primary: the old one is demoted in the same step.
    pub fn handoff(&mut self, new_primary: Ipv4Addr, buffering: &[Ipv4Addr]) -> Vec<Bytes> {
        let old = self.primary();
        let mut out = Vec::new();
        if new_primary == old {
            return out;
        }
        self.seq = self.seq.wrapping_add(1);
        self.accepted = false;
        let seq = self.seq;
        match self.scheme {
            Scheme::Plain => {
                self.table.clear();
                self.table.insert(new_primary, Role::Primary);
                let c = Control::new(Kind::Greeting, seq, self.home, old);
                out.push(self.emit(&c, new_primary));
            }
            Scheme::Multicast => {
                let want = self.desired_roles(new_primary, buffering);
                let mut c = Control::new(Kind::Forward, seq, self.home, Ipv4Addr::UNSPECIFIED);
                c.ids = self.last_ids();
                out.push(self.emit(&c, new_primary));
                for (&b, &r) in want.iter().filter(|(b, _)| **b != new_primary) {
                    out.push(self.role_request(b, r, seq));
                }
                self.adopt(want);
            }
        }
        debug_assert_eq!(self.table.values().filter(|r| **r == Role::Primary).count(), 1);
        out
    }

    /// Multicast scheme, between handoffs: makes `buffering` the buffering base stations (the likely targets
    /// of the mobile's beacon analysis, Balakrishnan 1995 §4) and every other known one idle, keeping the primary.
    /// Returns a `Buffer` or `Stop` request (numbered as a new step, so base stations order it after the last
    /// handoff) for each base station whose role changes; nothing if none does, for the plain scheme, or while
    /// a handoff waits for its acceptance (its numbering must stay that of the handoff).
    pub fn set_buffering(&mut self, buffering: &[Ipv4Addr]) -> Vec<Bytes> {
        if self.scheme != Scheme::Multicast || !self.accepted {
            return Vec::new();
        }
        let want = self.desired_roles(self.primary(), buffering);
        let changes: Vec<(Ipv4Addr, Role)> =
            want.iter().filter(|(b, r)| self.role_of(**b) != **r).map(|(&b, &r)| (b, r)).collect();
        if changes.is_empty() {
            return Vec::new();
        }
        self.seq = self.seq.wrapping_add(1);
        let seq = self.seq;
        let out = changes.into_iter().map(|(b, r)| self.role_request(b, r, seq)).collect();
        self.adopt(want);
        out
    }

    /// Every known base station's wanted role: `primary` forwards, `buffering` (less the primary) buffer,
    /// the rest idle.
    fn desired_roles(&self, primary: Ipv4Addr, buffering: &[Ipv4Addr]) -> BTreeMap<Ipv4Addr, Role> {
        let mut want: BTreeMap<Ipv4Addr, Role> = self.known.iter().map(|&b| (b, Role::Idle)).collect();
        for &b in buffering {
            want.insert(b, Role::Buffering);
        }
        want.insert(primary, Role::Primary);
        want
    }

    /// The request that makes base station `b` buffer, or stop forwarding and buffering.
    fn role_request(&mut self, b: Ipv4Addr, role: Role, seq: u16) -> Bytes {
        let kind = if role == Role::Buffering { Kind::Buffer } else { Kind::Stop };
        self.emit(&Control::new(kind, seq, self.home, Ipv4Addr::UNSPECIFIED), b)
    }

    /// Makes `want` the table (idle stations dropped from it, remembered as known).
    fn adopt(&mut self, mut want: BTreeMap<Ipv4Addr, Role>) {
        want.retain(|_, r| *r != Role::Idle);
        self.known.extend(want.keys().copied());
        self.table = want;
    }

    /// True once the current handoff's new primary has accepted it.
    pub fn accepted(&self) -> bool {
        self.accepted
    }

    fn emit(&mut self, c: &Control, dst: Ipv4Addr) -> Bytes {
        self.ident = self.ident.wrapping_add(1);
        c.emit(self.home, dst, self.ident)
    }

    /// Is `a` later than handoff `b`? (for hosts that compare numbers)
    pub fn is_later(a: u16, b: u16) -> bool {
        seq_after(a, b)
    }
}
