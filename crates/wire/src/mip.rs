//! Mobile IP (IPv4) control messages as Eom 2002 §2 uses them, each a `Repr` with `parse` (checked, never
//! panics on untrusted bytes) and `emit`:
//!
//! - **Registration request and reply** (RFC 5944 §3.3, §3.4; Eom 2002 cites its draft, ref. [13]) over
//!   UDP port 434, with the **Previous Foreign Agent Notification** extension of the route-optimisation draft
//!   (draft-ietf-mobileip-optim-10 §8, Eom 2002 ref. [15]) by which the new FA learns the old one.
//! - **Binding warning, update and acknowledge** of the same draft (§4.1–§4.3), also over UDP 434.
//! - **Agent advertisement**: an ICMP router advertisement (RFC 1256) carrying the Mobility Agent
//!   Advertisement extension (RFC 5944 §2.1.1).
//! - The **local messages** of Eom 2002 Fig. 2 (beacon, handoff request, notification) and the *forward*
//!   message (§2.2), which the paper makes link-layer control messages between MH, BS and FA: lasthop carries
//!   every frame as IPv4, so they are IPv4 protocol [`PROTO_MIP_LOCAL`] (254, RFC 3692's second experimental
//!   value; [`crate::proto`] lists every number lasthop uses) with the mobile's link-layer address inside, as
//!   §2.2 asks of *forward*.
//!
//! What is not modelled: authentication extensions (RFC 5944 requires a Mobile-Home authentication
//! extension; lasthop's entities trust each other and emit none, and accept messages without one) and
//! co-located care-of addresses (Eom 2002 §2.1: "We assume the FA care-of address").
//!
//! Type numbers: the draft gave binding warning / request / update / acknowledge the message types
//! 16 / 17 / 18 / 19, which IANA has since assigned to other messages (RFC 4881, RFC 4857). lasthop keeps
//! the draft's numbers because its entities follow that draft and speak only to each other.

use crate::checksum;
use crate::ipv4::{Ipv4Packet, Ipv4Repr, HEADER_LEN as IPV4_HEADER_LEN, PROTO_UDP};
use crate::udp::{UdpPacket, UdpRepr};
use crate::{Result, WireError};
use bytes::{BufMut, Bytes, BytesMut};
use std::net::Ipv4Addr;

/// UDP port of Mobile IP control messages (RFC 5944 §3).
pub const PORT: u16 = 434;
pub use crate::proto::{ICMP as PROTO_ICMP, MIP_LOCAL as PROTO_MIP_LOCAL};

/// Message types on UDP 434.
pub mod msg_type {
    pub const REGISTRATION_REQUEST: u8 = 1;
    pub const REGISTRATION_REPLY: u8 = 3;
    pub const BINDING_WARNING: u8 = 16;
    pub const BINDING_REQUEST: u8 = 17;
    pub const BINDING_UPDATE: u8 = 18;
    pub const BINDING_ACK: u8 = 19;
}

/// Extension types of registration messages.
pub mod ext_type {
    /// One byte of padding, without a length (RFC 5944 §1.9).
    pub const PAD: u8 = 0;
    /// Previous Foreign Agent Notification (draft-ietf-mobileip-optim-10 §8.1). Skippable (≥ 128).
    pub const PREVIOUS_FA_NOTIFICATION: u8 = 131;
    /// Mobility Agent Advertisement extension of an ICMP router advertisement (RFC 5944 §2.1.1).
    pub const MOBILITY_AGENT_ADV: u8 = 16;
}

/// Registration request flags (RFC 5944 §3.3): S B D M G r T x.
pub mod reg_flag {
    /// Simultaneous bindings.
    pub const S: u8 = 0x80;
    /// Broadcast datagrams.
    pub const B: u8 = 0x40;
    /// Decapsulation by the mobile (co-located care-of address).
    pub const D: u8 = 0x20;
    /// Minimal encapsulation.
    pub const M: u8 = 0x10;
    /// GRE encapsulation.
    pub const G: u8 = 0x08;
    /// Reverse tunnelling.
    pub const T: u8 = 0x02;
}

