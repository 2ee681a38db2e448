//! The scenario's bulk flows (`[flows.*]`): one TCP connection each, a sender moving a fixed number of bytes to
//! a receiver from a start time on, as in every experiment of Balakrishnan 1995. This workload keeps their
//! endpoints and runs them (the core finds them by address and hands them their packets), plans their starts,
//! counts what each delivers (redundant and spurious retransmissions, pauses, corrupt bytes, the time series
//! of a traced run) and writes their metrics. The run goes on until every flow has delivered its bytes.

use crate::context::{Cx, FlowProgress, Request, Role, Setup, View};
use crate::feature::Feature;
use crate::metrics::{FlowMetrics, FlowSeries, RunResult};
use crate::registry::{Family, RowColumns};
use crate::scenario::{check_start_s, Invalid, LinkKind, Scenario};
use crate::{rng, SimError};
use bytes::Bytes;
use lasthop_agents::flow::FlowKey;
use lasthop_tcp::{payload, Receiver, Sender, TcpConfig};
use lasthop_wire::tcp::TcpFlags;
use lasthop_wire::{Headers, SeqNum, Time};
use rand::RngCore;
use std::collections::BTreeSet;
use std::net::SocketAddrV4;

/// A bulk flow, `[flows.NAME]`.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowConfig {
    /// Node that sends (the TCP sender: active opener).
    pub from: String,
    /// Node that receives.
    pub to: String,
    /// Application bytes to transfer.
    pub bytes: u64,
    /// When the sender connects, seconds (default 0).
    #[serde(default)]
    pub start_s: f64,
    /// Overrides of the scenario's `[tcp]` table for this flow.
    #[serde(default)]
    pub tcp: toml::Table,
}

pub(crate) const FAMILY: Family = Family {
    name: "flows",
    present: |s| !s.flows.is_empty(),
    validate,
    together: &[],
    columns: None,
    row: Some(RowColumns { names: crate::metrics::FLOW_COLUMNS, cells: |result, name| Ok(result.flow(name)?.cells()) }),
    build: |s, world| {
        if let Some(b) = BulkFlows::build(s, &mut world.setup())? {
            world.register(b);
        }
        Ok(())
    },
};

fn validate(s: &Scenario) -> Result<(), Invalid> {
    for (name, f) in &s.flows {
        let p = |x: &str| format!("flows.{name}.{x}");
        s.check_ends(&format!("flows.{name}"), ("from", &f.from), ("to", &f.to))?;
        if f.bytes == 0 {
            return Err((p("bytes"), "expected at least 1 byte".into()));
        }
        check_start_s(p("start_s"), f.start_s)?;
        s.validate_own_tcp(&p("tcp"), &f.tcp)?;
    }
    Ok(())
}

/// The bulk flows' events.
pub(crate) enum BulkEvent {
    /// Flow `flow` opens its connection.
    Start { flow: usize },
}

/// The port every bulk flow's receiver listens on; senders use 20000 + the flow's index.
const RECEIVER_PORT: u16 = 5001;
const SENDER_PORT_FIRST: u16 = 20_000;

struct Flow {
    name: String,
    variant: String,
    bytes: u64,
    start: Time,
    /// Its sender's endpoint; the receiver's is the next one.
    sender: usize,
    iss: SeqNum,
    delivered: u64,
    corrupt: u64,
    completed_at: Option<Time>,
    path: Vec<usize>,
    ideal_goodput_mbps: Option<f64>,
    series: Option<FlowSeries>,
    last_cwnd: u32,
    /// When the receiving application last got new bytes, and the longest wait so far (ns).
    last_progress: Time,
    longest_pause_ns: u64,
    /// Redundant and spurious retransmissions (Balakrishnan 1995 §2, §8): the stream offsets of the sender's fast
    /// retransmissions not yet seen twice at the receiver, the sender's fast-retransmit count when the last
    /// was taken, data segments that reached the receiver as duplicates, and fast retransmissions of which
    /// two copies reached the receiver (the original was not lost, or was still on its way).
    fast_rexmit_offsets: BTreeSet<u64>,
    fast_rexmits_taken: u64,
    duplicate_segments: u64,
    spurious_fast_retransmits: u64,
    /// This flow's place in `BulkFlows::start_order`, and the sequence number its start event was given when
    /// the flow was added (the event itself is queued when the flow before it starts).
    start_rank: usize,
    start_seq: u64,
}

