//! One simulated run: the nodes, links, endpoints and agents of a scenario wired together and driven by the
//! event queue until every flow has delivered its bytes (and every web workload's browsing time is over) or
//! the time limit is reached. Web workloads ([`crate::web`]) open and close their TCP connections as the run
//! goes; their endpoints live in the same table as the flows', with [`Owner`] saying whose they are.

use crate::agents::build_agent;
use crate::engine::Scheduler;
use crate::link::{Link, Medium, Transmission};
use crate::metrics::{FlowMetrics, FlowSeries, HandoffMetrics, LinkMetrics, RunResult, WebMetrics};
use crate::mobility::{BeaconState, Cells, MobState, MotionKind, ReceiverSignal, SchemeKind};
use crate::scenario::{LinkKind, Scenario};
use crate::web::{Command, Object, Samplers, WebClient, WebParams};
use crate::{rng, RunOptions, SimError};
use bytes::Bytes;
use lasthop_agents::handoff::{
    self, BaseStation, BsConfig, Control, HomeAgent, Kind, MhEvent, MobileHost, Role as BsRole,
};
use lasthop_agents::{Action, Agent, Side};
use lasthop_tcp::{payload, Receiver, Sender, TcpConfig};
use lasthop_wire::ipv4::{Ipv4Packet, Ipv4Repr, PROTO_TCP, PROTO_UDP};
use lasthop_wire::pcap::PcapWriter;
use lasthop_wire::tcp::TcpPacket;
use lasthop_wire::{SeqNum, Time};
use rand::RngCore;
use std::collections::{BTreeMap, VecDeque};
use std::net::{Ipv4Addr, SocketAddrV4};

enum Event {
    /// A packet reaches `node` over direction `dir` of `link`.
    Arrive {
        node: usize,
        link: usize,
        dir: usize,
        packet: Bytes,
    },
    /// The transmitter of `dir` of `link` (or its shared medium) is free.
    TxDone {
        link: usize,
        dir: usize,
    },
    EndpointTimer {
        ep: usize,
    },
    AgentTimer {
        node: usize,
    },
    FlowStart {
        flow: usize,
    },
    /// Web workload `web` begins browsing.
    WebStart {
        web: usize,
    },
    /// The think time of web workload `web` is over.
    WebWake {
        web: usize,
    },
    /// The client's SYN reaches the server (a modelled one-way latency): the server opens connection
    /// `conn` of `web` from its side.
    WebConnect {
        web: usize,
        conn: usize,
    },
    /// A request modelled as a latency (`request_over_air = false`) reaches the server.
    WebRequestArrives {
        web: usize,
        conn: usize,
    },
    /// The client's retransmission timer for the request on connection `conn` of `web`, armed by send
    /// number `attempt`.
    WebRequestTimer {
        web: usize,
        conn: usize,
        attempt: u32,
    },
    /// Crossing `k`: phase 0 the mobile leaves its cell (non-overlapping cells), phase 1 it decides to hand off.
    Move {
        k: u32,
        phase: u8,
    },
    /// Base station `bs` (index into the mobility's list) broadcasts a beacon.
    Beacon {
        bs: usize,
    },
    /// Beacon motion: the mobile's position is updated and cells come into or go out of range.
    Walk,
}

struct Node {
    name: String,
    addr: Ipv4Addr,
    /// Next hop toward each node: (link, direction), `None` for itself or unreachable.
    routes: Vec<Option<(usize, usize)>>,
    agent: Option<Box<dyn Agent>>,
    agent_timer: Option<Time>,
    endpoints: Vec<usize>,
}

enum Role {
    Sender(Box<Sender>),
    Receiver(Box<Receiver>),
    /// A web connection's endpoint after the connection was torn down (its timers may still fire).
    Closed,
}

/// Whose an endpoint is.
#[derive(Clone, Copy)]
enum Owner {
    Flow(usize),
    Web { web: usize, conn: usize },
}

struct Endpoint {
    owner: Owner,
    node: usize,
    local: SocketAddrV4,
    remote: SocketAddrV4,
    role: Role,
    timer: Option<Time>,
}

struct Flow {
    name: String,
    variant: String,
    bytes: u64,
    start: Time,
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
}

