//! Packet formats of lasthop: views over byte buffers and builders for IPv4, TCP (with the options the
//! papers rely on and the ELN bit), UDP, Mobile IP's control messages, IP-in-IP tunnels, the Internet checksum, and a pcap writer.
//!
//! The layout follows smoltcp's `wire`: each protocol has a `Packet<T: AsRef<[u8]>>` view whose field
//! offsets live in a private `field` module. `Packet::new_checked` validates lengths once; after that no
//! accessor panics, so untrusted bytes from the network can be handed to it directly. Builders
//! (`TcpRepr::emit_ipv4`) produce complete IPv4 packets with correct checksums as `bytes::Bytes`.
//!
//! Time lives here too ([`Time`]) because every layer above needs the same integer clock.

pub mod buffer;
pub mod checksum;
pub mod handoff_option;
pub mod headers;
pub mod hugepages;
pub mod ipip;
pub mod ipv4;
pub mod mip;
pub mod pcap;
pub mod prefetch;
pub mod proto;
pub mod seq;
pub mod tcp;
pub mod time;
pub mod udp;

pub use headers::{Headers, TcpHeader};
pub use ipv4::Ipv4Packet;
pub use seq::SeqNum;
pub use tcp::{SackBlocks, TcpFlags, TcpPacket, TcpRepr};
pub use time::Time;

/// Why a byte buffer could not be read as the packet it claims to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireError {
    /// Shorter than the header, or than the length its header claims.
    Truncated,
    /// A header field holds a value that makes the packet unreadable (version, header length, option length).
    Malformed,
    /// Well-formed, but not the protocol asked for (e.g. UDP where TCP was expected).
    Unsupported,
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            WireError::Truncated => "truncated packet",
            WireError::Malformed => "malformed header",
            WireError::Unsupported => "unsupported protocol",
        })
    }
}

impl std::error::Error for WireError {}

pub type Result<T> = core::result::Result<T, WireError>;
pub mod queue_option;
