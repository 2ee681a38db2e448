//! The kernel sender's congestion window over a transfer, sampled from `TCP_INFO` on a thread beside the
//! sender (what `lasthop twin --trace` draws against the simulator's window).

use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// One reading of the sender's socket.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CwndSample {
    /// Seconds since the sender began to connect.
    pub time_s: f64,
    /// `tcpi_snd_cwnd`: the congestion window, segments.
    pub cwnd_segments: u32,
    /// `tcpi_snd_ssthresh`: the slow-start threshold, segments (Linux reports "infinity" as 2^31 − 1).
    pub ssthresh_segments: u32,
    /// `tcpi_snd_mss`: the sender's MSS, bytes.
    pub mss: u32,
}

/// What a transfer's sender records of its window: off unless [`CwndTrace::enable`] gave an interval.
#[derive(Debug, Default)]
pub struct CwndTrace {
    every_us: AtomicU64,
    samples: Mutex<Vec<CwndSample>>,
}

impl CwndTrace {
    /// Sample every `every` (at least 1 ms) from the next transfer's connect on.
    pub fn enable(&self, every: Duration) {
        self.every_us.store((every.as_micros() as u64).max(1000), Ordering::Relaxed);
    }

    /// The samples taken so far, in time order.
    pub fn samples(&self) -> Vec<CwndSample> {
        self.samples.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Starts sampling `stream` (its `start` is time 0) when enabled; the sampler stops when dropped.
    pub(crate) fn start(self: &Arc<Self>, stream: &TcpStream, start: Instant) -> Option<CwndSampler> {
        let every = Duration::from_micros(self.every_us.load(Ordering::Relaxed));
        if every.is_zero() {
            return None;
        }
        // A duplicate of the descriptor: the socket stays open for the sampler however the sender ends.
        let socket = stream.try_clone().ok()?;
        let stop = Arc::new(AtomicBool::new(false));
        let (trace, halt) = (self.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("tcp-info".into())
            .spawn(move || {
                while !halt.load(Ordering::Relaxed) {
                    if let Some(s) = read_cwnd(&socket, start) {
                        trace.samples.lock().unwrap_or_else(|e| e.into_inner()).push(s);
                    }
                    std::thread::sleep(every);
                }
                // One last reading: the window the transfer ended with.
                if let Some(s) = read_cwnd(&socket, start) {
                    trace.samples.lock().unwrap_or_else(|e| e.into_inner()).push(s);
                }
            })
            .ok()?;
        Some(CwndSampler { stop, thread: Some(thread) })
    }
}

/// A running sampler; dropping it stops the thread and waits for it.
pub(crate) struct CwndSampler {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for CwndSampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The socket's `TCP_INFO` and how many bytes of it the kernel filled (older kernels fill fewer), or None
/// when the kernel refuses it.
pub fn tcp_info(s: &TcpStream) -> Option<(libc::tcp_info, usize)> {
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: `info` has `len` bytes of room; the kernel writes at most that and updates len.
    let r = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            &mut info as *mut libc::tcp_info as *mut libc::c_void,
            &mut len,
        )
    };
    (r == 0).then_some((info, len as usize))
}

fn read_cwnd(s: &TcpStream, start: Instant) -> Option<CwndSample> {
    let (info, len) = tcp_info(s)?;
    // Every field read here is in the struct since Linux 2.6 (before `tcpi_rcv_rtt`).
    if len < std::mem::offset_of!(libc::tcp_info, tcpi_rcv_rtt) {
        return None;
    }
    Some(CwndSample {
        time_s: start.elapsed().as_secs_f64(),
        cwnd_segments: info.tcpi_snd_cwnd,
        ssthresh_segments: info.tcpi_snd_ssthresh,
        mss: info.tcpi_snd_mss,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn a_connected_socket_reports_its_window() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let s = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let _peer = l.accept().unwrap();
        let trace = Arc::new(CwndTrace::default());
        assert!(trace.start(&s, Instant::now()).is_none(), "off unless enabled");
        trace.enable(Duration::from_millis(1));
        let sampler = trace.start(&s, Instant::now()).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        drop(sampler);
        let got = trace.samples();
        assert!(got.len() >= 2, "{got:?}");
        // Linux starts a connection at IW10 (RFC 6928); loopback's MSS is far above 1000 bytes.
        assert!(got.iter().all(|x| x.cwnd_segments >= 1 && x.mss > 1000), "{got:?}");
        assert!(got.windows(2).all(|w| w[0].time_s <= w[1].time_s));
    }
}