/// One TCP connection of a web workload: the server's sender, the client's receiver, and the objects it
/// carries (one for HTTP/1.0, any number in sequence for P-HTTP).
struct WebConn {
    slot: usize,
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

pub struct World {
    sched: Scheduler<Event>,
    nodes: Vec<Node>,
    links: Vec<Link>,
    /// Half-duplex media; each half-duplex link sends on one (`Link::medium`).
    media: Vec<Medium>,
    endpoints: Vec<Endpoint>,
    flows: Vec<Flow>,
    addr_index: BTreeMap<Ipv4Addr, usize>,
    actions: Vec<Action>,
    flows_open: usize,
    time_limit: Time,
    seed: u64,
    trace: bool,
    /// Packets no node could route or deliver (no route, no endpoint, unparsable at a host).
    undeliverable: u64,
    webs: Vec<Web>,
    /// The latest end of any web workload's browsing time: the run goes on until then.
    web_until: Option<Time>,
    /// Next client port for web connections (distinct from bulk flows' 20000 + i).
    next_web_port: u16,
    /// The live web connection of each client port: (web, connection).
    web_ports: BTreeMap<u16, (usize, usize)>,
    /// Cells, motion and handoff; `None` for a static topology (then nothing below runs).
    mob: Option<Box<MobState>>,
}

impl World {
    pub fn build(s: &Scenario, opts: &RunOptions) -> Result<World, SimError> {
        let names: Vec<&String> = s.nodes.keys().collect();
        let index = |n: &str| names.iter().position(|x| *x == n).expect("validated");
        let mut nodes: Vec<Node> = s
            .nodes
            .iter()
            .map(|(name, n)| Node {
                name: name.clone(),
                addr: n.addr,
                routes: Vec::new(),
                agent: build_agent(&n.agent, s),
                agent_timer: None,
                endpoints: Vec::new(),
            })
            .collect();
        let mut links = Vec::new();
        for (name, l) in &s.links {
            let ends = [index(&l.ends[0]), index(&l.ends[1])];
            let fwd = l.error.build(rng::stream(s.seed, &format!("link.{name}"), "error.0"));
            let rev = l.error_reverse.as_ref().unwrap_or(&l.error).build(rng::stream(
                s.seed,
                &format!("link.{name}"),
                "error.1",
            ));
            let mut link = Link::new(name.clone(), l, ends, [fwd, rev]);
            if let (Some(dir), LinkKind::Wireless) = (&opts.pcap_dir, l.kind) {
                for (i, &end) in ends.iter().enumerate() {
                    let path = dir.join(format!("{name}-{}.pcap", nodes[end].name));
                    let io = |source| SimError::Io { path: path.clone(), source };
                    let file = std::fs::File::create(&path).map_err(io)?;
                    link.pcap[i] = Some(PcapWriter::new(std::io::BufWriter::new(file)).map_err(io)?);
                }
            }
            links.push(link);
        }
        compute_routes(&mut nodes, &links, None);
        let media = build_media(s, &mut links);
        let addr_index = nodes.iter().enumerate().map(|(i, n)| (n.addr, i)).collect();

        let mut world = World {
            sched: Scheduler::default(),
            nodes,
            links,
            media,
            endpoints: Vec::new(),
            flows: Vec::new(),
            addr_index,
            actions: Vec::with_capacity(16),
            flows_open: 0,
            time_limit: Time((s.time_limit_s * 1e9).round() as u64),
            seed: s.seed,
            trace: opts.trace,
            undeliverable: 0,
            webs: Vec::new(),
            web_until: None,
            next_web_port: WEB_PORT_FIRST,
            web_ports: BTreeMap::new(),
            mob: None,
        };
        world.setup_mobility(s);
        for (i, (name, f)) in s.flows.iter().enumerate() {
            let tcp = s.flow_tcp(name).map_err(|m| crate::ScenarioError {
                origin: s.origin().to_string(),
                message: format!("`flows.{name}.tcp`: {m}"),
            })?;
            world.add_flow(i, name, f.bytes, f.start_s, index(&f.from), index(&f.to), tcp)?;
        }
        world.flows_open = world.flows.len();
        for (name, w) in &s.web {
            let tcp = s.web_tcp(name).map_err(|m| crate::ScenarioError {
                origin: s.origin().to_string(),
                message: format!("`web.{name}.tcp`: {m}"),
            })?;
            let (client, server) = (index(&w.client), index(&w.server));
            let path = world.path(server, client).ok_or_else(|| crate::ScenarioError {
                origin: s.origin().to_string(),
                message: format!("`web.{name}`: no route between `{}` and `{}`", w.server, w.client),
            })?;
            let start = Time((w.start_s * 1e9).round() as u64);
            let end = Time(((w.start_s + w.duration_s) * 1e9).round() as u64);
            let params =
                WebParams { connections: w.connections as usize, persistent: w.persistent, think_time: w.think_time };
            let i = world.webs.len();
            world.webs.push(Web {
                name: name.clone(),
                variant: tcp.variant.to_string(),
                client_node: client,
                server_node: server,
                tcp,
                handshake: w.handshake,
                request_over_air: w.request_over_air,
                client: WebClient::new(params, Samplers::new(s.seed, name), end),
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
            world.web_until = world.web_until.max(Some(end));
            world.sched.schedule(start, Event::WebStart { web: i });
        }
        Ok(world)
    }

    #[allow(clippy::too_many_arguments)]
    fn add_flow(
        &mut self,
        i: usize,
        name: &str,
        bytes: u64,
        start_s: f64,
        from: usize,
        to: usize,
        tcp: TcpConfig,
    ) -> Result<(), SimError> {
        let path = self.path(from, to).ok_or_else(|| crate::ScenarioError {
            origin: "scenario".into(),
            message: format!("`flows.{name}`: no route from `{}` to `{}`", self.nodes[from].name, self.nodes[to].name),
        })?;
        let mut r = rng::stream(self.seed, &format!("flow.{name}"), "iss");
        let (iss_a, iss_b) = (SeqNum(r.next_u32()), SeqNum(r.next_u32()));
        let port = 20_000 + i as u16;
        let a = SocketAddrV4::new(self.nodes[from].addr, port);
        let b = SocketAddrV4::new(self.nodes[to].addr, 5001);
        let ideal = self.ideal_goodput(&path, &tcp);
        let variant = tcp.variant.to_string();
        let sender = Sender::new(tcp.clone(), a, b, iss_a, bytes);
        let receiver = Receiver::new(tcp, b, a, iss_b);
        let (se, re) = (self.endpoints.len(), self.endpoints.len() + 1);
        self.endpoints.push(Endpoint {
            owner: Owner::Flow(i),
            node: from,
            local: a,
            remote: b,
            role: Role::Sender(Box::new(sender)),
            timer: None,
        });
        self.endpoints.push(Endpoint {
            owner: Owner::Flow(i),
            node: to,
            local: b,
            remote: a,
            role: Role::Receiver(Box::new(receiver)),
            timer: None,
        });
        self.nodes[from].endpoints.push(se);
        self.nodes[to].endpoints.push(re);
        let start = Time((start_s * 1e9).round() as u64);
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
            series: self.trace.then(|| FlowSeries { name: name.to_string(), ..FlowSeries::default() }),
            last_cwnd: 0,
            last_progress: start,
            longest_pause_ns: 0,
        });
        self.sched.schedule(start, Event::FlowStart { flow: i });
        Ok(())
    }

    /// Nodes from `from` to `to` inclusive, following the routing tables.
    fn path(&self, from: usize, to: usize) -> Option<Vec<usize>> {
        let mut path = vec![from];
        let mut at = from;
        while at != to {
            let (link, dir) = self.nodes[at].routes[to]?;
            at = self.links[link].ends[1 - dir];
            path.push(at);
        }
        Some(path)
    }

