//! I-TCP's split connection on real kernel TCP (Balakrishnan 1995 §2, "The Split Connection Approach"; Sriramulu (undated),
//! "Indirect-TCP"): a transparent proxy in the base station's namespace terminates the fixed host's
//! connection and opens the base station's own to the mobile, splicing the two.
//!
//! # How the connections are intercepted
//!
//! As transparent proxies such as PEPsal do, with policy routing and `IP_TRANSPARENT` sockets, and no
//! netfilter (the project's machines have neither `nft` nor `iptables` installed, and routing needs no
//! netfilter modules, so nothing can be missing): in the
//! base station's namespace `ip rule iif <wired> ipproto tcp lookup 100` and the same for the wireless
//! side send every TCP packet arriving from either host to table 100, whose only route is
//! `local 0.0.0.0/0 dev lo`, so the kernel delivers it locally whatever its destination address
//! ([`crate::testbed::Testbed::prepare_split`] sets this up). The listener is `IP_TRANSPARENT`, so the
//! connection it accepts answers the fixed host as the mobile's address; the base station's own
//! connection to the mobile is bound, `IP_TRANSPARENT`, to the fixed host's address and port, so the
//! mobile sees the fixed host. Neither host is changed or reconfigured: the base station answers ARP for
//! each side on the other (proxy ARP). The proxy listens on the ports of [`SplitConfig::ports`] (the
//! testbed's transfer port by default), one listener each: without TPROXY the local route delivers any
//! port, but only a listening port is answered (other TCP gets a reset from the base station).
//!
//! IPv4 only: the testbed's hosts have IPv4 addresses only ([`crate::testbed::FH_IP`],
//! [`crate::testbed::MH_IP`]; no IPv6 address, route or rule is set up in any namespace), so the listeners
//! are `AF_INET` and an IPv6 connection would not reach them.
//!
//! # The copy loop
//!
//! A plain `read`/`write` loop per direction through a bounded userspace buffer ([`Pipe`],
//! [`COPY_BUFFER_BYTES`]), all connections on one thread with `poll`. Not `splice(2)`: splice would
//! save one copy per byte, which matters at gigabits, not at the emulated hop's few Mb/s, and it would
//! hide bytes in a pipe (64 KB by default) where the proxy cannot count them; counting them is the point
//! of [`Held`]. The socket buffers are I-TCP's buffering: `SO_RCVBUF` of the fixed-side socket and
//! `SO_SNDBUF` of the mobile-side one are set to [`SplitConfig::buffer_bytes`] (64 KB default, I-TCP's
//! socket buffers as Balakrishnan 1995 §2 describes them; Linux doubles the value for its bookkeeping and reports
//! the doubled one, [`SplitCounters::rcvbuf_bytes`]), which also switches the kernel's autotuning off.
//!
//! The base station acknowledges to the fixed host what it has, not what the mobile has (Balakrishnan 1995 §2,
//! "Loss of Semantics"): [`SplitProxy::kill`] takes the proxy down abruptly (every socket closed with a
//! zero linger, which discards what the kernel still held) and reports the bytes it held at that moment.

use crate::NetError;
use serde::{Deserialize, Serialize};
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The copy buffer of each direction of a spliced connection, bytes: one `read` of the fixed-side socket at
/// most. Small beside the socket buffers, so that they, as in I-TCP, hold what the base station holds.
pub const COPY_BUFFER_BYTES: usize = 16 << 10;

/// The proxy's configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SplitConfig {
    /// The TCP ports the proxy terminates (connections from the fixed host to the mobile on any of them),
    /// 1 to [`MAX_PORTS`] distinct ports, none 0. Default: the testbed's transfer port, 5001.
    pub ports: Vec<u16>,
    /// I-TCP's socket buffer at the base station, bytes: `SO_RCVBUF` of the fixed-side socket and
    /// `SO_SNDBUF` of the mobile-side one. Default 65536 (64 KB, Balakrishnan 1995 §2's I-TCP socket buffers).
    pub buffer_bytes: u32,
    /// `TCP_WINDOW_CLAMP` of the fixed-side socket: the largest window the base station offers the fixed
    /// host (0: the kernel's own).
    pub window_clamp: u32,
    /// Congestion control of the base station's connection to the mobile (empty: the kernel's default).
    pub cc: String,
}