/// Registration reply codes lasthop uses (RFC 5944 §3.4).
pub mod reply_code {
    pub const ACCEPTED: u8 = 0;
    /// Denied by the home agent: identification mismatch (a replayed or stale request).
    pub const HA_IDENTIFICATION_MISMATCH: u8 = 133;
    /// Denied by the home agent: unknown home agent address.
    pub const HA_UNKNOWN_HOME_AGENT: u8 = 136;
}

fn addr(b: &[u8], at: usize) -> Ipv4Addr {
    Ipv4Addr::new(b[at], b[at + 1], b[at + 2], b[at + 3])
}
fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(b[at..at + 8].try_into().unwrap())
}

/// The route-optimisation draft's Previous Foreign Agent Notification extension: the mobile asks its new FA
/// to send a binding update to the previous one (Eom 2002 §2.1: "the new FA ... sends the binding update
/// message to the old FA").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PreviousFa {
    /// How long (s) the previous FA should keep the binding.
    pub cache_lifetime: u16,
    pub previous_fa: Ipv4Addr,
    pub new_care_of: Ipv4Addr,
}

const PREVIOUS_FA_LEN: u8 = 10;

/// A registration request (RFC 5944 §3.3), sent by the mobile to the FA and relayed by the FA to the HA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegistrationRequest {
    pub flags: u8,
    /// Seconds; 0 deregisters.
    pub lifetime: u16,
    pub home_addr: Ipv4Addr,
    pub home_agent: Ipv4Addr,
    pub care_of: Ipv4Addr,
    /// Matches a request to its reply and protects against replay (RFC 5944 §5.7).
    pub identification: u64,
    pub previous_fa: Option<PreviousFa>,
}

/// A registration reply (RFC 5944 §3.4), from the HA through the FA to the mobile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegistrationReply {
    pub code: u8,
    pub lifetime: u16,
    pub home_addr: Ipv4Addr,
    pub home_agent: Ipv4Addr,
    pub identification: u64,
}

/// Binding warning (draft §4.1): the old FA tells the HA that `target` still sends to a stale care-of
/// address (Eom 2002 §2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BindingWarning {
    pub home_addr: Ipv4Addr,
    /// The correspondent whose binding is out of date.
    pub target: Ipv4Addr,
}

/// Binding update (draft §4.3): the HA to a correspondent, or the new FA to the old FA (smooth handoff).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BindingUpdate {
    /// Acknowledge requested.
    pub ack_requested: bool,
    /// Seconds the binding may be cached; 0 deletes it.
    pub lifetime: u16,
    pub home_addr: Ipv4Addr,
    pub care_of: Ipv4Addr,
    pub identification: u64,
}

/// Binding acknowledge (draft §4.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BindingAck {
    pub status: u8,
    pub home_addr: Ipv4Addr,
    pub identification: u64,
}

/// Binding request (draft §4.2): a correspondent asks for a mobile's current binding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BindingRequest {
    pub home_addr: Ipv4Addr,
    pub identification: u64,
}

/// Any message on UDP port 434.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MipMessage {
    RegistrationRequest(RegistrationRequest),
    RegistrationReply(RegistrationReply),
    BindingWarning(BindingWarning),
    BindingRequest(BindingRequest),
    BindingUpdate(BindingUpdate),
    BindingAck(BindingAck),
}

mod len {
    pub const REG_REQUEST: usize = 24;
    pub const REG_REPLY: usize = 20;
    pub const WARNING: usize = 12;
    pub const REQUEST: usize = 16;
    pub const UPDATE: usize = 20;
    pub const ACK: usize = 16;
}

/// Walks the extensions after a message's fixed part. Unknown non-skippable extensions (type < 128) make
/// the whole message unreadable (RFC 5944 §1.9: "silently discarded"); unknown skippable ones are skipped.
fn parse_extensions(mut ext: &[u8], mut known: impl FnMut(u8, &[u8]) -> Result<bool>) -> Result<()> {
    while let Some(&t) = ext.first() {
        if t == ext_type::PAD {
            ext = &ext[1..];
            continue;
        }
        if ext.len() < 2 {
            return Err(WireError::Truncated);
        }
        let l = usize::from(ext[1]);
        if ext.len() < 2 + l {
            return Err(WireError::Truncated);
        }
        if !known(t, &ext[2..2 + l])? && t < 128 {
            return Err(WireError::Unsupported);
        }
        ext = &ext[2 + l..];
    }
    Ok(())
}

