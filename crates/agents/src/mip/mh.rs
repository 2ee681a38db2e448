//! The mobile host's Mobile IP side (Eom 2002 §2.1, §2.2, §4.2): the local handoff protocol (a beacon from a
//! new BS → handoff request), registration on the new FA's agent advertisement (with the Previous Foreign
//! Agent Notification extension under route optimisation), and the small buffer of the mobile's own last
//! data packets, re-sent once the handoff is over (§4.2: "a buffer enough to store one or two data packets on
//! the mobile host").

use super::{drop_malformed, Ident, TcpFields};
use crate::flow::FlowKey;
use crate::{Action, Agent, DropReason, Side, Time};
use bytes::Bytes;
use lasthop_wire::ipv4::Ipv4Packet;
use lasthop_wire::mip::{
    reply_code, AgentAdvertisement, LinkAddr, LocalKind, LocalMessage, MipMessage, PreviousFa, RegistrationRequest,
};
use lasthop_wire::SeqNum;
use std::collections::VecDeque;
use std::net::Ipv4Addr;

/// Knobs of a [`MobileNode`].
#[derive(Debug, Clone)]
pub struct MnConfig {
    pub home_addr: Ipv4Addr,
    pub home_agent: Ipv4Addr,
    pub link: LinkAddr,
    /// Registration lifetime asked for, seconds.
    pub registration_lifetime: u16,
    /// Ask the new FA to send a binding update to the previous one (route optimisation's smooth handoff).
    pub notify_previous_fa: bool,
    /// How long (s) the previous FA keeps the binding (the extension's cache lifetime; the draft leaves it
    /// to the mobile).
    pub previous_fa_lifetime: u16,
    /// The mobile's own last data packets kept for re-sending after a handoff: 0 (off), 1 or 2 (§4.2).
    pub own_buffer_packets: usize,
}

impl MnConfig {
    pub fn new(home_addr: Ipv4Addr, home_agent: Ipv4Addr) -> MnConfig {
        MnConfig {
            home_addr,
            home_agent,
            link: LinkAddr::for_host(home_addr),
            registration_lifetime: 600,
            notify_previous_fa: false,
            previous_fa_lifetime: 10,
            own_buffer_packets: 0,
        }
    }
}

/// What a handoff step means to the host (for handoff timelines).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MnEvent {
    /// A beacon of a new BS was heard; the handoff request went to it.
    HandoffRequested { bs: Ipv4Addr },
    /// An agent advertisement of a new FA arrived; the registration request went to it.
    RegistrationSent { fa: Ipv4Addr },
    /// The HA accepted the registration at `fa`.
    Registered { fa: Ipv4Addr },
}

/// Counters of a [`MobileNode`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MnStats {
    pub handoff_requests: u64,
    pub registrations_sent: u64,
    pub registrations_accepted: u64,
    pub registrations_denied: u64,
    /// Own data packets re-sent from the small buffer after a handoff.
    pub own_packets_resent: u64,
    pub malformed_dropped: u64,
}

/// The mobile host's agent. `Side::ToWired` is what the host sends (to the air), `Side::ToMobile` what
/// arrives from the air for the host.
pub struct MobileNode {
    cfg: MnConfig,
    bs: Option<Ipv4Addr>,
    /// The FA the mobile is registered with.
    fa: Option<Ipv4Addr>,
    /// The registration in flight: (FA, identification).
    pending: Option<(Ipv4Addr, u64)>,
    next_identification: u64,
    /// The last data packets the host sent, with their connection and end of sequence space.
    own: VecDeque<(Bytes, FlowKey, SeqNum)>,
    events: Vec<(Time, MnEvent)>,
    ident: Ident,
    stats: MnStats,
}

impl MobileNode {
    pub fn new(cfg: MnConfig) -> MobileNode {
        MobileNode {
            cfg,
            bs: None,
            fa: None,
            pending: None,
            next_identification: 1,
            own: VecDeque::new(),
            events: Vec::new(),
            ident: Ident::default(),
            stats: MnStats::default(),
        }
    }

    pub fn stats(&self) -> &MnStats {
        &self.stats
    }

    /// In a cell of `bs`, registered at `fa`, at start-up.
    pub fn attach(&mut self, bs: Ipv4Addr, fa: Ipv4Addr) {
        self.bs = Some(bs);
        self.fa = Some(fa);
    }

    pub fn registered_fa(&self) -> Option<Ipv4Addr> {
        self.fa
    }

    /// Events since the last call, in order.
    pub fn take_events(&mut self) -> Vec<(Time, MnEvent)> {
        std::mem::take(&mut self.events)
    }

    fn on_beacon(&mut self, now: Time, bs: Ipv4Addr, out: &mut Vec<Action>) {
        if self.bs == Some(bs) {
            return;
        }
        self.bs = Some(bs);
        let m = LocalMessage {
            kind: LocalKind::HandoffRequest,
            mobile: self.cfg.link,
            home_addr: self.cfg.home_addr,
            sender: bs,
        };
        out.push(Action::Inject(Side::ToWired, m.emit_ipv4(self.cfg.home_addr, bs, self.ident.next())));
        self.stats.handoff_requests += 1;
        self.events.push((now, MnEvent::HandoffRequested { bs }));
    }