    /// C·(1 − PER) of the first wireless hop on the path: C counts a full data frame and, on a shared medium,
    /// one ACK frame per `ack_every` data frames; PER is the data direction's analytic frame loss.
    fn ideal_goodput(&self, path: &[usize], tcp: &TcpConfig) -> Option<f64> {
        let data_bytes = usize::from(tcp.mss) + 40;
        for w in path.windows(2) {
            let (link, dir) = self.nodes[w[0]].routes[w[1]]?;
            let l = &self.links[link];
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

    pub fn run(mut self) -> Result<RunResult, SimError> {
        while let Some(at) = self.sched.peek_time() {
            if at > self.time_limit {
                break;
            }
            // Without web workloads this is `while flows_open > 0`, as it always was.
            if self.flows_open == 0 && self.web_until.is_none_or(|u| at > u) {
                break;
            }
            let (now, ev) = self.sched.pop().expect("peeked");
            match ev {
                Event::Arrive { node, link, dir, packet } => self.arrive(now, node, link, dir, packet),
                Event::TxDone { link, dir } => {
                    match self.links[link].medium {
                        Some(m) => self.media[m].finish(),
                        None => self.links[link].finish(dir),
                    }
                    self.kick(now, link);
                }
                Event::EndpointTimer { ep } => {
                    if self.endpoints[ep].timer.is_some_and(|t| t <= now) {
                        self.endpoints[ep].timer = None;
                    }
                    let due = match &self.endpoints[ep].role {
                        Role::Sender(s) => s.poll_timeout(),
                        Role::Receiver(r) => r.poll_timeout(),
                        Role::Closed => continue,
                    };
                    if due.is_some_and(|t| t <= now) {
                        match &mut self.endpoints[ep].role {
                            Role::Sender(s) => s.handle_timeout(now),
                            Role::Receiver(r) => r.handle_timeout(now),
                            Role::Closed => {}
                        }
                    }
                    self.after_endpoint(now, ep);
                }
                Event::AgentTimer { node } => {
                    if self.nodes[node].agent_timer.is_some_and(|t| t <= now) {
                        self.nodes[node].agent_timer = None;
                    }
                    if let Some(agent) = self.nodes[node].agent.as_mut() {
                        if agent.poll_timeout().is_some_and(|t| t <= now) {
                            agent.on_timeout(now, &mut self.actions);
                        }
                    }
                    self.apply_actions(now, node);
                }
                Event::Move { k, phase } => self.on_move(now, k, phase),
                Event::Beacon { bs } => self.on_beacon(now, bs),
                Event::Walk => self.on_walk(now),
                Event::FlowStart { flow } => {
                    let ep = self.flows[flow].sender;
                    if let Role::Sender(s) = &mut self.endpoints[ep].role {
                        s.connect(now);
                    }
                    self.after_endpoint(now, ep);
                }
                Event::WebStart { web } => {
                    let cmds = self.webs[web].client.start(now);
                    self.web_commands(now, web, cmds);
                }
                Event::WebWake { web } => {
                    let cmds = self.webs[web].client.wake(now);
                    self.web_commands(now, web, cmds);
                }
                Event::WebConnect { web, conn } => {
                    let c = &self.webs[web].conns[conn];
                    if c.done {
                        continue;
                    }
                    let ep = c.sender;
                    if let Role::Sender(s) = &mut self.endpoints[ep].role {
                        s.connect(now);
                    }
                    self.after_endpoint(now, ep);
                }
                Event::WebRequestArrives { web, conn } => self.request_arrived(now, web, conn),
                Event::WebRequestTimer { web, conn, attempt } => {
                    let c = &self.webs[web].conns[conn];
                    if !c.done && c.request.is_some_and(|r| !r.arrived && r.attempts == attempt) {
                        self.webs[web].request_retransmissions += 1;
                        self.send_request(now, web, conn);
                    }
                }
            }
        }
        Ok(self.finish())
    }

    fn arrive(&mut self, now: Time, node: usize, link: usize, dir: usize, packet: Bytes) {
        let end = 1 - dir;
        if let Some(p) = self.links[link].pcap[end].as_mut() {
            let _ = p.write(now, &packet);
        }
        let Ok(ip) = Ipv4Packet::new_checked(&packet[..]) else {
            self.undeliverable += 1;
            return;
        };
        let dst = ip.dst_addr();
        if self.mob.is_some() && self.mobile_arrive(now, node, link, &packet) {
            return;
        }
        if dst == self.nodes[node].addr {
            self.deliver_local(now, node, packet);
            return;
        }
        let Some(out) = self.next_hop(node, dst) else {
            self.undeliverable += 1;
            return;
        };
        if self.nodes[node].agent.is_some() {
            let side = if self.links[out.0].kind == LinkKind::Wireless { Side::ToMobile } else { Side::ToWired };
            let occupancy = self.links[out.0].occupancy(out.1);
            let agent = self.nodes[node].agent.as_mut().expect("checked");
            agent.on_queue_occupancy(side, occupancy);
            agent.on_packet(now, side, packet, &mut self.actions);
            self.apply_actions(now, node);
        } else {
            self.send(now, out, packet, false);
        }
    }

    /// Carries out what the node's agent asked for, then re-arms its timer.
    fn apply_actions(&mut self, now: Time, node: usize) {
        let mut actions = std::mem::take(&mut self.actions);
        for action in actions.drain(..) {
            let (packet, priority) = match action {
                Action::Forward(_, p) | Action::Inject(_, p) => (p, false),
                Action::ForwardPriority(_, p) => (p, true),
                Action::Drop(_) => continue,
            };
            let dst = match Ipv4Packet::new_checked(&packet[..]) {
                Ok(ip) => ip.dst_addr(),
                Err(_) => {
                    self.undeliverable += 1;
                    continue;
                }
            };
            self.route(now, node, dst, packet, priority);
        }
        self.actions = actions;
        let want = self.nodes[node].agent.as_ref().and_then(|a| a.poll_timeout());
        let n = &mut self.nodes[node];
        if let Some(t) = want {
            if n.agent_timer.is_none_or(|s| t < s) {
                n.agent_timer = Some(t);
                self.sched.schedule(t, Event::AgentTimer { node });
            }
        }
    }

    fn next_hop(&self, node: usize, dst: Ipv4Addr) -> Option<(usize, usize)> {
        if let Some(m) = self.mob.as_deref() {
            if node == m.mh && dst != self.nodes[node].addr {
                // The mobile's default gateway is its current cell's BS (seed 004: "updates its routing table").
                let link = m.bs_link[m.current];
                return Some((link, self.links[link].dir_from(node)));
            }
        }
        let to = *self.addr_index.get(&dst)?;
        self.nodes[node].routes[to]
    }

    /// Sends `packet` from `node` toward `dst` by the routing table, or counts it undeliverable.
    fn route(&mut self, now: Time, node: usize, dst: Ipv4Addr, packet: Bytes, priority: bool) {
        match self.next_hop(node, dst) {
            Some(out) => self.send(now, out, packet, priority),
            None => self.undeliverable += 1,
        }
    }

    fn send(&mut self, now: Time, (link, dir): (usize, usize), packet: Bytes, priority: bool) {
        if self.links[link].enqueue(dir, packet, priority) {
            self.kick(now, link);
        }
    }

    /// Starts whatever transmissions the link (or the medium it sends on) can start now.
    fn kick(&mut self, now: Time, link: usize) {
        match self.links[link].medium {
            Some(m) => {
                if let Some((l, dir)) = self.media[m].acquire(&self.links) {
                    let t = self.links[l].start(now, dir);
                    self.launch(now, l, t);
                }
            }
            None => {
                while let Some(t) = self.links[link].start_next(now) {
                    self.launch(now, link, t);
                }
            }
        }
    }

    /// A frame went on the air on `link`: capture it, tell the sender's agent, schedule its end and arrival.
    fn launch(&mut self, now: Time, link: usize, t: Transmission) {
        let Transmission { dir, packet, done_at, arrives_at, corrupted } = t;
        if let Some(p) = self.links[link].pcap[dir].as_mut() {
            let _ = p.write(now, &packet);
        }
        let from = self.links[link].ends[dir];
        if let Some(agent) = self.nodes[from].agent.as_mut() {
            let side = if self.links[link].kind == LinkKind::Wireless { Side::ToMobile } else { Side::ToWired };
            agent.on_transmit(now, side, &packet);
        }
        self.sched.schedule(done_at, Event::TxDone { link, dir });
        if self.mob.as_deref().is_some_and(|m| m.detached[link]) {
            self.lost_out_of_range(&packet);
            return;
        }
        if !corrupted {
            let node = self.links[link].ends[1 - dir];
            self.sched.schedule(arrives_at, Event::Arrive { node, link, dir, packet });
        }
    }

    fn deliver_local(&mut self, now: Time, node: usize, packet: Bytes) {
        let ip = Ipv4Packet::new_unchecked(&packet[..]);
        let (src, proto) = (ip.src_addr(), ip.protocol());
        if proto == PROTO_UDP {
            self.deliver_request(now, src, ip.payload());
            return;
        }
        let tcp = match TcpPacket::new_checked(ip.payload()) {
            Ok(tcp) if proto == PROTO_TCP => tcp,
            _ => {
                self.undeliverable += 1;
                return;
            }
        };
        let (sport, dport) = (tcp.src_port(), tcp.dst_port());
        let found = self.nodes[node].endpoints.iter().copied().find(|&e| {
            let ep = &self.endpoints[e];
            ep.local.port() == dport && *ep.remote.ip() == src && ep.remote.port() == sport
        });
        let Some(ep) = found else {
            self.undeliverable += 1;
            return;
        };
        if let (true, Owner::Flow(f)) = (self.trace, self.endpoints[ep].owner) {
            let flow = &mut self.flows[f];
            let series = flow.series.as_mut().expect("trace");
            let t = now.as_secs_f64();
            match self.endpoints[ep].role {
                Role::Receiver(_) if !tcp.payload().is_empty() => {
                    series.received.push((t, stream_offset(flow.iss, tcp.seq_number())));
                }
                Role::Sender(_) if tcp.ack() => series.acked.push((t, stream_offset(flow.iss, tcp.ack_number()))),
                _ => {}
            }
        }
        match &mut self.endpoints[ep].role {
            Role::Sender(s) => s.handle_packet(now, &packet),
            Role::Receiver(r) => r.handle_packet(now, &packet),
            Role::Closed => return,
        }
        self.after_endpoint(now, ep);
    }

    /// Drains what an endpoint wants to send and read, and re-arms its timer.
    fn after_endpoint(&mut self, now: Time, ep: usize) {
        let flow = match self.endpoints[ep].owner {
            Owner::Flow(f) => f,
            Owner::Web { web, conn } => return self.after_web_endpoint(now, ep, web, conn),
        };
        let node = self.endpoints[ep].node;
        let dst = *self.endpoints[ep].remote.ip();
        let out_link = self.next_hop(node, dst);
        loop {
            let packet = match &mut self.endpoints[ep].role {
                Role::Sender(s) => {
                    // The mobile's output-queue length that an ELN sender piggybacks (seed 002 §3).
                    if let Some((link, dir)) = out_link {
                        s.set_output_queue(self.links[link].occupancy(dir));
                    }
                    let p = s.poll_transmit(now);
                    if let (Some(_), Some(series)) = (&p, self.flows[flow].series.as_mut()) {
                        if let Some((offset, _)) = s.last_sent() {
                            series.sent.push((now.as_secs_f64(), offset));
                        }
                    }
                    p
                }
                Role::Receiver(r) => r.poll_transmit(now),
                Role::Closed => None,
            };
            let Some(packet) = packet else { break };
            self.route(now, node, dst, packet, false);
        }
        match &mut self.endpoints[ep].role {
            Role::Receiver(r) => {
                let f = &mut self.flows[flow];
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
                }
            }
            Role::Sender(s) => {
                let f = &mut self.flows[flow];
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
        if self.mob.is_some() {
            self.check_pause(now);
        }
        self.arm_endpoint_timer(ep);
    }

    fn arm_endpoint_timer(&mut self, ep: usize) {
        let e = &mut self.endpoints[ep];
        let want = match &e.role {
            Role::Sender(s) => s.poll_timeout(),
            Role::Receiver(r) => r.poll_timeout(),
            Role::Closed => None,
        };
        if let Some(t) = want {
            if e.timer.is_none_or(|s| t < s) {
                e.timer = Some(t);
                self.sched.schedule(t, Event::EndpointTimer { ep });
            }
        }
    }

    fn finish(mut self) -> RunResult {
        let end = self.sched.now().min(self.time_limit);
        let hit_time_limit = self.flows_open > 0;
        let mut agents = BTreeMap::new();
        for n in &self.nodes {
            if let Some(a) = &n.agent {
                let counters: BTreeMap<String, u64> =
                    a.counters().into_iter().map(|(k, v)| (k.to_string(), v)).collect();
                agents.insert(n.name.clone(), counters);
            }
        }
        let mut flows = Vec::new();
        for f in &self.flows {
            let stop = f.completed_at.unwrap_or(end);
            let duration = stop.saturating_since(f.start).as_secs_f64();
            let sstats = match &self.endpoints[f.sender].role {
                Role::Sender(s) => s.stats().clone(),
                _ => unreachable!("flow sender is a sender"),
            };
            let counter = |name: &str| -> u64 {
                f.path.iter().filter_map(|&n| agents.get(&self.nodes[n].name)).filter_map(|c| c.get(name)).sum()
            };
            flows.push(FlowMetrics {
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
            });
        }
        let run_ns = end.as_nanos().max(1) as f64;
        let mut links = Vec::new();
        for l in &mut self.links {
            for p in l.pcap.iter_mut().filter_map(Option::take) {
                let _ = std::io::Write::flush(&mut p.into_inner());
            }
            for (d, dir) in l.dirs.iter().enumerate() {
                links.push(LinkMetrics {
                    name: l.name.clone(),
                    direction: format!("{}->{}", self.nodes[l.ends[d]].name, self.nodes[l.ends[1 - d]].name),
                    frames_sent: dir.frames_sent,
                    frames_lost_to_errors: dir.frames_lost,
                    frames_dropped_queue: dir.frames_dropped_queue,
                    bytes_sent: dir.bytes_sent,
                    utilisation: dir.busy_ns as f64 / run_ns,
                });
            }
        }
        let mut web = Vec::new();
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
            let counter = |name: &str| -> u64 {
                w.path.iter().filter_map(|&n| agents.get(&self.nodes[n].name)).filter_map(|c| c.get(name)).sum()
            };
            let p = w.client.params();
            web.push(WebMetrics {
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
            });
        }
        self.close_handoff();
        let handoffs = self.mob.as_mut().map(|m| std::mem::take(&mut m.handoffs)).unwrap_or_default();
        let series = self.trace.then(|| self.flows.iter_mut().filter_map(|f| f.series.take()).collect());
        RunResult {
            seed: self.seed,
            sim_time_s: end.as_secs_f64(),
            hit_time_limit,
            events: self.sched.processed(),
            flows,
            links,
            agents,
            undeliverable_packets: self.undeliverable,
            web,
            series,
            handoffs,
        }
    }
}

const WEB_PORT_FIRST: u16 = 30_000;
/// The port web servers listen on.
const HTTP_PORT: u16 = 80;

impl World {
    /// Carries out what a web client asked for.
    fn web_commands(&mut self, now: Time, web: usize, cmds: Vec<Command>) {
        for cmd in cmds {
            match cmd {
                Command::Fetch { slot, object, new_connection } => {
                    let open = self.webs[web].slot_conn[slot].filter(|_| !new_connection);
                    let conn = open.unwrap_or_else(|| self.open_web_conn(web, slot));
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
                        self.send_request(now, web, conn);
                    } else {
                        // The client's SYN, a modelled one-way latency; the request follows once the client
                        // has the server's SYN (see `after_web_endpoint`).
                        let at = now + std::time::Duration::from_nanos(self.request_latency_ns(web, 0));
                        self.sched.schedule(at, Event::WebConnect { web, conn });
                    }
                }
                Command::Close { slot } => {
                    if let Some(conn) = self.webs[web].slot_conn[slot].take() {
                        let ep = self.webs[web].conns[conn].sender;
                        if let Role::Sender(s) = &mut self.endpoints[ep].role {
                            s.close();
                        }
                        self.after_endpoint(now, ep);
                    }
                }
                Command::Wake { at } => self.sched.schedule(at, Event::WebWake { web }),
            }
        }
    }

    /// A new connection for `slot` of `web`: the server's sender (open for P-HTTP, sized to the one object
    /// otherwise; it connects when the request arrives) and the client's receiver.
    fn open_web_conn(&mut self, web: usize, slot: usize) -> usize {
        let port = self.next_web_port;
        self.next_web_port = if port >= 64_999 { WEB_PORT_FIRST } else { port + 1 };
        let w = &mut self.webs[web];
        let conn = w.conns.len();
        let server = SocketAddrV4::new(self.nodes[w.server_node].addr, HTTP_PORT);
        let client = SocketAddrV4::new(self.nodes[w.client_node].addr, port);
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
        let (se, re) = (self.endpoints.len(), self.endpoints.len() + 1);
        let owner = Owner::Web { web, conn };
        self.endpoints.push(Endpoint {
            owner,
            node: w.server_node,
            local: server,
            remote: client,
            role: Role::Sender(Box::new(sender)),
            timer: None,
        });
        self.endpoints.push(Endpoint {
            owner,
            node: w.client_node,
            local: client,
            remote: server,
            role: Role::Receiver(Box::new(receiver)),
            timer: None,
        });
        self.nodes[w.server_node].endpoints.push(se);
        self.nodes[w.client_node].endpoints.push(re);
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
        self.web_ports.insert(port, (web, conn));
        w.slot_conn[slot] = Some(conn);
        conn
    }

    /// One-way latency of `bytes` of payload from client to server in segments of 40 header bytes (0: a
    /// SYN): transmission plus propagation on every hop, without queueing or loss (see [`crate::web`]).
    fn request_latency_ns(&self, web: usize, bytes: u64) -> u64 {
        let w = &self.webs[web];
        let mss = u64::from(w.tcp.mss.max(1));
        let wire = bytes + 40 * bytes.div_ceil(mss).max(1);
        let mut total = 0;
        for pair in w.path.windows(2).map(|p| [p[1], p[0]]) {
            if let Some((link, _)) = self.nodes[pair[0]].routes[pair[1]] {
                let l = &self.links[link];
                total += l.airtime_ns(wire as usize) + l.delay_ns();
            }
        }
        total
    }

    /// Sends (again) the request of connection `conn`: one UDP frame from the client to the server's port,
    /// as long as the TCP segment that would carry it (20 bytes of UDP header and padding stand for the
    /// TCP header; a request over one MSS, at most 1825 bytes in Mah's data, still travels as one frame).
    /// The client's retransmission timer is BSD's minimum RTO, doubled per copy, on the slow timer's ticks
    /// (seed 002's era; `examples/web.toml`); the server's arrival stops it (the ACK is not modelled).
    fn send_request(&mut self, now: Time, web: usize, conn: usize) {
        if !self.webs[web].request_over_air {
            // Modelled as a latency, never lost (see `WebConfig::request_over_air`).
            let Some(req) = self.webs[web].conns[conn].request.as_mut().filter(|r| !r.arrived && r.attempts == 0)
            else {
                return;
            };
            req.attempts = 1;
            let bytes = req.bytes;
            let at = now + std::time::Duration::from_nanos(self.request_latency_ns(web, bytes));
            self.sched.schedule(at, Event::WebRequestArrives { web, conn });
            return;
        }
        let w = &mut self.webs[web];
        let c = &mut w.conns[conn];
        let Some(req) = c.request.as_mut().filter(|r| !r.arrived) else { return };
        req.attempts += 1;
        let attempt = req.attempts;
        let payload_len = 20 + req.bytes as usize;
        let (client, server) = (self.nodes[w.client_node].addr, self.nodes[w.server_node].addr);
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
        self.sched.schedule(Time(at), Event::WebRequestTimer { web, conn, attempt });
        self.route(now, client_node, server, Bytes::from(buf), false);
    }

    /// A request frame reached the server: the server queues the reply (and, for HTTP/1.0, its FIN).
    fn deliver_request(&mut self, now: Time, src: Ipv4Addr, udp: &[u8]) {
        let ports =
            (udp.len() >= 8).then(|| (u16::from_be_bytes([udp[0], udp[1]]), u16::from_be_bytes([udp[2], udp[3]])));
        let found = ports
            .filter(|&(_, dport)| dport == HTTP_PORT)
            .and_then(|(sport, _)| self.web_ports.get(&sport).copied())
            .filter(|&(web, _)| self.nodes[self.webs[web].client_node].addr == src);
        let Some((web, conn)) = found else {
            self.undeliverable += 1;
            return;
        };
        self.request_arrived(now, web, conn);
    }

    /// The server has the request of connection `conn`: it queues the reply (and, for HTTP/1.0, its FIN).
    fn request_arrived(&mut self, now: Time, web: usize, conn: usize) {
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
        self.after_endpoint(now, ep);
    }

    /// [`after_endpoint`](Self::after_endpoint) for a web connection: send, read and verify the replies,
    /// complete objects, tear the connection down once the server's side is finished.
    fn after_web_endpoint(&mut self, now: Time, ep: usize, web: usize, conn: usize) {
        let dst = *self.endpoints[ep].remote.ip();
        let node = self.endpoints[ep].node;
        loop {
            let packet = match &mut self.endpoints[ep].role {
                Role::Sender(s) => s.poll_transmit(now),
                Role::Receiver(r) => r.poll_transmit(now),
                Role::Closed => None,
            };
            let Some(packet) = packet else { break };
            self.route(now, node, dst, packet, false);
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
                    if !payload::matches(c.delivered, &chunk) {
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
        self.arm_endpoint_timer(ep);
        if send_request {
            self.send_request(now, web, conn);
        }
        for slot in done_slots {
            if !self.webs[web].client.params().persistent && self.webs[web].slot_conn[slot] == Some(conn) {
                // HTTP/1.0: this connection carried its one object (the server closed it after the reply);
                // the slot is free for the next object's new connection.
                self.webs[web].slot_conn[slot] = None;
            }
            let cmds = self.webs[web].client.object_done(now, slot);
            self.web_commands(now, web, cmds);
        }
        if finished {
            self.teardown_web_conn(web, conn);
        }
    }

    fn teardown_web_conn(&mut self, web: usize, conn: usize) {
        let c = &mut self.webs[web].conns[conn];
        if c.done {
            return;
        }
        c.done = true;
        let (se, re) = (c.sender, c.receiver);
        let port = self.endpoints[re].local.port();
        if self.web_ports.get(&port) == Some(&(web, conn)) {
            self.web_ports.remove(&port);
        }
        for ep in [se, re] {
            let role = std::mem::replace(&mut self.endpoints[ep].role, Role::Closed);
            match role {
                Role::Sender(s) => add_stats(&mut self.webs[web].stats, s.stats()),
                Role::Receiver(r) => self.webs[web].duplicate_segments += r.stats().duplicate_segments,
                Role::Closed => {}
            }
            let node = self.endpoints[ep].node;
            self.nodes[node].endpoints.retain(|&e| e != ep);
        }
    }
}

fn add_stats(into: &mut lasthop_tcp::SenderStats, s: &lasthop_tcp::SenderStats) {
    into.timeouts += s.timeouts;
    into.fast_retransmits += s.fast_retransmits;
    into.segments_sent += s.segments_sent;
    into.segments_retransmitted += s.segments_retransmitted;
    into.bytes_retransmitted += s.bytes_retransmitted;
}

/// Application-stream offset of sequence number `seq` for a sender whose ISS is `iss` (the SYN takes one).
fn stream_offset(iss: SeqNum, seq: SeqNum) -> u64 {
    u64::from(seq.0.wrapping_sub(iss.0).wrapping_sub(1))
}

/// The half-duplex media: links naming the same `medium` share one, every other half-duplex link has its own.
fn build_media(s: &Scenario, links: &mut [Link]) -> Vec<Medium> {
    let mut media: Vec<Medium> = Vec::new();
    let mut named: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, (l, cfg)) in links.iter_mut().zip(s.links.values()).enumerate() {
        if !l.is_half_duplex() {
            continue;
        }
        let m = match cfg.medium.as_deref() {
            Some(name) => *named.entry(name).or_insert_with(|| {
                media.push(Medium::default());
                media.len() - 1
            }),
            None => {
                media.push(Medium::default());
                media.len() - 1
            }
        };
        media[m].links.push(i);
        l.medium = Some(m);
    }
    media
}

/// Shortest-path (hop count) routes by breadth-first search from every node; ties go to the link listed first.
/// `no_transit`: a node that originates and receives but never relays (the mobile host: a path between two
/// base stations must not cross the air through it).
fn compute_routes(nodes: &mut [Node], links: &[Link], no_transit: Option<usize>) {
    let n = nodes.len();
    let mut adj: Vec<Vec<(usize, usize, usize)>> = vec![Vec::new(); n]; // (neighbour, link, dir)
    for (i, l) in links.iter().enumerate() {
        adj[l.ends[0]].push((l.ends[1], i, 0));
        adj[l.ends[1]].push((l.ends[0], i, 1));
    }
    for src in 0..n {
        let mut first_hop: Vec<Option<(usize, usize)>> = vec![None; n];
        let mut seen = vec![false; n];
        seen[src] = true;
        let mut queue = std::collections::VecDeque::from([src]);
        while let Some(u) = queue.pop_front() {
            if Some(u) == no_transit && u != src {
                continue;
            }
            for &(v, link, dir) in &adj[u] {
                if !seen[v] {
                    seen[v] = true;
                    first_hop[v] = if u == src { Some((link, dir)) } else { first_hop[u] };
                    queue.push_back(v);
                }
            }
        }
        nodes[src].routes = first_hop;
    }
}

/// Mobility (seed 000 §4–§7, seed 004): set-up, motion events, beacons, what the mobile receives, and the
/// per-handoff measurements. None of it runs for a scenario without `[mobility]`.
impl World {
    fn setup_mobility(&mut self, s: &Scenario) {
        let Some(cfg) = s.mobility.as_ref().filter(|m| m.scheme != SchemeKind::None) else { return };
        let idx = |n: &str| self.nodes.iter().position(|x| x.name == n).expect("validated");
        let (mh, ha) = (idx(&cfg.mobile), idx(&cfg.home_agent));
        let bss: Vec<usize> = cfg.base_stations.iter().map(|b| idx(b)).collect();
        compute_routes(&mut self.nodes, &self.links, Some(mh));
        let bs_link: Vec<usize> = bss
            .iter()
            .map(|&b| {
                let ends_ok = |l: &Link| l.kind == LinkKind::Wireless && l.ends.contains(&b) && l.ends.contains(&mh);
                self.links.iter().position(ends_ok).expect("validated")
            })
            .collect();
        let scheme = match cfg.scheme {
            SchemeKind::Plain => handoff::Scheme::Plain,
            _ => handoff::Scheme::Multicast,
        };
        let addrs: Vec<Ipv4Addr> = self.nodes.iter().map(|n| n.addr).collect();
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
        self.nodes[ha].agent = Some(Box::new(home));
        for (i, &b) in bss.iter().enumerate() {
            let mut c = BsConfig::new(addr(b), addr(ha));
            c.peers = bss.iter().map(|&o| addr(o)).filter(|&o| o != addr(b)).collect();
            c.buffer_packets = cfg.buffer_packets;
            c.mirror_packets = cfg.mirror_packets;
            c.transmit_reports = cfg.snoop_transmit_reports;
            if s.nodes[&self.nodes[b].name].agent.0.contains(&crate::scenario::AgentKind::Snoop) {
                c.snoop = Some(s.snoop.config());
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
            self.nodes[b].agent = Some(Box::new(agent));
        }
        if cfg.shares_medium() {
            self.share_medium(&bs_link);
        }
        let (cells, rendezvous_s, interval_s) = cfg.motion();
        let mut detached = vec![false; self.links.len()];
        if cells == Cells::NonOverlapping && beacons.is_none() {
            for &l in &bs_link[1..] {
                detached[l] = true;
            }
        }
        let secs = |v: f64| Time((v * 1e9).round() as u64);
        let state = MobState {
            fast_retransmit: cfg.fast_retransmit,
            receiver_signal: cfg.receiver_signal,
            old_bs_drains: cfg.old_bs_drains,
            cells,
            rendezvous: secs(rendezvous_s),
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
            detached,
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
        };
        if let Some(t) = state.crossing(0) {
            let phase = if cells == Cells::NonOverlapping { 0 } else { 1 };
            self.sched.schedule(t, Event::Move { k: 0, phase });
        }
        if let Some(p) = state.beacon_period {
            // Spread the BSs' beacons over the period so they do not collide by construction.
            let n = state.bss.len() as u64;
            for i in 0..state.bss.len() {
                self.sched.schedule(Time(p.0 * (i as u64 + 1) / (n + 1)), Event::Beacon { bs: i });
            }
        }
        let walking = state.beacons.is_some();
        self.mob = Some(Box::new(state));
        if walking {
            self.on_walk(Time::ZERO);
        }
    }

    /// Puts the cells of `links` on one half-duplex medium (full-duplex links keep their transmitters).
    fn share_medium(&mut self, links: &[usize]) {
        let mut into = None;
        for &l in links {
            let Some(m) = self.links[l].medium else { continue };
            let target = *into.get_or_insert(m);
            if m == target {
                continue;
            }
            let moved = std::mem::take(&mut self.media[m].links);
            for &k in &moved {
                self.links[k].medium = Some(target);
            }
            self.media[target].links.extend(moved);
        }
    }

    /// Beacon motion: the mobile's new position; cells out of range detach (no frames either way), cells in
    /// range attach. Leaving the current cell's range marks the next handoff's `left_s`.
    fn on_walk(&mut self, now: Time) {
        let m = self.mob.as_deref_mut().expect("mobility");
        let Some(b) = m.beacons.as_ref() else { return };
        let x = b.walk.position(now.as_secs_f64());
        let mut left = false;
        for i in 0..m.bss.len() {
            let out = !b.radio.in_range(x - b.positions[i]);
            let l = m.bs_link[i];
            if i == m.current && out != m.detached[l] {
                m.left_at = out.then_some(now);
                left = out;
            }
            m.detached[l] = out;
        }
        let next = Time(now.0 + b.step.0);
        self.sched.schedule(next, Event::Walk);
        if left {
            self.start_pause(now); // the crossing begins when the mobile leaves its cell's range
        }
    }

    /// Beacon motion: a beacon from `bs` reached the mobile. Sample its strength at the mobile's position, let
    /// the beacon analysis decide, and hand off or change the buffering base stations.
    fn on_beacon_heard(&mut self, now: Time, bs: Ipv4Addr) {
        let m = self.mob.as_deref_mut().expect("mobility");
        let Some(i) = m.bss.iter().position(|&b| self.nodes[b].addr == bs) else { return };
        let Some(b) = m.beacons.as_mut() else { return };
        let x = b.walk.position(now.as_secs_f64());
        let dbm = b.radio.sample(x - b.positions[i], &mut b.shadowing[i]);
        b.monitor.on_beacon(now, bs, dbm);
        let current = self.nodes[m.bss[m.current]].addr;
        let decision = b.monitor.decide(now, current);
        let index = |a: Ipv4Addr| m.bss.iter().position(|&b| self.nodes[b].addr == a).expect("a base station");
        let likely: Vec<usize> = decision.likely.iter().map(|&a| index(a)).collect();
        match decision.handoff_to {
            Some(t) => {
                let (k, t) = (m.handoffs.len() as u32, index(t));
                self.start_handoff(now, k, t, &likely);
            }
            None => {
                let msgs = m.controller.set_buffering(&decision.likely);
                let mh = m.mh;
                for p in msgs {
                    let dst = Ipv4Packet::new_unchecked(&p[..]).dst_addr();
                    self.route(now, mh, dst, p, false);
                }
            }
        }
    }

    fn on_beacon(&mut self, now: Time, bs: usize) {
        let m = self.mob.as_deref_mut().expect("mobility");
        let (b, link, mh) = (m.bss[bs], m.bs_link[bs], m.mh);
        m.beacon_ident = m.beacon_ident.wrapping_add(1);
        let (src, dst) = (self.nodes[b].addr, self.nodes[mh].addr);
        let packet = Control::new(Kind::Beacon, 0, dst, src).emit(src, dst, m.beacon_ident);
        if let Some(p) = m.beacon_period {
            self.sched.schedule(Time(now.0 + p.0), Event::Beacon { bs });
        }
        let dir = self.links[link].dir_from(b);
        self.send(now, (link, dir), packet, false);
    }

    fn on_move(&mut self, now: Time, k: u32, phase: u8) {
        let m = self.mob.as_deref_mut().expect("mobility");
        if phase == 0 {
            // Leave the old cell; the new BS is heard `rendezvous` later (seed 004).
            m.detached[m.bs_link[m.current]] = true;
            m.left_at = Some(now);
            let at = Time(now.0 + m.rendezvous.0);
            self.sched.schedule(at, Event::Move { k, phase: 1 });
            self.start_pause(now);
            return;
        }
        let m = self.mob.as_deref_mut().expect("mobility");
        let n = m.bss.len();
        let target = (m.current + 1) % n;
        if m.cells == Cells::NonOverlapping {
            m.detached[m.bs_link[target]] = false;
        }
        let likely: Vec<usize> = if n > 1 { vec![(target + 1) % n] } else { vec![] };
        self.start_handoff(now, k, target, &likely);
        let m = self.mob.as_deref().expect("mobility");
        if let Some(t) = m.crossing(k + 1) {
            let phase = if m.cells == Cells::NonOverlapping { 0 } else { 1 };
            self.sched.schedule(t, Event::Move { k: k + 1, phase });
        }
    }

    /// The mobile decides to hand off to base station `target` (index into the visiting order) with `likely`
    /// as the likely next targets: its uplink moves to the new cell, the control messages go out, and the
    /// handoff's measurement starts.
    fn start_handoff(&mut self, now: Time, k: u32, target: usize, likely: &[usize]) {
        self.close_handoff();
        if self.mob.as_deref().is_some_and(|m| m.left_at.is_none()) {
            self.start_pause(now); // overlapping cells: the crossing is the decision
        }
        let m = self.mob.as_deref_mut().expect("mobility");
        let old = m.current;
        m.current = target;
        let addr = |i: usize| self.nodes[m.bss[i]].addr;
        let likely: Vec<Ipv4Addr> = likely.iter().map(|&i| addr(i)).collect();
        let msgs = m.controller.handoff(addr(target), &likely);
        let left = m.left_at.take().unwrap_or(now);
        m.handoffs.push(HandoffMetrics {
            index: k,
            from: self.nodes[m.bss[old]].name.clone(),
            to: self.nodes[m.bss[target]].name.clone(),
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
        let mark = self.resent_total();
        self.mob.as_deref_mut().expect("mobility").resent_mark = mark;
        for f in &mut self.flows {
            if let Some(series) = f.series.as_mut() {
                series.handoffs.push(now.as_secs_f64());
            }
        }
        let mh = self.mob.as_deref().expect("mobility").mh;
        for p in msgs {
            let dst = Ipv4Packet::new_unchecked(&p[..]).dst_addr();
            self.route(now, mh, dst, p, false);
        }
    }

    /// A crossing begins (the mobile leaves its cell, or decides in overlapping cells): each flow through the
    /// mobile must deliver a byte its sender has not sent yet (or its last byte) before the transfer counts
    /// as resumed; what was in flight may have been lost, and so may the ACKs of what was delivered.
    fn start_pause(&mut self, now: Time) {
        let Some(m) = self.mob.as_deref_mut() else { return };
        let mut through = false;
        let mut marks = Vec::new();
        for (i, f) in self.flows.iter().enumerate().filter(|(_, f)| f.path.contains(&m.mh)) {
            through = true;
            if let Role::Sender(s) = &self.endpoints[f.sender].role {
                let target = (s.snd_max_offset() + 1).min(f.bytes);
                if f.delivered < target {
                    marks.push((i, target));
                }
            }
        }
        let done = (through && marks.is_empty()).then_some(now);
        m.pause = crate::mobility::PauseTrack { start: now, marks, done, entry: None };
    }

    /// After a delivery: has every flow caught up with its mark? Then the crossing's pause is over.
    fn check_pause(&mut self, now: Time) {
        let Some(m) = self.mob.as_deref_mut() else { return };
        if m.pause.marks.is_empty() {
            return;
        }
        let flows = &self.flows;
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
    fn resent_total(&self) -> u64 {
        let m = self.mob.as_deref().expect("mobility");
        m.bss
            .iter()
            .filter_map(|&b| self.nodes[b].agent.as_ref())
            .flat_map(|a| a.counters())
            .filter(|(k, _)| *k == "resent_from_buffer")
            .map(|(_, v)| v)
            .sum()
    }

    /// Ends the current handoff's accounting (at the next handoff, or at the end of the run).
    fn close_handoff(&mut self) {
        if self.mob.as_deref().is_none_or(|m| m.handoffs.is_empty()) {
            return;
        }
        let total = self.resent_total();
        let m = self.mob.as_deref_mut().expect("mobility");
        let mark = m.resent_mark;
        if let Some(h) = m.handoffs.last_mut() {
            h.resent_from_buffer = total.saturating_sub(mark);
        }
    }

    /// A data frame lost because the mobile is out of range of that link (beacons and control not counted).
    /// Between leaving a cell and hearing the next BS the loss belongs to the crossing under way, whose
    /// entry is made at the decision.
    fn lost_out_of_range(&mut self, packet: &[u8]) {
        let is_data = Ipv4Packet::new_checked(packet).is_ok_and(|ip| ip.protocol() != handoff::PROTO_HANDOFF);
        let Some(m) = self.mob.as_deref_mut().filter(|_| is_data) else { return };
        if m.left_at.is_some() {
            m.lost_between_cells += 1;
        } else if let Some(h) = m.handoffs.last_mut() {
            h.packets_lost += 1;
        }
    }

    /// Mobility's part of a packet arriving at `node`; true when it consumed the packet.
    fn mobile_arrive(&mut self, now: Time, node: usize, link: usize, packet: &Bytes) -> bool {
        let m = self.mob.as_deref_mut().expect("mobility");
        if m.detached[link] {
            // In flight when the mobile moved out of range.
            self.lost_out_of_range(packet);
            return true;
        }
        let ip = Ipv4Packet::new_unchecked(&packet[..]);
        let (src, dst, proto, ident) = (ip.src_addr(), ip.dst_addr(), ip.protocol(), ip.ident());
        if node == m.mh {
            let from_bs = m.bs_link.iter().position(|&l| l == link);
            let event = m.controller.on_received(packet);
            let decided = m.handoffs.last().map(|h| Time((h.decided_s * 1e9).round() as u64));
            let since = |t: Option<Time>| t.map(|d| now.saturating_since(d).as_secs_f64());
            if proto != handoff::PROTO_HANDOFF {
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
                    if m.fast_retransmit {
                        self.fast_retransmit(now, node);
                    }
                }
                Some(MhEvent::Beacon { bs }) => self.on_beacon_heard(now, bs),
                _ => {}
            }
            return true;
        }
        let is_bs = m.bss.contains(&node);
        let mine = dst == self.nodes[node].addr;
        if is_bs && mine && proto == handoff::PROTO_HANDOFF {
            let mh_addr = self.nodes[m.mh].addr;
            if let (Some(c), Some(h)) = (Control::parse(packet), m.handoffs.last_mut()) {
                if c.seq == m.controller.seq() {
                    let at = Some(now.saturating_since(Time((h.decided_s * 1e9).round() as u64)).as_secs_f64());
                    match c.kind {
                        Kind::Forward | Kind::Greeting if h.request_at_new_bs_s.is_none() => h.request_at_new_bs_s = at,
                        Kind::Buffer | Kind::Stop | Kind::Notify if h.old_bs_told_s.is_none() => h.old_bs_told_s = at,
                        _ => {}
                    }
                    if !m.old_bs_drains
                        && matches!(c.kind, Kind::Buffer | Kind::Stop | Kind::Notify)
                        && c.mobile == mh_addr
                    {
                        // `mobility.old_bs_drains = false`: the old BS discards what it queued for the mobile.
                        if let Some(i) = m.bss.iter().position(|&b| b == node) {
                            let link = &mut self.links[m.bs_link[i]];
                            let dir = link.dir_from(node);
                            let to_mobile = |p: &[u8]| {
                                Ipv4Packet::new_checked(p)
                                    .is_ok_and(|ip| ip.dst_addr() == mh_addr && ip.protocol() != handoff::PROTO_HANDOFF)
                            };
                            h.purged_at_old_bs += link.purge(dir, to_mobile);
                        }
                    }
                }
            }
        }
        let home_agent_takes = node == m.ha && (mine || Some(&self.nodes[m.mh].addr) == Some(&dst));
        if (is_bs && mine) || home_agent_takes {
            let agent = self.nodes[node].agent.as_mut().expect("mobility agents are set up");
            agent.on_packet(now, lasthop_agents::Side::ToMobile, packet.clone(), &mut self.actions);
            self.apply_actions(now, node);
            return true;
        }
        false
    }

    /// Seed 004: the handoff is accepted; the mobile's TCPs react at once instead of waiting for a timeout.
    /// A receiving TCP sends the signal `mobility.receiver_signal` chooses (seed 004, Fig. 9 (b)).
    fn fast_retransmit(&mut self, now: Time, node: usize) {
        let signal = self.mob.as_ref().map_or(ReceiverSignal::Dupacks, |m| m.receiver_signal);
        let eps = self.nodes[node].endpoints.clone();
        for ep in eps {
            match &mut self.endpoints[ep].role {
                Role::Receiver(r) => match signal {
                    ReceiverSignal::Dupacks => r.send_dupacks(3),
                    ReceiverSignal::MarkedAck => r.send_handoff_mark(),
                },
                Role::Sender(s) => s.retransmit_now(now),
                Role::Closed => continue,
            }
            self.after_endpoint(now, ep);
        }
    }
}
