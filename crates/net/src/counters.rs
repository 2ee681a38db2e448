//! What the base station counts, and how it reports it (a table for people, JSON for scripts).

use crate::hop::HopCounters;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// Frames and bytes through one interface.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortCounters {
    pub frames_in: u64,
    pub bytes_in: u64,
    pub frames_out: u64,
    pub bytes_out: u64,
    /// Frames the kernel refused to send (full socket buffer, interface down).
    pub send_errors: u64,
}

/// A snapshot of everything the base station counts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Counters {
    pub wired: PortCounters,
    pub wireless: PortCounters,
    /// IPv4 TCP packets handed to the agents.
    pub tcp_packets: u64,
    /// Well-formed IPv4 that is not TCP, or a fragment: forwarded without the agents (they read TCP only).
    pub ipv4_other: u64,
    /// Non-IPv4 frames (ARP, IPv6, ...): bridged unchanged.
    pub non_ipv4: u64,
    /// Frames shorter than an Ethernet header: dropped.
    pub runt_frames: u64,
    /// IPv4 frames whose header does not parse (bad version or header length, truncated): dropped.
    pub malformed_ipv4: u64,
    /// IPv4 claiming TCP whose TCP header does not parse: dropped before reaching the agents.
    pub malformed_tcp: u64,
    /// IPv4 packets sent toward a side before any host on that side was seen (no MAC to send to).
    pub no_destination_mac: u64,
    /// TCP checksums a local sender left unfinished (offload), completed by the base station.
    pub checksums_completed: u64,
    /// ARP probes the base station sent to learn a host's MAC (after a restart, say).
    pub arp_probes: u64,
    /// Drops the agents asked for, by reason.
    pub agent_drops: BTreeMap<String, u64>,
    /// Packets the agents made themselves (`Inject`), and priority forwards (local retransmissions).
    pub agent_injected: u64,
    /// Times an agent panicked and was replaced by a fresh one (its connections lost their soft state).
    pub agent_panics: u64,
    pub agent_priority: u64,
    /// The agents' own counters (Snoop: local retransmissions, suppressed DUPACKs, connections, cache bytes).
    pub agent: BTreeMap<String, u64>,
    pub hop_down: HopCounters,
    pub hop_up: HopCounters,
    /// Seconds the base station ran.
    pub uptime_s: f64,
    /// CPU seconds the forwarding loop used (its thread), the measure of its cost that other load on the
    /// machine does not distort much. Zero from the sans-IO core alone.
    pub cpu_s: f64,
}

impl Counters {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// An agent counter by name, 0 if the agent does not report it.
    pub fn agent_counter(&self, name: &str) -> u64 {
        self.agent.get(name).copied().unwrap_or(0)
    }
}

impl fmt::Display for Counters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let frames = self.wired.frames_in + self.wireless.frames_in;
        writeln!(
            f,
            "base station counters after {:.1} s ({:.2} CPU s, {:.0} ns per frame received)",
            self.uptime_s,
            self.cpu_s,
            self.cpu_s * 1e9 / frames.max(1) as f64
        )?;
        for (name, p) in [("wired", &self.wired), ("wireless", &self.wireless)] {
            writeln!(
                f,
                "  {name:<9} in {:>10} frames {:>14} B   out {:>10} frames {:>14} B   send errors {}",
                p.frames_in, p.bytes_in, p.frames_out, p.bytes_out, p.send_errors
            )?;
        }
        writeln!(
            f,
            "  classified: tcp {}  other ipv4 {}  non-ipv4 {}  | dropped: runt {}  bad ipv4 {}  bad tcp {}  no mac {} (arp probes {})",
            self.tcp_packets,
            self.ipv4_other,
            self.non_ipv4,
            self.runt_frames,
            self.malformed_ipv4,
            self.malformed_tcp,
            self.no_destination_mac,
            self.arp_probes
        )?;
        write!(
            f,
            "  agents: injected {}  priority {}  panics {}",
            self.agent_injected, self.agent_priority, self.agent_panics
        )?;
        for (k, v) in &self.agent_drops {
            write!(f, "  drop[{k}] {v}")?;
        }
        writeln!(f)?;
        if !self.agent.is_empty() {
            write!(f, " ")?;
            for (k, v) in &self.agent {
                write!(f, " {k} {v}")?;
            }
            writeln!(f)?;
        }
        for (name, h) in [("hop down", &self.hop_down), ("hop up", &self.hop_up)] {
            writeln!(
                f,
                "  {name:<9} sent {:>10}  lost {:>8}  queue drops {:>8}  delivered {:>10}",
                h.frames_sent, h.frames_lost, h.queue_drops, h.delivered
            )?;
        }
        Ok(())
    }
}
