//! The first look every agent takes at a packet: is it TCP it can read? Malformed packets are dropped,
//! non-TCP packets and IPv4 fragments pass untouched (a fragment's TCP header cannot be trusted to be whole),
//! and only then does an agent copy out the fields of a checked TCP segment.

use crate::{Action, DropReason, Side};
use bytes::Bytes;
use lasthop_wire::ipv4::PROTO_TCP;
use lasthop_wire::{Ipv4Packet, TcpPacket};

/// What a packet is, as far as an agent cares; `S` is the agent's own copy of a TCP segment's fields.
#[derive(Debug)]
pub(crate) enum Class<S> {
    Tcp(S),
    /// A well-formed IPv4 packet that is not TCP (UDP, ICMP, IP-in-IP, ...).
    NotTcp,
    /// An IPv4 fragment; checked before the protocol, since a later fragment of a TCP packet has protocol 6
    /// but no TCP header.
    Fragment,
    /// Truncated IPv4 or TCP header, a bad header length, or whatever `read` rejects (a bad option).
    Malformed,
}

/// Checks the IPv4 and fixed TCP headers, then lets `read` take what it needs from the checked views;
/// `read` returns `None` for a segment it finds malformed. Nothing here panics on any input.
pub(crate) fn classify<S>(
    bytes: &[u8],
    read: impl FnOnce(&Ipv4Packet<&[u8]>, &TcpPacket<&[u8]>) -> Option<S>,
) -> Class<S> {
    let Ok(ip) = Ipv4Packet::new_checked(bytes) else { return Class::Malformed };
    if ip.is_fragment() {
        return Class::Fragment;
    }
    if ip.protocol() != PROTO_TCP {
        return Class::NotTcp;
    }
    let Ok(tcp) = TcpPacket::new_checked(ip.payload()) else { return Class::Malformed };
    read(&ip, &tcp).map_or(Class::Malformed, Class::Tcp)
}

/// The counters every connection-tracking agent keeps for the packets it passes over and for its
/// bounded connection table. Embedded in each agent's stats and exported under these field names, in
/// this order, after the agent's own counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PassCounters {
    /// Packets dropped because they could not be parsed.
    pub malformed_dropped: u64,
    /// Non-TCP packets forwarded unchanged.
    pub not_tcp_forwarded: u64,
    /// IPv4 fragments forwarded unchanged.
    pub fragments_forwarded: u64,
    /// TCP packets of connections without state forwarded unchanged (traffic the agent does not track,
    /// or packets whose state was evicted).
    pub unknown_forwarded: u64,
    /// Connections given state (again, if their state was evicted or closed).
    pub connections_created: u64,
    /// Connections whose state was dropped to make room (table full).
    pub connections_evicted: u64,
    /// Connections whose state was dropped on a RST or once the data sender's FIN was acknowledged.
    pub connections_closed: u64,
}

impl PassCounters {
    /// The counters by name, for [`crate::Agent::counters`].
    pub fn named(&self) -> [(&'static str, u64); 7] {
        [
            ("malformed_dropped", self.malformed_dropped),
            ("not_tcp_forwarded", self.not_tcp_forwarded),
            ("fragments_forwarded", self.fragments_forwarded),
            ("unknown_forwarded", self.unknown_forwarded),
            ("connections_created", self.connections_created),
            ("connections_evicted", self.connections_evicted),
            ("connections_closed", self.connections_closed),
        ]
    }
}

impl<S> Class<S> {
    /// The TCP segment, or — for anything else — the one action every agent takes, counted.
    pub(crate) fn tcp_or_pass(
        self,
        side: Side,
        packet: &Bytes,
        out: &mut Vec<Action>,
        count: &mut PassCounters,
    ) -> Option<S> {
        match self {
            Class::Tcp(seg) => return Some(seg),
            Class::Malformed => {
                count.malformed_dropped += 1;
                out.push(Action::Drop(DropReason::Malformed));
            }
            Class::NotTcp => {
                count.not_tcp_forwarded += 1;
                out.push(Action::Forward(side, packet.clone()));
            }
            Class::Fragment => {
                count.fragments_forwarded += 1;
                out.push(Action::Forward(side, packet.clone()));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lasthop_wire::TcpRepr;
    use std::net::Ipv4Addr;

    fn counts(out: &mut Vec<Action>, c: Class<()>, p: &Bytes) -> [u64; 3] {
        let mut count = PassCounters::default();
        assert!(c.tcp_or_pass(Side::ToMobile, p, out, &mut count).is_none());
        [count.malformed_dropped, count.not_tcp_forwarded, count.fragments_forwarded]
    }

    #[test]
    fn every_kind_of_packet_gets_its_rule() {
        let a = Ipv4Addr::new(10, 0, 0, 1);
        let tcp = TcpRepr { src_port: 1, dst_port: 2, ..TcpRepr::default() }.emit_ipv4(a, a, 1, 64, b"x");
        assert!(matches!(classify(&tcp, |_, t| Some(t.dst_port())), Class::Tcp(2)));
        assert!(matches!(classify(&tcp, |_, _| None::<()>), Class::Malformed));
        let mut udp = tcp.to_vec();
        udp[9] = 17;
        assert!(matches!(classify(&udp, |_, _| Some(())), Class::NotTcp));
        let mut frag = tcp.to_vec();
        frag[6] = 0x20; // MF
        assert!(matches!(classify(&frag, |_, _| Some(())), Class::Fragment));
        assert!(matches!(classify(&tcp[..30], |_, _| Some(())), Class::Malformed));

        let p = Bytes::from_static(b"p");
        let mut out = Vec::new();
        assert_eq!(counts(&mut out, Class::Malformed, &p), [1, 0, 0]);
        assert_eq!(counts(&mut out, Class::NotTcp, &p), [0, 1, 0]);
        assert_eq!(counts(&mut out, Class::Fragment, &p), [0, 0, 1]);
        assert_eq!(
            out,
            vec![
                Action::Drop(DropReason::Malformed),
                Action::Forward(Side::ToMobile, p.clone()),
                Action::Forward(Side::ToMobile, p.clone())
            ]
        );
    }

    #[test]
    fn every_connection_agent_reports_the_pass_counters_last_under_the_same_names() {
        use crate::eln::{Eln, ElnConfig};
        use crate::nack::{Nack, NackConfig};
        use crate::snoop::{Snoop, SnoopConfig};
        use crate::Agent;
        let pass: Vec<&str> = PassCounters::default().named().iter().map(|&(n, _)| n).collect();
        assert_eq!(
            pass,
            [
                "malformed_dropped",
                "not_tcp_forwarded",
                "fragments_forwarded",
                "unknown_forwarded",
                "connections_created",
                "connections_evicted",
                "connections_closed"
            ]
        );
        let agents: [Box<dyn Agent>; 3] = [
            Box::new(Snoop::new(SnoopConfig::default())),
            Box::new(Eln::new(ElnConfig::default())),
            Box::new(Nack::new(NackConfig::default())),
        ];
        for agent in agents {
            let names: Vec<&str> = agent.counters().iter().map(|&(n, _)| n).collect();
            assert_eq!(names[names.len() - pass.len()..], pass[..], "{names:?}");
            let unique: std::collections::BTreeSet<&str> = names.iter().copied().collect();
            assert_eq!(unique.len(), names.len(), "{names:?}");
        }
    }
}
