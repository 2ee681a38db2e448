//! Thin, checked wrappers over the Linux calls the base station and the testbed need: AF_PACKET
//! sockets, interface MAC and index, ethtool offload switches, network-namespace entry, `ppoll`, and
//! async-signal-safe flags for SIGINT/SIGTERM/SIGUSR1. Every `unsafe` block is here, each with its reason.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const SOL_PACKET: libc::c_int = 263;
const PACKET_ADD_MEMBERSHIP: libc::c_int = 1;
const PACKET_MR_PROMISC: u16 = 1;
/// Linux ≥ 4.20: do not hand this socket the frames it (or anyone on the host) sends on the interface.
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
const ETH_P_ALL: u16 = 0x0003;
/// Ask for a `tpacket_auxdata` control message with every frame (we want its checksum status).
const PACKET_AUXDATA: libc::c_int = 8;
/// The frame's transport checksum is not finished (CHECKSUM_PARTIAL: the sender offloaded it).
const TP_STATUS_CSUMNOTREADY: u32 = 1 << 3;

/// What the kernel tells us about a received frame beside its bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RxMeta {
    /// The TCP/UDP checksum is only the pseudo-header sum: a sender on this machine left it to an
    /// offload that never ran. Forwarded as is, the frame would be dropped by the receiving host.
    pub checksum_unfinished: bool,
}

/// `struct tpacket_auxdata`.
#[repr(C)]
#[derive(Default)]
struct TpacketAuxdata {
    status: u32,
    len: u32,
    snaplen: u32,
    mac: u16,
    net: u16,
    vlan_tci: u16,
    vlan_tpid: u16,
}

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// CPU time the calling thread has used (user and system, softirq work done on its behalf included).
pub fn thread_cpu_time() -> std::time::Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec; CLOCK_THREAD_CPUTIME_ID exists on every Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    std::time::Duration::new(ts.tv_sec.max(0) as u64, ts.tv_nsec.clamp(0, 999_999_999) as u32)
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

pub fn if_index(name: &str) -> io::Result<i32> {
    let c = CString::new(name).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in interface name"))?;
    // SAFETY: `c` is a valid NUL-terminated string for the duration of the call.
    let idx = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if idx == 0 {
        return Err(io::Error::new(io::ErrorKind::NotFound, format!("no interface named {name:?}")));
    }
    Ok(idx as i32)
}

/// `struct ifreq` as the ioctls below use it: the name, then a 24-byte union.
#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    data: [u8; 24],
}

impl IfReq {
    fn new(ifname: &str) -> io::Result<IfReq> {
        let b = ifname.as_bytes();
        if b.is_empty() || b.len() >= libc::IFNAMSIZ {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("bad interface name {ifname:?}")));
        }
        let mut r = IfReq { name: [0; libc::IFNAMSIZ], data: [0; 24] };
        r.name[..b.len()].copy_from_slice(b);
        Ok(r)
    }
}

