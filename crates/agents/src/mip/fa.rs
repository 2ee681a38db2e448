//! A foreign agent: the router of one subnetwork (Eom 2002 §2: "the router in each subnetwork also plays
//! the role of FA"), offering its own address as the care-of address. It keeps the visitor list, relays
//! registrations, answers the local handoff protocol's notification with an agent advertisement (Fig. 2),
//! and, with route optimisation, keeps a binding cache of mobiles that left so that what still reaches it is
//! re-tunnelled to their new FA (smooth handoff, §2.1), warns the HA, and asks the old BS to *forward* its
//! buffer (§2.2), detouring later arrivals through that BS when the re-ordering rule of §4.2 is on.

use super::{drop_malformed, encapsulate, Ident};
use crate::{Action, Agent, DropReason, Side, Time};
use bytes::Bytes;
use lasthop_wire::ipip;
use lasthop_wire::ipv4::{Ipv4Packet, PROTO_IPIP};
use lasthop_wire::mip::{
    adv_flag, AgentAdvertisement, BindingAck, BindingUpdate, BindingWarning, LinkAddr, LocalKind, LocalMessage,
    MipMessage, PreviousFa, RegistrationRequest,
};
use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::time::Duration;

/// Knobs of a [`ForeignAgent`].
#[derive(Debug, Clone)]
pub struct FaConfig {
    /// The FA's address, which is also the care-of address it offers.
    pub addr: Ipv4Addr,
    /// Route optimisation (draft-ietf-mobileip-optim): on a new FA's binding update, keep a binding and
    /// re-tunnel; send binding warnings to the HA (Eom 2002 §2.1). Off: base Mobile IP.
    pub route_optimisation: bool,
    /// On a binding update, send *forward* to the BS the mobile was attached to (Eom 2002 §2.2).
    pub forward_buffer: bool,
    /// While a binding for a departed mobile lasts, send what arrives for it down through its old BS instead
    /// of straight to the new FA (Eom 2002 §4.2, Fig. 17).
    pub reorder_through_old_bs: bool,
    /// Period of unsolicited (broadcast) agent advertisements; `None`: none. RFC 5944 §2.3.1 limits them to
    /// one per second, which Eom 2002 §2.2 quotes; [`FaConfig::new`] uses that limit.
    pub advertisement_interval: Option<Duration>,
    /// Registration lifetime offered in advertisements, seconds.
    pub registration_lifetime: u16,
    /// Least time between two binding warnings about the same (mobile, correspondent) (the draft asks for
    /// a rate limit and leaves it open).
    pub warning_interval: Duration,
    /// At most this many visitors and this many bindings (oldest evicted first).
    pub max_entries: usize,
    /// The BS of this FA's cell (Eom 2002 Fig. 4 has one per subnetwork): where a mobile that registers
    /// before its BS's notification arrives (on a broadcast advertisement) is taken to be.
    pub cell_bs: Option<Ipv4Addr>,
}

impl FaConfig {
    pub fn new(addr: Ipv4Addr) -> FaConfig {
        FaConfig {
            addr,
            route_optimisation: false,
            forward_buffer: false,
            reorder_through_old_bs: false,
            advertisement_interval: Some(Duration::from_secs(1)),
            registration_lifetime: 600,
            warning_interval: Duration::from_secs(1),
            max_entries: 256,
            cell_bs: None,
        }
    }
}

/// Counters of a [`ForeignAgent`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FaStats {
    pub advertisements_broadcast: u64,
    pub advertisements_on_notification: u64,
    pub registrations_relayed: u64,
    pub replies_relayed: u64,
    pub binding_updates_sent: u64,
    pub binding_updates_received: u64,
    pub binding_warnings_sent: u64,
    pub forward_messages_sent: u64,
    /// Tunnelled packets delivered to a visitor.
    pub delivered_to_visitor: u64,
    /// Packets re-tunnelled to a mobile's new FA (smooth handoff), whether they came tunnelled or up from
    /// the old BS's buffer.
    pub retunnelled: u64,
    /// Of those, packets that came up from the old BS after *forward*.
    pub retunnelled_from_bs: u64,
    /// Packets sent down through the old BS by the re-ordering rule.
    pub detoured_through_bs: u64,
    /// Tunnelled packets for a mobile with neither a visitor entry nor a binding: lost here.
    pub lost_no_binding: u64,
    pub malformed_dropped: u64,
}

