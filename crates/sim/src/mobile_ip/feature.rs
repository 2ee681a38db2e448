//! Mobile IP's part in a run: the entities of `lasthop_agents::mip` placed on the scenario's nodes, every
//! packet that reaches one of them handed to it, what it emits carried out on the right link, their timers,
//! the handoff schedule, and the per-handoff measurements.
//!
//! Where each entity sends (its `Side`s on this topology):
//! - home agent, correspondent: by the routing table, from their node;
//! - foreign agent: by the routing table, except broadcasts (agent advertisements), which go down its link to
//!   its base station;
//! - base station: `ToMobile` over the air to the mobile, `ToWired` up its link to its FA (so the buffer the
//!   *forward* message empties goes to the old FA even though it is addressed to the mobile);
//! - mobile: what it forwards goes to the host's endpoints (the core delivers it), what it makes goes out by
//!   its gateway, its current cell.

use super::config::{CleanupKind, MipScheme, MobileIpConfig};
use super::metrics::{MipHandoffMetrics, MobileIpMetrics};
use crate::context::{Cx, Request, Setup, View};
use crate::feature::{Feature, HookSet};
use crate::metrics::RunResult;
use crate::scenario::{LinkKind, Scenario};
use bytes::Bytes;
use lasthop_agents::mip::{
    BaseStation, BsConfig, Cleanup, Correspondent, FaConfig, ForeignAgent, HaConfig, HomeAgent, MnConfig, MnEvent,
    MobileNode,
};
use lasthop_agents::{Action, Agent, Side};
use lasthop_wire::ipv4::{Ipv4Packet, PROTO_TCP, PROTO_UDP};
use lasthop_wire::mip::{LinkAddr, MipMessage, PROTO_ICMP, PROTO_MIP_LOCAL};
use lasthop_wire::{TcpPacket, Time};
use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;
use std::time::Duration;

/// Mobile IP's events.
pub(crate) enum MobileIpEvent {
    /// Handoff `k`: the mobile leaves its cell.
    Leave { k: u32 },
    /// Handoff `k`: the mobile enters the next cell.
    Enter { k: u32 },
    /// An entity's timer (beacons, advertisements, expiry).
    Timer(Entity),
}

/// The entities with timers.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Entity {
    Fa(usize),
    Bs(usize),
}

struct Cell {
    fa: usize,
    bs: usize,
    /// The wireless link BS–mobile and the wired link FA–BS.
    air: usize,
    lan: usize,
}

pub(crate) struct MobileIp {
    ch: usize,
    /// Where the correspondent's one link ends, and that link.
    ch_hop: usize,
    ch_link: usize,
    ha: usize,
    mh: usize,
    mh_addr: Ipv4Addr,
    cells: Vec<Cell>,
    current: usize,
    home_agent: HomeAgent,
    fas: Vec<ForeignAgent>,
    bss: Vec<BaseStation>,
    correspondent: Option<Correspondent>,
    mobile: MobileNode,
    link_acks: bool,
    /// The mobile keeps its own last data packets (§4.2): its host's packets go through `mobile`.
    own_buffer: bool,
    timers: BTreeMap<(u8, usize), Time>,
    first: Time,
    every: Option<Time>,
    gap: Time,
    handoffs: Vec<MipHandoffMetrics>,
    losses_seen: u64,
    recovered_mark: u64,
    /// (source port, sequence number) of every data segment the mobile received.
    seen: BTreeSet<(u16, u32)>,
    duplicates: u64,
    /// The correspondent's side of its connection, seen from outside (no trace needed): when each data
    /// segment left it (sequence number), when each ACK reached it; and when each data segment reached the
    /// mobile.
    /// (time, sequence number, IP identification: one per copy sent).
    ch_sent: Vec<(Time, u32, u16)>,
    /// Base Mobile IP: the one-way delay of each cell's FA from the HA (the delay station HA–FA, Eq. (2)'s
    /// t_delay).
    ha_fa_delay: Vec<Time>,
    route_optimised: bool,
    /// Eq. (1)–(3)'s constants (Eom 2002 §2.2): each cell's BS–FA delay, the FA–FA delay (t_old_fa), the
    /// maximum window in segments (mws) and Table 1's round trip (rtt).
    bs_fa_delay: Vec<Time>,
    fa_fa_delay: Time,
    mws: f64,
    eq_rtt: Duration,
    ch_acked: Vec<(Time, u32)>,
    mh_received: Vec<(Time, u32, u16)>,
    out: Vec<Action>,
    /// Whether a first handoff is scheduled at all (`first_handoff_s` finite).
    first_handoff: bool,
}