impl Default for SplitConfig {
    fn default() -> Self {
        SplitConfig {
            ports: vec![crate::testbed::TRANSFER_PORT],
            buffer_bytes: 65536,
            window_clamp: 65535,
            cc: String::new(),
        }
    }
}

impl SplitConfig {
    pub fn validate(&self) -> Result<(), NetError> {
        // Linux's floor for SO_RCVBUF/SO_SNDBUF is about 2 KB; far above 64 MB is not a socket buffer.
        if !(2048..=64 << 20).contains(&self.buffer_bytes) {
            return Err(NetError::Config(format!(
                "split buffer_bytes must be in 2048..=67108864, got {}",
                self.buffer_bytes
            )));
        }
        validate_ports(&self.ports)
    }
}

/// The most ports one proxy listens on: each is a listening socket and a `poll` entry, and 1024 is the
/// default limit of open files per process (`RLIMIT_NOFILE`), beside the connections' own sockets.
pub const MAX_PORTS: usize = 1024;

/// Checks a list of ports to terminate: 1 to [`MAX_PORTS`] of them, each in 1..=65535, no port twice; the
/// error names what was wrong.
pub fn validate_ports(ports: &[u16]) -> Result<(), NetError> {
    if ports.is_empty() || ports.len() > MAX_PORTS {
        return Err(NetError::Config(format!("split ports: expected 1 to {MAX_PORTS} ports, got {}", ports.len())));
    }
    let mut seen = std::collections::BTreeSet::new();
    for &p in ports {
        if p == 0 {
            return Err(NetError::Config("split ports: expected ports in 1..=65535, got 0".into()));
        }
        if !seen.insert(p) {
            return Err(NetError::Config(format!("split ports: port {p} is given twice")));
        }
    }
    Ok(())
}

/// One direction of a spliced connection, sans-IO: a bounded buffer between a source socket and a
/// destination socket, and the end-of-stream rule (the destination's write side is shut once the
/// source has ended and everything read from it has been written).
#[derive(Debug)]
pub struct Pipe {
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    source_ended: bool,
    shut: bool,
    /// Bytes read from the source.
    pub bytes_in: u64,
    /// Bytes written to the destination.
    pub bytes_out: u64,
}

impl Pipe {
    pub fn new(capacity: usize) -> Pipe {
        Pipe {
            buf: vec![0; capacity.max(1)].into_boxed_slice(),
            start: 0,
            end: 0,
            source_ended: false,
            shut: false,
            bytes_in: 0,
            bytes_out: 0,
        }
    }

    /// Bytes read and not yet written.
    pub fn held(&self) -> usize {
        self.end - self.start
    }

    /// Whether to read the source now: it has not ended and there is room.
    pub fn wants_read(&self) -> bool {
        !self.source_ended && self.held() < self.buf.len()
    }

    /// Whether there is something to write to the destination.
    pub fn wants_write(&self) -> bool {
        self.held() > 0
    }

    /// Room to read into (empty when [`wants_read`](Self::wants_read) is false). Moves what is held to
    /// the front first, so the room is contiguous.
    pub fn space(&mut self) -> &mut [u8] {
        if self.source_ended {
            return &mut [];
        }
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        &mut self.buf[self.end..]
    }

    /// `n` bytes were read into [`space`](Self::space); 0 is the source's end of stream.
    pub fn filled(&mut self, n: usize) {
        if n == 0 {
            self.source_ended = true;
            return;
        }
        let n = n.min(self.buf.len() - self.end);
        self.end += n;
        self.bytes_in += n as u64;
    }