struct Visitor {
    link: LinkAddr,
    bs: Ipv4Addr,
    /// Learned from the mobile's registration request.
    home_agent: Option<Ipv4Addr>,
    /// The identification of the registration in flight, until its reply.
    pending: Option<u64>,
    registered: bool,
    since: Time,
}

struct Binding {
    care_of: Ipv4Addr,
    until: Time,
    /// The BS the mobile left, for *forward* and the re-ordering rule.
    old_bs: Option<Ipv4Addr>,
    /// Where binding warnings about the mobile go.
    home_agent: Option<Ipv4Addr>,
}

/// The foreign agent. Side `ToMobile` is down to its BSs (a LAN: the host hands what the FA sends down to
/// every BS of the subnetwork, and each bridges only frames for mobiles in its cell); `ToWired` is the rest
/// of the network.
pub struct ForeignAgent {
    cfg: FaConfig,
    visitors: BTreeMap<Ipv4Addr, Visitor>,
    bindings: BTreeMap<Ipv4Addr, Binding>,
    warned: BTreeMap<(Ipv4Addr, Ipv4Addr), Time>,
    next_advertisement: Option<Time>,
    adv_sequence: u16,
    ident: Ident,
    next_identification: u64,
    stats: FaStats,
}

impl ForeignAgent {
    pub fn new(cfg: FaConfig) -> ForeignAgent {
        let next_advertisement = cfg.advertisement_interval.map(|_| Time::ZERO);
        ForeignAgent {
            cfg,
            visitors: BTreeMap::new(),
            bindings: BTreeMap::new(),
            warned: BTreeMap::new(),
            next_advertisement,
            adv_sequence: 0,
            ident: Ident::default(),
            next_identification: 1,
            stats: FaStats::default(),
        }
    }

    pub fn stats(&self) -> &FaStats {
        &self.stats
    }

    /// Registers a visitor at start-up, without the exchange (the run begins with the mobile registered).
    pub fn add_visitor(&mut self, now: Time, home: Ipv4Addr, home_agent: Ipv4Addr, link: LinkAddr, bs: Ipv4Addr) {
        self.insert_visitor(now, home, link, bs);
        if let Some(v) = self.visitors.get_mut(&home) {
            v.registered = true;
            v.home_agent = Some(home_agent);
        }
    }

    pub fn is_registered(&self, home: Ipv4Addr) -> bool {
        self.visitors.get(&home).is_some_and(|v| v.registered)
    }

    pub fn is_visitor(&self, home: Ipv4Addr) -> bool {
        self.visitors.contains_key(&home)
    }

    /// The new care-of address this FA re-tunnels `home`'s packets to, if it holds a live binding.
    pub fn binding(&self, now: Time, home: Ipv4Addr) -> Option<Ipv4Addr> {
        self.bindings.get(&home).filter(|b| b.until > now).map(|b| b.care_of)
    }

    fn insert_visitor(&mut self, now: Time, home: Ipv4Addr, link: LinkAddr, bs: Ipv4Addr) {
        if !self.visitors.contains_key(&home) && self.visitors.len() >= self.cfg.max_entries.max(1) {
            let oldest = self.visitors.iter().min_by_key(|(_, v)| v.since).map(|(a, _)| *a);
            oldest.map(|a| self.visitors.remove(&a));
        }
        let (registered, home_agent) =
            self.visitors.get(&home).map_or((false, None), |v| (v.registered && v.bs == bs, v.home_agent));
        self.visitors.insert(home, Visitor { link, bs, home_agent, pending: None, registered, since: now });
        // The mobile is back (or new) here: no more forwarding pointer for it.
        self.bindings.remove(&home);
    }