/// One end of a bulk flow's connection: its TCP state (the core holds its timer:
/// [`Feature::endpoint_timeout`]).
struct Endpoint {
    flow: usize,
    node: usize,
    local: SocketAddrV4,
    remote: SocketAddrV4,
    role: Role,
}

/// What a bulk flow's first packets touch, by index: its two endpoints (the receiver's is the sender's plus
/// one), the nodes at its two ends and the links of its first and last hops (none for a flow within a node).
/// Copied out of the flow's record so that [`BulkFlows::warm_ahead`] can ask for that record without reading
/// it.
#[derive(Clone, Copy)]
struct Footprint {
    flow: usize,
    sender: usize,
    nodes: [usize; 2],
    links: [Option<usize>; 2],
}

/// Every bulk flow of the scenario.
pub(crate) struct BulkFlows {
    flows: Vec<Flow>,
    endpoints: Vec<Endpoint>,
    /// The flows in order of their start, with what each one touches first (see [`BulkFlows::warm_ahead`]).
    start_order: Vec<Footprint>,
    flows_open: usize,
    /// Another feature watches the flows' progress ([`Request::FlowProgress`]).
    watched: bool,
}

impl BulkFlows {
    /// The scenario's bulk flows (`None` without any), their endpoints made and their start events' places
    /// taken. Built after every other feature, once routes are final.
    pub(crate) fn build(s: &Scenario, setup: &mut Setup<'_>) -> Result<Option<BulkFlows>, SimError> {
        if s.flows.is_empty() {
            return Ok(None);
        }
        let trace = setup.view().trace();
        let mut bulk = BulkFlows {
            flows: Vec::new(),
            endpoints: Vec::new(),
            start_order: Vec::new(),
            flows_open: s.flows.len(),
            watched: setup.view().flow_progress_watched(),
        };
        for (i, (name, f)) in s.flows.iter().enumerate() {
            let tcp = s
                .flow_tcp(name)
                .map_err(|m| crate::ScenarioError::at(s.origin(), format!("flows.{name}.tcp"), None, m))?;
            let view = setup.view();
            let (from, to) = (view.node_index(&f.from), view.node_index(&f.to));
            let start = Time((f.start_s * 1e9).round() as u64);
            bulk.add_flow(setup, s.seed, trace, i, name, f.bytes, start, from, to, tcp)?;
        }
        bulk.plan_starts(setup.view());
        Ok(Some(bulk))
    }

    #[allow(clippy::too_many_arguments)]
    fn add_flow(
        &mut self,
        setup: &mut Setup<'_>,
        seed: u64,
        trace: bool,
        i: usize,
        name: &str,
        bytes: u64,
        start: Time,
        from: usize,
        to: usize,
        tcp: TcpConfig,
    ) -> Result<(), SimError> {
        let view = setup.view();
        let path = view.path(from, to).ok_or_else(|| {
            let message = format!("no route from `{}` to `{}`", view.nodes()[from].name, view.nodes()[to].name);
            crate::ScenarioError::at("scenario", format!("flows.{name}"), None, message)
        })?;
        let mut r = rng::stream(seed, &format!("flow.{name}"), "iss");
        let (iss_a, iss_b) = (SeqNum(r.next_u32()), SeqNum(r.next_u32()));
        let a = SocketAddrV4::new(view.nodes()[from].addr, SENDER_PORT_FIRST + i as u16);
        let b = SocketAddrV4::new(view.nodes()[to].addr, RECEIVER_PORT);
        let ideal = ideal_goodput(view, &path, &tcp);
        let variant = tcp.variant.to_string();
        let sender = Sender::new(tcp.clone(), a, b, iss_a, bytes);
        let snd_max = sender.snd_max_offset();
        let receiver = Receiver::new(tcp, b, a, iss_b);
        let se = self.endpoints.len();
        let flow = self.flows.len();
        for (node, local, remote, role) in
            [(from, a, b, Role::Sender(Box::new(sender))), (to, b, a, Role::Receiver(Box::new(receiver)))]
        {
            self.endpoints.push(Endpoint { flow, node, local, remote, role });
        }
        setup.add_flow_progress(FlowProgress { path: path.clone(), bytes, delivered: 0, snd_max });
        self.flows.push(Flow {
            name: name.to_string(),
            variant,
            bytes,
            start,
            sender: se,
            iss: iss_a,
            delivered: 0,
            corrupt: 0,
            completed_at: None,
            path,
            ideal_goodput_mbps: ideal,
            series: trace.then(|| FlowSeries { name: name.to_string(), ..FlowSeries::default() }),
            last_cwnd: 0,
            last_progress: start,
            longest_pause_ns: 0,
            fast_rexmit_offsets: Default::default(),
            fast_rexmits_taken: 0,
            duplicate_segments: 0,
            spurious_fast_retransmits: 0,
            start_rank: 0,
            start_seq: setup.reserve_event(),
        });
        Ok(())
    }