    /// What to write next.
    pub fn pending(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// `n` bytes of [`pending`](Self::pending) were written.
    pub fn drained(&mut self, n: usize) {
        let n = n.min(self.held());
        self.start += n;
        self.bytes_out += n as u64;
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
    }

    /// Whether the destination's write side should be shut now (once).
    pub fn should_shut(&self) -> bool {
        self.source_ended && self.held() == 0 && !self.shut
    }

    pub fn mark_shut(&mut self) {
        self.shut = true;
    }

    /// The direction is over: the source ended and the destination was told.
    pub fn finished(&self) -> bool {
        self.shut
    }
}

/// A spliced connection, sans-IO: the fixed host's connection and the base station's own to the mobile,
/// `down` carrying fixed → mobile, `up` mobile → fixed. It is over when both directions are, or at once
/// when either socket fails (then both are reset: a failure on one side is not hidden from the other).
#[derive(Debug)]
pub struct Splice {
    pub down: Pipe,
    pub up: Pipe,
    /// The connection to the mobile is established (until then the fixed side is not read).
    pub mobile_connected: bool,
    pub failed: bool,
}

impl Splice {
    pub fn new(copy_buffer: usize) -> Splice {
        Splice { down: Pipe::new(copy_buffer), up: Pipe::new(copy_buffer), mobile_connected: false, failed: false }
    }

    /// Poll events wanted on (fixed socket, mobile socket): (read, write) each.
    pub fn interest(&self) -> [(bool, bool); 2] {
        if self.failed {
            return [(false, false); 2];
        }
        if !self.mobile_connected {
            // POLLOUT on the connecting socket says the handshake ended (well or not).
            return [(false, false), (false, true)];
        }
        [(self.down.wants_read(), self.up.wants_write()), (self.up.wants_read(), self.down.wants_write())]
    }

    pub fn done(&self) -> bool {
        self.failed || (self.down.finished() && self.up.finished())
    }
}

/// What the proxy held at one instant: bytes it had acknowledged to the fixed host (or taken from its
/// socket) and the mobile had not acknowledged.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Held {
    /// In the fixed-side socket's receive queue (acknowledged to the fixed host, not yet read): `SIOCINQ`.
    pub fixed_socket: u64,
    /// In the copy buffers toward the mobile.
    pub copy_buffer: u64,
    /// In the mobile-side socket's send queue, not yet acknowledged by the mobile: `SIOCOUTQ`.
    pub mobile_socket: u64,
}

impl Held {
    pub fn total(&self) -> u64 {
        self.fixed_socket + self.copy_buffer + self.mobile_socket
    }
}

/// What the proxy counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SplitCounters {
    /// Connections accepted from the fixed side.
    pub connections: u64,
    /// Connections to the mobile that could not be opened (refused, unreachable): the fixed side was then
    /// reset, as the mobile's own refusal would have reset it end to end.
    pub connect_failures: u64,
    /// Connections that ended with a socket error (both sides reset).
    pub resets: u64,
    /// Bytes copied fixed → mobile, and mobile → fixed.
    pub bytes_down: u64,
    pub bytes_up: u64,
    /// The buffer sizes the kernel really gave the last connection (Linux doubles what is asked).
    pub rcvbuf_bytes: u64,
    pub sndbuf_bytes: u64,
    /// What the proxy held when it was killed (zero when it was stopped normally).
    pub held_at_kill: Held,
    /// Segments the base station's kernel retransmitted (`Tcp: RetransSegs` of its namespace): its local
    /// recovery over the wireless hop, since the fixed-side connections send no data.
    #[serde(default)]
    pub kernel_retrans_segs: u64,
    /// Its retransmission timeouts (`TcpExt: TCPTimeouts`).
    #[serde(default)]
    pub kernel_timeouts: u64,
}

const RUN: u8 = 0;
const STOP: u8 = 1;
const KILL: u8 = 2;

/// A running proxy on a thread of the base station's namespace.
pub struct SplitProxy {
    mode: Arc<AtomicU8>,
    thread: Option<JoinHandle<Result<SplitCounters, NetError>>>,
}

