//! The Web workload's part in a run: the scenario's `[web.*]` workloads, their TCP connections opened and torn
//! down as the browsing goes (this feature keeps their endpoints and runs them; the core only finds them by
//! address and hands them their packets), their requests, and their metrics. The browsing model itself is [`crate::web`].

use super::WebMetrics;
use super::{Command, Object, Samplers, WebClient, WebParams};
use crate::context::{Cx, Request, Role, View};
use crate::feature::Feature;
use crate::metrics::RunResult;
use crate::{rng, Scenario, SimError};
use bytes::Bytes;
use lasthop_agents::flow::FlowKey;
use lasthop_tcp::{Receiver, Sender, TcpConfig};
use lasthop_wire::ipv4::{Ipv4Packet, Ipv4Repr, PROTO_UDP};
use lasthop_wire::{Headers, SeqNum, Time};
use rand::RngCore;
use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddrV4;

/// The Web workload's events.
pub(crate) enum WebEvent {
    /// Web workload `web` begins browsing.
    Start { web: usize },
    /// The think time of web workload `web` is over.
    Wake { web: usize },
    /// The client's SYN reaches the server (a modelled one-way latency): the server opens connection
    /// `conn` of `web` from its side.
    Connect { web: usize, conn: usize },
    /// A request modelled as a latency (`request_over_air = false`) reaches the server.
    RequestArrives { web: usize, conn: usize },
    /// The client's retransmission timer for the request on connection `conn` of `web`, armed by send
    /// number `attempt`.
    RequestTimer { web: usize, conn: usize, attempt: u32 },
    /// Endpoint `ep`'s timer may be due.
    EndpointTimer { ep: usize },
}

const WEB_PORT_FIRST: u16 = 30_000;
/// The port web servers listen on.
const HTTP_PORT: u16 = 80;

/// One TCP connection of a web workload: the server's sender, the client's receiver, and the objects it
/// carries (one for HTTP/1.0, any number in sequence for P-HTTP).
struct WebConn {
    slot: usize,
    /// The server's and the client's endpoints (indices into `WebWorkloads::endpoints`).
    sender: usize,
    receiver: usize,
    /// Objects not yet read completely: (stream offset one past their last byte, object, when requested).
    pending: VecDeque<(u64, Object, Time)>,
    /// Reply bytes assigned to this connection so far.
    assigned: u64,
    delivered: u64,
    /// The request in progress on this connection (at most one: the client asks for the next object only
    /// when the previous one is in).
    request: Option<WebRequest>,
    /// Torn down: both endpoints closed.
    done: bool,
}

/// A request from the client to the server: a real frame over every hop, the lossy wireless hop included,
/// resent on the client's retransmission timer until it arrives.
#[derive(Clone, Copy)]
struct WebRequest {
    /// Request bytes (Mah's request sizes).
    bytes: u64,
    /// Reply bytes the server sends for it.
    reply: u64,
    /// Copies sent so far.
    attempts: u32,
    /// The server has it.
    arrived: bool,
}

struct Web {
    name: String,
    variant: String,
    client_node: usize,
    server_node: usize,
    tcp: TcpConfig,
    /// Connections open with a handshake over the air; false: ns's one-way agents (no SYN).
    handshake: bool,
    /// Requests are frames over every hop (lossy hop included); false: a loss-free modelled latency.
    request_over_air: bool,
    client: WebClient,
    start: Time,
    end: Time,
    path: Vec<usize>,
    conns: Vec<WebConn>,
    /// The connection each client slot currently uses (persistent or in progress).
    slot_conn: Vec<Option<usize>>,
    iss: rng::SimRng,
    objects_requested: u64,
    downloads: u64,
    download_time_ns: u128,
    delivered: u64,
    corrupt: u64,
    /// Sender statistics of torn-down connections (live ones are added at the end).
    stats: lasthop_tcp::SenderStats,
    /// Receiver statistics of torn-down connections: segments whose data the client already had.
    duplicate_segments: u64,
    request_retransmissions: u64,
}

/// Every web workload of the scenario.
pub(crate) struct WebWorkloads {
    webs: Vec<Web>,
    /// The latest end of any web workload's browsing time: the run goes on until then.
    until: Option<Time>,
    /// Next client port for web connections (distinct from bulk flows' 20000 + i).
    next_port: u16,
    /// The live web connection of each client port: (web, connection).
    ports: BTreeMap<u16, (usize, usize)>,
    /// Every endpoint of every connection, in the order opened; its index is the key the core knows it by.
    endpoints: Vec<WebEndpoint>,
}