    fn advertisement(&mut self) -> AgentAdvertisement {
        self.adv_sequence = self.adv_sequence.wrapping_add(1);
        AgentAdvertisement {
            router: self.cfg.addr,
            lifetime: 1800,
            sequence: self.adv_sequence,
            registration_lifetime: self.cfg.registration_lifetime,
            flags: adv_flag::R | adv_flag::F,
            care_of: vec![self.cfg.addr],
        }
    }

    fn send(&mut self, side: Side, m: MipMessage, dst: Ipv4Addr, out: &mut Vec<Action>) {
        out.push(Action::Inject(side, m.emit_ipv4(self.cfg.addr, dst, self.ident.next())));
    }

    fn on_message(&mut self, now: Time, src: Ipv4Addr, m: MipMessage, out: &mut Vec<Action>) {
        match m {
            // From a mobile in a cell of ours: relay to its HA (RFC 5944 §3.7.2) and, with route optimisation,
            // send the binding update the mobile asked for to its previous FA (Eom 2002 §2.1).
            MipMessage::RegistrationRequest(r) if r.care_of == self.cfg.addr => {
                if let (false, Some(bs)) = (self.visitors.contains_key(&r.home_addr), self.cfg.cell_bs) {
                    // The link layer names the sender of the frame; lasthop derives it from the home address.
                    self.insert_visitor(now, r.home_addr, LinkAddr::for_host(r.home_addr), bs);
                }
                if let Some(v) = self.visitors.get_mut(&r.home_addr) {
                    v.pending = Some(r.identification);
                    v.home_agent = Some(r.home_agent);
                }
                self.stats.registrations_relayed += 1;
                self.send(Side::ToWired, MipMessage::RegistrationRequest(r), r.home_agent, out);
                if let (true, Some(p)) = (self.cfg.route_optimisation, r.previous_fa) {
                    if p.previous_fa != self.cfg.addr {
                        self.send_binding_update(r, p, out);
                    }
                }
            }
            MipMessage::RegistrationReply(r) => {
                if let Some(v) = self.visitors.get_mut(&r.home_addr) {
                    if v.pending == Some(r.identification) {
                        v.pending = None;
                        v.registered = r.code <= 1;
                    }
                }
                self.stats.replies_relayed += 1;
                self.send(Side::ToMobile, MipMessage::RegistrationReply(r), r.home_addr, out);
            }
            // From the new FA: the mobile moved (Eom 2002 §2.1, §2.2).
            MipMessage::BindingUpdate(u) if self.cfg.route_optimisation => {
                self.stats.binding_updates_received += 1;
                let left = self.visitors.remove(&u.home_addr);
                let old_bs = left.as_ref().map(|v| (v.bs, v.link));
                let home_agent = left.and_then(|v| v.home_agent);
                if u.lifetime == 0 {
                    self.bindings.remove(&u.home_addr);
                } else if u.care_of != self.cfg.addr {
                    if self.bindings.len() >= self.cfg.max_entries.max(1) && !self.bindings.contains_key(&u.home_addr) {
                        let first = self.bindings.iter().min_by_key(|(_, b)| b.until).map(|(a, _)| *a);
                        first.map(|a| self.bindings.remove(&a));
                    }
                    let until = now + Duration::from_secs(u64::from(u.lifetime));
                    let keep_bs = old_bs.map(|(bs, _)| bs).filter(|_| self.cfg.forward_buffer);
                    let previous = self
                        .bindings
                        .insert(u.home_addr, Binding { care_of: u.care_of, until, old_bs: keep_bs, home_agent });
                    // A repeated update for a mobile already gone keeps what the first one learned.
                    if let (Some(prev), Some(b)) = (previous, self.bindings.get_mut(&u.home_addr)) {
                        b.old_bs = b.old_bs.or(prev.old_bs);
                        b.home_agent = b.home_agent.or(prev.home_agent);
                    }
                }
                if let (true, Some((bs, link))) = (self.cfg.forward_buffer, old_bs) {
                    let f = LocalMessage {
                        kind: LocalKind::Forward,
                        mobile: link,
                        home_addr: u.home_addr,
                        sender: self.cfg.addr,
                    };
                    out.push(Action::Inject(Side::ToMobile, f.emit_ipv4(self.cfg.addr, bs, self.ident.next())));
                    self.stats.forward_messages_sent += 1;
                }
                if u.ack_requested {
                    let a = BindingAck { status: 0, home_addr: u.home_addr, identification: u.identification };
                    self.send(Side::ToWired, MipMessage::BindingAck(a), src, out);
                }
            }
            _ => {}
        }
    }

