//! Mobility's part in a run (Balakrishnan 1995 §4–§7, Caceres 1995): set-up of the home agent and base stations, the
//! scheduled and beacon-driven motion, what the mobile receives, and the per-handoff measurements. The
//! configuration, the motion and radio models and the state live in [`crate::mobility`].

use super::HandoffMetrics;
use super::{BeaconState, Cells, MobState, MotionKind, PauseTrack, ReceiverSignal, SchemeKind};
use crate::context::{Cx, Request, Role, Setup, View};
use crate::feature::{Feature, HookSet};
use crate::link::Link;
use crate::metrics::RunResult;
use crate::rng;
use crate::scenario::{LinkKind, Scenario};
use bytes::Bytes;
use lasthop_agents::handoff::{
    self, BaseStation, BsConfig, Control, HomeAgent, Kind, MhEvent, MobileHost, Role as BsRole,
};
use lasthop_wire::ipv4::Ipv4Packet;
use lasthop_wire::Time;
use std::net::Ipv4Addr;

/// Mobility's events.
pub(crate) enum MobilityEvent {
    /// Crossing `k`: phase 0 the mobile leaves its cell (non-overlapping cells), phase 1 it decides to hand off.
    Move { k: u32, phase: u8 },
    /// Base station `bs` (index into the mobility's list) broadcasts a beacon.
    Beacon { bs: usize },
    /// Beacon motion: the mobile's position is updated and cells come into or go out of range.
    Walk,
    /// The mobile has processed its handoff decision (`host_processing_ms`): its control messages go out.
    SendControl(Vec<Bytes>),
    /// Base station `node` has processed a handoff control message addressed to it and acts on it.
    ControlProcessed { node: usize, packet: Bytes },
    /// A crossing begins: the pause is measured from here (a continuation, see [`crate::context::Cx::then`]).
    PauseStarts,
    /// The mobile's endpoints reacted to an accepted handoff: has the pause ended?
    PauseCheck,
}

/// Cells, motion and handoff of the scenario's one mobile host.
pub(crate) struct Mobility {
    m: MobState,
}