impl MipMessage {
    /// Reads the payload of a UDP datagram to port 434.
    pub fn parse(b: &[u8]) -> Result<MipMessage> {
        let need = |n: usize| if b.len() < n { Err(WireError::Truncated) } else { Ok(()) };
        need(1)?;
        Ok(match b[0] {
            msg_type::REGISTRATION_REQUEST => {
                need(len::REG_REQUEST)?;
                let mut previous_fa = None;
                parse_extensions(&b[len::REG_REQUEST..], |t, v| {
                    if t != ext_type::PREVIOUS_FA_NOTIFICATION {
                        return Ok(false);
                    }
                    if v.len() != usize::from(PREVIOUS_FA_LEN) {
                        return Err(WireError::Malformed);
                    }
                    previous_fa = Some(PreviousFa {
                        cache_lifetime: u16_at(v, 0),
                        previous_fa: addr(v, 2),
                        new_care_of: addr(v, 6),
                    });
                    Ok(true)
                })?;
                MipMessage::RegistrationRequest(RegistrationRequest {
                    flags: b[1],
                    lifetime: u16_at(b, 2),
                    home_addr: addr(b, 4),
                    home_agent: addr(b, 8),
                    care_of: addr(b, 12),
                    identification: u64_at(b, 16),
                    previous_fa,
                })
            }
            msg_type::REGISTRATION_REPLY => {
                need(len::REG_REPLY)?;
                parse_extensions(&b[len::REG_REPLY..], |_, _| Ok(false))?;
                MipMessage::RegistrationReply(RegistrationReply {
                    code: b[1],
                    lifetime: u16_at(b, 2),
                    home_addr: addr(b, 4),
                    home_agent: addr(b, 8),
                    identification: u64_at(b, 12),
                })
            }
            msg_type::BINDING_WARNING => {
                need(len::WARNING)?;
                parse_extensions(&b[len::WARNING..], |_, _| Ok(false))?;
                MipMessage::BindingWarning(BindingWarning { home_addr: addr(b, 4), target: addr(b, 8) })
            }
            msg_type::BINDING_REQUEST => {
                need(len::REQUEST)?;
                parse_extensions(&b[len::REQUEST..], |_, _| Ok(false))?;
                MipMessage::BindingRequest(BindingRequest { home_addr: addr(b, 4), identification: u64_at(b, 8) })
            }
            msg_type::BINDING_UPDATE => {
                need(len::UPDATE)?;
                parse_extensions(&b[len::UPDATE..], |_, _| Ok(false))?;
                MipMessage::BindingUpdate(BindingUpdate {
                    ack_requested: b[1] & 0x80 != 0,
                    lifetime: u16_at(b, 2),
                    home_addr: addr(b, 4),
                    care_of: addr(b, 8),
                    identification: u64_at(b, 12),
                })
            }
            msg_type::BINDING_ACK => {
                need(len::ACK)?;
                parse_extensions(&b[len::ACK..], |_, _| Ok(false))?;
                MipMessage::BindingAck(BindingAck { status: b[3], home_addr: addr(b, 4), identification: u64_at(b, 8) })
            }
            _ => return Err(WireError::Unsupported),
        })
    }

