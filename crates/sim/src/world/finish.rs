//! The end of a run: the core's metrics (links, agents' counters), then each feature's.

use super::*;

impl Core {
    /// Agents' counters per node name (what `RunResult::agents` holds).
    pub(super) fn agent_counters(&self) -> BTreeMap<String, BTreeMap<String, u64>> {
        let mut agents = BTreeMap::new();
        for n in &self.nodes {
            if let Some(a) = &n.agent {
                let counters: BTreeMap<String, u64> =
                    a.counters().into_iter().map(|(k, v)| (k.to_string(), v)).collect();
                agents.insert(n.name.clone(), counters);
            }
        }
        agents
    }

    /// Sum of the per-connection agent counter `name` (`Agent::connection_counters`) over the nodes of
    /// `path` and the connections whose senders are `senders` (endpoint indices): what the agents did for
    /// these connections alone, not for every connection through them.
    pub(crate) fn connection_counter(&self, path: &[usize], keys: &[FlowKey], name: &str) -> u64 {
        let mut keys = keys.to_vec();
        keys.sort_unstable();
        keys.dedup();
        let agents = path.iter().filter_map(|&n| self.nodes[n].agent.as_deref());
        agents
            .flat_map(|a| keys.iter().flat_map(move |k| a.connection_counters(k)))
            .filter(|&(n, _)| n == name)
            .map(|(_, v)| v)
            .sum()
    }

    /// When the run ended: the last event played, or the time limit.
    pub(crate) fn run_end(&self) -> Time {
        self.sched.now().min(self.time_limit)
    }

    /// The core's part of the run's metrics (the run fails if it stalled or a capture could not be written).
    fn result(&mut self) -> Result<RunResult, SimError> {
        if let Some((at, likely)) = self.stalled.take() {
            let at_s = at.0 as f64 / 1e9;
            return Err(SimError::Stalled { at_s, events: STALL_EVENTS, span_ns: STALL_SPAN_NS, likely });
        }
        let end = self.run_end();
        let hit_time_limit = self.holding > 0;
        let agents = self.agent_counters();
        let run_ns = end.as_nanos().max(1) as f64;
        let mut links = Vec::new();
        for l in &mut self.links {
            for p in l.pcap.iter_mut().filter_map(Option::take) {
                let crate::link::Pcap { writer, path } = p;
                if let Err(source) = std::io::Write::flush(&mut writer.into_inner()) {
                    self.pcap_error.get_or_insert(SimError::Io { path, source });
                }
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
        if let Some(e) = self.pcap_error.take() {
            return Err(e);
        }
        Ok(RunResult {
            seed: self.seed,
            sim_time_s: end.as_secs_f64(),
            hit_time_limit,
            events: self.sched.processed(),
            flows: Vec::new(),
            links,
            agents,
            undeliverable_packets: self.undeliverable,
            series: self.trace.then(Vec::new),
            families: Default::default(),
        })
    }
}

impl World {
    /// The run's metrics: the core's, then each feature's, in registration order.
    pub(crate) fn finish(mut self) -> Result<RunResult, SimError> {
        let mut result = self.core.result()?;
        for feature in self.features {
            feature.finish(&self.core, &mut result);
        }
        Ok(result)
    }
}