impl Mobility {
    /// Sets up the scenario's `[mobility]` (`None` without it, or with `scheme = "none"`): routes that do not
    /// cross the air through the mobile, the home agent and base-station agents, shared media, the first
    /// motion and beacon events.
    pub(crate) fn build(s: &Scenario, setup: &mut Setup<'_>) -> Option<Mobility> {
        let cfg = s.mobility.as_ref().filter(|m| m.scheme != SchemeKind::None)?;
        let view = setup.view();
        let (mh, ha) = (view.node_index(&cfg.mobile), view.node_index(&cfg.home_agent));
        let bss: Vec<usize> = cfg.base_stations.iter().map(|b| view.node_index(b)).collect();
        setup.recompute_routes(Some(mh));
        let bs_link: Vec<usize> = bss
            .iter()
            .map(|&b| {
                let ends_ok = |l: &Link| l.kind == LinkKind::Wireless && l.ends.contains(&b) && l.ends.contains(&mh);
                setup.view().links().iter().position(ends_ok).expect("validated")
            })
            .collect();
        let scheme = match cfg.scheme {
            SchemeKind::Plain => handoff::Scheme::Plain,
            _ => handoff::Scheme::Multicast,
        };
        let names: Vec<String> = setup.view().nodes().iter().map(|n| n.name.clone()).collect();
        let addrs: Vec<Ipv4Addr> = setup.view().nodes().iter().map(|n| n.addr).collect();
        let addr = |n: usize| addrs[n];
        let mh_addr = addr(mh);
        let beacons = (cfg.motion == MotionKind::Beacons).then(|| BeaconState {
            radio: cfg.radio(),
            walk: cfg.walk(),
            positions: cfg.positions(),
            shadowing: cfg
                .base_stations
                .iter()
                .map(|n| rng::stream(s.seed, &format!("mobility.{n}"), "shadowing"))
                .collect(),
            monitor: handoff::BeaconMonitor::new(handoff::BeaconConfig {
                hysteresis_db: cfg.hysteresis_db,
                samples: cfg.beacon_samples,
                // Three beacon periods without a beacon: not heard (out of range).
                max_age: Time((cfg.beacon_period_s * 3.0 * 1e9).round() as u64),
                buffer_threshold_dbm: cfg.buffer_threshold_dbm,
            }),
            step: Time((cfg.motion_step_s * 1e9).round() as u64),
        });
        // Scheduled motion starts in the first cell with the next one buffering; beacon motion in the cell
        // strongest at the start position, with every other BS above the buffering threshold buffering.
        let (first, next): (usize, Vec<usize>) = match &beacons {
            None => (0, (bss.len() > 1).then_some(1).into_iter().collect()),
            Some(b) => {
                let x = b.walk.position(0.0);
                let mean = |i: usize| b.radio.mean_dbm(x - b.positions[i]);
                let first = (0..bss.len()).fold(0, |best, i| if mean(i) > mean(best) { i } else { best });
                let next = (0..bss.len()).filter(|&i| i != first && mean(i) >= cfg.buffer_threshold_dbm).collect();
                (first, next)
            }
        };
        let buffering: Vec<Ipv4Addr> =
            if scheme == handoff::Scheme::Multicast { next.iter().map(|&i| addr(bss[i])).collect() } else { vec![] };
        let mut home = HomeAgent::new(addr(ha));
        home.set_members(mh_addr, std::iter::once(addr(bss[first])).chain(buffering.iter().copied()));
        setup.set_agent(ha, Some(Box::new(home)));
        for (i, &b) in bss.iter().enumerate() {
            let mut c = BsConfig::new(addr(b), addr(ha));
            c.peers = bss.iter().map(|&o| addr(o)).filter(|&o| o != addr(b)).collect();
            c.buffer_packets = cfg.buffer_packets;
            c.mirror_packets = cfg.mirror_packets;
            c.transmit_reports = cfg.snoop_transmit_reports;
            let kinds = &s.nodes[&names[b]].agent.0;
            if kinds.contains(&crate::scenario::AgentKind::Snoop) {
                c.snoop = Some(s.snoop.config());
            }
            if kinds.contains(&crate::scenario::AgentKind::ElnFixed) {
                c.eln = Some(s.eln.config(lasthop_agents::eln::ElnRole::MarkForwarded));
            }
            let mut agent = BaseStation::new(c);
            let role = if i == first {
                BsRole::Primary
            } else if buffering.contains(&addr(b)) {
                BsRole::Buffering
            } else {
                BsRole::Idle
            };
            agent.set_role(mh_addr, role);
            setup.set_agent(b, Some(Box::new(agent)));
        }
        if cfg.shares_medium() {
            setup.share_medium(&bs_link);
        }
        let (cells, rendezvous_s, interval_s) = cfg.motion();
        if cells == Cells::NonOverlapping && beacons.is_none() {
            for &l in &bs_link[1..] {
                setup.set_out_of_range(l, true);
            }
        }
        setup.add_control_protocol(handoff::PROTO_HANDOFF);
        let gateway = (bs_link[first], setup.view().links()[bs_link[first]].dir_from(mh));
        setup.set_gateway(mh, Some(gateway));
        let secs = |v: f64| Time((v * 1e9).round() as u64);
        let state = MobState {
            fast_retransmit: cfg.fast_retransmit,
            mtcp_mobile: s.nodes.values().any(|n| n.agent.0.contains(&crate::scenario::AgentKind::Mtcp)),
            receiver_signal: cfg.receiver_signal,
            old_bs_drains: cfg.old_bs_drains,
            cells,
            rendezvous: secs(rendezvous_s),
            processing: secs(cfg.host_processing_ms / 1e3),
            interval_s,
            first_s: cfg.first_s.unwrap_or(interval_s),
            jitter_s: cfg.jitter_s,
            seed: s.seed,
            beacon_period: (cfg.beacon_period_s > 0.0).then(|| secs(cfg.beacon_period_s)),
            mh,
            ha,
            controller: MobileHost::new(mh_addr, scheme, addr(bss[first]), &buffering),
            bss,
            bs_link,
            current: first,
            handoffs: Vec::new(),
            left_at: None,
            resent_mark: 0,
            seen: Default::default(),
            seen_set: Default::default(),
            beacon_ident: 0,
            beacons,
            pause: Default::default(),
            lost_between_cells: 0,
            losses_seen: 0,
        };
        Some(Mobility { m: state })
    }