    /// Orders the flows by start (time, then index, as their start events run) and notes each one's
    /// [`Footprint`].
    fn plan_starts(&mut self, view: View<'_>) {
        let mut order: Vec<Footprint> = self
            .flows
            .iter()
            .enumerate()
            .map(|(flow, f)| {
                let (from, to) = (f.path[0], f.path[f.path.len() - 1]);
                let hop = |at: usize| view.nodes()[at].routes[to].map(|(link, _)| link);
                let last_hop_from = f.path.len().checked_sub(2).map_or(from, |i| f.path[i]);
                Footprint { flow, sender: f.sender, nodes: [from, to], links: [hop(from), hop(last_hop_from)] }
            })
            .collect();
        order.sort_by_key(|p| (self.flows[p.flow].start, p.flow));
        for (rank, p) in order.iter().enumerate() {
            self.flows[p.flow].start_rank = rank;
        }
        self.start_order = order;
    }

    /// Queues the start of the flow of rank `rank` in `start_order`, if there is one. One start waits in the
    /// queue at a time: ten thousand of them queued at once made every event's pop sift through them.
    fn queue_start(&self, cx: &mut Cx<'_, BulkEvent>, rank: usize) {
        if let Some(p) = self.start_order.get(rank) {
            let f = &self.flows[p.flow];
            cx.request(Request::ScheduleReserved {
                at: f.start,
                seq: f.start_seq,
                event: BulkEvent::Start { flow: p.flow },
            });
        }
    }

    /// Opens flow `flow`'s connection, queues the start of the flow after it and asks for the state of the
    /// next flows. Not inlined: it runs once per flow.
    #[inline(never)]
    fn start_flow(&mut self, cx: &mut Cx<'_, BulkEvent>, flow: usize) {
        self.queue_start(cx, self.flows[flow].start_rank + 1);
        let ep = self.flows[flow].sender;
        if let Role::Sender(s) = &mut self.endpoints[ep].role {
            s.connect(cx.now());
        }
        cx.request(Request::RunEndpoint { key: ep });
        self.warm_ahead(cx.view(), self.flows[flow].start_rank);
    }

    /// Asks the processor for the state of the flows that start next, a stage at a time, while the ones
    /// started before them run: the records of the flow two starts ahead (found by index, nothing read),
    /// then what the records of the flow one start ahead point to (its sender and receiver, its links'
    /// error models), which the previous start brought in. A hint: it changes nothing.
    ///
    /// Why: with thousands of flows their state (about 5 KB each) is not in the caches when a flow starts,
    /// and its first events would otherwise wait for it line by line, each miss found only when the one
    /// before it returned (a pointer read from a record that just arrived).
    fn warm_ahead(&self, view: View<'_>, rank: usize) {
        use lasthop_wire::prefetch::object;
        if let Some(p) = self.start_order.get(rank + 2) {
            object(&self.flows[p.flow]);
            object(&self.endpoints[p.sender..p.sender + 2]);
            p.nodes.iter().for_each(|&n| object(&view.nodes()[n]));
            p.links.iter().flatten().for_each(|&l| object(&view.links()[l]));
        }
        if let Some(p) = self.start_order.get(rank + 1) {
            for e in &self.endpoints[p.sender..p.sender + 2] {
                match &e.role {
                    Role::Sender(s) => object(&**s),
                    Role::Receiver(r) => object(&**r),
                    Role::Closed => {}
                }
            }
            for &l in p.links.iter().flatten() {
                view.links()[l].dirs.iter().for_each(|d| object(&*d.error));
            }
        }
    }

