//! The event loop: plays the events until the run is over, with the stall backstop.

use super::*;

impl World {
    pub fn run(mut self) -> Result<RunResult, SimError> {
        self.play();
        self.finish()
    }

    /// Plays the events until the run is over (see the module docs); [`World::finish`] then collects the
    /// metrics.
    pub(crate) fn play(&mut self) {
        while let Some(at) = self.core.sched.peek_time() {
            let c = &mut self.core;
            if at > c.time_limit {
                break;
            }
            // Without features that keep it going this is `while holding > 0`.
            if c.holding == 0 && c.run_until.is_none_or(|u| at > u) {
                break;
            }
            let (now, ev) = c.sched.pop().expect("peeked");
            if now.0 >= c.stall_until {
                c.stall_until = now.0.saturating_add(STALL_SPAN_NS);
                c.stall_events = 0;
            } else {
                c.stall_events += 1;
                if c.stall_events >= STALL_EVENTS {
                    let likely = self.likely_spinning(&ev);
                    self.core.stalled = Some((now, likely));
                    break;
                }
            }
            match ev {
                Event::Arrive { node, link, dir, packet } => self.arrive(now, node, link, dir, packet),
                Event::TxDone { link, dir } => {
                    match c.links[link].medium {
                        Some(m) => c.media[m].finish(),
                        None => c.links[link].finish(dir),
                    }
                    c.kick(now, link);
                }
                Event::AgentTimer { node } => c.agent_timer(now, node),
                Event::EndpointTimer { ep } => self.endpoint_timer(now, ep),
                Event::Feature { feature, slot } => self.features[feature.0].on_event(&mut self.core, now, slot),
            }
            self.drain(now);
        }
    }

    /// The scenario fields that most likely made the run stall, from the kind of event that was playing
    /// when the backstop tripped (in a stall, one kind of event repeats).
    #[cold]
    pub(super) fn likely_spinning(&self, ev: &Event) -> String {
        match ev {
            Event::AgentTimer { node } => format!(
                "a timer of the agents at node `{}` (`snoop.min_rtx_timeout_ms`, `snoop.max_rtx_timeout_ms`, \
                 `snoop.initial_srtt_ms`, `snoop.persist_timeout_ms` or `nack.timeout_ms`)",
                self.core.nodes[*node].name
            ),
            Event::Arrive { link, .. } | Event::TxDone { link, .. } => {
                let name = &self.core.links[*link].name;
                format!("link `{name}` (`links.{name}.rate_mbps`, `delay_ms` or `mac_overhead_us`)")
            }
            Event::EndpointTimer { .. } => "a TCP timer (`tcp.tick_ms`, `tcp.min_rto_ms`, `tcp.max_rto_ms`, \
                 `tcp.initial_rto_ms`, `tcp.delayed_ack_ms`, `tcp.persist_min_ms`)"
                .into(),
            Event::Feature { feature, slot } => {
                let cause = self.features[feature.0].stall_cause(*slot);
                cause.unwrap_or_else(|| {
                    "a feature's period (`mobility.interval_s`, `beacon_period_s`, \
                 `motion_step_s`, `[mobile_ip]`, `links.*.arq.timeout_ms`, `[web]`)"
                        .into()
                })
            }
        }
    }
}

impl Core {
    /// The agent at `node` may want its timer now: fires it if due and carries out what it asks for.
    fn agent_timer(&mut self, now: Time, node: usize) {
        if self.nodes[node].agent_timer.is_some_and(|t| t <= now) {
            self.nodes[node].agent_timer = None;
        }
        if let Some(agent) = self.nodes[node].agent.as_mut() {
            if agent.poll_timeout().is_some_and(|t| t <= now) {
                agent.handle_timeout(now, &mut self.actions);
            }
        }
        self.apply_actions(now, node, None);
    }
}