impl SplitProxy {
    /// Starts the proxy on a new thread, inside the network namespace at `netns` (a `/var/run/netns/...`
    /// path; None: the caller's); returns once its listeners are open.
    pub fn start(cfg: SplitConfig, netns: Option<String>) -> Result<SplitProxy, NetError> {
        cfg.validate()?;
        let mode = Arc::new(AtomicU8::new(RUN));
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let m = mode.clone();
        let thread = std::thread::Builder::new()
            .name("split-proxy".into())
            .spawn(move || {
                let opened = netns
                    .as_deref()
                    .map_or(Ok(()), |p| {
                        crate::sys::enter_netns(p).map_err(|e| NetError::io(format!("entering namespace {p}"), e))
                    })
                    .and_then(|()| cfg.ports.iter().map(|&port| listen(&cfg, port)).collect());
                match opened {
                    Ok(listeners) => {
                        let _ = ready_tx.send(Ok(()));
                        serve(&cfg, listeners, &m)
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        Ok(SplitCounters::default())
                    }
                }
            })
            .map_err(|e| NetError::io("spawning the split proxy", e))?;
        let proxy = SplitProxy { mode, thread: Some(thread) };
        match ready_rx.recv_timeout(Duration::from_secs(10)) {
            Ok(Ok(())) => Ok(proxy),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(NetError::Transfer("the split proxy did not start".into())),
        }
    }

    /// Stops the proxy: connections under way are reset, as by [`kill`](Self::kill), but nothing is
    /// reported held. For the end of a run, when the transfer is over.
    pub fn stop(self) -> Result<SplitCounters, NetError> {
        self.end(STOP)
    }

    /// The base station fails: the proxy measures what it holds ([`SplitCounters::held_at_kill`]), then
    /// closes every socket with a zero linger, which discards the kernel's queues and sends RST.
    pub fn kill(self) -> Result<SplitCounters, NetError> {
        self.end(KILL)
    }

    fn end(mut self, how: u8) -> Result<SplitCounters, NetError> {
        self.mode.store(how, Ordering::Relaxed);
        match self.thread.take() {
            Some(t) => t.join().map_err(|_| NetError::Transfer("split proxy thread panicked".into()))?,
            None => Err(NetError::Transfer("split proxy already stopped".into())),
        }
    }
}

impl Drop for SplitProxy {
    fn drop(&mut self) {
        self.mode.store(STOP, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn io_err(what: &str) -> impl FnOnce(io::Error) -> NetError + '_ {
    move |e| NetError::io(what.to_string(), e)
}

/// A transparent listener on `port` with the configured buffer and window clamp.
fn listen(cfg: &SplitConfig, port: u16) -> Result<TcpListener, NetError> {
    let s = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP)).map_err(io_err("split: socket"))?;
    s.set_ip_transparent_v4(true).map_err(io_err("split: IP_TRANSPARENT on the listener (needs CAP_NET_ADMIN)"))?;
    s.set_reuse_address(true).map_err(io_err("split: SO_REUSEADDR"))?;
    // Set on the listener, the buffer and the clamp hold from the SYN-ACK on (accepted sockets inherit them).
    s.set_recv_buffer_size(cfg.buffer_bytes as usize).map_err(io_err("split: SO_RCVBUF"))?;
    if cfg.window_clamp > 0 {
        crate::testbed::set_window_clamp(s.as_raw_fd(), cfg.window_clamp)?;
    }
    let addr = SocketAddr::from(([0, 0, 0, 0], port));
    s.bind(&addr.into()).map_err(|e| NetError::io(format!("split: binding {addr}"), e))?;
    s.listen(16).map_err(io_err("split: listen"))?;
    s.set_nonblocking(true).map_err(io_err("split: set_nonblocking"))?;
    Ok(s.into())
}

/// The base station's own connection to `mobile`, from `fixed`'s address and port (started, not finished:
/// non-blocking).
fn connect_mobile(cfg: &SplitConfig, fixed: SocketAddrV4, mobile: SocketAddrV4) -> io::Result<Socket> {
    let s = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP))?;
    s.set_ip_transparent_v4(true)?;
    s.set_reuse_address(true)?;
    s.set_send_buffer_size(cfg.buffer_bytes as usize)?;
    if !cfg.cc.is_empty() {
        s.set_tcp_congestion(cfg.cc.as_bytes())?;
    }
    s.bind(&SockAddr::from(fixed))?;
    s.set_nonblocking(true)?;
    match s.connect(&SockAddr::from(mobile)) {
        Ok(()) => Ok(s),
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => Ok(s),
        Err(e) => Err(e),
    }
}

