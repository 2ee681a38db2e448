//! The home agent of Mobile IP (Eom 2002 §2.1; RFC 5944 §3.8, §4.2): intercepts packets for its mobiles'
//! home addresses and tunnels them (IP-in-IP) to the registered care-of address; accepts registrations
//! relayed by FAs; with route optimisation, answers a binding warning with a binding update to the
//! correspondent named in it.

use super::{drop_malformed, encapsulate, Ident};
use crate::{Action, Agent, DropReason, Side, Time};
use bytes::Bytes;
use lasthop_wire::ipv4::Ipv4Packet;
use lasthop_wire::mip::{reply_code, BindingUpdate, MipMessage, RegistrationReply};
use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::time::Duration;

/// Knobs of a [`HomeAgent`].
#[derive(Debug, Clone)]
pub struct HaConfig {
    pub addr: Ipv4Addr,
    /// Answer binding warnings with binding updates to the correspondent (the route-optimisation draft).
    pub route_optimisation: bool,
    /// Lifetime (s) of the bindings the HA gives correspondents.
    pub binding_lifetime: u16,
    /// Longest registration lifetime granted, seconds.
    pub max_registration_lifetime: u16,
}

impl HaConfig {
    pub fn new(addr: Ipv4Addr) -> HaConfig {
        HaConfig { addr, route_optimisation: false, binding_lifetime: 300, max_registration_lifetime: 600 }
    }
}

/// Counters of a [`HomeAgent`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HaStats {
    pub tunnelled: u64,
    pub registrations_accepted: u64,
    pub registrations_denied: u64,
    pub binding_warnings_received: u64,
    pub binding_updates_sent: u64,
    /// Packets for a home address with no live binding (the mobile is not registered anywhere).
    pub no_binding_dropped: u64,
    pub malformed_dropped: u64,
}

struct Registration {
    care_of: Ipv4Addr,
    until: Time,
    identification: u64,
}

/// The home agent. Tunnels leave toward `Side::ToMobile`; binding updates to correspondents toward
/// `Side::ToWired` (the host routes both by destination address).
pub struct HomeAgent {
    cfg: HaConfig,
    /// Per home address served: its current registration, if any.
    mobiles: BTreeMap<Ipv4Addr, Option<Registration>>,
    ident: Ident,
    next_identification: u64,
    stats: HaStats,
}

impl HomeAgent {
    pub fn new(cfg: HaConfig) -> HomeAgent {
        HomeAgent {
            cfg,
            mobiles: BTreeMap::new(),
            ident: Ident::default(),
            next_identification: 1,
            stats: HaStats::default(),
        }
    }

    pub fn stats(&self) -> &HaStats {
        &self.stats
    }

    /// Serves `home` (the HA intercepts its packets from now on).
    pub fn serve(&mut self, home: Ipv4Addr) {
        self.mobiles.entry(home).or_insert(None);
    }

    /// Registers `home` at `care_of` at start-up, without the exchange.
    pub fn register(&mut self, now: Time, home: Ipv4Addr, care_of: Ipv4Addr, lifetime: Duration) {
        self.mobiles.insert(home, Some(Registration { care_of, until: now + lifetime, identification: 0 }));
    }

    /// The live care-of address of `home`.
    pub fn care_of(&self, now: Time, home: Ipv4Addr) -> Option<Ipv4Addr> {
        self.mobiles.get(&home)?.as_ref().filter(|r| r.until > now).map(|r| r.care_of)
    }

    fn on_message(&mut self, now: Time, src: Ipv4Addr, m: MipMessage, out: &mut Vec<Action>) {
        match m {
            MipMessage::RegistrationRequest(r) => {
                let code = match self.mobiles.get(&r.home_addr) {
                    _ if r.home_agent != self.cfg.addr => reply_code::HA_UNKNOWN_HOME_AGENT,
                    None => reply_code::HA_UNKNOWN_HOME_AGENT,
                    // RFC 5944 §5.7: a request no newer than the last accepted is a replay.
                    Some(Some(reg)) if r.identification <= reg.identification => reply_code::HA_IDENTIFICATION_MISMATCH,
                    Some(_) => reply_code::ACCEPTED,
                };
                let lifetime = r.lifetime.min(self.cfg.max_registration_lifetime);
                if code == reply_code::ACCEPTED {
                    self.stats.registrations_accepted += 1;
                    let reg = (lifetime > 0).then(|| Registration {
                        care_of: r.care_of,
                        until: now + Duration::from_secs(u64::from(lifetime)),
                        identification: r.identification,
                    });
                    self.mobiles.insert(r.home_addr, reg);
                } else {
                    self.stats.registrations_denied += 1;
                }
                let reply = RegistrationReply {
                    code,
                    lifetime,
                    home_addr: r.home_addr,
                    home_agent: self.cfg.addr,
                    identification: r.identification,
                };
                let p = MipMessage::RegistrationReply(reply).emit_ipv4(self.cfg.addr, src, self.ident.next());
                out.push(Action::Inject(Side::ToMobile, p));
            }
            // Eom 2002 §2.1: "When the HA receives the binding warning message, it sends the binding update
            // message to the correspondent host in order to inform the new care-of address."
            MipMessage::BindingWarning(w) if self.cfg.route_optimisation => {
                self.stats.binding_warnings_received += 1;
                if let Some(care_of) = self.care_of(now, w.home_addr) {
                    let identification = self.next_identification;
                    self.next_identification += 1;
                    let u = BindingUpdate {
                        ack_requested: false,
                        lifetime: self.cfg.binding_lifetime,
                        home_addr: w.home_addr,
                        care_of,
                        identification,
                    };
                    self.stats.binding_updates_sent += 1;
                    let p = MipMessage::BindingUpdate(u).emit_ipv4(self.cfg.addr, w.target, self.ident.next());
                    out.push(Action::Inject(Side::ToWired, p));
                }
            }
            _ => {}
        }
    }
}

impl Agent for HomeAgent {
    fn handle_packet(&mut self, now: Time, side: Side, packet: Bytes, out: &mut Vec<Action>) {
        let Ok(ip) = Ipv4Packet::new_checked(&packet[..]) else {
            drop_malformed(&mut self.stats.malformed_dropped, out);
            return;
        };
        let (src, dst) = (ip.src_addr(), ip.dst_addr());
        if dst == self.cfg.addr {
            match MipMessage::parse_ipv4(&packet) {
                Ok(Some((_, _, m))) => {
                    out.push(Action::Drop(DropReason::Consumed));
                    self.on_message(now, src, m, out);
                }
                Ok(None) => out.push(Action::Drop(DropReason::Consumed)),
                Err(_) => {
                    drop_malformed(&mut self.stats.malformed_dropped, out);
                }
            }
            return;
        }
        if !self.mobiles.contains_key(&dst) {
            out.push(Action::Forward(side, packet));
            return;
        }
        match self.care_of(now, dst) {
            Some(care_of) => {
                self.stats.tunnelled += 1;
                out.push(Action::Forward(
                    Side::ToMobile,
                    encapsulate(&packet, self.cfg.addr, care_of, &mut self.ident),
                ));
            }
            None => {
                self.stats.no_binding_dropped += 1;
                out.push(Action::Drop(DropReason::NotDeliverable));
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
            ("tunnelled", s.tunnelled),
            ("registrations_accepted", s.registrations_accepted),
            ("registrations_denied", s.registrations_denied),
            ("binding_warnings_received", s.binding_warnings_received),
            ("binding_updates_sent", s.binding_updates_sent),
            ("no_binding_dropped", s.no_binding_dropped),
            ("malformed_dropped", s.malformed_dropped),
        ]
    }
}