/// One end of a web connection: its TCP state and its timer, kept here.
struct WebEndpoint {
    web: usize,
    conn: usize,
    node: usize,
    local: SocketAddrV4,
    remote: SocketAddrV4,
    role: Role,
    timer: Option<Time>,
}

impl WebWorkloads {
    /// The scenario's web workloads (`None` without any).
    pub(crate) fn build(s: &Scenario, view: View<'_>) -> Result<Option<WebWorkloads>, SimError> {
        if s.web.is_empty() {
            return Ok(None);
        }
        let mut webs = Vec::new();
        let mut until = None;
        for (name, w) in &s.web {
            let tcp = s
                .web_tcp(name)
                .map_err(|m| crate::ScenarioError::at(s.origin(), format!("web.{name}.tcp"), None, m))?;
            let (client, server) = (view.node_index(&w.client), view.node_index(&w.server));
            let path = view.path(server, client).ok_or_else(|| {
                let message = format!("no route between `{}` and `{}`", w.server, w.client);
                crate::ScenarioError::at(s.origin(), format!("web.{name}"), None, message)
            })?;
            let start = Time((w.start_s * 1e9).round() as u64);
            let end = Time(((w.start_s + w.duration_s) * 1e9).round() as u64);
            let params =
                WebParams { connections: w.connections as usize, persistent: w.persistent, think_time: w.think_time };
            webs.push(Web {
                name: name.clone(),
                variant: tcp.variant.to_string(),
                client_node: client,
                server_node: server,
                tcp,
                handshake: w.handshake,
                request_over_air: w.request_over_air,
                client: WebClient::new(params, Samplers::new(s.seed, name), end),
                start,
                end,
                path,
                conns: Vec::new(),
                slot_conn: vec![None; params.connections],
                iss: rng::stream(s.seed, &format!("web.{name}"), "iss"),
                objects_requested: 0,
                downloads: 0,
                download_time_ns: 0,
                delivered: 0,
                corrupt: 0,
                stats: Default::default(),
                duplicate_segments: 0,
                request_retransmissions: 0,
            });
            until = until.max(Some(end));
        }
        Ok(Some(WebWorkloads { webs, until, next_port: WEB_PORT_FIRST, ports: BTreeMap::new(), endpoints: Vec::new() }))
    }

    /// Schedules endpoint `ep`'s timer if it wants one earlier than the one pending.
    fn arm_endpoint_timer(&mut self, cx: &mut Cx<'_, WebEvent>, ep: usize) {
        let e = &mut self.endpoints[ep];
        if let Some(t) = e.role.rearm(&mut e.timer) {
            cx.schedule(t, WebEvent::EndpointTimer { ep });
        }
    }

    /// Endpoint `ep`'s timer fired: its timeout if one is due, then its follow-up.
    fn on_endpoint_timer(&mut self, cx: &mut Cx<'_, WebEvent>, ep: usize) {
        let now = cx.now();
        let e = &mut self.endpoints[ep];
        if !e.role.fire_timer(&mut e.timer, now) {
            return;
        }
        self.after_web_endpoint(cx, ep);
    }

    /// Carries out what a web client asked for.
    fn web_commands(&mut self, cx: &mut Cx<'_, WebEvent>, web: usize, cmds: Vec<Command>) {
        let now = cx.now();
        for cmd in cmds {
            match cmd {
                Command::Fetch { slot, object, new_connection } => {
                    let open = self.webs[web].slot_conn[slot].filter(|_| !new_connection);
                    let conn = open.unwrap_or_else(|| self.open_web_conn(cx, web, slot));
                    let w = &mut self.webs[web];
                    let c = &mut w.conns[conn];
                    c.assigned += object.reply_bytes;
                    c.pending.push_back((c.assigned, object, now));
                    c.request = Some(WebRequest {
                        bytes: object.request_bytes,
                        reply: object.reply_bytes,
                        attempts: 0,
                        arrived: false,
                    });
                    w.objects_requested += 1;
                    if open.is_some() || !w.handshake {
                        // A persistent connection, or a one-way (ns) one that needs no setup: the request
                        // goes out at once.
                        self.send_request(cx, web, conn);
                    } else {
                        // The client's SYN, a modelled one-way latency; the request follows once the client
                        // has the server's SYN (see `after_web_endpoint`).
                        let at = now + std::time::Duration::from_nanos(self.request_latency_ns(cx.view(), web, 0));
                        cx.schedule(at, WebEvent::Connect { web, conn });
                    }
                }
                Command::Close { slot } => {
                    if let Some(conn) = self.webs[web].slot_conn[slot].take() {
                        let ep = self.webs[web].conns[conn].sender;
                        if let Role::Sender(s) = &mut self.endpoints[ep].role {
                            s.close();
                        }
                        self.after_web_endpoint(cx, ep);
                    }
                }
                Command::Wake { at } => cx.schedule(at, WebEvent::Wake { web }),
            }
        }
    }