    /// Attributes the data frames lost out of range since the last call: to the crossing under way (its entry
    /// is made at the decision) between leaving a cell and the decision, else to the latest handoff. Called
    /// before every change of `left_at` or of the handoff list, so each loss is counted under the state in
    /// force when it happened.
    fn settle_losses(&mut self, view: View<'_>) {
        let m = &mut self.m;
        let lost = view.out_of_range_losses() - m.losses_seen;
        m.losses_seen = view.out_of_range_losses();
        if m.left_at.is_some() {
            m.lost_between_cells += lost;
        } else if let Some(h) = m.handoffs.last_mut() {
            h.packets_lost += lost;
        }
    }

    /// Beacon motion: the mobile's new position; cells out of range detach (no frames either way), cells in
    /// range attach. Leaving the current cell's range marks the next handoff's `left_s`.
    fn on_walk(&mut self, cx: &mut Cx<'_, MobilityEvent>) {
        let now = cx.now();
        self.settle_losses(cx.view());
        let m = &mut self.m;
        let Some(b) = m.beacons.as_ref() else { return };
        let x = b.walk.position(now.as_secs_f64());
        let mut left = false;
        let mut reach = None;
        for i in 0..m.bss.len() {
            let out = !b.radio.in_range(x - b.positions[i]);
            let l = m.bs_link[i];
            if i == m.current && out != cx.links()[l].out_of_range {
                m.left_at = out.then_some(now);
                left = out;
                reach = Some(!out);
            }
            cx.request(Request::SetOutOfRange { link: l, out });
        }
        let next = Time(now.0 + b.step.0);
        cx.schedule(next, MobilityEvent::Walk);
        if let Some(reachable) = reach {
            self.tell_reachability(cx, self.m.current, reachable);
            if reachable {
                // Back in range of its own cell without a handoff: the mobile associates with it again.
                cx.request(Request::Reassociate { link: self.m.bs_link[self.m.current] });
            }
        }
        if left {
            // The crossing begins when the mobile leaves its cell's range, once the requests above are done.
            cx.then(MobilityEvent::PauseStarts);
        }
    }

    /// Tells base station `bs`'s agent (index into the visiting order) that the mobile left its cell or is
    /// back in reach.
    fn tell_reachability(&self, cx: &mut Cx<'_, MobilityEvent>, bs: usize, reachable: bool) {
        let (now, mobile) = (cx.now(), cx.nodes()[self.m.mh].addr);
        let tell = Box::new(move |a: &mut dyn lasthop_agents::Agent, out: &mut Vec<lasthop_agents::Action>| {
            a.handle_reachability(now, mobile, reachable, out)
        });
        cx.request(Request::TellAgent { node: self.m.bss[bs], tell });
        if self.m.mtcp_mobile {
            Self::freeze_mobile_senders(cx, self.m.mh, !reachable);
        }
    }

    /// M-TCP's mobile end (Brown 1997): while the mobile is out of every cell its sending TCPs are held still,
    /// their timers frozen ([`lasthop_tcp::Sender::freeze`]); back in a cell they resume from the first
    /// unacknowledged byte with the window and timeout they had ([`lasthop_tcp::Sender::thaw`]).
    fn freeze_mobile_senders(cx: &mut Cx<'_, MobilityEvent>, mh: usize, freeze: bool) {
        let poke = Box::new(move |role: &mut Role, now: Time| {
            let Role::Sender(s) = role else { return };
            match (freeze, s.is_frozen()) {
                (true, false) => s.freeze(),
                (false, true) => s.thaw(now),
                _ => {}
            }
        });
        cx.request(Request::PokeEndpoints { node: mh, poke });
    }

    /// Beacon motion: a beacon from `bs` reached the mobile. Sample its strength at the mobile's position, let
    /// the beacon analysis decide, and hand off or change the buffering base stations.
    fn on_beacon_heard(&mut self, cx: &mut Cx<'_, MobilityEvent>, bs: Ipv4Addr) {
        let now = cx.now();
        let m = &mut self.m;
        let Some(i) = m.bss.iter().position(|&b| cx.nodes()[b].addr == bs) else { return };
        let Some(b) = m.beacons.as_mut() else { return };
        let x = b.walk.position(now.as_secs_f64());
        let dbm = b.radio.sample(x - b.positions[i], &mut b.shadowing[i]);
        b.monitor.handle_beacon(now, bs, dbm);
        let current = cx.nodes()[m.bss[m.current]].addr;
        let decision = b.monitor.decide(now, current);
        let index = |a: Ipv4Addr| m.bss.iter().position(|&b| cx.nodes()[b].addr == a).expect("a base station");
        let likely: Vec<usize> = decision.likely.iter().map(|&a| index(a)).collect();
        match decision.handoff_to {
            Some(t) => {
                let (k, t) = (m.handoffs.len() as u32, index(t));
                self.start_handoff(cx, k, t, &likely);
            }
            None => {
                let msgs = m.controller.set_buffering(&decision.likely);
                let mh = m.mh;
                for p in msgs {
                    let dst = Ipv4Packet::new_unchecked(&p[..]).dst_addr();
                    cx.route(mh, dst, p, false);
                }
            }
        }
    }

