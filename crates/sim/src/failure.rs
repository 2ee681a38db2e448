//! A node that fails during a run (`[failure]`): at `at_s` it loses everything it held (its agents' state,
//! the frames waiting in its transmit queues, the split relays of [`crate::split`]) and drops every packet
//! that reaches it; after `restart_after_s` (if given) it comes back with fresh agents. This is the base
//! station failure of the end-to-end-semantics argument (Balakrishnan 1995 §2, "Loss of Semantics"; §8: "the snoop
//! protocol maintains the end-to-end semantics"): an agent whose state is soft loses performance, never
//! acknowledged data, while a split connection loses the bytes it had already acknowledged. Each flow's
//! `bytes_acked_not_delivered` counts what its sender saw acknowledged and its receiver never got.

use crate::agents::build_agent;
use crate::context::{Cx, Request, View};
use crate::feature::{Feature, HookSet};
use crate::metrics::RunResult;
use crate::registry::Family;
use crate::scenario::Scenario;
use bytes::Bytes;
use lasthop_wire::Time;
use serde::Deserialize;

/// The scenario's `[failure]` table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FailureConfig {
    /// The node that fails.
    pub node: String,
    /// When, seconds from the start of the run.
    pub at_s: f64,
    /// How long it stays down; absent: for the rest of the run.
    #[serde(default)]
    pub restart_after_s: Option<f64>,
}

/// The family's registration: `[failure]`, checked and built.
pub(crate) const FAMILY: Family = Family {
    name: "failure",
    present: |s| s.failure.is_some(),
    validate: |s| match &s.failure {
        Some(f) => f.validate(&|n| s.nodes.contains_key(n)).map_err(|(f, m)| (format!("failure.{f}"), m)),
        None => Ok(()),
    },
    together: &[],
    columns: None,
    row: None,
    build: |s, world| {
        if let Some(f) = Failure::build(s, world.view()) {
            world.register(f);
        }
        Ok(())
    },
};

impl FailureConfig {
    pub fn validate(&self, node_exists: &dyn Fn(&str) -> bool) -> Result<(), (String, String)> {
        if !node_exists(&self.node) {
            return Err(("node".into(), format!("no node named `{}`", self.node)));
        }
        if !(self.at_s.is_finite() && (0.0..=1e9).contains(&self.at_s)) {
            return Err(("at_s".into(), "expected a time ≥ 0 s".into()));
        }
        if self.restart_after_s.is_some_and(|r| !(r.is_finite() && r > 0.0 && r <= 1e9)) {
            return Err(("restart_after_s".into(), "expected a positive number of seconds".into()));
        }
        Ok(())
    }

    pub(crate) fn at(&self) -> Time {
        Time((self.at_s * 1e9).round() as u64)
    }
}

pub(crate) enum FailureEvent {
    Fail,
    Restart,
}

pub(crate) struct Failure {
    node: usize,
    at: Time,
    restart_after: Option<std::time::Duration>,
    /// The agents the node restarts with.
    fresh: Option<Box<dyn lasthop_agents::Agent>>,
    down: bool,
    /// Packets lost at the failed node: queued when it failed, or arriving while it was down.
    lost: u64,
}

impl Failure {
    pub(crate) fn build(s: &Scenario, view: View<'_>) -> Option<Failure> {
        let cfg = s.failure.as_ref()?;
        Some(Failure {
            node: view.node_index(&cfg.node),
            at: cfg.at(),
            restart_after: cfg.restart_after_s.map(|r| std::time::Duration::from_nanos((r * 1e9).round() as u64)),
            fresh: build_agent(&s.nodes[&cfg.node].agent, s),
            down: false,
            lost: 0,
        })
    }
}

impl Feature for Failure {
    type Event = FailureEvent;

    fn hooks(&self) -> HookSet {
        HookSet { arrive: true, ..HookSet::default() }
    }

    fn set_up(&mut self, cx: &mut Cx<'_, FailureEvent>) {
        cx.schedule(self.at, FailureEvent::Fail);
    }

    fn on_event(&mut self, cx: &mut Cx<'_, FailureEvent>, event: FailureEvent) {
        match event {
            FailureEvent::Fail => {
                self.down = true;
                cx.request(Request::SetAgent { node: self.node, agent: None });
                for (l, link) in cx.links().iter().enumerate() {
                    if link.ends.contains(&self.node) {
                        let dir = link.dir_from(self.node);
                        cx.request(Request::Purge { link: l, dir, matches: Box::new(|_| true) });
                    }
                }
                if let Some(d) = self.restart_after {
                    cx.schedule(cx.now() + d, FailureEvent::Restart);
                }
            }
            FailureEvent::Restart => {
                self.down = false;
                cx.request(Request::SetAgent { node: self.node, agent: self.fresh.take() });
            }
        }
    }

    fn on_arrive(&mut self, _cx: &mut Cx<'_, FailureEvent>, node: usize, _link: usize, _packet: &Bytes) -> bool {
        if node == self.node && self.down {
            self.lost += 1;
            return true;
        }
        false
    }

    fn on_purged(&mut self, _link: usize, _dir: usize, frames: u64) {
        self.lost += frames;
    }

    fn finish(self, view: View<'_>, result: &mut RunResult) {
        let c = result.agents.entry(view.nodes()[self.node].name.clone()).or_default();
        c.insert("failure_packets_lost".into(), self.lost);
    }
}