fn secs(v: f64) -> Time {
    Time((v * 1e9).round() as u64)
}

impl MobileIp {
    /// Sets up the scenario's `[mobile_ip]` (`None` without it).
    pub(crate) fn build(s: &Scenario, setup: &mut Setup<'_>) -> Option<MobileIp> {
        let cfg: &MobileIpConfig = s.mobile_ip.as_ref()?;
        let index = |name: &str| setup.view().node_index(name);
        let (ch, ha, mh) = (index(&cfg.correspondent), index(&cfg.home_agent), index(&cfg.mobile));
        setup.recompute_routes(Some(mh));
        let view = setup.view();
        let find = |w: View<'_>, a: usize, b: usize, kind: LinkKind| {
            w.links()
                .iter()
                .position(|l| l.kind == kind && l.ends.contains(&a) && l.ends.contains(&b))
                .expect("validated")
        };
        let ch_link = view.links().iter().position(|l| l.ends.contains(&ch)).expect("validated");
        let ch_hop = view.links()[ch_link].ends[1 - view.links()[ch_link].dir_from(ch)];
        let cells: Vec<Cell> = cfg
            .cells
            .iter()
            .map(|c| {
                let (fa, bs) = (view.node_index(&c.foreign_agent), view.node_index(&c.base_station));
                Cell { fa, bs, air: find(view, bs, mh, LinkKind::Wireless), lan: find(view, bs, fa, LinkKind::Wired) }
            })
            .collect();
        let addr = |n: usize| view.nodes()[n].addr;
        let (mh_addr, ha_addr) = (addr(mh), addr(ha));
        let ro = cfg.scheme == MipScheme::Ro;
        let buffering = cfg.buffer_packets > 0;
        let link = LinkAddr::for_host(mh_addr);
        let registration = Duration::from_secs(600);

