//! Writes raw-IPv4 pcap files (nanosecond timestamps, LINKTYPE_RAW) that Wireshark, tshark and tcptrace read.

use crate::Time;
use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter as Inner};
use pcap_file::{DataLink, Endianness, TsResolution};
use std::io::Write;
use std::time::Duration;

/// A pcap writer for whole IPv4 packets stamped with lasthop [`Time`].
pub struct PcapWriter<W: Write> {
    inner: Inner<W>,
}

impl<W: Write> PcapWriter<W> {
    pub fn new(sink: W) -> std::io::Result<Self> {
        let header = PcapHeader {
            version_major: 2,
            version_minor: 4,
            ts_correction: 0,
            ts_accuracy: 0,
            snaplen: 65535,
            datalink: DataLink::RAW,
            ts_resolution: TsResolution::NanoSecond,
            endianness: Endianness::Little,
        };
        let inner = Inner::with_header(sink, header).map_err(to_io)?;
        Ok(PcapWriter { inner })
    }

    pub fn write(&mut self, at: Time, packet: &[u8]) -> std::io::Result<()> {
        let p = PcapPacket::new(Duration::from_nanos(at.as_nanos()), packet.len() as u32, packet);
        self.inner.write_packet(&p).map(|_| ()).map_err(to_io)
    }

    pub fn into_inner(self) -> W {
        self.inner.into_writer()
    }
}

fn to_io(e: pcap_file::PcapError) -> std::io::Error {
    match e {
        pcap_file::PcapError::IoError(e) => e,
        other => std::io::Error::other(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_and_record_layout() {
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        w.write(Time::from_nanos(1_000_000_123), &[0x45, 0, 0, 4]).unwrap();
        let bytes = w.into_inner();
        // nanosecond magic, little endian
        assert_eq!(&bytes[0..4], &[0x4d, 0x3c, 0xb2, 0xa1]);
        // linktype RAW (101) at offset 20
        assert_eq!(u32::from_le_bytes(bytes[20..24].try_into().unwrap()), 101);
        // record: ts_sec 1, ts_nsec 123, caplen 4, len 4, data
        assert_eq!(u32::from_le_bytes(bytes[24..28].try_into().unwrap()), 1);
        assert_eq!(u32::from_le_bytes(bytes[28..32].try_into().unwrap()), 123);
        assert_eq!(&bytes[40..44], &[0x45, 0, 0, 4]);
    }
}