    /// A new connection for `slot` of `web`: the server's sender (open for P-HTTP, sized to the one object
    /// otherwise; it connects when the request arrives) and the client's receiver.
    fn open_web_conn(&mut self, cx: &mut Cx<'_, WebEvent>, web: usize, slot: usize) -> usize {
        let port = self.next_port;
        self.next_port = if port >= 64_999 { WEB_PORT_FIRST } else { port + 1 };
        let w = &mut self.webs[web];
        let conn = w.conns.len();
        let server = SocketAddrV4::new(cx.nodes()[w.server_node].addr, HTTP_PORT);
        let client = SocketAddrV4::new(cx.nodes()[w.client_node].addr, port);
        let (iss_s, iss_c) = (SeqNum(w.iss.next_u32()), SeqNum(w.iss.next_u32()));
        let (sender, receiver) = if w.handshake {
            (
                Sender::new_open(w.tcp.clone(), server, client, iss_s),
                Receiver::new(w.tcp.clone(), client, server, iss_c),
            )
        } else {
            (
                Sender::new_established(w.tcp.clone(), server, client, iss_s, iss_c),
                Receiver::new_established(w.tcp.clone(), client, server, iss_c, iss_s),
            )
        };
        let mut open = |node: usize, local: SocketAddrV4, remote: SocketAddrV4, role: Role| {
            let ep = self.endpoints.len();
            self.endpoints.push(WebEndpoint { web, conn, node, local, remote, role, timer: None });
            cx.request(Request::OpenEndpoint { key: ep, node, local, remote });
            ep
        };
        let se = open(w.server_node, server, client, Role::Sender(Box::new(sender)));
        let re = open(w.client_node, client, server, Role::Receiver(Box::new(receiver)));
        w.conns.push(WebConn {
            slot,
            sender: se,
            receiver: re,
            pending: VecDeque::new(),
            assigned: 0,
            delivered: 0,
            request: None,
            done: false,
        });
        self.ports.insert(port, (web, conn));
        w.slot_conn[slot] = Some(conn);
        conn
    }

    /// One-way latency of `bytes` of payload from client to server in segments of 40 header bytes (0: a
    /// SYN): transmission plus propagation on every hop, without queueing or loss (see [`crate::web`]).
    fn request_latency_ns(&self, view: View<'_>, web: usize, bytes: u64) -> u64 {
        let w = &self.webs[web];
        let mss = u64::from(w.tcp.mss.max(1));
        let wire = bytes + 40 * bytes.div_ceil(mss).max(1);
        let mut total = 0;
        for pair in w.path.windows(2).map(|p| [p[1], p[0]]) {
            if let Some((link, _)) = view.nodes()[pair[0]].routes[pair[1]] {
                let l = &view.links()[link];
                total += l.airtime_ns(wire as usize) + l.delay_ns();
            }
        }
        total
    }