    fn on_beacon(&mut self, cx: &mut Cx<'_, MobilityEvent>, bs: usize) {
        let now = cx.now();
        let m = &mut self.m;
        let (b, link, mh) = (m.bss[bs], m.bs_link[bs], m.mh);
        m.beacon_ident = m.beacon_ident.wrapping_add(1);
        let (src, dst) = (cx.nodes()[b].addr, cx.nodes()[mh].addr);
        let packet = Control::new(Kind::Beacon, 0, dst, src).emit(src, dst, m.beacon_ident);
        if let Some(p) = m.beacon_period {
            cx.schedule(Time(now.0 + p.0), MobilityEvent::Beacon { bs });
        }
        let dir = cx.links()[link].dir_from(b);
        cx.send((link, dir), packet, false);
    }

    fn on_move(&mut self, cx: &mut Cx<'_, MobilityEvent>, k: u32, phase: u8) {
        let now = cx.now();
        if phase == 0 {
            // Leave the old cell; the new BS is heard `rendezvous` later (Caceres 1995).
            self.settle_losses(cx.view());
            let m = &mut self.m;
            cx.request(Request::SetOutOfRange { link: m.bs_link[m.current], out: true });
            m.left_at = Some(now);
            let at = Time(now.0 + m.rendezvous.0);
            cx.schedule(at, MobilityEvent::Move { k, phase: 1 });
            self.tell_reachability(cx, self.m.current, false);
            cx.then(MobilityEvent::PauseStarts);
            return;
        }
        let m = &mut self.m;
        let n = m.bss.len();
        let target = (m.current + 1) % n;
        if m.cells == Cells::NonOverlapping {
            cx.request(Request::SetOutOfRange { link: m.bs_link[target], out: false });
        }
        let likely: Vec<usize> = if n > 1 { vec![(target + 1) % n] } else { vec![] };
        self.start_handoff(cx, k, target, &likely);
        let m = &self.m;
        if let Some(t) = m.crossing(k + 1) {
            let phase = if m.cells == Cells::NonOverlapping { 0 } else { 1 };
            cx.schedule(t, MobilityEvent::Move { k: k + 1, phase });
        }
    }

    /// The mobile decides to hand off to base station `target` (index into the visiting order) with `likely`
    /// as the likely next targets: its uplink moves to the new cell, the control messages go out, and the
    /// handoff's measurement starts.
    fn start_handoff(&mut self, cx: &mut Cx<'_, MobilityEvent>, k: u32, target: usize, likely: &[usize]) {
        let now = cx.now();
        self.close_handoff(cx.view());
        if self.m.left_at.is_none() {
            self.start_pause(cx.view(), now); // overlapping cells: the crossing is the decision
        }
        self.settle_losses(cx.view());
        // What the base stations resent so far: reassociation below hands packets up and on, never to a base
        // station's agent, so this is also what they resent once it is done.
        let resent_mark = self.resent_total(cx.view());
        let m = &mut self.m;
        let old = m.current;
        m.current = target;
        // The mobile's default gateway is its current cell's BS (Caceres 1995: "updates its routing table").
        let uplink = m.bs_link[target];
        let gateway = Some((uplink, cx.links()[uplink].dir_from(m.mh)));
        cx.request(Request::SetGateway { node: m.mh, gateway });
        cx.request(Request::Reassociate { link: uplink });
        let nodes = cx.nodes();
        let addr = |i: usize| nodes[m.bss[i]].addr;
        let likely: Vec<Ipv4Addr> = likely.iter().map(|&i| addr(i)).collect();
        let msgs = m.controller.handoff(addr(target), &likely);
        let left = m.left_at.take().unwrap_or(now);
        m.handoffs.push(HandoffMetrics {
            index: k,
            from: nodes[m.bss[old]].name.clone(),
            to: nodes[m.bss[target]].name.clone(),
            left_s: left.as_secs_f64(),
            decided_s: now.as_secs_f64(),
            packets_lost: std::mem::take(&mut m.lost_between_cells),
            ..HandoffMetrics::default()
        });
        let i = m.handoffs.len() - 1;
        m.pause.entry = Some(i);
        if let Some(done) = m.pause.done {
            m.handoffs[i].pause_s = Some(done.saturating_since(m.pause.start).as_secs_f64());
        }
        m.resent_mark = resent_mark;
        cx.request(Request::NoteHandoff);
        if self.m.processing == Time(0) {
            self.send_control(cx, msgs);
        } else {
            cx.schedule(Time(now.0 + self.m.processing.0), MobilityEvent::SendControl(msgs));
        }
    }