    /// The UDP payload.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(40);
        match *self {
            MipMessage::RegistrationRequest(r) => {
                v.extend_from_slice(&[msg_type::REGISTRATION_REQUEST, r.flags]);
                v.extend_from_slice(&r.lifetime.to_be_bytes());
                for a in [r.home_addr, r.home_agent, r.care_of] {
                    v.extend_from_slice(&a.octets());
                }
                v.extend_from_slice(&r.identification.to_be_bytes());
                if let Some(p) = r.previous_fa {
                    v.extend_from_slice(&[ext_type::PREVIOUS_FA_NOTIFICATION, PREVIOUS_FA_LEN]);
                    v.extend_from_slice(&p.cache_lifetime.to_be_bytes());
                    v.extend_from_slice(&p.previous_fa.octets());
                    v.extend_from_slice(&p.new_care_of.octets());
                }
            }
            MipMessage::RegistrationReply(r) => {
                v.extend_from_slice(&[msg_type::REGISTRATION_REPLY, r.code]);
                v.extend_from_slice(&r.lifetime.to_be_bytes());
                v.extend_from_slice(&r.home_addr.octets());
                v.extend_from_slice(&r.home_agent.octets());
                v.extend_from_slice(&r.identification.to_be_bytes());
            }
            MipMessage::BindingWarning(w) => {
                v.extend_from_slice(&[msg_type::BINDING_WARNING, 0, 0, 0]);
                v.extend_from_slice(&w.home_addr.octets());
                v.extend_from_slice(&w.target.octets());
            }
            MipMessage::BindingRequest(r) => {
                v.extend_from_slice(&[msg_type::BINDING_REQUEST, 0, 0, 0]);
                v.extend_from_slice(&r.home_addr.octets());
                v.extend_from_slice(&r.identification.to_be_bytes());
            }
            MipMessage::BindingUpdate(u) => {
                v.extend_from_slice(&[msg_type::BINDING_UPDATE, if u.ack_requested { 0x80 } else { 0 }]);
                v.extend_from_slice(&u.lifetime.to_be_bytes());
                v.extend_from_slice(&u.home_addr.octets());
                v.extend_from_slice(&u.care_of.octets());
                v.extend_from_slice(&u.identification.to_be_bytes());
            }
            MipMessage::BindingAck(a) => {
                v.extend_from_slice(&[msg_type::BINDING_ACK, 0, 0, a.status]);
                v.extend_from_slice(&a.home_addr.octets());
                v.extend_from_slice(&a.identification.to_be_bytes());
            }
        }
        v
    }

    /// A whole IPv4/UDP packet from port 434 to port 434.
    pub fn emit_ipv4(&self, src: Ipv4Addr, dst: Ipv4Addr, ident: u16) -> Bytes {
        UdpRepr { src_port: PORT, dst_port: PORT }.emit_ipv4(src, dst, ident, 64, &self.to_bytes())
    }

    /// Reads a whole IPv4 packet: `Ok(None)` when it is not UDP to port 434 (ordinary traffic), an error when
    /// it claims to be a Mobile IP message but cannot be read (bad UDP checksum included).
    pub fn parse_ipv4(packet: &[u8]) -> Result<Option<(Ipv4Addr, Ipv4Addr, MipMessage)>> {
        let ip = Ipv4Packet::new_checked(packet)?;
        if ip.protocol() != PROTO_UDP || ip.is_fragment() {
            return Ok(None);
        }
        let udp = UdpPacket::new_checked(ip.payload())?;
        if udp.dst_port() != PORT {
            return Ok(None);
        }
        if !udp.verify_checksum(ip.src_addr(), ip.dst_addr()) {
            return Err(WireError::Malformed);
        }
        Ok(Some((ip.src_addr(), ip.dst_addr(), MipMessage::parse(udp.payload())?)))
    }
}

/// An agent advertisement (RFC 5944 §2.1): an ICMP router advertisement (type 9) whose one router address is
/// the FA's, followed by the Mobility Agent Advertisement extension with the care-of addresses it offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentAdvertisement {
    /// Router address (the FA's interface address on the subnetwork).
    pub router: Ipv4Addr,
    /// Router advertisement lifetime, seconds.
    pub lifetime: u16,
    /// Advertisement sequence number (RFC 5944 §2.1.1: counts advertisements since the agent started).
    pub sequence: u16,
    /// Longest registration lifetime the agent accepts, seconds.
    pub registration_lifetime: u16,
    /// R B H F M G r T flags (RFC 5944 §2.1.1).
    pub flags: u8,
    pub care_of: Vec<Ipv4Addr>,
}