        let mut home_agent = HomeAgent::new(HaConfig { route_optimisation: ro, ..HaConfig::new(ha_addr) });
        home_agent.register(Time::ZERO, mh_addr, addr(cells[0].fa), registration);
        let adv = Duration::from_secs_f64(cfg.advertisement_interval_s);
        let fas = cells
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let mut fa = ForeignAgent::new(FaConfig {
                    route_optimisation: ro,
                    forward_buffer: buffering,
                    reorder_through_old_bs: cfg.reorder,
                    advertisement_interval: Some(adv),
                    cell_bs: Some(addr(c.bs)),
                    ..FaConfig::new(addr(c.fa))
                });
                if i == 0 {
                    fa.add_visitor(Time::ZERO, mh_addr, ha_addr, link, addr(c.bs));
                }
                fa
            })
            .collect();
        let beacon = Duration::from_secs_f64(cfg.beacon_interval_ms / 1000.0);
        let n = cells.len() as u64;
        let bss = cells
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let mut bs = BaseStation::new(BsConfig {
                    beacon_interval: Some(beacon),
                    // Spread the cells' beacons over the period (as mobility does).
                    first_beacon: Time(beacon.as_nanos() as u64 * (i as u64 + 1) / (n + 1)),
                    buffer_packets: buffering.then_some(cfg.buffer_packets),
                    cleanup: match cfg.buffer_cleanup {
                        CleanupKind::None => Cleanup::None,
                        CleanupKind::TcpAck => Cleanup::TcpAck,
                        CleanupKind::LinkAck => Cleanup::LinkAck,
                    },
                    departed_hold: Duration::from_secs(u64::from(cfg.binding_lifetime_s)),
                    ..BsConfig::new(addr(c.bs), addr(c.fa))
                });
                if i == 0 {
                    bs.attach(Time::ZERO, mh_addr, link);
                }
                bs
            })
            .collect();
        let correspondent = ro.then(|| {
            let mut cn = Correspondent::new(addr(ch), 64);
            cn.set_binding(Time::ZERO, mh_addr, addr(cells[0].fa), registration);
            cn
        });
        let mut mobile = MobileNode::new(MnConfig {
            notify_previous_fa: ro,
            previous_fa_lifetime: cfg.binding_lifetime_s,
            own_buffer_packets: cfg.own_buffer_packets,
            ..MnConfig::new(mh_addr, ha_addr)
        });
        mobile.attach(addr(cells[0].bs), addr(cells[0].fa));

        let gateway = Some((cells[0].air, view.links()[cells[0].air].dir_from(mh)));
        let ha_fa_delay = cells
            .iter()
            .map(|c| {
                let direct = view.links().iter().find(|l| l.ends.contains(&ha) && l.ends.contains(&c.fa));
                Time(direct.map_or(0, |l| l.delay_ns()))
            })
            .collect();
        let delay_between = |w: View<'_>, a: usize, b: usize| {
            Time(w.links().iter().find(|l| l.ends.contains(&a) && l.ends.contains(&b)).map_or(0, |l| l.delay_ns()))
        };
        let bs_fa_delay: Vec<Time> = cells.iter().map(|c| delay_between(view, c.bs, c.fa)).collect();
        let fa_fa_delay = if cells.len() > 1 { delay_between(view, cells[0].fa, cells[1].fa) } else { Time::ZERO };
        let tcp = s.flows.keys().next().and_then(|f| s.flow_tcp(f).ok()).unwrap_or_default();
        let mss = usize::from(tcp.mss.max(1));
        let mws = f64::from(tcp.max_window.min(65_535)) / mss as f64;
        // Table 1: rtt = 2 × (CH–HA + HA–FA) + α, α the FA–mobile round trip (§3.2: "roughly 8 ms").
        let one_way: u64 =
            view.path(ch, cells[0].fa).map_or(0, |p| p.windows(2).map(|w| delay_between(view, w[0], w[1]).0).sum());
        let air = &view.links()[cells[0].air];
        let alpha = 2 * bs_fa_delay[0].0 + air.airtime_ns(mss + 40) + air.airtime_ns(40);
        let eq_rtt = Duration::from_nanos(2 * one_way + alpha);
        let every = cfg.handoff_every_s.is_finite().then(|| secs(cfg.handoff_every_s));
        let first = secs(cfg.first_handoff_s.min(1e7));
        let state = MobileIp {
            ch,
            ch_hop,
            ch_link,
            ha,
            mh,
            mh_addr,
            cells,
            current: 0,
            home_agent,
            fas,
            bss,
            correspondent,
            mobile,
            link_acks: cfg.buffer_cleanup == CleanupKind::LinkAck,
            own_buffer: cfg.own_buffer_packets > 0,
            timers: BTreeMap::new(),
            first,
            every,
            gap: secs(cfg.gap_ms / 1000.0),
            handoffs: Vec::new(),
            losses_seen: 0,
            recovered_mark: 0,
            seen: BTreeSet::new(),
            duplicates: 0,
            ch_sent: Vec::new(),
            ha_fa_delay,
            route_optimised: ro,
            bs_fa_delay,
            fa_fa_delay,
            mws,
            eq_rtt,
            ch_acked: Vec::new(),
            mh_received: Vec::new(),
            out: Vec::new(),
            first_handoff: cfg.first_handoff_s.is_finite(),
        };
        for c in &state.cells[1..] {
            setup.set_out_of_range(c.air, true);
        }
        setup.set_gateway(mh, gateway);
        for p in [PROTO_MIP_LOCAL, PROTO_ICMP, PROTO_UDP] {
            setup.add_control_protocol(p);
        }
        Some(state)
    }

    fn entity(&mut self, e: Entity) -> &mut dyn Agent {
        match e {
            Entity::Fa(i) => &mut self.fas[i],
            Entity::Bs(i) => &mut self.bss[i],
        }
    }

    fn key(e: Entity) -> (u8, usize) {
        match e {
            Entity::Fa(i) => (0, i),
            Entity::Bs(i) => (1, i),
        }
    }

    /// Schedules `e`'s timer if it wants one earlier than the one pending.
    fn arm(&mut self, cx: &mut Cx<'_, MobileIpEvent>, e: Entity) {
        let Some(want) = self.entity(e).poll_timeout() else { return };
        let key = Self::key(e);
        if self.timers.get(&key).is_none_or(|&t| want < t) {
            self.timers.insert(key, want);
            cx.schedule(want, MobileIpEvent::Timer(e));
        }
    }

    /// Carries out what entity `from` emitted (in `self.out`), then re-arms its timer.
    fn carry(&mut self, cx: &mut Cx<'_, MobileIpEvent>, from: Option<Entity>, node: usize) {
        let actions = std::mem::take(&mut self.out);
        for a in &actions {
            let (side, p) = match a {
                Action::Forward(s, p) | Action::ForwardPriority(s, p) | Action::Inject(s, p) => (*s, p.clone()),
                Action::Drop(_) => continue,
            };
            let Ok(ip) = Ipv4Packet::new_checked(&p[..]) else { continue };
            let dst = ip.dst_addr();
            match from {
                // A TCP segment the BS passes on goes through the node's own agent (Snoop, say) when it has
                // one, which sends it on by the routing table; not the buffer the *forward* message sends
                // up to the old FA (addressed to the mobile), nor the local protocol's messages.
                Some(Entity::Bs(_))
                    if cx.nodes()[node].agent.is_some()
                        && ip.protocol() == PROTO_TCP
                        && !matches!(a, Action::Inject(..))
                        && !(side == Side::ToWired && dst == self.mh_addr) =>
                {
                    cx.request(Request::HandToAgent { node, side, packet: p });
                }
                Some(Entity::Bs(i)) => {
                    let link = if side == Side::ToMobile { self.cells[i].air } else { self.cells[i].lan };
                    let dir = cx.links()[link].dir_from(node);
                    cx.send((link, dir), p, false);
                }
                Some(Entity::Fa(i)) if dst.is_broadcast() => {
                    let link = self.cells[i].lan;
                    let dir = cx.links()[link].dir_from(node);
                    cx.send((link, dir), p, false);
                }
                _ => cx.route(node, dst, p, false),
            }
        }
        self.out = actions;
        self.out.clear();
        if let Some(e) = from {
            self.arm(cx, e);
        }
    }

    fn on_timer(&mut self, cx: &mut Cx<'_, MobileIpEvent>, e: Entity) {
        let now = cx.now();
        let key = Self::key(e);
        if self.timers.get(&key).is_some_and(|&t| t <= now) {
            self.timers.remove(&key);
        }
        let mut out = std::mem::take(&mut self.out);
        let agent = self.entity(e);
        if agent.poll_timeout().is_some_and(|t| t <= now) {
            agent.handle_timeout(now, &mut out);
        }
        self.out = out;
        let node = match e {
            Entity::Fa(i) => self.cells[i].fa,
            Entity::Bs(i) => self.cells[i].bs,
        };
        self.carry(cx, Some(e), node);
    }

    fn settle_losses(&mut self, view: View<'_>) {
        let lost = view.out_of_range_losses() - self.losses_seen;
        self.losses_seen = view.out_of_range_losses();
        if let Some(h) = self.handoffs.last_mut() {
            h.packets_lost += lost;
        }
    }

    fn recovered_total(&self) -> u64 {
        self.bss.iter().map(|b| b.stats().forwarded_from_buffer).sum()
    }

    fn close_handoff(&mut self) {
        let total = self.recovered_total();
        if let Some(h) = self.handoffs.last_mut() {
            h.sent_from_buffer = total - self.recovered_mark;
        }
        self.recovered_mark = total;
    }

    fn on_leave(&mut self, cx: &mut Cx<'_, MobileIpEvent>, k: u32) {
        let now = cx.now();
        self.settle_losses(cx.view());
        self.close_handoff();
        let from = self.current;
        let to = (from + 1) % self.cells.len();
        cx.request(Request::SetOutOfRange { link: self.cells[from].air, out: true });
        self.handoffs.push(MipHandoffMetrics {
            index: k,
            from: cx.nodes()[self.cells[from].bs].name.clone(),
            to: cx.nodes()[self.cells[to].bs].name.clone(),
            left_s: now.as_secs_f64(),
            ..MipHandoffMetrics::default()
        });
        cx.request(Request::NoteHandoff);
        cx.schedule(Time(now.0 + self.gap.0), MobileIpEvent::Enter { k });
    }

    fn on_enter(&mut self, cx: &mut Cx<'_, MobileIpEvent>, k: u32) {
        let now = cx.now();
        let to = (self.current + 1) % self.cells.len();
        self.current = to;
        let air = self.cells[to].air;
        cx.request(Request::SetOutOfRange { link: air, out: false });
        let gateway = Some((air, cx.links()[air].dir_from(self.mh)));
        cx.request(Request::SetGateway { node: self.mh, gateway });
        if let Some(every) = self.every {
            let next = Time(secs(self.first.as_secs_f64()).0 + every.0 * u64::from(k + 1));
            cx.schedule(next.max(now), MobileIpEvent::Leave { k: k + 1 });
        }
    }

    /// Notes the correspondent's data segments as they leave it (their arrival at its first hop, less the
    /// access link's airtime and delay: the link carries only the correspondent's packets, which never wait
    /// at 1 Gb/s behind a 1.6 Mb/s bottleneck's pace) and its ACKs as they reach it.
    fn observe_correspondent(&mut self, view: View<'_>, now: Time, node: usize, link: usize, packet: &Bytes) {
        let ip = Ipv4Packet::new_unchecked(&packet[..]);
        if ip.protocol() != PROTO_TCP {
            return;
        }
        let Ok(tcp) = TcpPacket::new_checked(ip.payload()) else { return };
        let ch = view.nodes()[self.ch].addr;
        if node == self.ch_hop && link == self.ch_link && ip.src_addr() == ch && !tcp.payload().is_empty() {
            let l = &view.links()[link];
            let sent = Time(now.0.saturating_sub(l.airtime_ns(packet.len()) + l.delay_ns()));
            self.ch_sent.push((sent, tcp.seq_number().0, ip.ident()));
        } else if node == self.ch && ip.dst_addr() == ch && tcp.ack() {
            self.ch_acked.push((now, tcp.ack_number().0));
        }
    }

    /// Eom 2002 §2.2's loss period t_loss = T2 − T1 (Fig. 3): packets forwarded toward the old cell from T1
    /// (the mobile leaves, less the delay from the forwarding point to the old FA) until T2 (the forwarding
    /// point learns the new care-of address) are lost. The forwarding point is the HA under base Mobile IP
    /// (T2: the new registration reaches it; Eq. (2)) and the old FA under route optimisation (T2: the new
    /// FA's binding update reaches it; Eq. (3)). Queueing at the old BS is not part of it, as in the paper.
    fn observe_switch(&mut self, view: View<'_>, now: Time, node: usize, packet: &Bytes) {
        let Some(h) = self.handoffs.last_mut().filter(|h| h.t_loss_ms.is_none()) else { return };
        let from = self.cells.iter().position(|c| view.nodes()[c.bs].name == h.from).expect("a cell");
        let switched = match MipMessage::parse_ipv4(packet) {
            Ok(Some((_, dst, MipMessage::RegistrationRequest(r))))
                if !self.route_optimised
                    && node == self.ha
                    && dst == view.nodes()[self.ha].addr
                    && r.home_addr == self.mh_addr =>
            {
                true
            }
            Ok(Some((_, dst, MipMessage::BindingUpdate(u))))
                if self.route_optimised
                    && node == self.cells[from].fa
                    && dst == view.nodes()[node].addr
                    && u.home_addr == self.mh_addr =>
            {
                true
            }
            _ => false,
        };
        if switched {
            let delay = if self.route_optimised { Time::ZERO } else { self.ha_fa_delay[from] };
            let t1 = secs(h.left_s).0.saturating_sub(delay.0);
            h.t_loss_ms = Some((now.0 - t1) as f64 / 1e6);
        }
    }

    /// Eq. (1)–(3) for every handoff whose registration went out (see
    /// [`MipHandoffMetrics::predicted_t_loss_ms`]).
    fn predict(&mut self, view: View<'_>) {
        let ns = |t: Time| Duration::from_nanos(t.0);
        let s = |x: f64| Duration::from_secs_f64(x.max(0.0));
        for h in &mut self.handoffs {
            let (Some(request), Some(registration)) = (h.handoff_request_s, h.registration_sent_s) else { continue };
            let cell = |name: &str| self.cells.iter().position(|c| view.nodes()[c.bs].name == name).expect("a cell");
            let (from, to) = (cell(&h.from), cell(&h.to));
            let p = super::analysis::LossPeriod {
                ha_to_old_fa: ns(self.ha_fa_delay[from]),
                beacon: s(request - self.gap.as_secs_f64()),
                new_fa: s(registration - request) + ns(self.bs_fa_delay[to]),
                to_ha: ns(self.ha_fa_delay[to]),
                to_old_fa: ns(self.fa_fa_delay),
            };
            let t_loss = if self.route_optimised { p.route_optimised() } else { p.base() };
            h.predicted_t_loss_ms = Some(t_loss.as_secs_f64() * 1e3);
            h.predicted_packets_dropped = Some(super::analysis::packets_dropped(self.mws, self.eq_rtt, t_loss));
        }
    }

    /// Erroneous fast retransmits (Eom 2002 §3.2) of the correspondent's transfer, by
    /// [`super::erroneous`], each counted under the handoff before it.
    fn trace_analysis(&mut self) -> u64 {
        let Some(&(_, base, _)) = self.ch_sent.iter().min_by_key(|(t, _, _)| *t) else { return 0 };
        let off = |seq: u32| u64::from(seq.wrapping_sub(base));
        let s = |t: Time| t.as_secs_f64();
        let sent: Vec<(f64, u64)> = self.ch_sent.iter().map(|&(t, q, _)| (s(t), off(q))).collect();
        let acked: Vec<(f64, u64)> = self.ch_acked.iter().map(|&(t, q)| (s(t), off(q))).collect();
        let received: Vec<(f64, u64)> = self.mh_received.iter().map(|&(t, q, _)| (s(t), off(q))).collect();
        let fr = super::erroneous::fast_retransmits(&sent, &acked);
        let wrong = super::erroneous::erroneous(&fr, &sent, &received);
        for &(t, _) in &wrong {
            if let Some(h) = self.handoffs.iter_mut().rev().find(|h| h.left_s <= t) {
                h.erroneous_fast_retransmits += 1;
            }
        }
        wrong.len() as u64
    }

    /// A packet reached the mobile over `link`: the mobile's agent reads it; data is counted.
    fn at_mobile(&mut self, cx: &mut Cx<'_, MobileIpEvent>, link: usize, packet: &Bytes) -> bool {
        let now = cx.now();
        if let Some(i) = self.cells.iter().position(|c| c.air == link) {
            if self.link_acks {
                // The frame arrived: the link layer's acknowledgement frees its copy in the BS buffer.
                self.bss[i].handle_link_ack(self.mh_addr, packet);
            }
        }
        let ip = Ipv4Packet::new_unchecked(&packet[..]);
        if ip.protocol() == PROTO_TCP {
            if let Ok(tcp) = TcpPacket::new_checked(ip.payload()) {
                if !tcp.payload().is_empty() {
                    self.mh_received.push((now, tcp.seq_number().0, ip.ident()));
                }
                if !tcp.payload().is_empty() && !self.seen.insert((tcp.src_port(), tcp.seq_number().0)) {
                    self.duplicates += 1;
                    if let Some(h) = self.handoffs.last_mut() {
                        h.duplicates_delivered += 1;
                    }
                }
            }
        }
        let mut out = std::mem::take(&mut self.out);
        self.mobile.handle_packet(now, Side::ToMobile, packet.clone(), &mut out);
        let consumed = out.iter().any(|a| matches!(a, Action::Drop(_)));
        out.retain(|a| matches!(a, Action::Inject(..)));
        self.out = out;
        self.carry(cx, None, self.mh);
        for (t, e) in self.mobile.take_events() {
            let Some(h) = self.handoffs.last_mut() else { continue };
            let since = Some(t.saturating_since(secs(h.left_s)).as_secs_f64());
            match e {
                MnEvent::HandoffRequested { .. } => h.handoff_request_s = since,
                MnEvent::RegistrationSent { .. } => h.registration_sent_s = since,
                MnEvent::Registered { .. } => h.registered_s = since,
            }
        }
        consumed
    }
}