    fn on_advertisement(&mut self, now: Time, adv: AgentAdvertisement, out: &mut Vec<Action>) {
        let Some(&care_of) = adv.care_of.first() else { return };
        if self.fa == Some(care_of) || self.pending.is_some_and(|(fa, _)| fa == care_of) {
            return;
        }
        let identification = self.next_identification;
        self.next_identification += 1;
        let previous_fa = match (self.cfg.notify_previous_fa, self.fa) {
            (true, Some(previous_fa)) => {
                Some(PreviousFa { cache_lifetime: self.cfg.previous_fa_lifetime, previous_fa, new_care_of: care_of })
            }
            _ => None,
        };
        let r = RegistrationRequest {
            flags: 0,
            lifetime: self.cfg.registration_lifetime.min(adv.registration_lifetime),
            home_addr: self.cfg.home_addr,
            home_agent: self.cfg.home_agent,
            care_of,
            identification,
            previous_fa,
        };
        self.pending = Some((care_of, identification));
        let p = MipMessage::RegistrationRequest(r).emit_ipv4(self.cfg.home_addr, adv.router, self.ident.next());
        out.push(Action::Inject(Side::ToWired, p));
        self.stats.registrations_sent += 1;
        self.events.push((now, MnEvent::RegistrationSent { fa: care_of }));
    }

    fn on_reply(&mut self, now: Time, code: u8, identification: u64, out: &mut Vec<Action>) {
        let Some((fa, id)) = self.pending else { return };
        if id != identification {
            return;
        }
        self.pending = None;
        if code > reply_code::ACCEPTED + 1 {
            self.stats.registrations_denied += 1;
            return;
        }
        self.fa = Some(fa);
        self.stats.registrations_accepted += 1;
        self.events.push((now, MnEvent::Registered { fa }));
        // §4.2: "the mobile host itself retransmits the packets stored in the buffer after handoff".
        for (p, _, _) in &self.own {
            self.stats.own_packets_resent += 1;
            out.push(Action::Inject(Side::ToWired, p.clone()));
        }
    }
}

impl Agent for MobileNode {
    fn handle_packet(&mut self, now: Time, side: Side, packet: Bytes, out: &mut Vec<Action>) {
        let Ok(ip) = Ipv4Packet::new_checked(&packet[..]) else {
            drop_malformed(&mut self.stats.malformed_dropped, out);
            return;
        };
        match side {
            Side::ToWired => {
                if self.cfg.own_buffer_packets > 0 {
                    if let Some(t) = TcpFields::read(&packet).filter(|t| t.payload_len > 0) {
                        if self.own.len() == self.cfg.own_buffer_packets {
                            self.own.pop_front();
                        }
                        self.own.push_back((packet.clone(), t.flow, t.seq.add(t.payload_len)));
                    }
                }
                out.push(Action::Forward(side, packet));
            }
            Side::ToMobile => {
                let dst = ip.dst_addr();
                match LocalMessage::parse_ipv4(&packet) {
                    Ok(Some(m)) => {
                        out.push(Action::Drop(DropReason::Consumed));
                        if m.kind == LocalKind::Beacon {
                            self.on_beacon(now, m.sender, out);
                        }
                        return;
                    }
                    Err(_) => {
                        drop_malformed(&mut self.stats.malformed_dropped, out);
                        return;
                    }
                    Ok(None) => {}
                }
                match AgentAdvertisement::parse_ipv4(&packet) {
                    Ok(Some(adv)) => {
                        out.push(Action::Drop(DropReason::Consumed));
                        self.on_advertisement(now, adv, out);
                        return;
                    }
                    Err(_) if ip.protocol() == lasthop_wire::mip::PROTO_ICMP => {
                        // Some other ICMP message: not ours to judge.
                        out.push(Action::Forward(side, packet));
                        return;
                    }
                    _ => {}
                }
                if dst == self.cfg.home_addr {
                    match MipMessage::parse_ipv4(&packet) {
                        Ok(Some((_, _, MipMessage::RegistrationReply(r)))) => {
                            out.push(Action::Drop(DropReason::Consumed));
                            self.on_reply(now, r.code, r.identification, out);
                            return;
                        }
                        Ok(Some(_)) => {
                            out.push(Action::Drop(DropReason::Consumed));
                            return;
                        }
                        Err(_) => {
                            drop_malformed(&mut self.stats.malformed_dropped, out);
                            return;
                        }
                        Ok(None) => {}
                    }
                }
                // The correspondent's ACKs free the mobile's own buffered data they cover.
                if let Some(t) = TcpFields::read(&packet) {
                    if let Some(ack) = t.ack {
                        let data_flow = t.flow.reversed();
                        self.own.retain(|(_, f, end)| !(*f == data_flow && *end <= ack));
                    }
                }
                out.push(Action::Forward(side, packet));
            }
        }
    }

    fn handle_timeout(&mut self, _now: Time, _out: &mut Vec<Action>) {}

    fn poll_timeout(&self) -> Option<Time> {
        None
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let s = &self.stats;
        vec![
            ("handoff_requests", s.handoff_requests),
            ("registrations_sent", s.registrations_sent),
            ("registrations_accepted", s.registrations_accepted),
            ("registrations_denied", s.registrations_denied),
            ("own_packets_resent", s.own_packets_resent),
            ("malformed_dropped", s.malformed_dropped),
        ]
    }
}