/// Bytes in a socket's queue: `SIOCINQ` (unread received bytes) or `SIOCOUTQ` (unacknowledged sent
/// bytes); 0 if the kernel will not say.
fn queued(fd: RawFd, request: libc::c_ulong) -> u64 {
    let mut n: libc::c_int = 0;
    // SAFETY: both ioctls write one c_int through the pointer, which lives through the call.
    let r = unsafe { libc::ioctl(fd, request as _, &mut n as *mut libc::c_int) };
    if r < 0 {
        0
    } else {
        n.max(0) as u64
    }
}

struct Conn {
    fixed: TcpStream,
    mobile: TcpStream,
    splice: Splice,
}

impl Conn {
    fn held(&self) -> Held {
        Held {
            fixed_socket: queued(self.fixed.as_raw_fd(), libc::FIONREAD as libc::c_ulong),
            copy_buffer: self.splice.down.held() as u64,
            mobile_socket: queued(self.mobile.as_raw_fd(), libc::TIOCOUTQ as libc::c_ulong),
        }
    }

    /// Closes both sockets with a zero linger: RST, queues discarded.
    fn reset(self) {
        for s in [&self.fixed, &self.mobile] {
            let _ = socket2::SockRef::from(s).set_linger(Some(Duration::ZERO));
        }
    }

    /// Moves bytes as the poll results allow; returns false on a socket error.
    fn step(&mut self, fixed_ev: i16, mobile_ev: i16) -> bool {
        // poll reports errors whatever was asked: a reset on either side ends the splice.
        if (fixed_ev | mobile_ev) & libc::POLLERR != 0 {
            let failed = |s: &TcpStream| !matches!(socket2::SockRef::from(s).take_error(), Ok(None));
            if failed(&self.fixed) || failed(&self.mobile) {
                return false;
            }
        }
        if !self.splice.mobile_connected {
            if mobile_ev == 0 {
                return true;
            }
            return match socket2::SockRef::from(&self.mobile).take_error() {
                Ok(None) => {
                    self.splice.mobile_connected = true;
                    true
                }
                _ => false,
            };
        }
        let readable = |ev: i16| ev & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0;
        let writable = |ev: i16| ev & (libc::POLLOUT | libc::POLLERR) != 0;
        let [(rf, wf), (rm, wm)] = self.splice.interest();
        let ok = (!(rf && readable(fixed_ev)) || pump_in(&mut self.fixed, &mut self.splice.down))
            && (!(wm && writable(mobile_ev)) || pump_out(&mut self.mobile, &mut self.splice.down))
            && (!(rm && readable(mobile_ev)) || pump_in(&mut self.mobile, &mut self.splice.up))
            && (!(wf && writable(fixed_ev)) || pump_out(&mut self.fixed, &mut self.splice.up));
        if !ok {
            return false;
        }
        for (pipe, dest) in [(&mut self.splice.down, &self.mobile), (&mut self.splice.up, &self.fixed)] {
            if pipe.should_shut() {
                pipe.mark_shut();
                if dest.shutdown(std::net::Shutdown::Write).is_err() {
                    return false;
                }
            }
        }
        true
    }
}