    /// The mobile sends its handoff control messages through its (new) default gateway.
    fn send_control(&mut self, cx: &mut Cx<'_, MobilityEvent>, msgs: Vec<Bytes>) {
        let mh = self.m.mh;
        for p in msgs {
            let dst = Ipv4Packet::new_unchecked(&p[..]).dst_addr();
            cx.route(mh, dst, p, false);
        }
    }

    /// A base station acts on a handoff control message addressed to it (after its processing time): the
    /// handoff's timeline is noted, `old_bs_drains = false` purges the old BS's queue, and its agent takes it.
    fn on_control_at_bs(&mut self, cx: &mut Cx<'_, MobilityEvent>, node: usize, packet: &Bytes) {
        let now = cx.now();
        let m = &mut self.m;
        let mh_addr = cx.nodes()[m.mh].addr;
        if let (Some(c), Some(h)) = (Control::parse(packet), m.handoffs.last_mut()) {
            if c.seq == m.controller.seq() {
                let at = Some(now.saturating_since(Time((h.decided_s * 1e9).round() as u64)).as_secs_f64());
                match c.kind {
                    Kind::Forward | Kind::Greeting if h.request_at_new_bs_s.is_none() => h.request_at_new_bs_s = at,
                    Kind::Buffer | Kind::Stop | Kind::Notify if h.old_bs_told_s.is_none() => h.old_bs_told_s = at,
                    _ => {}
                }
                if !m.old_bs_drains && matches!(c.kind, Kind::Buffer | Kind::Stop | Kind::Notify) && c.mobile == mh_addr
                {
                    // `mobility.old_bs_drains = false`: the old BS discards what it queued for the mobile.
                    if let Some(i) = m.bss.iter().position(|&b| b == node) {
                        let link = m.bs_link[i];
                        let dir = cx.links()[link].dir_from(node);
                        let to_mobile = move |p: &[u8]| {
                            Ipv4Packet::new_checked(p)
                                .is_ok_and(|ip| ip.dst_addr() == mh_addr && ip.protocol() != handoff::PROTO_HANDOFF)
                        };
                        // Counted under this handoff in `on_purged`.
                        cx.request(Request::Purge { link, dir, matches: Box::new(to_mobile) });
                    }
                }
            }
        }
        cx.request(Request::HandToAgent { node, side: lasthop_agents::Side::ToMobile, packet: packet.clone() });
    }

    /// A crossing begins (the mobile leaves its cell, or decides in overlapping cells): each flow through the
    /// mobile must deliver a byte its sender has not sent yet (or its last byte) before the transfer counts
    /// as resumed; what was in flight may have been lost, and so may the ACKs of what was delivered.
    fn start_pause(&mut self, view: View<'_>, now: Time) {
        let m = &mut self.m;
        let mut through = false;
        let mut marks = Vec::new();
        for (i, f) in view.flows().iter().enumerate().filter(|(_, f)| f.path.contains(&m.mh)) {
            through = true;
            let target = (f.snd_max + 1).min(f.bytes);
            if f.delivered < target {
                marks.push((i, target));
            }
        }
        let done = (through && marks.is_empty()).then_some(now);
        m.pause = PauseTrack { start: now, marks, done, entry: None };
    }