    /// Sends (again) the request of connection `conn`: one UDP frame from the client to the server's port,
    /// as long as the TCP segment that would carry it (20 bytes of UDP header and padding stand for the
    /// TCP header; a request over one MSS, at most 1825 bytes in Mah's data, still travels as one frame).
    /// The client's retransmission timer is BSD's minimum RTO, doubled per copy, on the slow timer's ticks
    /// (Balakrishnan 1998's era; `examples/web.toml`); the server's arrival stops it (the ACK is not modelled).
    fn send_request(&mut self, cx: &mut Cx<'_, WebEvent>, web: usize, conn: usize) {
        let now = cx.now();
        if !self.webs[web].request_over_air {
            // Modelled as a latency, never lost (see `WebConfig::request_over_air`).
            let Some(req) = self.webs[web].conns[conn].request.as_mut().filter(|r| !r.arrived && r.attempts == 0)
            else {
                return;
            };
            req.attempts = 1;
            let bytes = req.bytes;
            let at = now + std::time::Duration::from_nanos(self.request_latency_ns(cx.view(), web, bytes));
            cx.schedule(at, WebEvent::RequestArrives { web, conn });
            return;
        }
        let w = &mut self.webs[web];
        let c = &mut w.conns[conn];
        let Some(req) = c.request.as_mut().filter(|r| !r.arrived) else { return };
        req.attempts += 1;
        let attempt = req.attempts;
        let payload_len = 20 + req.bytes as usize;
        let (client, server) = (cx.nodes()[w.client_node].addr, cx.nodes()[w.server_node].addr);
        let port = self.endpoints[c.receiver].local.port();
        let ip = Ipv4Repr { src: client, dst: server, protocol: PROTO_UDP, ident: 0, ttl: 64, payload_len };
        let mut buf = vec![0u8; ip.buffer_len()];
        ip.emit(&mut buf);
        buf[20..22].copy_from_slice(&port.to_be_bytes());
        buf[22..24].copy_from_slice(&HTTP_PORT.to_be_bytes());
        buf[24..26].copy_from_slice(&(payload_len.min(usize::from(u16::MAX)) as u16).to_be_bytes());
        let ms = |x: f64| (x.max(0.0) * 1e6) as u64;
        let first = if w.handshake && w.tcp.timer == lasthop_tcp::TimerStyle::Bsd {
            ms(w.tcp.min_rto_ms)
        } else {
            // ns (one-way agents, or ns's timer): the request is the first segment of the client's request agent (ns's own Web
            // traffic model, `WebTrafPool::launchReq` in ns-2's webtraf.cc, sends each request over its own
            // TCP agent before the reply), whose RTO before any sample is the initial one; the reply's
            // sender, on the same path, stands for it: its RTO estimate once it has one (P-HTTP).
            match &self.endpoints[c.sender].role {
                Role::Sender(s) => s.rto_ns(),
                _ => ms(w.tcp.initial_rto_ms),
            }
        };
        // At least 1 ms, so that a configuration without a minimum RTO cannot resend a request in a tight loop.
        let rto = first.max(1_000_000).saturating_mul(1 << (attempt - 1).min(16)).min(ms(w.tcp.max_rto_ms).max(1));
        let tick = ms(w.tcp.tick_ms);
        let mut at = now.as_nanos().saturating_add(rto.max(1));
        if tick > 0 && w.tcp.timer == lasthop_tcp::TimerStyle::Bsd {
            at = at.div_ceil(tick).saturating_mul(tick);
        }
        let client_node = w.client_node;
        cx.schedule(Time(at), WebEvent::RequestTimer { web, conn, attempt });
        cx.route(client_node, server, Bytes::from(buf), false);
    }

    /// The server has the request of connection `conn`: it queues the reply (and, for HTTP/1.0, its FIN).
    fn request_arrived(&mut self, cx: &mut Cx<'_, WebEvent>, web: usize, conn: usize) {
        let persistent = self.webs[web].client.params().persistent;
        let c = &mut self.webs[web].conns[conn];
        let Some(req) = c.request.as_mut().filter(|r| !r.arrived && !c.done) else { return };
        req.arrived = true;
        let (bytes, ep) = (req.reply, c.sender);
        if let Role::Sender(s) = &mut self.endpoints[ep].role {
            s.push(bytes);
            if !persistent {
                s.close(); // HTTP/1.0: the server closes after the one reply (FIN after the data)
            }
        }
        self.after_web_endpoint(cx, ep);
    }