/// Mobility Agent Advertisement flags.
pub mod adv_flag {
    /// Registration required.
    pub const R: u8 = 0x80;
    /// Busy.
    pub const B: u8 = 0x40;
    /// Home agent.
    pub const H: u8 = 0x20;
    /// Foreign agent.
    pub const F: u8 = 0x10;
}

const ICMP_ROUTER_ADV: u8 = 9;
/// At most this many care-of addresses (the extension's length byte allows 62; agents offer one).
pub const MAX_CARE_OF: usize = 8;

impl AgentAdvertisement {
    /// The ICMP message (header, one router entry, the extension).
    pub fn to_icmp(&self) -> Vec<u8> {
        let n = self.care_of.len().min(MAX_CARE_OF);
        let mut v = vec![ICMP_ROUTER_ADV, 0, 0, 0, 1, 2];
        v.extend_from_slice(&self.lifetime.to_be_bytes());
        v.extend_from_slice(&self.router.octets());
        v.extend_from_slice(&0u32.to_be_bytes()); // preference
        v.extend_from_slice(&[ext_type::MOBILITY_AGENT_ADV, (6 + 4 * n) as u8]);
        v.extend_from_slice(&self.sequence.to_be_bytes());
        v.extend_from_slice(&self.registration_lifetime.to_be_bytes());
        v.extend_from_slice(&[self.flags, 0]);
        for a in &self.care_of[..n] {
            v.extend_from_slice(&a.octets());
        }
        let c = checksum::checksum(&v);
        v[2..4].copy_from_slice(&c.to_be_bytes());
        v
    }

    /// A whole IPv4 packet from the FA to `dst` (the mobile, or the limited broadcast address).
    pub fn emit_ipv4(&self, src: Ipv4Addr, dst: Ipv4Addr, ident: u16) -> Bytes {
        let icmp = self.to_icmp();
        let ip = Ipv4Repr { src, dst, protocol: PROTO_ICMP, ident, ttl: 1, payload_len: icmp.len() };
        let mut buf = BytesMut::with_capacity(ip.buffer_len());
        buf.put_bytes(0, IPV4_HEADER_LEN);
        ip.emit(&mut buf[..IPV4_HEADER_LEN]);
        buf.put_slice(&icmp);
        buf.freeze()
    }

    /// Reads an ICMP message; an error unless it is a router advertisement with a valid checksum and a
    /// mobility agent extension.
    pub fn parse_icmp(b: &[u8]) -> Result<AgentAdvertisement> {
        if b.len() < 8 {
            return Err(WireError::Truncated);
        }
        if b[0] != ICMP_ROUTER_ADV {
            return Err(WireError::Unsupported);
        }
        if checksum::fold(checksum::sum(b)) != 0xffff {
            return Err(WireError::Malformed);
        }
        let (num, entry_words) = (usize::from(b[4]), usize::from(b[5]));
        if num == 0 || entry_words < 2 {
            return Err(WireError::Malformed);
        }
        let ext_at = 8 + num * entry_words * 4;
        if b.len() < ext_at + 2 {
            return Err(WireError::Truncated);
        }
        let (router, lifetime) = (addr(b, 8), u16_at(b, 6));
        let e = &b[ext_at..];
        if e[0] != ext_type::MOBILITY_AGENT_ADV {
            return Err(WireError::Unsupported);
        }
        let l = usize::from(e[1]);
        if l < 6 || (l - 6) % 4 != 0 {
            return Err(WireError::Malformed);
        }
        if e.len() < 2 + l {
            return Err(WireError::Truncated);
        }
        let care_of = (0..(l - 6) / 4).map(|i| addr(e, 8 + 4 * i)).collect();
        Ok(AgentAdvertisement {
            router,
            lifetime,
            sequence: u16_at(e, 2),
            registration_lifetime: u16_at(e, 4),
            flags: e[6],
            care_of,
        })
    }

    /// Reads a whole IPv4 packet: `Ok(None)` when it is not ICMP.
    pub fn parse_ipv4(packet: &[u8]) -> Result<Option<AgentAdvertisement>> {
        let ip = Ipv4Packet::new_checked(packet)?;
        if ip.protocol() != PROTO_ICMP || ip.is_fragment() {
            return Ok(None);
        }
        Self::parse_icmp(ip.payload()).map(Some)
    }
}