    /// After a delivery: has every flow caught up with its mark? Then the crossing's pause is over.
    fn check_pause(&mut self, view: View<'_>, now: Time) {
        let m = &mut self.m;
        if m.pause.marks.is_empty() {
            return;
        }
        let flows = view.flows();
        m.pause.marks.retain(|&(f, mark)| flows[f].delivered < mark);
        if m.pause.marks.is_empty() {
            let pause = now.saturating_since(m.pause.start).as_secs_f64();
            match m.pause.entry {
                Some(i) => m.handoffs[i].pause_s = Some(pause),
                None => m.pause.done = Some(now),
            }
        }
    }

    /// Sum of `resent_from_buffer` over the base stations.
    fn resent_total(&self, view: View<'_>) -> u64 {
        self.m
            .bss
            .iter()
            .filter_map(|&b| view.nodes()[b].agent.as_ref())
            .flat_map(|a| a.counters())
            .filter(|(k, _)| *k == handoff::RESENT_FROM_BUFFER)
            .map(|(_, v)| v)
            .sum()
    }

    /// Ends the current handoff's accounting (at the next handoff, or at the end of the run).
    fn close_handoff(&mut self, view: View<'_>) {
        if self.m.handoffs.is_empty() {
            return;
        }
        let total = self.resent_total(view);
        let m = &mut self.m;
        let mark = m.resent_mark;
        if let Some(h) = m.handoffs.last_mut() {
            h.resent_from_buffer = total.saturating_sub(mark);
        }
    }

    /// Caceres 1995: the handoff is accepted; the mobile's TCPs react at once instead of waiting for a timeout.
    /// A receiving TCP sends the signal `mobility.receiver_signal` chooses (Caceres 1995, Fig. 9 (b)).
    fn fast_retransmit(&mut self, cx: &mut Cx<'_, MobilityEvent>, node: usize) {
        let signal = self.m.receiver_signal;
        let poke = Box::new(move |role: &mut Role, now: Time| match role {
            Role::Receiver(r) => match signal {
                ReceiverSignal::Dupacks => r.send_dupacks(3),
                ReceiverSignal::MarkedAck => r.send_handoff_mark(),
            },
            Role::Sender(s) => s.retransmit_now(now),
            Role::Closed => {}
        });
        cx.request(Request::PokeEndpoints { node, poke });
        // Checked once they all ran and what they caused is done, whether or not one of them moved its
        // flow's progress (the pause's end is `now` whichever of them ended it).
        cx.then(MobilityEvent::PauseCheck);
    }
}

impl Feature for Mobility {
    type Event = MobilityEvent;

    fn hooks(&self) -> HookSet {
        HookSet { arrive: true, after_flow_endpoint: true, ..HookSet::default() }
    }

    /// The first motion and beacon events, and beacon motion's first position.
    fn set_up(&mut self, cx: &mut Cx<'_, MobilityEvent>) {
        let m = &self.m;
        if let Some(t) = m.crossing(0) {
            let phase = if m.cells == Cells::NonOverlapping { 0 } else { 1 };
            cx.schedule(t, MobilityEvent::Move { k: 0, phase });
        }
        if let Some(p) = m.beacon_period {
            // Spread the BSs' beacons over the period so they do not collide by construction.
            let n = m.bss.len() as u64;
            for i in 0..m.bss.len() {
                cx.schedule(Time(p.0 * (i as u64 + 1) / (n + 1)), MobilityEvent::Beacon { bs: i });
            }
        }
        if m.beacons.is_some() {
            self.on_walk(cx);
        }
    }

    fn on_event(&mut self, cx: &mut Cx<'_, MobilityEvent>, event: MobilityEvent) {
        match event {
            MobilityEvent::Move { k, phase } => self.on_move(cx, k, phase),
            MobilityEvent::Beacon { bs } => self.on_beacon(cx, bs),
            MobilityEvent::Walk => self.on_walk(cx),
            MobilityEvent::SendControl(msgs) => self.send_control(cx, msgs),
            MobilityEvent::ControlProcessed { node, packet } => self.on_control_at_bs(cx, node, &packet),
            MobilityEvent::PauseStarts => self.start_pause(cx.view(), cx.now()),
            MobilityEvent::PauseCheck => self.check_pause(cx.view(), cx.now()),
        }
    }