    fn send_binding_update(&mut self, r: RegistrationRequest, p: PreviousFa, out: &mut Vec<Action>) {
        let identification = self.next_identification;
        self.next_identification += 1;
        let u = BindingUpdate {
            ack_requested: false,
            lifetime: p.cache_lifetime,
            home_addr: r.home_addr,
            care_of: self.cfg.addr,
            identification,
        };
        self.stats.binding_updates_sent += 1;
        self.send(Side::ToWired, MipMessage::BindingUpdate(u), p.previous_fa, out);
    }

    /// What arrives for `home` (inner packet) at a FA that is not its current one.
    fn on_stale(&mut self, now: Time, tunnel_src: Ipv4Addr, inner: Bytes, out: &mut Vec<Action>) -> bool {
        let home = match Ipv4Packet::new_checked(&inner[..]) {
            Ok(ip) => ip.dst_addr(),
            Err(_) => return false,
        };
        let Some(b) = self.bindings.get(&home).filter(|b| b.until > now) else { return false };
        let (care_of, old_bs, home_agent) = (b.care_of, b.old_bs, b.home_agent);
        if let (true, Some(_)) = (self.cfg.reorder_through_old_bs, old_bs) {
            self.stats.detoured_through_bs += 1;
            out.push(Action::Forward(Side::ToMobile, inner));
        } else {
            self.stats.retunnelled += 1;
            out.push(Action::Forward(Side::ToWired, encapsulate(&inner, self.cfg.addr, care_of, &mut self.ident)));
        }
        // The draft's binding warning: the tunnel's source holds a stale binding (the HA itself does not).
        if let (true, Some(ha)) = (self.cfg.route_optimisation, home_agent) {
            self.warn(now, home, ha, tunnel_src, out);
        }
        true
    }

    /// Binding warning to `ha` that `target` tunnels to a stale care-of address, at most one per
    /// `warning_interval` per (mobile, target). None when the tunnel came from the HA itself: it learns the
    /// new binding from the registration.
    fn warn(&mut self, now: Time, home: Ipv4Addr, ha: Ipv4Addr, target: Ipv4Addr, out: &mut Vec<Action>) {
        let key = (home, target);
        if ha == target || self.warned.get(&key).is_some_and(|&t| now < t + self.cfg.warning_interval) {
            return;
        }
        if self.warned.len() >= self.cfg.max_entries.max(1) {
            self.warned.retain(|_, t| now < *t + self.cfg.warning_interval);
        }
        self.warned.insert(key, now);
        self.stats.binding_warnings_sent += 1;
        self.send(Side::ToWired, MipMessage::BindingWarning(BindingWarning { home_addr: home, target }), ha, out);
    }
}