/// A link-layer (MAC) address. A mobile's is derived from its home address in the simulator
/// ([`LinkAddr::for_host`]), a locally administered unicast address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LinkAddr(pub [u8; 6]);

impl LinkAddr {
    pub const BROADCAST: LinkAddr = LinkAddr([0xff; 6]);

    /// `02:00:a.b.c.d`: locally administered (bit 1 of the first byte), unicast.
    pub fn for_host(ip: Ipv4Addr) -> LinkAddr {
        let o = ip.octets();
        LinkAddr([0x02, 0x00, o[0], o[1], o[2], o[3]])
    }
}

/// The local messages of Eom 2002 Fig. 2 and §2.2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum LocalKind {
    /// BS → cell, every beacon period (50 ms, §3.1): "plays the same role as the agent advertisement".
    Beacon = 1,
    /// MH → new BS after hearing its beacon.
    HandoffRequest = 2,
    /// New BS → its FA: send an agent advertisement for this mobile.
    Notification = 3,
    /// Old FA → old BS: send the buffered packets of this mobile to me (§2.2).
    Forward = 4,
}

/// A local message. Layout of the IPv4 payload (protocol [`PROTO_MIP_LOCAL`]):
///
/// ```text
/// 0       kind      u8
/// 1       reserved  u8 (0)
/// 2..8    mobile    link-layer address (broadcast in a beacon)
/// 8..12   home      the mobile's home address (0.0.0.0 in a beacon)
/// 12..16  sender    the BS (beacon, notification) or FA (forward) that sends it; the new BS (request)
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalMessage {
    pub kind: LocalKind,
    pub mobile: LinkAddr,
    pub home_addr: Ipv4Addr,
    pub sender: Ipv4Addr,
}

const LOCAL_LEN: usize = 16;

impl LocalMessage {
    pub fn emit_ipv4(&self, src: Ipv4Addr, dst: Ipv4Addr, ident: u16) -> Bytes {
        let ip = Ipv4Repr { src, dst, protocol: PROTO_MIP_LOCAL, ident, ttl: 1, payload_len: LOCAL_LEN };
        let mut buf = BytesMut::with_capacity(ip.buffer_len());
        buf.put_bytes(0, IPV4_HEADER_LEN);
        ip.emit(&mut buf[..IPV4_HEADER_LEN]);
        buf.put_u8(self.kind as u8);
        buf.put_u8(0);
        buf.put_slice(&self.mobile.0);
        buf.put_slice(&self.home_addr.octets());
        buf.put_slice(&self.sender.octets());
        buf.freeze()
    }

    pub fn parse(b: &[u8]) -> Result<LocalMessage> {
        if b.len() < LOCAL_LEN {
            return Err(WireError::Truncated);
        }
        let kind = match b[0] {
            1 => LocalKind::Beacon,
            2 => LocalKind::HandoffRequest,
            3 => LocalKind::Notification,
            4 => LocalKind::Forward,
            _ => return Err(WireError::Malformed),
        };
        Ok(LocalMessage {
            kind,
            mobile: LinkAddr(b[2..8].try_into().unwrap()),
            home_addr: addr(b, 8),
            sender: addr(b, 12),
        })
    }

    /// Reads a whole IPv4 packet: `Ok(None)` when it is not protocol [`PROTO_MIP_LOCAL`].
    pub fn parse_ipv4(packet: &[u8]) -> Result<Option<LocalMessage>> {
        let ip = Ipv4Packet::new_checked(packet)?;
        if ip.protocol() != PROTO_MIP_LOCAL || ip.is_fragment() {
            return Ok(None);
        }
        Self::parse(ip.payload()).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MH: Ipv4Addr = Ipv4Addr::new(10, 1, 0, 9);
    const HA: Ipv4Addr = Ipv4Addr::new(10, 1, 0, 1);
    const FA1: Ipv4Addr = Ipv4Addr::new(10, 2, 0, 1);
    const FA2: Ipv4Addr = Ipv4Addr::new(10, 3, 0, 1);
    const CH: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 1);