    /// What the mobile, the base stations and the home agent do with a packet before the core's routing.
    fn on_arrive(&mut self, cx: &mut Cx<'_, MobilityEvent>, node: usize, link: usize, packet: &Bytes) -> bool {
        let now = cx.now();
        let m = &mut self.m;
        let ip = Ipv4Packet::new_unchecked(&packet[..]);
        let (dst, proto) = (ip.dst_addr(), ip.protocol());
        if node == m.mh {
            // A link-level ARQ frame carries a packet from the base station (`crate::arq` delivers it): the
            // mobile's handoff controller and the handoff's measures see that packet; link ACKs carry none.
            let carried = if proto == crate::arq::PROTO_ARQ {
                match crate::arq::carried_packet(packet.slice(ip.payload_range())) {
                    Some(p) => Some(p),
                    None => return false,
                }
            } else {
                None
            };
            let packet = carried.as_ref().unwrap_or(packet);
            let ip = Ipv4Packet::new_unchecked(&packet[..]);
            let (src, proto, ident) = (ip.src_addr(), ip.protocol(), ip.ident());
            let from_bs = m.bs_link.iter().position(|&l| l == link);
            let event = m.controller.handle_received(packet);
            let decided = m.handoffs.last().map(|h| Time((h.decided_s * 1e9).round() as u64));
            let since = |t: Option<Time>| t.map(|d| now.saturating_since(d).as_secs_f64());
            if proto != handoff::PROTO_HANDOFF || carried.is_some() {
                let dup = m.seen_before((src, ident));
                let current = m.current;
                if let Some(h) = m.handoffs.last_mut() {
                    if dup {
                        h.duplicates += 1;
                    }
                    if h.latency_s.is_none() && from_bs == Some(current) {
                        h.latency_s = since(decided);
                        h.completion_s = h.completion_s.or(h.latency_s);
                    }
                }
                return false;
            }
            match event {
                Some(MhEvent::Accepted { .. }) => {
                    if let Some(h) = m.handoffs.last_mut() {
                        h.accepted_s = since(decided);
                        h.completion_s = h.completion_s.or(h.accepted_s);
                    }
                    let fast = m.fast_retransmit;
                    self.tell_reachability(cx, self.m.current, true);
                    if fast {
                        self.fast_retransmit(cx, node);
                    }
                }
                Some(MhEvent::Beacon { bs }) => self.on_beacon_heard(cx, bs),
                _ => {}
            }
            return true;
        }
        let is_bs = m.bss.contains(&node);
        let mine = dst == cx.nodes()[node].addr;
        if is_bs && mine && proto == handoff::PROTO_HANDOFF {
            if m.processing != Time(0) {
                let event = MobilityEvent::ControlProcessed { node, packet: packet.clone() };
                cx.schedule(Time(now.0 + m.processing.0), event);
            } else {
                self.on_control_at_bs(cx, node, packet);
            }
            return true;
        }
        if is_bs && mine && cx.is_control_protocol(proto) {
            return false; // another feature's frames between the base station and the mobile (link ARQ)
        }
        if let Some(i) = m.bss.iter().position(|&b| b == node && mine) {
            // What the base station's agent forwards goes into its queue toward the mobile: E2E-ELN's notifier
            // vouches for a segment only while that queue is not congested (`lasthop_agents::eln`).
            let link = m.bs_link[i];
            let occupancy = cx.links()[link].occupancy(cx.links()[link].dir_from(node));
            cx.request(Request::QueueOccupancy { node, side: lasthop_agents::Side::ToMobile, occupancy });
        }
        let home_agent_takes = node == m.ha && (mine || cx.nodes()[m.mh].addr == dst);
        if (is_bs && mine) || home_agent_takes {
            cx.request(Request::HandToAgent { node, side: lasthop_agents::Side::ToMobile, packet: packet.clone() });
            return true;
        }
        false
    }

    fn after_flow_endpoint(&mut self, cx: &mut Cx<'_, MobilityEvent>) {
        self.check_pause(cx.view(), cx.now());
    }

    fn on_purged(&mut self, _link: usize, _dir: usize, frames: u64) {
        if let Some(h) = self.m.handoffs.last_mut() {
            h.purged_at_old_bs += frames;
        }
    }

    fn finish(mut self, view: View<'_>, result: &mut RunResult) {
        self.settle_losses(view);
        self.close_handoff(view);
        result.families.handoffs = std::mem::take(&mut self.m.handoffs);
    }
}