    /// The next segment endpoint `ep` sends now, if any, counted for its flow (the core sends it at once and
    /// asks again, so each segment sees the queue the one before it joined).
    #[inline]
    fn transmit(&mut self, view: View<'_>, now: Time, ep: usize) -> Option<Bytes> {
        let Endpoint { flow, node, remote, .. } = self.endpoints[ep];
        match &mut self.endpoints[ep].role {
            Role::Sender(s) => {
                // The interface whose queue length an ELN sender piggybacks (Balakrishnan 1998 §3); no other
                // sender reads it.
                if s.wants_output_queue() {
                    if let Some((link, dir)) = view.next_hop(node, *remote.ip()) {
                        s.set_output_queue(view.links()[link].occupancy(dir));
                    }
                }
                let p = s.poll_transmit(now);
                let f = &mut self.flows[flow];
                if let (Some(_), Some((offset, true))) = (&p, s.last_sent()) {
                    if s.stats().fast_retransmits > f.fast_rexmits_taken {
                        // The retransmission a fast retransmit asked for (it goes out first).
                        f.fast_rexmits_taken = s.stats().fast_retransmits;
                        f.fast_rexmit_offsets.insert(offset);
                    }
                }
                if let (Some(_), Some(series)) = (&p, f.series.as_mut()) {
                    if let Some((offset, _)) = s.last_sent() {
                        series.sent.push((now.as_secs_f64(), offset));
                    }
                }
                p
            }
            Role::Receiver(r) => r.poll_transmit(now),
            Role::Closed => None,
        }
    }

    /// Endpoint `ep` has sent what it would: what it reads, counted for its flow.
    fn after_transmit(&mut self, cx: &mut Cx<'_, BulkEvent>, ep: usize) {
        let now = cx.now();
        let flow = self.endpoints[ep].flow;
        let f = &mut self.flows[flow];
        match &mut self.endpoints[ep].role {
            Role::Receiver(r) => {
                while let Some(chunk) = r.read() {
                    if !payload::matches(f.delivered, &chunk) {
                        f.corrupt += chunk.len() as u64;
                    }
                    f.delivered += chunk.len() as u64;
                    f.longest_pause_ns =
                        f.longest_pause_ns.max(now.saturating_since(f.last_progress).as_nanos() as u64);
                    f.last_progress = now;
                }
                if f.completed_at.is_none() && f.delivered >= f.bytes {
                    f.completed_at = Some(now);
                    self.flows_open -= 1;
                    if self.flows_open == 0 {
                        cx.request(Request::Finished);
                    }
                }
            }
            Role::Sender(s) => {
                if let Some(series) = f.series.as_mut() {
                    let cwnd = s.cwnd();
                    if cwnd != f.last_cwnd {
                        f.last_cwnd = cwnd;
                        series.cwnd.push((now.as_secs_f64(), u64::from(cwnd)));
                    }
                }
            }
            Role::Closed => {}
        }
        if self.watched {
            let snd_max = match &self.endpoints[f.sender].role {
                Role::Sender(s) => s.snd_max_offset(),
                _ => 0,
            };
            cx.request(Request::FlowProgress { flow, delivered: f.delivered, snd_max });
        }
    }
}

impl Feature for BulkFlows {
    type Event = BulkEvent;

    fn holds_run(&self) -> bool {
        true
    }

    /// Opens the endpoints (the core hands them their packets from now on) and queues the first start.
    fn set_up(&mut self, cx: &mut Cx<'_, BulkEvent>) {
        for (key, e) in self.endpoints.iter().enumerate() {
            cx.request(Request::OpenEndpoint { key, node: e.node, local: e.local, remote: e.remote });
        }
        self.queue_start(cx, 0);
    }

    fn on_event(&mut self, cx: &mut Cx<'_, BulkEvent>, event: BulkEvent) {
        match event {
            BulkEvent::Start { flow } => self.start_flow(cx, flow),
        }
    }

    fn stall_cause(&self, event: &BulkEvent) -> Option<String> {
        Some(match event {
            BulkEvent::Start { .. } => "the flows' start times (`flows.*.start_s`, `scale`)".into(),
        })
    }

    /// A segment reached one of the flows' endpoints: the time series of a traced run and the duplicates the
    /// receiver saw (the core then runs the endpoint: [`Feature::endpoint_transmit`]).
    #[inline]
    fn on_endpoint_packet(&mut self, cx: &mut Cx<'_, BulkEvent>, ep: usize, packet: &Bytes, headers: &Headers) {
        let now = cx.now();
        let e = &mut self.endpoints[ep];
        let flow = &mut self.flows[e.flow];
        // The core delivers only packets with a TCP header that reads.
        let tcp = headers.tcp.as_ref().expect("a TCP header");
        if let Some(series) = flow.series.as_mut() {
            let has_data =
                usize::from(headers.total_len) > usize::from(headers.ip_header_len) + usize::from(tcp.header_len);
            let t = now.as_secs_f64();
            match e.role {
                Role::Receiver(_) if has_data => series.received.push((t, stream_offset(flow.iss, tcp.seq))),
                Role::Sender(_) if tcp.flags.contains(TcpFlags::ACK) => {
                    series.acked.push((t, stream_offset(flow.iss, tcp.ack)))
                }
                _ => {}
            }
        }
        match &mut e.role {
            Role::Sender(s) => s.handle_parsed(now, packet, headers),
            Role::Receiver(r) => {
                let before = r.stats().duplicate_segments;
                r.handle_parsed(now, packet, headers);
                if r.stats().duplicate_segments > before {
                    flow.duplicate_segments += 1;
                    if flow.fast_rexmit_offsets.remove(&stream_offset(flow.iss, tcp.seq)) {
                        flow.spurious_fast_retransmits += 1;
                    }
                }
            }
            Role::Closed => {}
        }
    }