    fn request() -> RegistrationRequest {
        RegistrationRequest {
            flags: 0,
            lifetime: 600,
            home_addr: MH,
            home_agent: HA,
            care_of: FA2,
            identification: 0x0102_0304_0506_0708,
            previous_fa: Some(PreviousFa { cache_lifetime: 10, previous_fa: FA1, new_care_of: FA2 }),
        }
    }

    // RFC 5944 §3.3 layout, then the 12-byte Previous FA Notification extension.
    static REQUEST_BYTES: [u8; 36] = [
        1, 0, 0x02, 0x58, 10, 1, 0, 9, 10, 1, 0, 1, 10, 3, 0, 1, 1, 2, 3, 4, 5, 6, 7, 8, 131, 10, 0, 10, 10, 2, 0, 1,
        10, 3, 0, 1,
    ];

    #[test]
    fn registration_request_bytes_and_round_trip() {
        let m = MipMessage::RegistrationRequest(request());
        assert_eq!(m.to_bytes(), REQUEST_BYTES);
        assert_eq!(MipMessage::parse(&REQUEST_BYTES).unwrap(), m);
        let pkt = m.emit_ipv4(MH, FA2, 1);
        let (src, dst, back) = MipMessage::parse_ipv4(&pkt).unwrap().unwrap();
        assert_eq!((src, dst, back), (MH, FA2, m));
    }

    #[test]
    fn registration_reply_round_trip() {
        let r = RegistrationReply {
            code: reply_code::ACCEPTED,
            lifetime: 600,
            home_addr: MH,
            home_agent: HA,
            identification: 42,
        };
        let bytes = MipMessage::RegistrationReply(r).to_bytes();
        assert_eq!(bytes.len(), 20);
        assert_eq!(&bytes[..4], &[3, 0, 0x02, 0x58]);
        assert_eq!(MipMessage::parse(&bytes).unwrap(), MipMessage::RegistrationReply(r));
    }

    #[test]
    fn binding_messages_round_trip() {
        let msgs = [
            MipMessage::BindingWarning(BindingWarning { home_addr: MH, target: CH }),
            MipMessage::BindingRequest(BindingRequest { home_addr: MH, identification: 9 }),
            MipMessage::BindingUpdate(BindingUpdate {
                ack_requested: true,
                lifetime: 10,
                home_addr: MH,
                care_of: FA2,
                identification: 7,
            }),
            MipMessage::BindingAck(BindingAck { status: 0, home_addr: MH, identification: 7 }),
        ];
        for m in msgs {
            let b = m.to_bytes();
            assert_eq!(MipMessage::parse(&b).unwrap(), m);
            for cut in 0..b.len() {
                assert_eq!(MipMessage::parse(&b[..cut]).unwrap_err(), WireError::Truncated, "{m:?} cut {cut}");
            }
        }
        let u = MipMessage::BindingUpdate(BindingUpdate {
            ack_requested: true,
            lifetime: 10,
            home_addr: MH,
            care_of: FA2,
            identification: 7,
        })
        .to_bytes();
        assert_eq!(&u[..4], &[18, 0x80, 0, 10]);
    }

    #[test]
    fn extensions_skippable_and_not() {
        let mut b = MipMessage::RegistrationRequest(RegistrationRequest { previous_fa: None, ..request() }).to_bytes();
        // A pad byte and an unknown skippable extension are passed over.
        b.extend_from_slice(&[0, 200, 2, 0xaa, 0xbb]);
        assert!(matches!(MipMessage::parse(&b), Ok(MipMessage::RegistrationRequest(r)) if r.previous_fa.is_none()));
        // An unknown non-skippable one makes the message unreadable (RFC 5944 §1.9).
        b.extend_from_slice(&[40, 0]);
        assert_eq!(MipMessage::parse(&b).unwrap_err(), WireError::Unsupported);
        // An extension running past the end is truncated.
        let mut c = REQUEST_BYTES.to_vec();
        c.pop();
        assert_eq!(MipMessage::parse(&c).unwrap_err(), WireError::Truncated);
        // A Previous FA extension of the wrong length is malformed.
        let mut d = REQUEST_BYTES.to_vec();
        d[25] = 6;
        d.truncate(32);
        assert_eq!(MipMessage::parse(&d).unwrap_err(), WireError::Malformed);
        assert_eq!(MipMessage::parse(&[2, 0, 0, 0]).unwrap_err(), WireError::Unsupported);
        assert_eq!(MipMessage::parse(&[]).unwrap_err(), WireError::Truncated);
    }