    /// After a web connection's endpoint ran: send, read and verify the replies, complete objects, tear the
    /// connection down once the server's side is finished.
    fn after_web_endpoint(&mut self, cx: &mut Cx<'_, WebEvent>, ep: usize) {
        let now = cx.now();
        let e = &mut self.endpoints[ep];
        let (web, conn, node, dst) = (e.web, e.conn, e.node, *e.remote.ip());
        loop {
            let packet = match &mut e.role {
                Role::Sender(s) => s.poll_transmit(now),
                Role::Receiver(r) => r.poll_transmit(now),
                Role::Closed => None,
            };
            let Some(packet) = packet else { break };
            cx.request(Request::SendOwn { node, dst, packet });
        }
        let mut done_slots = Vec::new();
        let mut finished = false;
        let mut send_request = false;
        match &mut self.endpoints[ep].role {
            Role::Receiver(r) => {
                let w = &mut self.webs[web];
                let c = &mut w.conns[conn];
                // The client has the server's SYN (and has answered it): the request follows at once.
                send_request = r.is_synchronized() && c.request.is_some_and(|q| q.attempts == 0);
                while let Some(chunk) = r.read() {
                    if !lasthop_tcp::payload::matches(c.delivered, &chunk) {
                        w.corrupt += chunk.len() as u64;
                    }
                    c.delivered += chunk.len() as u64;
                    w.delivered += chunk.len() as u64;
                }
                while c.pending.front().is_some_and(|p| p.0 <= c.delivered) {
                    let (_, _, asked) = c.pending.pop_front().expect("checked");
                    if now <= w.end {
                        w.downloads += 1;
                        w.download_time_ns += u128::from(now.saturating_since(asked).as_nanos() as u64);
                    }
                    done_slots.push(c.slot);
                }
            }
            // Everything, FIN included, acknowledged: the connection is over.
            Role::Sender(s) => finished = s.is_finished(),
            Role::Closed => return,
        }
        self.arm_endpoint_timer(cx, ep);
        if send_request {
            self.send_request(cx, web, conn);
        }
        for slot in done_slots {
            if !self.webs[web].client.params().persistent && self.webs[web].slot_conn[slot] == Some(conn) {
                // HTTP/1.0: this connection carried its one object (the server closed it after the reply);
                // the slot is free for the next object's new connection.
                self.webs[web].slot_conn[slot] = None;
            }
            let cmds = self.webs[web].client.object_done(now, slot);
            self.web_commands(cx, web, cmds);
        }
        if finished {
            self.teardown_web_conn(cx, web, conn);
        }
    }

    fn teardown_web_conn(&mut self, cx: &mut Cx<'_, WebEvent>, web: usize, conn: usize) {
        let c = &mut self.webs[web].conns[conn];
        if c.done {
            return;
        }
        c.done = true;
        let (se, re) = (c.sender, c.receiver);
        let port = self.endpoints[re].local.port();
        if self.ports.get(&port) == Some(&(web, conn)) {
            self.ports.remove(&port);
        }
        for ep in [se, re] {
            cx.request(Request::CloseEndpoint { key: ep });
            match std::mem::replace(&mut self.endpoints[ep].role, Role::Closed) {
                Role::Sender(s) => add_stats(&mut self.webs[web].stats, s.stats()),
                Role::Receiver(r) => self.webs[web].duplicate_segments += r.stats().duplicate_segments,
                Role::Closed => {}
            }
        }
    }
}

impl Feature for WebWorkloads {
    type Event = WebEvent;

    fn start(&mut self, cx: &mut Cx<'_, WebEvent>) {
        for web in 0..self.webs.len() {
            cx.schedule(self.webs[web].start, WebEvent::Start { web });
        }
    }

    fn runs_until(&self) -> Option<Time> {
        self.until
    }

    fn on_event(&mut self, cx: &mut Cx<'_, WebEvent>, event: WebEvent) {
        let now = cx.now();
        match event {
            WebEvent::Start { web } => {
                let cmds = self.webs[web].client.start(now);
                self.web_commands(cx, web, cmds);
            }
            WebEvent::Wake { web } => {
                let cmds = self.webs[web].client.wake(now);
                self.web_commands(cx, web, cmds);
            }
            WebEvent::Connect { web, conn } => {
                let c = &self.webs[web].conns[conn];
                if c.done {
                    return;
                }
                let ep = c.sender;
                if let Role::Sender(s) = &mut self.endpoints[ep].role {
                    s.connect(now);
                }
                self.after_web_endpoint(cx, ep);
            }
            WebEvent::RequestArrives { web, conn } => self.request_arrived(cx, web, conn),
            WebEvent::RequestTimer { web, conn, attempt } => {
                let c = &self.webs[web].conns[conn];
                if !c.done && c.request.is_some_and(|r| !r.arrived && r.attempts == attempt) {
                    self.webs[web].request_retransmissions += 1;
                    self.send_request(cx, web, conn);
                }
            }
            WebEvent::EndpointTimer { ep } => self.on_endpoint_timer(cx, ep),
        }
    }