fn dgram_socket() -> io::Result<OwnedFd> {
    // SAFETY: plain socket(2); the fd is owned on success.
    let fd = cvt(unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: fd was just returned by socket and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The hardware address of an interface (in the calling thread's network namespace).
pub fn if_mac(ifname: &str) -> io::Result<[u8; 6]> {
    let s = dgram_socket()?;
    let mut req = IfReq::new(ifname)?;
    // SAFETY: SIOCGIFHWADDR reads the name and writes a sockaddr into the 24-byte union, which fits.
    cvt(unsafe { libc::ioctl(s.as_raw_fd(), libc::SIOCGIFHWADDR as _, &mut req as *mut IfReq) })?;
    let mut mac = [0u8; 6];
    // sockaddr: 2 bytes of family, then sa_data holding the MAC.
    mac.copy_from_slice(&req.data[2..8]);
    Ok(mac)
}

/// Legacy ethtool commands that switch one offload (`struct ethtool_value { cmd, data }`).
#[derive(Debug, Clone, Copy)]
pub enum Offload {
    TxChecksum = 0x17,
    ScatterGather = 0x19,
    Tso = 0x1f,
    Gso = 0x24,
    Gro = 0x2c,
}

/// Turns an offload on or off, as `ethtool -K` does (the machines have no `ethtool` binary).
pub fn set_offload(ifname: &str, what: Offload, on: bool) -> io::Result<()> {
    #[repr(C)]
    struct EthtoolValue {
        cmd: u32,
        data: u32,
    }
    let s = dgram_socket()?;
    let mut v = EthtoolValue { cmd: what as u32, data: on as u32 };
    let mut req = IfReq::new(ifname)?;
    req.data[..8].copy_from_slice(&(&mut v as *mut EthtoolValue as usize).to_ne_bytes());
    // SAFETY: SIOCETHTOOL reads `ifr_data` (the pointer stored above) as a `struct ethtool_value`, which
    // `v` is and which outlives the call.
    cvt(unsafe { libc::ioctl(s.as_raw_fd(), libc::SIOCETHTOOL as _, &mut req as *mut IfReq) })?;
    Ok(())
}

/// Moves the calling *thread* into the network namespace at `path` (e.g. `/var/run/netns/NAME`).
/// Sockets it creates afterwards, and the `/proc/sys/net` it opens, belong to that namespace.
pub fn enter_netns(path: &str) -> io::Result<()> {
    let f = std::fs::File::open(path)?;
    // SAFETY: setns on a valid namespace fd; CLONE_NEWNET affects only this thread.
    cvt(unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) })?;
    Ok(())
}

/// An AF_PACKET socket bound to one interface: whole Ethernet frames in and out.
pub struct PacketSocket {
    fd: OwnedFd,
    ifindex: i32,
}

impl PacketSocket {
    pub fn open(ifname: &str) -> io::Result<PacketSocket> {
        let ifindex = if_index(ifname)?;
        let proto = ETH_P_ALL.to_be() as libc::c_int;
        // SAFETY: plain socket(2); the fd is owned on success.
        let fd = cvt(unsafe {
            libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, proto)
        })?;
        // SAFETY: fd was just returned by socket.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let s = PacketSocket { fd, ifindex };
        // Without this, every frame we send would come back to us as input.
        s.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, &1i32)?;
        s.setsockopt(SOL_PACKET, PACKET_AUXDATA, &1i32)?;
        // Large buffers: the loop is single-threaded and a burst must not be lost while it works.
        let buf: libc::c_int = 8 << 20;
        let _ = s.setsockopt(libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, &buf);
        let _ = s.setsockopt(libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, &buf);
        // SAFETY: sockaddr_ll is plain data; all-zero is a valid starting value.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = ETH_P_ALL.to_be();
        sll.sll_ifindex = ifindex;
        // SAFETY: bind with a correctly sized sockaddr_ll.
        cvt(unsafe {
            libc::bind(
                s.fd.as_raw_fd(),
                &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        })?;
        // Promiscuous: a bridge must see frames addressed to the host on the other side, not to us.
        #[repr(C)]
        struct PacketMreq {
            ifindex: i32,
            kind: u16,
            alen: u16,
            address: [u8; 8],
        }
        let m = PacketMreq { ifindex, kind: PACKET_MR_PROMISC, alen: 0, address: [0; 8] };
        s.setsockopt(SOL_PACKET, PACKET_ADD_MEMBERSHIP, &m)?;
        Ok(s)
    }

    fn setsockopt<T>(&self, level: libc::c_int, name: libc::c_int, v: &T) -> io::Result<()> {
        // SAFETY: `v` points to a live T of the size passed.
        cvt(unsafe {
            libc::setsockopt(
                self.fd.as_raw_fd(),
                level,
                name,
                v as *const T as *const libc::c_void,
                std::mem::size_of::<T>() as libc::socklen_t,
            )
        })
        .map(drop)
    }

    /// One frame into `buf`; `WouldBlock` when none waits. A frame longer than `buf` is cut (the
    /// returned length is the cut length, so the classifier sees a truncated packet and counts it).
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        // SAFETY: recv writes at most buf.len() bytes into buf.
        let n = unsafe { libc::recv(self.fd.as_raw_fd(), buf.as_mut_ptr() as *mut libc::c_void, buf.len(), 0) };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }

    /// Like [`recv`](Self::recv), also reading the frame's checksum status from its auxiliary data.
    pub fn recv_meta(&self, buf: &mut [u8]) -> io::Result<(usize, RxMeta)> {
        let mut iov = libc::iovec { iov_base: buf.as_mut_ptr() as *mut libc::c_void, iov_len: buf.len() };
        // u64 elements keep the control buffer aligned for cmsghdr.
        let mut control = [0u64; 16];
        // SAFETY: msghdr is plain data; all-zero is valid before the fields are set.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = std::mem::size_of_val(&control) as _;
        // SAFETY: msg points to one valid iovec over `buf` and to `control`, both live through the call.
        let n = unsafe { libc::recvmsg(self.fd.as_raw_fd(), &mut msg, 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok((n as usize, rx_meta(&msg)))
    }

    /// Up to `batch.capacity()` waiting frames with one `recvmmsg` call (never blocks): returns how many
    /// arrived (0 when none waits). Frame `i` is [`RxBatch::frame`]`(i)`, cut to the buffer as in
    /// [`recv`](Self::recv), with its checksum status.
    pub fn recv_batch(&self, batch: &mut RxBatch) -> io::Result<usize> {
        let n = batch.bufs.len();
        let mut iovs: Vec<libc::iovec> = batch
            .bufs
            .iter_mut()
            .map(|b| libc::iovec { iov_base: b.as_mut_ptr() as *mut libc::c_void, iov_len: b.len() })
            .collect();
        // SAFETY: mmsghdr is plain data; all-zero is valid before the fields are set.
        let mut msgs: Vec<libc::mmsghdr> = (0..n).map(|_| unsafe { std::mem::zeroed() }).collect();
        for (i, m) in msgs.iter_mut().enumerate() {
            m.msg_hdr.msg_iov = &mut iovs[i];
            m.msg_hdr.msg_iovlen = 1;
            m.msg_hdr.msg_control = batch.control[i].as_mut_ptr() as *mut libc::c_void;
            m.msg_hdr.msg_controllen = std::mem::size_of_val(&batch.control[i]) as _;
        }
        // SAFETY: `msgs` holds n headers, each pointing at one live iovec over its own buffer and at its own
        // control buffer; all outlive the call. MSG_DONTWAIT: return at once when nothing waits.
        let r = unsafe {
            libc::recvmmsg(
                self.fd.as_raw_fd(),
                msgs.as_mut_ptr(),
                n as libc::c_uint,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::WouldBlock { Ok(0) } else { Err(e) };
        }
        let got = r as usize;
        for (i, m) in msgs.iter().take(got).enumerate() {
            batch.lens[i] = (m.msg_len as usize).min(batch.bufs[i].len());
            batch.meta[i] = rx_meta(&m.msg_hdr);
        }
        Ok(got)
    }

    /// Sends `frames` in order with as few `sendmmsg` calls as the kernel allows (never blocks). Returns
    /// how many were sent; a frame the kernel refuses (a full send buffer) is skipped and counted in the
    /// second value, like a full interface queue would drop it.
    pub fn send_batch(&self, frames: &[&[u8]]) -> (usize, usize) {
        let mut iovs: Vec<libc::iovec> = frames
            .iter()
            .map(|f| libc::iovec { iov_base: f.as_ptr() as *mut libc::c_void, iov_len: f.len() })
            .collect();
        // SAFETY: mmsghdr is plain data; all-zero is valid before the fields are set.
        let mut msgs: Vec<libc::mmsghdr> = (0..frames.len()).map(|_| unsafe { std::mem::zeroed() }).collect();
        for (m, iov) in msgs.iter_mut().zip(iovs.iter_mut()) {
            m.msg_hdr.msg_iov = iov;
            m.msg_hdr.msg_iovlen = 1;
        }
        let (mut sent, mut failed, mut at) = (0, 0, 0);
        while at < msgs.len() {
            let rest = &mut msgs[at..];
            // SAFETY: every header points at one live iovec over a frame the caller lends for the call; the
            // kernel only reads the frames.
            let r = unsafe {
                libc::sendmmsg(self.fd.as_raw_fd(), rest.as_mut_ptr(), rest.len() as libc::c_uint, libc::MSG_DONTWAIT)
            };
            if r <= 0 {
                if r < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                // The first of the rest was refused: drop it and go on with the others.
                failed += 1;
                at += 1;
            } else {
                sent += r as usize;
                at += r as usize;
            }
        }
        (sent, failed)
    }

    pub fn send(&self, frame: &[u8]) -> io::Result<()> {
        // SAFETY: send reads frame.len() bytes from frame.
        let n = unsafe {
            libc::send(self.fd.as_raw_fd(), frame.as_ptr() as *const libc::c_void, frame.len(), libc::MSG_DONTWAIT)
        };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }

    pub fn ifindex(&self) -> i32 {
        self.ifindex
    }
}

/// Receive buffers for [`PacketSocket::recv_batch`].
pub struct RxBatch {
    bufs: Vec<Vec<u8>>,
    /// u64 elements keep each control buffer aligned for cmsghdr.
    control: Vec<[u64; 16]>,
    lens: Vec<usize>,
    meta: Vec<RxMeta>,
}

impl RxBatch {
    /// Room for `frames` frames of up to `frame_len` bytes each.
    pub fn new(frames: usize, frame_len: usize) -> RxBatch {
        let frames = frames.max(1);
        RxBatch {
            bufs: vec![vec![0u8; frame_len]; frames],
            control: vec![[0u64; 16]; frames],
            lens: vec![0; frames],
            meta: vec![RxMeta::default(); frames],
        }
    }

    pub fn capacity(&self) -> usize {
        self.bufs.len()
    }

    /// Frame `i` of the last [`PacketSocket::recv_batch`] and its checksum status.
    pub fn frame(&self, i: usize) -> (&[u8], RxMeta) {
        (&self.bufs[i][..self.lens[i]], self.meta[i])
    }
}

impl AsRawFd for PacketSocket {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// Waits until one of `fds` is readable or `timeout` passes (nanosecond resolution, unlike `poll`).
/// Returns which fds are readable; an interrupted wait returns none readable.
pub fn wait_readable<const N: usize>(fds: &[RawFd; N], timeout: Duration) -> io::Result<[bool; N]> {
    let mut p = fds.map(|fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 });
    let ts = libc::timespec { tv_sec: timeout.as_secs() as libc::time_t, tv_nsec: timeout.subsec_nanos() as _ };
    // SAFETY: `p` is a valid array of N pollfds; `ts` lives through the call; no signal mask change.
    let r = unsafe { libc::ppoll(p.as_mut_ptr(), N as libc::nfds_t, &ts, std::ptr::null()) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok([false; N]);
        }
        return Err(e);
    }
    Ok(p.map(|x| x.revents & (libc::POLLIN | libc::POLLERR | libc::POLLHUP) != 0))
}

/// Set by SIGINT/SIGTERM.
pub static STOP_REQUESTED: AtomicBool = AtomicBool::new(false);
/// Set by SIGUSR1: print the counters and go on.
pub static REPORT_REQUESTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(sig: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    if sig == libc::SIGUSR1 {
        REPORT_REQUESTED.store(true, Ordering::SeqCst);
    } else {
        STOP_REQUESTED.store(true, Ordering::SeqCst);
    }
}

/// Installs handlers for SIGINT, SIGTERM (set [`STOP_REQUESTED`]) and SIGUSR1 (set [`REPORT_REQUESTED`]).
/// Without SA_RESTART, so a blocking call returns EINTR and loops notice the flag promptly.
pub fn install_signal_handlers() -> io::Result<()> {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGUSR1] {
        // SAFETY: a zeroed sigaction with a handler that only stores to an atomic is valid.
        let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
        sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
        // SAFETY: sa_mask is a valid sigset_t inside `sa`.
        unsafe { libc::sigemptyset(&mut sa.sa_mask) };
        // SAFETY: installing a handler with a valid sigaction.
        cvt(unsafe { libc::sigaction(sig, &sa, std::ptr::null_mut()) })?;
    }
    Ok(())
}

/// What the kernel said of a received frame in its `PACKET_AUXDATA` control message (the checksum status).
fn rx_meta(msg: &libc::msghdr) -> RxMeta {
    let mut meta = RxMeta::default();
    // SAFETY: `msg` is a header the kernel just filled by recvmsg/recvmmsg; the CMSG_* macros walk its control
    // buffer within msg_controllen, and the aux data is copied out unaligned.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(msg);
        while !c.is_null() {
            if (*c).cmsg_level == SOL_PACKET && (*c).cmsg_type == PACKET_AUXDATA {
                let mut aux = TpacketAuxdata::default();
                std::ptr::copy_nonoverlapping(
                    libc::CMSG_DATA(c),
                    &mut aux as *mut TpacketAuxdata as *mut u8,
                    std::mem::size_of::<TpacketAuxdata>(),
                );
                meta.checksum_unfinished = aux.status & TP_STATUS_CSUMNOTREADY != 0;
            }
            c = libc::CMSG_NXTHDR(msg, c);
        }
    }
    meta
}