    fn on_endpoint_poke(&mut self, cx: &mut Cx<'_, BulkEvent>, ep: usize, poke: &dyn Fn(&mut Role, Time)) {
        if matches!(self.endpoints[ep].role, Role::Closed) {
            return;
        }
        poke(&mut self.endpoints[ep].role, cx.now());
        cx.request(Request::RunEndpoint { key: ep });
    }

    #[inline]
    fn endpoint_transmit(&mut self, view: View<'_>, now: Time, ep: usize) -> Option<Bytes> {
        self.transmit(view, now, ep)
    }

    #[inline]
    fn after_endpoint_transmit(&mut self, cx: &mut Cx<'_, BulkEvent>, ep: usize) {
        if !matches!(self.endpoints[ep].role, Role::Closed) {
            self.after_transmit(cx, ep);
        }
    }

    #[inline]
    fn endpoint_timeout(&self, ep: usize) -> Option<Time> {
        self.endpoints[ep].role.poll_timeout()
    }

    /// Endpoint `ep`'s timer event: its timeout if one is due, then (the core) its follow-up.
    fn on_endpoint_timer(&mut self, now: Time, ep: usize) -> bool {
        self.endpoints[ep].role.fire_due(now)
    }

    fn finish(mut self, view: View<'_>, result: &mut RunResult) {
        let end = view.run_end();
        for f in &self.flows {
            let stop = f.completed_at.unwrap_or(end);
            let duration = stop.saturating_since(f.start).as_secs_f64();
            let (sstats, acked, sent_once) = match &self.endpoints[f.sender].role {
                Role::Sender(s) => (s.stats().clone(), s.snd_una_offset(), s.snd_max_offset()),
                _ => unreachable!("flow sender is a sender"),
            };
            let wireless_bytes = f.path.windows(2).find_map(|w| {
                let (link, dir) = view.nodes()[w[0]].routes[w[1]]?;
                let l = &view.links()[link];
                (l.kind == LinkKind::Wireless).then(|| l.dirs[dir].bytes_sent)
            });
            let ratio = |useful: u64, sent: u64| if sent > 0 { useful as f64 / sent as f64 } else { 0.0 };
            let sender = &self.endpoints[f.sender];
            let key = FlowKey::between(sender.local, sender.remote);
            let counter = |name: &str| view.connection_counter(&f.path, &[key], name);
            result.flows.push(FlowMetrics {
                name: f.name.clone(),
                tcp: f.variant.clone(),
                bytes_total: f.bytes,
                bytes_delivered: f.delivered,
                completed: f.completed_at.is_some(),
                duration_s: duration,
                completion_time_s: f.completed_at.map(|t| t.saturating_since(f.start).as_secs_f64()),
                goodput_mbps: if duration > 0.0 { f.delivered as f64 * 8.0 / duration / 1e6 } else { 0.0 },
                ideal_goodput_mbps: f.ideal_goodput_mbps,
                sender_timeouts: sstats.timeouts,
                fast_retransmits: sstats.fast_retransmits,
                segments_sent: sstats.segments_sent,
                segments_retransmitted: sstats.segments_retransmitted,
                eln_retransmits: sstats.eln_retransmits,
                local_retransmissions: counter("local_retransmissions"),
                dupacks_suppressed: counter("dupacks_suppressed"),
                corrupt_bytes: f.corrupt,
                longest_pause_s: f.longest_pause_ns.max(stop.saturating_since(f.last_progress).as_nanos() as u64)
                    as f64
                    / 1e9,
                bytes_acked_not_delivered: acked.saturating_sub(f.delivered),
                wireless_goodput: wireless_bytes.map(|b| ratio(f.delivered, b)),
                wired_goodput: ratio(f.delivered, sent_once + sstats.bytes_retransmitted),
                duplicate_segments: f.duplicate_segments,
                spurious_fast_retransmits: f.spurious_fast_retransmits,
            });
        }
        if let Some(series) = result.series.as_mut() {
            for f in &mut self.flows {
                if let Some(mut s) = f.series.take() {
                    s.handoffs = view.handoffs_noted().to_vec();
                    series.push(s);
                }
            }
        }
    }
}