impl Feature for MobileIp {
    type Event = MobileIpEvent;

    fn hooks(&self) -> HookSet {
        // The mobile's own packets pass its agent only when it keeps them (else they go as before).
        HookSet { arrive: true, host_send: self.own_buffer, ..HookSet::default() }
    }

    fn set_up(&mut self, cx: &mut Cx<'_, MobileIpEvent>) {
        if self.first_handoff {
            cx.schedule(self.first, MobileIpEvent::Leave { k: 0 });
        }
    }

    fn start(&mut self, cx: &mut Cx<'_, MobileIpEvent>) {
        for i in 0..self.cells.len() {
            self.arm(cx, Entity::Bs(i));
            self.arm(cx, Entity::Fa(i));
        }
    }

    fn on_event(&mut self, cx: &mut Cx<'_, MobileIpEvent>, event: MobileIpEvent) {
        match event {
            MobileIpEvent::Leave { k } => self.on_leave(cx, k),
            MobileIpEvent::Enter { k } => self.on_enter(cx, k),
            MobileIpEvent::Timer(e) => self.on_timer(cx, e),
        }
    }

    fn on_arrive(&mut self, cx: &mut Cx<'_, MobileIpEvent>, node: usize, link: usize, packet: &Bytes) -> bool {
        let now = cx.now();
        if node == self.mh {
            return self.at_mobile(cx, link, packet);
        }
        let ip = Ipv4Packet::new_unchecked(&packet[..]);
        let (src, dst) = (ip.src_addr(), ip.dst_addr());
        self.observe_correspondent(cx.view(), now, node, link, packet);
        self.observe_switch(cx.view(), now, node, packet);
        let mut out = std::mem::take(&mut self.out);
        let from = if let (Some(cn), true) = (
            self.correspondent.as_mut(),
            node == self.ch_hop && link == self.ch_link && src == cx.nodes()[self.ch].addr,
        ) {
            // The correspondent's own packets, at the end of its one link (see `MobileIpConfig::correspondent`).
            cn.handle_packet(now, Side::ToWired, packet.clone(), &mut out);
            None
        } else if let Some(i) = self.cells.iter().position(|c| c.bs == node) {
            let side = if link == self.cells[i].air { Side::ToWired } else { Side::ToMobile };
            self.bss[i].handle_packet(now, side, packet.clone(), &mut out);
            Some(Entity::Bs(i))
        } else if let Some(i) = self.cells.iter().position(|c| c.fa == node) {
            let side = if link == self.cells[i].lan { Side::ToWired } else { Side::ToMobile };
            self.fas[i].handle_packet(now, side, packet.clone(), &mut out);
            Some(Entity::Fa(i))
        } else if node == self.ha && (dst == cx.nodes()[self.ha].addr || dst == self.mh_addr) {
            self.home_agent.handle_packet(now, Side::ToMobile, packet.clone(), &mut out);
            None
        } else if let (Some(cn), true) = (self.correspondent.as_mut(), node == self.ch && ip.protocol() == PROTO_UDP) {
            let before = out.len();
            cn.handle_packet(now, Side::ToMobile, packet.clone(), &mut out);
            // Anything the binding cache does not consume is the host's own (the core delivers it).
            if out[before..].iter().any(|a| matches!(a, Action::Forward(..))) {
                out.truncate(before);
                self.out = out;
                return false;
            }
            None
        } else {
            self.out = out;
            return false;
        };
        self.out = out;
        self.carry(cx, from, node);
        true
    }

