//! The correspondent host's side of route optimisation (Eom 2002 §2.1; draft-ietf-mobileip-optim §5): a
//! binding cache filled by the HA's binding updates, by which the correspondent tunnels its packets for a
//! mobile straight to the mobile's care-of address instead of through the HA. Under base Mobile IP the
//! correspondent runs no agent at all (the cache stays empty and packets go to the home address).

use super::{drop_malformed, encapsulate, Ident};
use crate::{Action, Agent, DropReason, Side, Time};
use bytes::Bytes;
use lasthop_wire::ipv4::Ipv4Packet;
use lasthop_wire::mip::{BindingAck, MipMessage};
use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::time::Duration;

/// Counters of a [`Correspondent`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CnStats {
    pub binding_updates_received: u64,
    /// Updates older than the binding cached (reordered or replayed).
    pub binding_updates_stale: u64,
    pub tunnelled: u64,
    pub malformed_dropped: u64,
}

struct Entry {
    care_of: Ipv4Addr,
    until: Time,
    identification: u64,
}

/// The correspondent's binding cache as an agent on the host's own output: `Side::ToWired` is what the
/// host sends, `Side::ToMobile` what it receives.
pub struct Correspondent {
    addr: Ipv4Addr,
    cache: BTreeMap<Ipv4Addr, Entry>,
    max_entries: usize,
    ident: Ident,
    stats: CnStats,
}

impl Correspondent {
    pub fn new(addr: Ipv4Addr, max_entries: usize) -> Correspondent {
        Correspondent {
            addr,
            cache: BTreeMap::new(),
            max_entries: max_entries.max(1),
            ident: Ident::default(),
            stats: CnStats::default(),
        }
    }

    pub fn stats(&self) -> &CnStats {
        &self.stats
    }

    /// A binding in place at start-up (the run begins route-optimised, Eom 2002 Table 1's "Route M-IP").
    pub fn set_binding(&mut self, now: Time, home: Ipv4Addr, care_of: Ipv4Addr, lifetime: Duration) {
        self.cache.insert(home, Entry { care_of, until: now + lifetime, identification: 0 });
    }

    pub fn binding(&self, now: Time, home: Ipv4Addr) -> Option<Ipv4Addr> {
        self.cache.get(&home).filter(|e| e.until > now).map(|e| e.care_of)
    }
}

impl Agent for Correspondent {
    fn handle_packet(&mut self, now: Time, side: Side, packet: Bytes, out: &mut Vec<Action>) {
        let Ok(ip) = Ipv4Packet::new_checked(&packet[..]) else {
            drop_malformed(&mut self.stats.malformed_dropped, out);
            return;
        };
        let (src, dst) = (ip.src_addr(), ip.dst_addr());
        match side {
            Side::ToMobile if dst == self.addr => match MipMessage::parse_ipv4(&packet) {
                Ok(Some((_, _, MipMessage::BindingUpdate(u)))) => {
                    out.push(Action::Drop(DropReason::Consumed));
                    self.stats.binding_updates_received += 1;
                    if self
                        .cache
                        .get(&u.home_addr)
                        .is_some_and(|e| e.identification >= u.identification && e.identification != 0)
                    {
                        self.stats.binding_updates_stale += 1;
                        return;
                    }
                    if u.lifetime == 0 {
                        self.cache.remove(&u.home_addr);
                    } else {
                        if self.cache.len() >= self.max_entries && !self.cache.contains_key(&u.home_addr) {
                            let first = self.cache.iter().min_by_key(|(_, e)| e.until).map(|(a, _)| *a);
                            first.map(|a| self.cache.remove(&a));
                        }
                        let until = now + Duration::from_secs(u64::from(u.lifetime));
                        self.cache
                            .insert(u.home_addr, Entry { care_of: u.care_of, until, identification: u.identification });
                    }
                    if u.ack_requested {
                        let a = BindingAck { status: 0, home_addr: u.home_addr, identification: u.identification };
                        let p = MipMessage::BindingAck(a).emit_ipv4(self.addr, src, self.ident.next());
                        out.push(Action::Inject(Side::ToWired, p));
                    }
                }
                Ok(_) => out.push(Action::Forward(side, packet)),
                Err(_) => {
                    drop_malformed(&mut self.stats.malformed_dropped, out);
                }
            },
            Side::ToWired => match self.binding(now, dst) {
                Some(care_of) => {
                    self.stats.tunnelled += 1;
                    out.push(Action::Forward(Side::ToWired, encapsulate(&packet, self.addr, care_of, &mut self.ident)));
                }
                None => out.push(Action::Forward(side, packet)),
            },
            Side::ToMobile => out.push(Action::Forward(side, packet)),
        }
    }

    fn handle_timeout(&mut self, now: Time, _out: &mut Vec<Action>) {
        self.cache.retain(|_, e| e.until > now);
    }

    fn poll_timeout(&self) -> Option<Time> {
        None
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let s = &self.stats;
        vec![
            ("binding_updates_received", s.binding_updates_received),
            ("binding_updates_stale", s.binding_updates_stale),
            ("tunnelled", s.tunnelled),
            ("malformed_dropped", s.malformed_dropped),
        ]
    }
}