/// Reads what the socket has, up to the pipe's room; false on an error.
fn pump_in(s: &mut TcpStream, pipe: &mut Pipe) -> bool {
    while pipe.wants_read() {
        match s.read(pipe.space()) {
            Ok(n) => {
                pipe.filled(n);
                if n == 0 {
                    return true;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    true
}

/// Writes what the pipe holds, as far as the socket takes it; false on an error.
fn pump_out(s: &mut TcpStream, pipe: &mut Pipe) -> bool {
    while pipe.wants_write() {
        match s.write(pipe.pending()) {
            Ok(n) => pipe.drained(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    true
}

/// The proxy's loop: accept, connect to the mobile, copy, until stopped or killed.
fn serve(cfg: &SplitConfig, listeners: Vec<TcpListener>, mode: &AtomicU8) -> Result<SplitCounters, NetError> {
    let mut c = SplitCounters::default();
    let mut conns: Vec<Conn> = Vec::new();
    let mut fds: Vec<libc::pollfd> = Vec::new();
    let events = |(r, w): (bool, bool)| (if r { libc::POLLIN } else { 0 }) | (if w { libc::POLLOUT } else { 0 });
    loop {
        match mode.load(Ordering::Relaxed) {
            RUN => {}
            how => {
                if how == KILL {
                    for conn in &conns {
                        let h = conn.held();
                        c.held_at_kill.fixed_socket += h.fixed_socket;
                        c.held_at_kill.copy_buffer += h.copy_buffer;
                        c.held_at_kill.mobile_socket += h.mobile_socket;
                    }
                }
                for conn in conns.drain(..) {
                    account(&mut c, &conn);
                    conn.reset();
                }
                // This thread is in the base station's namespace: its kernel's counters are the proxy's.
                let k = crate::testbed::SenderStats::read_own_namespace();
                (c.kernel_retrans_segs, c.kernel_timeouts) = (k.retrans_segs, k.timeouts);
                return Ok(c);
            }
        }
        fds.clear();
        for l in &listeners {
            fds.push(libc::pollfd { fd: l.as_raw_fd(), events: libc::POLLIN, revents: 0 });
        }
        for conn in &conns {
            let [f, m] = conn.splice.interest();
            fds.push(libc::pollfd { fd: conn.fixed.as_raw_fd(), events: events(f), revents: 0 });
            fds.push(libc::pollfd { fd: conn.mobile.as_raw_fd(), events: events(m), revents: 0 });
        }
        // 100 ms at most, so stop and kill are seen promptly.
        // SAFETY: `fds` is a valid array of `fds.len()` pollfds for the duration of the call.
        let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 100) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(NetError::io("split: poll", e));
        }
        let polled = conns.len();
        for (l, fd) in listeners.iter().zip(&fds) {
            if fd.revents != 0 {
                accept_all(cfg, l, &mut conns, &mut c);
            }
        }
        let first = listeners.len();
        let mut k = 0;
        let mut i = 0;
        while i < conns.len() {
            // Connections accepted just now were not polled: they have no entry yet.
            let (fe, me) =
                if k < polled { (fds[first + 2 * k].revents, fds[first + 2 * k + 1].revents) } else { (0, 0) };
            k += 1;
            let conn = &mut conns[i];
            if !conn.step(fe, me) {
                conn.splice.failed = true;
            }
            if conn.splice.done() {
                let conn = conns.remove(i);
                if conn.splice.failed && !conn.splice.mobile_connected {
                    c.connect_failures += 1;
                } else if conn.splice.failed {
                    c.resets += 1;
                }
                account(&mut c, &conn);
                // A failed connection is reset on both sides; a finished one closes normally (both FINs
                // have been sent and the queues are empty).
                if conn.splice.failed {
                    conn.reset();
                }
                continue;
            }
            i += 1;
        }
    }
}

fn account(c: &mut SplitCounters, conn: &Conn) {
    c.bytes_down += conn.splice.down.bytes_out;
    c.bytes_up += conn.splice.up.bytes_out;
}

fn accept_all(cfg: &SplitConfig, listener: &TcpListener, conns: &mut Vec<Conn>, c: &mut SplitCounters) {
    loop {
        // WouldBlock ends the batch; anything else (out of descriptors, say) is retried on the next poll.
        let Ok((fixed, peer)) = listener.accept() else { return };
        c.connections += 1;
        // The accepted socket's local address is the one the fixed host asked for: the mobile's.
        let (Ok(SocketAddr::V4(mobile)), SocketAddr::V4(fixed_addr)) = (fixed.local_addr(), peer) else {
            c.connect_failures += 1;
            let _ = socket2::SockRef::from(&fixed).set_linger(Some(Duration::ZERO));
            continue;
        };
        match connect_mobile(cfg, fixed_addr, mobile) {
            Ok(m) => {
                let _ = fixed.set_nonblocking(true);
                let sref = socket2::SockRef::from(&fixed);
                c.rcvbuf_bytes = sref.recv_buffer_size().unwrap_or(0) as u64;
                c.sndbuf_bytes = m.send_buffer_size().unwrap_or(0) as u64;
                conns.push(Conn { fixed, mobile: m.into(), splice: Splice::new(COPY_BUFFER_BYTES) });
            }
            Err(_) => {
                c.connect_failures += 1;
                let _ = socket2::SockRef::from(&fixed).set_linger(Some(Duration::ZERO));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pipe_holds_at_most_its_capacity_and_keeps_order() {
        let mut p = Pipe::new(8);
        assert!(p.wants_read() && !p.wants_write());
        let room = p.space();
        assert_eq!(room.len(), 8);
        room[..5].copy_from_slice(b"abcde");
        p.filled(5);
        assert_eq!(p.pending(), b"abcde");
        p.drained(2);
        assert_eq!((p.held(), p.bytes_in, p.bytes_out), (3, 5, 2));
        // the room is contiguous again after what is held moves to the front
        let room = p.space();
        assert_eq!(room.len(), 5);
        room.copy_from_slice(b"fghij");
        p.filled(5);
        assert_eq!(p.pending(), b"cdefghij");
        assert!(!p.wants_read(), "full: the source is not read");
        // a claim beyond the room is cut to it
        p.filled(3);
        assert_eq!(p.held(), 8);
        p.drained(100);
        assert_eq!((p.held(), p.bytes_out), (0, 10));
    }

    #[test]
    fn end_of_stream_is_passed_on_once_everything_is_written() {
        let mut p = Pipe::new(4);
        p.space()[..3].copy_from_slice(b"xyz");
        p.filled(3);
        p.filled(0);
        assert!(!p.wants_read() && p.space().is_empty());
        assert!(!p.should_shut(), "bytes are still held");
        p.drained(3);
        assert!(p.should_shut());
        p.mark_shut();
        assert!(!p.should_shut() && p.finished());
    }

    #[test]
    fn a_splice_waits_for_the_mobile_then_copies_both_ways_and_ends_with_both() {
        let mut s = Splice::new(4);
        assert_eq!(s.interest(), [(false, false), (false, true)], "connecting: only the handshake is watched");
        s.mobile_connected = true;
        assert_eq!(s.interest(), [(true, false), (true, false)]);
        s.down.space()[..4].copy_from_slice(b"data");
        s.down.filled(4);
        assert_eq!(s.interest(), [(false, false), (true, true)], "full toward the mobile: fixed side not read");
        s.down.drained(4);
        for p in [&mut s.down, &mut s.up] {
            p.filled(0);
            assert!(p.should_shut());
            p.mark_shut();
        }
        assert!(s.done());
        let mut f = Splice::new(4);
        f.mobile_connected = true;
        f.failed = true;
        assert!(f.done());
        assert_eq!(f.interest(), [(false, false); 2]);
    }

    #[test]
    fn held_bytes_add_up_and_config_is_checked() {
        let h = Held { fixed_socket: 10, copy_buffer: 20, mobile_socket: 30 };
        assert_eq!(h.total(), 60);
        assert!(SplitConfig::default().validate().is_ok());
        assert!(SplitConfig { buffer_bytes: 100, ..SplitConfig::default() }.validate().is_err());
        assert!(SplitConfig { buffer_bytes: u32::MAX, ..SplitConfig::default() }.validate().is_err());
        for bad in [vec![], vec![0], vec![5001, 80, 5001], vec![1; MAX_PORTS + 1]] {
            let e = SplitConfig { ports: bad.clone(), ..SplitConfig::default() }.validate().unwrap_err();
            assert!(e.to_string().contains("split ports"), "{bad:?}: {e}");
        }
        assert!(SplitConfig { ports: vec![80, 443, 5001], ..SplitConfig::default() }.validate().is_ok());
    }
}