    /// What the mobile host sends passes its agent (`Side::ToWired`), which keeps its last data packets for
    /// re-sending after a handoff (§4.2), then goes out by its gateway, its current cell.
    fn on_host_send(&mut self, cx: &mut Cx<'_, MobileIpEvent>, node: usize, packet: &Bytes) -> bool {
        let now = cx.now();
        if node != self.mh {
            return false;
        }
        let mut out = std::mem::take(&mut self.out);
        self.mobile.handle_packet(now, Side::ToWired, packet.clone(), &mut out);
        self.out = out;
        self.carry(cx, None, self.mh);
        true
    }

    fn finish(mut self, view: View<'_>, result: &mut RunResult) {
        self.settle_losses(view);
        self.close_handoff();
        let mut counters = BTreeMap::new();
        let mut put = |name: &str, c: Vec<(&'static str, u64)>| {
            counters.insert(name.to_string(), c.into_iter().map(|(k, v)| (k.to_string(), v)).collect());
        };
        put(&view.nodes()[self.ha].name, self.home_agent.counters());
        for (i, c) in self.cells.iter().enumerate() {
            put(&view.nodes()[c.fa].name, self.fas[i].counters());
            put(&view.nodes()[c.bs].name, self.bss[i].counters());
        }
        if let Some(cn) = &self.correspondent {
            put(&view.nodes()[self.ch].name, cn.counters());
        }
        put(&view.nodes()[self.mh].name, self.mobile.counters());
        let erroneous = self.trace_analysis();
        self.predict(view);
        result.families.mobile_ip = Some(MobileIpMetrics {
            erroneous_fast_retransmits: erroneous,
            handoffs: std::mem::take(&mut self.handoffs),
            duplicates_delivered: self.duplicates,
            agents: counters,
        });
    }
}