impl Agent for ForeignAgent {
    fn handle_packet(&mut self, now: Time, side: Side, packet: Bytes, out: &mut Vec<Action>) {
        let Ok(ip) = Ipv4Packet::new_checked(&packet[..]) else {
            drop_malformed(&mut self.stats.malformed_dropped, out);
            return;
        };
        let (src, dst, proto) = (ip.src_addr(), ip.dst_addr(), ip.protocol());
        // Control messages to this FA, and registration requests from the cell (sent to the FA's address).
        if dst == self.cfg.addr {
            match (LocalMessage::parse_ipv4(&packet), MipMessage::parse_ipv4(&packet)) {
                (Ok(Some(m)), _) => {
                    out.push(Action::Drop(DropReason::Consumed));
                    if m.kind == LocalKind::Notification && side == Side::ToWired {
                        // Fig. 2: notification → agent advertisement to the mobile through its new BS.
                        self.insert_visitor(now, m.home_addr, m.mobile, m.sender);
                        let adv = self.advertisement();
                        out.push(Action::Inject(
                            Side::ToMobile,
                            adv.emit_ipv4(self.cfg.addr, m.home_addr, self.ident.next()),
                        ));
                        self.stats.advertisements_on_notification += 1;
                    }
                    return;
                }
                (_, Ok(Some((_, _, m)))) => {
                    out.push(Action::Drop(DropReason::Consumed));
                    self.on_message(now, src, m, out);
                    return;
                }
                (Err(_), _) | (_, Err(_)) => {
                    drop_malformed(&mut self.stats.malformed_dropped, out);
                    return;
                }
                (Ok(None), Ok(None)) => {}
            }
            if proto == PROTO_IPIP {
                let Ok(inner) = ipip::decapsulate(&packet) else {
                    drop_malformed(&mut self.stats.malformed_dropped, out);
                    return;
                };
                let home = Ipv4Packet::new_checked(&inner[..]).map(|i| i.dst_addr()).expect("decapsulate checked it");
                if self.visitors.contains_key(&home) {
                    self.stats.delivered_to_visitor += 1;
                    out.push(Action::Forward(Side::ToMobile, inner));
                } else if !self.on_stale(now, src, inner, out) {
                    self.stats.lost_no_binding += 1;
                    out.push(Action::Drop(DropReason::NotDeliverable));
                }
                return;
            }
            out.push(Action::Drop(DropReason::Consumed));
            return;
        }
        // Up from a BS for a mobile that has left (the old BS's buffer after *forward*, Fig. 17's detour):
        // re-tunnel to the new FA, in the order it comes.
        if side == Side::ToWired {
            if let Some(b) = self.bindings.get(&dst).filter(|b| b.until > now) {
                let care_of = b.care_of;
                self.stats.retunnelled += 1;
                self.stats.retunnelled_from_bs += 1;
                out.push(Action::Forward(Side::ToWired, encapsulate(&packet, self.cfg.addr, care_of, &mut self.ident)));
                return;
            }
        }
        out.push(Action::Forward(side, packet));
    }

    fn handle_timeout(&mut self, now: Time, out: &mut Vec<Action>) {
        self.bindings.retain(|_, b| b.until > now);
        let (Some(at), Some(every)) = (self.next_advertisement, self.cfg.advertisement_interval) else { return };
        if at > now {
            return;
        }
        let adv = self.advertisement();
        out.push(Action::Inject(Side::ToMobile, adv.emit_ipv4(self.cfg.addr, Ipv4Addr::BROADCAST, self.ident.next())));
        self.stats.advertisements_broadcast += 1;
        self.next_advertisement = Some(at + every);
    }

    fn poll_timeout(&self) -> Option<Time> {
        self.next_advertisement
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let s = &self.stats;
        vec![
            ("advertisements_broadcast", s.advertisements_broadcast),
            ("advertisements_on_notification", s.advertisements_on_notification),
            ("registrations_relayed", s.registrations_relayed),
            ("replies_relayed", s.replies_relayed),
            ("binding_updates_sent", s.binding_updates_sent),
            ("binding_updates_received", s.binding_updates_received),
            ("binding_warnings_sent", s.binding_warnings_sent),
            ("forward_messages_sent", s.forward_messages_sent),
            ("delivered_to_visitor", s.delivered_to_visitor),
            ("retunnelled", s.retunnelled),
            ("retunnelled_from_bs", s.retunnelled_from_bs),
            ("detoured_through_bs", s.detoured_through_bs),
            ("lost_no_binding", s.lost_no_binding),
            ("malformed_dropped", s.malformed_dropped),
        ]
    }
}