    #[test]
    fn bad_udp_checksum_is_an_error_other_udp_is_not_ours() {
        let pkt = MipMessage::BindingWarning(BindingWarning { home_addr: MH, target: CH }).emit_ipv4(FA1, HA, 3);
        let mut bad = pkt.to_vec();
        let last = bad.len() - 1;
        bad[last] ^= 0x40;
        assert_eq!(MipMessage::parse_ipv4(&bad).unwrap_err(), WireError::Malformed);
        let other = UdpRepr { src_port: 434, dst_port: 53 }.emit_ipv4(FA1, HA, 3, 64, b"x");
        assert_eq!(MipMessage::parse_ipv4(&other).unwrap(), None);
        assert!(MipMessage::parse_ipv4(&pkt[..30]).is_err());
    }

    #[test]
    fn agent_advertisement_bytes_and_round_trip() {
        let adv = AgentAdvertisement {
            router: FA2,
            lifetime: 1800,
            sequence: 5,
            registration_lifetime: 600,
            flags: adv_flag::R | adv_flag::F,
            care_of: vec![FA2],
        };
        let icmp = adv.to_icmp();
        assert_eq!(icmp.len(), 16 + 2 + 10);
        assert_eq!(&icmp[..2], &[9, 0]);
        assert_eq!(&icmp[4..6], &[1, 2], "one address, two words per entry");
        assert_eq!(&icmp[16..18], &[16, 10], "mobility agent extension, 6 + 4 bytes");
        assert_eq!(checksum::fold(checksum::sum(&icmp)), 0xffff);
        let pkt = adv.emit_ipv4(FA2, MH, 1);
        assert_eq!(AgentAdvertisement::parse_ipv4(&pkt).unwrap(), Some(adv.clone()));
        let mut bad = icmp.clone();
        bad[20] ^= 1;
        assert_eq!(AgentAdvertisement::parse_icmp(&bad).unwrap_err(), WireError::Malformed);
        for cut in 0..icmp.len() {
            assert!(AgentAdvertisement::parse_icmp(&icmp[..cut]).is_err(), "cut {cut}");
        }
        let udp = MipMessage::BindingWarning(BindingWarning { home_addr: MH, target: CH }).emit_ipv4(FA1, HA, 3);
        assert_eq!(AgentAdvertisement::parse_ipv4(&udp).unwrap(), None);
    }

    #[test]
    fn local_messages_round_trip() {
        assert_eq!(LinkAddr::for_host(MH).0, [2, 0, 10, 1, 0, 9]);
        for kind in [LocalKind::Beacon, LocalKind::HandoffRequest, LocalKind::Notification, LocalKind::Forward] {
            let m = LocalMessage { kind, mobile: LinkAddr::for_host(MH), home_addr: MH, sender: FA1 };
            let pkt = m.emit_ipv4(FA1, Ipv4Addr::BROADCAST, 1);
            assert_eq!(pkt.len(), 36);
            assert_eq!(LocalMessage::parse_ipv4(&pkt).unwrap(), Some(m));
            let ip = Ipv4Packet::new_checked(&pkt[..]).unwrap();
            assert_eq!(ip.payload()[0], kind as u8);
            assert_eq!(LocalMessage::parse(&ip.payload()[..15]).unwrap_err(), WireError::Truncated);
        }
        let mut bad = [0u8; 16];
        bad[0] = 9;
        assert_eq!(LocalMessage::parse(&bad).unwrap_err(), WireError::Malformed);
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..80)) {
            let _ = MipMessage::parse(&data);
            let _ = AgentAdvertisement::parse_icmp(&data);
            let _ = LocalMessage::parse(&data);
            let _ = MipMessage::parse_ipv4(&data);
        }
    }
}
