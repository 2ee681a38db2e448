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
            // Without features that keep it going this is `while holding > 0`.
            if !c.plays_at(at) {
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
                Event::TxDone { link, dir } => c.tx_done(now, link, dir),
                Event::AgentTimer { node } => c.agent_timer(now, node),
                Event::EndpointTimer { ep } => self.endpoint_timer(now, ep),
                Event::Feature { feature, slot } => self.features[feature.0].on_event(&mut self.core, now, slot),
            }
            self.drain(now);
        }
        if self.core.stalled.is_none() {
            self.core.play_unqueued_ends();
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
    /// Whether the loop plays an event at `at`, by the run's end conditions as they stand (the time limit;
    /// the features holding the run, or the latest time one runs until).
    fn plays_at(&self, at: Time) -> bool {
        at <= self.time_limit && (self.holding > 0 || self.run_until.is_some_and(|u| at <= u))
    }

    /// The ends of frames left without an event ([`Core::launch`]) would each have been played, with nothing
    /// to do, had they had one: the clock goes to the last of them the loop would have played, so that when
    /// a run ends (and what is measured over it) is as if they had.
    fn play_unqueued_ends(&mut self) {
        let full_duplex = self.links.iter().flat_map(|l| l.dirs.iter().filter_map(|d| d.unqueued_done));
        let media = self.media_unqueued_done.iter().filter_map(|u| u.map(|(at, seq, ..)| (at, seq)));
        let last = full_duplex.chain(media).map(|(at, _)| at).filter(|&at| self.plays_at(at)).max();
        if let Some(at) = last {
            self.sched.advance_to(at);
        }
    }

    /// The frame on the air in direction `dir` of `link` is done: its transmitter (or medium) is free for
    /// what waits.
    pub(super) fn tx_done(&mut self, now: Time, link: usize, dir: usize) {
        match self.links[link].medium {
            Some(m) => self.media[m].finish(),
            None => self.links[link].finish(dir),
        }
        self.kick(now, link);
    }

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