/// C·(1 − PER) of the first wireless hop on the path: C counts a full data frame and, on a shared medium,
/// one ACK frame per `ack_every` data frames; PER is the data direction's analytic frame loss.
fn ideal_goodput(view: View<'_>, path: &[usize], tcp: &TcpConfig) -> Option<f64> {
    let data_bytes = usize::from(tcp.mss) + 40;
    for w in path.windows(2) {
        let (link, dir) = view.nodes()[w[0]].routes[w[1]]?;
        let l = &view.links()[link];
        if l.kind != LinkKind::Wireless {
            continue;
        }
        let mut per_segment_ns = l.airtime_ns(data_bytes) as f64;
        if l.is_half_duplex() {
            per_segment_ns += l.airtime_ns(40) as f64 / f64::from(tcp.ack_every.max(1));
        }
        let capacity = f64::from(tcp.mss) * 8.0 / per_segment_ns * 1e3; // Mb/s
        let per = l.dirs[dir].error.frame_loss_probability(data_bytes as u64 * 8)?;
        return Some(capacity * (1.0 - per));
    }
    None
}

/// Application-stream offset of sequence number `seq` for a sender whose ISS is `iss` (the SYN takes one).
fn stream_offset(iss: SeqNum, seq: SeqNum) -> u64 {
    u64::from(seq.0.wrapping_sub(iss.0).wrapping_sub(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::World;
    use crate::RunOptions;

    /// The flows are planned in the order their start events run (time, then index), each with its two
    /// endpoints, its end nodes and the links of its first and last hops, whichever way it goes.
    #[test]
    fn flows_are_planned_in_start_order_with_their_footprints() {
        let text = r#"
seed = 1
time_limit_s = 10
[nodes.fh]
addr = "10.0.0.1"
[nodes.bs]
addr = "10.0.0.2"
[nodes.mh1]
addr = "10.1.0.1"
[nodes.mh2]
addr = "10.1.0.2"
[links.ether]
ends = ["fh", "bs"]
kind = "wired"
rate_mbps = 10.0
[links.air1]
ends = ["bs", "mh1"]
kind = "wireless"
rate_mbps = 2.0
[links.air2]
ends = ["bs", "mh2"]
kind = "wireless"
rate_mbps = 2.0
[flows.a]
from = "fh"
to = "mh1"
bytes = 1000
start_s = 2.0
[flows.b]
from = "mh2"
to = "fh"
bytes = 1000
[flows.c]
from = "fh"
to = "mh2"
bytes = 1000
"#;
        let scenario = Scenario::from_str(text, "plan.toml").unwrap();
        let mut bulk = None;
        let w = World::build_with(&scenario, &RunOptions::default(), |s, world| {
            bulk = BulkFlows::build(s, &mut world.setup())?;
            Ok(())
        })
        .unwrap();
        let b = bulk.expect("three flows");
        let view = w.view();
        let node = |n: &str| view.node_index(n);
        let link = |l: &str| view.link_index(l);
        let flow = |f: &str| b.flows.iter().position(|x| x.name == f).unwrap();
        let order: Vec<usize> = b.start_order.iter().map(|p| p.flow).collect();
        assert_eq!(order, [flow("b"), flow("c"), flow("a")], "by start time, then by index");
        for (rank, p) in b.start_order.iter().enumerate() {
            assert_eq!(b.flows[p.flow].start_rank, rank);
            assert_eq!(p.sender, b.flows[p.flow].sender);
            assert!(matches!(b.endpoints[p.sender].role, Role::Sender(_)));
            assert!(matches!(b.endpoints[p.sender + 1].role, Role::Receiver(_)), "the receiver follows");
        }
        let a = b.start_order[2];
        assert_eq!((a.nodes, a.links), ([node("fh"), node("mh1")], [Some(link("ether")), Some(link("air1"))]));
        let b = b.start_order[0];
        assert_eq!((b.nodes, b.links), ([node("mh2"), node("fh")], [Some(link("air2")), Some(link("ether"))]));
    }
}