    /// A request frame reached the server: the server queues the reply (and, for HTTP/1.0, its FIN).
    fn on_datagram(&mut self, cx: &mut Cx<'_, WebEvent>, _node: usize, packet: &Bytes) -> bool {
        let ip = Ipv4Packet::new_unchecked(&packet[..]);
        if ip.protocol() != PROTO_UDP {
            return false;
        }
        let (src, udp) = (ip.src_addr(), ip.payload());
        let ports =
            (udp.len() >= 8).then(|| (u16::from_be_bytes([udp[0], udp[1]]), u16::from_be_bytes([udp[2], udp[3]])));
        let found = ports
            .filter(|&(_, dport)| dport == HTTP_PORT)
            .and_then(|(sport, _)| self.ports.get(&sport).copied())
            .filter(|&(web, _)| cx.nodes()[self.webs[web].client_node].addr == src);
        let Some((web, conn)) = found else { return false };
        self.request_arrived(cx, web, conn);
        true
    }

    fn on_endpoint_packet(&mut self, cx: &mut Cx<'_, WebEvent>, ep: usize, packet: &Bytes, headers: &Headers) {
        let now = cx.now();
        match &mut self.endpoints[ep].role {
            Role::Sender(s) => s.handle_parsed(now, packet, headers),
            Role::Receiver(r) => r.handle_parsed(now, packet, headers),
            Role::Closed => return,
        }
        self.after_web_endpoint(cx, ep);
    }

    fn on_endpoint_poke(&mut self, cx: &mut Cx<'_, WebEvent>, ep: usize, poke: &dyn Fn(&mut Role, Time)) {
        if matches!(self.endpoints[ep].role, Role::Closed) {
            return;
        }
        poke(&mut self.endpoints[ep].role, cx.now());
        self.after_web_endpoint(cx, ep);
    }

    fn finish(self, view: View<'_>, result: &mut RunResult) {
        for w in &self.webs {
            let mut st = w.stats.clone();
            let mut duplicates = w.duplicate_segments;
            for c in w.conns.iter().filter(|c| !c.done) {
                if let Role::Sender(s) = &self.endpoints[c.sender].role {
                    add_stats(&mut st, s.stats());
                }
                if let Role::Receiver(r) = &self.endpoints[c.receiver].role {
                    duplicates += r.stats().duplicate_segments;
                }
            }
            let senders: Vec<FlowKey> = w.conns.iter().map(|c| self.endpoints[c.sender].flow_key()).collect();
            let counter = |name: &str| view.connection_counter(&w.path, &senders, name);
            let p = w.client.params();
            let metrics = WebMetrics {
                name: w.name.clone(),
                tcp: w.variant.clone(),
                connections: p.connections as u32,
                persistent: p.persistent,
                think_time: p.think_time,
                downloads_completed: w.downloads,
                pages_completed: w.client.pages_completed,
                pages_started: w.client.pages_started,
                objects_requested: w.objects_requested,
                request_retransmissions: w.request_retransmissions,
                connections_opened: w.conns.len() as u64,
                bytes_delivered: w.delivered,
                corrupt_bytes: w.corrupt,
                mean_download_time_s: (w.downloads > 0)
                    .then(|| (w.download_time_ns / u128::from(w.downloads)) as f64 / 1e9),
                sender_timeouts: st.timeouts,
                fast_retransmits: st.fast_retransmits,
                segments_sent: st.segments_sent,
                segments_retransmitted: st.segments_retransmitted,
                local_retransmissions: counter("local_retransmissions"),
                dupacks_suppressed: counter("dupacks_suppressed"),
                duplicate_segments_received: duplicates,
            };
            result.families.web.push(metrics);
        }
    }
}

impl WebEndpoint {
    /// The connection as agents key it, for a sender: data from here to the remote end.
    fn flow_key(&self) -> FlowKey {
        FlowKey::between(self.local, self.remote)
    }
}

fn add_stats(into: &mut lasthop_tcp::SenderStats, s: &lasthop_tcp::SenderStats) {
    into.timeouts += s.timeouts;
    into.fast_retransmits += s.fast_retransmits;
    into.segments_sent += s.segments_sent;
    into.segments_retransmitted += s.segments_retransmitted;
    into.bytes_retransmitted += s.bytes_retransmitted;
}
