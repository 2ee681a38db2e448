//! Building a run's world from its scenario: nodes, links and media, routes, then the features in
//! registration order.

use super::*;

impl World {
    pub fn build(s: &Scenario, opts: &RunOptions) -> Result<World, SimError> {
        Self::build_with(s, opts, crate::registry::build_all)
    }

    /// [`World::build`] with `register` in place of [`crate::registry::build_all`] (the tests register probes).
    pub(crate) fn build_with(
        s: &Scenario,
        opts: &RunOptions,
        register: impl FnOnce(&Scenario, &mut World) -> Result<(), SimError>,
    ) -> Result<World, SimError> {
        let names: HashMap<&str, usize> = s.nodes.keys().enumerate().map(|(i, n)| (n.as_str(), i)).collect();
        let index = |n: &str| *names.get(n).expect("validated");
        let mut nodes: Vec<Node> = s
            .nodes
            .iter()
            .map(|(name, n)| Node {
                name: name.clone(),
                addr: n.addr,
                routes: Routes::default(),
                gateway: None,
                agent: build_agent(&n.agent, s),
                agent_timer: None,
                endpoints: Vec::new(),
                by_key: FastMap::default(),
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
                    let writer = PcapWriter::new(std::io::BufWriter::new(file)).map_err(io)?;
                    link.pcap[i] = Some(crate::link::Pcap { writer, path });
                }
            }
            links.push(link);
        }
        compute_routes(&mut nodes, &links, None);
        let media = build_media(s, &mut links);
        let addr_index = KeyIndex::new(&nodes.iter().map(|n| u64::from(u32::from(n.addr))).collect::<Vec<_>>());

        let core = Core {
            sched: Scheduler::default(),
            nodes,
            links,
            media_unqueued_done: vec![None; media.len()],
            media,
            endpoints: Vec::new(),
            flow_progress: Vec::new(),
            handoffs_noted: Vec::new(),
            addr_index,
            actions: Vec::with_capacity(16),
            holding: 0,
            time_limit: Time((s.time_limit_s * 1e9).round() as u64),
            stall_until: 0,
            stall_events: 0,
            stalled: None,
            seed: s.seed,
            trace: opts.trace,
            undeliverable: 0,
            hooks: HookSet::default(),
            work: VecDeque::new(),
            continuations: VecDeque::new(),
            run_until: None,
            control_protocols: Vec::new(),
            out_of_range_losses: 0,
            pcap_error: None,
        };
        // Each feature sets up in registration order, then each starts: see "Same-instant order" in
        // `crate::feature`.
        let mut world = World { core, features: Vec::new() };
        register(s, &mut world)?;
        for id in 0..world.features.len() {
            world.features[id].start(&mut world.core);
            world.drain(Time::ZERO);
        }
        world.core.run_until = world.features.iter().filter_map(|f| f.runs_until()).max();
        Ok(world)
    }
}

impl Core {
    /// Recomputes every node's routes; `no_transit` is a node that originates and receives but never relays.
    pub(crate) fn recompute_routes(&mut self, no_transit: Option<usize>) {
        compute_routes(&mut self.nodes, &self.links, no_transit);
    }

    /// Node index by name (the scenario was validated, so the name exists).
    pub(crate) fn node_index(&self, name: &str) -> usize {
        self.nodes.iter().position(|x| x.name == name).expect("validated")
    }

    /// Nodes from `from` to `to` inclusive, following the routing tables.
    pub(crate) fn path(&self, from: usize, to: usize) -> Option<Vec<usize>> {
        let mut path = vec![from];
        let mut at = from;
        while at != to {
            let (link, dir) = self.nodes[at].routes[to]?;
            at = self.links[link].ends[1 - dir];
            path.push(at);
        }
        Some(path)
    }
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
    for m in &mut media {
        m.reindex(|l| links[l].next_on_medium());
    }
    media
}

impl Core {
    /// Puts `links` on one half-duplex medium (full-duplex links keep their transmitters).
    pub(crate) fn share_medium(&mut self, links: &[usize]) {
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
        for m in links.iter().filter_map(|&l| self.links[l].medium) {
            let links = &self.links;
            self.media[m].reindex(|l| links[l].next_on_medium());
        }
    }
}

/// Shortest-path (hop count) routes from every node (see [`crate::routes`]); `no_transit`: a node that
/// originates and receives but never relays (the mobile host).
fn compute_routes(nodes: &mut [Node], links: &[Link], no_transit: Option<usize>) {
    let ends: Vec<[usize; 2]> = links.iter().map(|l| l.ends).collect();
    let routes = crate::routes::compute(nodes.len(), &ends, no_transit);
    for (node, routes) in nodes.iter_mut().zip(routes) {
        node.routes = routes;
    }
}
