//! Snoop: TCP-aware caching and local retransmission at the base station (Balakrishnan 1995, Balakrishnan, Seshan
//! and Katz 1995, §3.1 and §6).
//!
//! Snoop sits in the base station's forwarding path and watches every TCP packet in both directions. Data
//! from the fixed host (FH) to the mobile host (MH) is cached, unacknowledged, as a reference-counted clone
//! of the forwarded packet (`snoop_data()`, §3.1.1). Acknowledgments from the mobile drive the cache:
//! new ACKs free it, duplicate ACKs (DUPACKs) reveal a wireless loss, which Snoop repairs with a local
//! retransmission at high priority while hiding the DUPACKs from the sender so that it does not invoke
//! congestion control (`snoop_ack()`, §3.1.2). Two timers (§6) resend when ACKs stop coming: a round-trip
//! timer derived from the wireless RTT, and a 200 ms persist timer. Snoop never acknowledges anything
//! itself beyond what the mobile acknowledged: the one ACK it makes (§3.1.1 case 2) repeats the mobile's
//! last ACK.
//!
//! # Layout
//!
//! - `parse`: validates IPv4/TCP once per packet and copies out the fields the state machine reads.
//! - `conn`: the per-connection state and the cases of §3.1.1 (`snoop_data()`), §3.1.2 (`snoop_ack()`) and
//!   §6 (the timers), each cited where it is handled.
//! - `segment`: the cache entry of §6 (sequence number, size, local retransmissions, sender-retransmitted
//!   flag) with its transmissions, and the copy a local retransmission sends.
//! - `tx`: the transmit-timed rules (below), which refine §3.1.2 case 3 and the §6 round-trip timer once the
//!   host reports transmissions.
//! - `window`: the windowed least / largest sample those rules keep (hop round trip, receiver's ACK hold).
//! - `table`: the bounded connection table (least recently active evicted) and the timer heap.
//! - `index`: the table's index from a key's hash to its slot, one cache line per lookup.
//! - `queue`: a connection's cache of segments, a lone one inline in the connection's state.
//!
//! # Packets Snoop does not handle
//!
//! Non-TCP packets and IPv4 fragments are forwarded unchanged (and counted); truncated or malformed
//! IPv4/TCP headers (bad IHL, bad data offset, bad option lengths) are dropped as
//! [`DropReason::Malformed`] and counted, never panicking. Data from the mobile to the fixed host is not
//! Snoop's business (§3.2 is a different agent): it is forwarded, and only its ACK field is read.
//! Checksums are not verified (the end hosts do that; verifying would double the per-packet cost), and
//! never recomputed: a rewrite updates the checksum incrementally, so a bad one stays bad.
//!
//! # Connection state
//!
//! Keyed by the FH→MH [`FlowKey`]. Created by the FH's SYN (or SYN-ACK), or, mid-connection, by the first
//! data packet toward the mobile (§5, §6: state is "easily reconstructed from scratch by snooping on a few
//! packets"). A SYN re-initialises it, a RST in either direction drops it, and it is dropped once the FH's
//! FIN is acknowledged. The FIN is cached like data of sequence length payload + 1, so a FIN lost on the
//! wireless hop is resent locally too. ACKs of a connection Snoop holds no state for are forwarded untouched
//! (they do not create state: in an MH→FH transfer they are the only packets, and caching nothing is
//! pointless).
//!
//! # Choices the paper leaves open (documented where they are made, in `conn.rs`)
//!
//! - **Expected DUPACKs** (§3.1.2 case 3): the packets sent after the lost one before its retransmission,
//!   *less the DUPACK in hand* (it is the first of them), and less those sent before a transmission that has
//!   since been acknowledged (their DUPACKs were spent on an earlier hole). Once they are used up, a further
//!   DUPACK means the retransmission was lost: retransmit again, up to `max_local_rexmit` per packet, then
//!   forward DUPACKs so the sender takes over.
//! - **Partial ACKs**: more DUPACKs for the old ACK than packets up to the new ACK means a packet beyond the
//!   new ACK arrived, so the packet at the new ACK is lost too; it is retransmitted at once (no DUPACK would
//!   announce it). Otherwise the round-trip timer keeps watching it until the recovery point is passed.
//! - **Round-trip timer** (§6): `max(2·srtt, 40 ms)`, doubled per expiry up to ×4, capped at 400 ms, reset by
//!   any new ACK; the backoff never enters `srtt`, and `srtt` takes only Karn-clean samples (α = 1/4 on the
//!   new sample), clamped to the cap, so the estimate cannot run away (ns-2's failure at high loss).
//! - **Persist timer** (§6): independent of the round-trip timer; counts 200 ms from the later of the last
//!   packet of either endpoint and the last timer retransmission, so the two never fire back to back.
//! - **DUPACK** = same ACK as the highest, no data/SYN/FIN, window not larger (a larger window is a window
//!   update and must reach the sender), and data outstanding.
//! - **Timestamps on local retransmissions** (RFC 7323, after the paper): a copy whose TSval is older
//!   than the mobile's latest echo (TSecr) is resent with that echo as TSval, on a copy whose checksum is
//!   updated incrementally (RFC 1624: a segment corrupted on the wired path stays invalid), so the receiver's PAWS check does not drop it as an old duplicate once a sender
//!   retransmission has advanced its `ts_recent` (`retransmit` in `conn.rs`; measured on the Linux testbed).
//! - **Already acknowledged data** (§3.1.1 case 2 below the last ACK) means every byte of it is below the
//!   last ACK; a segment straddling the last ACK is forwarded.
//!
//! # Transmit-timed recovery (when the host calls [`Agent::handle_transmit`])
//!
//! A forwarded packet may wait 100+ ms in the interface queue, and local retransmissions overtake it through
//! the priority queue, so "forwarded before" is not "transmitted before". Hosts that report when a frame
//! really starts transmitting (the simulator does, and `lasthop bs` with its emulated hop) switch a
//! connection, from its first report on, to rules timed from transmission. Without reports every rule
//! above is unchanged. Each cached segment records its copies still queued, its transmissions (numbered per
//! connection, so their order is exact), the latest one's start, and from which one on a copy may still
//! arrive. Assumption: the
//! link delivers in transmission order (true of one 802.11 station's frames and of the simulator).
//!
//! - **Loss inference** (extends §3.1.2 case 3): the ACK that first carried the current last ACK was sent
//!   on the arrival of a transmission numbered at least `ack_base` (at least every transmission known to
//!   have arrived: freed segments whose arriving copy is known, and the old ACK's DUPACKs), and each DUPACK
//!   since came from a further, distinct transmission (the mobile ACKs every out-of-order or duplicate
//!   segment at once). The segment the mobile needs is lost as soon as this bound reaches its latest
//!   transmission, never while a copy of it is still queued. So: the first DUPACK after a loss in the normal
//!   sequence retransmits it (as in the paper); *expected* DUPACKs are exactly those the transmissions
//!   between the lost one and its retransmission can cause, and one more means the retransmission was lost:
//!   retransmit again; and at a **partial ACK**, a segment transmitted before one that has arrived (e.g.
//!   before the local retransmission this ACK covers) is retransmitted at once, while one still queued (or
//!   transmitted after) is left alone. Lost ACKs only delay an inference, never falsify it.
//! - **Copies Snoop never saw**: a segment cached on a sender retransmission of a range it had passed
//!   uncached (past the high-water mark, or before it had state; §3.1.1 case 3) may be acknowledged by the
//!   arrival of that earlier, uncounted copy, so its freeing ACK raises no bound and gives no RTT sample
//!   (until every earlier copy is known lost). Found on the testbed with Linux's megabyte windows, where such
//!   segments are common: the ACK of a duplicate otherwise made the next DUPACK look like a loss.
//! - **RTT** (§3.1.2 case 1, §6): the probe is timed from its transmission, and `srtt` keeps the paper's
//!   filter. Every new ACK whose arriving copy is known (transmitted once, or its earlier copies known lost)
//!   is also a Karn-clean sample of transmission-to-ACK time; the least over 10 s is the hop's unqueued RTT
//!   (an ACK waits behind frames queued before it on a shared medium, so most samples include queueing).
//! - **Round-trip timer** (§6, deviation): `max(2·hop RTT, ACK hold + hop RTT, min_tx_rtx_timeout = 5 ms)`,
//!   counted from the connection's latest transmission or DUPACK (so it fires only once the medium has been
//!   quiet for two hop RTTs: ~16 ms on a 2 Mb/s hop, not the paper's 40 ms floor from queueing, which at
//!   50 % loss left the link idle for most of the recovery). The first 4 expiries in a row do not back off
//!   (a retransmission is lost several times in a row at high loss); then it doubles up to
//!   `×2^max_rtx_backoff`. When it fires, every earlier transmission has been answered or lost, so the
//!   resent copy is the only live one (the persist timer's §6 reset of the expected DUPACKs is the same
//!   statement, made in these terms).
//! - **Receiver's ACK pacing** (the *ACK hold*): a receiver may hold the ACK of a lone segment (delayed
//!   ACKs: up to 200 ms on BSD, 40 ms and more on Linux), and the round-trip timer must not take that
//!   silence for a loss. Every new ACK (not a DUPACK, not carrying data) is a sample of how long after the
//!   connection's medium fell quiet (its latest transmission or ACK from the mobile) the receiver answered;
//!   the largest sample of the last 10 s, plus one hop RTT of margin, bounds the timer from below. A
//!   receiver that ACKs at once keeps the two-hop-RTT timer; one that delays is waited out, learned per
//!   connection from the first lone segment it delayed. Measured: on the simulator's `snoop-ber` the
//!   Snoop/ideal ratios move by at most 0.009 (0.739 → 0.730 at one error per 16 Kbit); on the Linux
//!   testbed with a 64 KB window no round-trip-timer resend was spurious either way.
//!
//! # Action order
//!
//! For each packet handed in, the first action pushed is its disposition (`Forward` or `Drop`); any
//! `ForwardPriority` (local retransmission from the cache) or `Inject` (regenerated ACK) follows.
//!
//! # Determinism
//!
//! No clock, no randomness: time is the `now` passed in. The index is used for lookup only; timers fire
//! in (deadline, slot) order.

mod conn;
mod index;
mod parse;
mod queue;
mod segment;
mod table;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_lossy;
mod tx;
mod window;

use crate::flow::FlowKey;
#[cfg(test)]
use crate::DropReason;
use crate::{Action, Agent, PassCounters, Side, Time};
use bytes::Bytes;
use conn::{After, Conn};
use std::collections::BTreeMap;
use std::time::Duration;
use table::Table;

/// Snoop's knobs. The simulator maps its scenario TOML onto these; every default is the paper's value where
/// the paper gives one.
#[derive(Debug, Clone)]
pub struct SnoopConfig {
    /// Most connections with state at once; when full, the least recently active is evicted (its state is
    /// soft: the connection keeps working, only without local recovery until the state is rebuilt).
    /// Default 1024. Zero makes Snoop a plain forwarder.
    pub max_connections: usize,
    /// Per-connection high-water mark of the cache, in bytes of sequence space (Balakrishnan 1995 §6). Past it, only
    /// out-of-order packets earlier than the last one seen are cached; new packets are forwarded uncached.
    /// The cache never exceeds twice this (older packets push the newest out). Default 64 KiB, the largest
    /// unscaled TCP window.
    pub high_water_bytes: usize,
    /// Hard per-connection limit on the memory the cache holds, below the high-water mark's own bound: the
    /// "cache memory per connection" of Balakrishnan 1998 ("Scaling behavior"). Counted as held: each cached packet
    /// whole (IPv4 and TCP headers included) plus the cache entry describing it, so that 1-byte segments
    /// cannot hold many times the limit. Packets that do not fit are forwarded uncached (their losses fall
    /// back to end-to-end recovery). Default unlimited (`usize::MAX`).
    pub max_cache_bytes: usize,
    /// Local retransmissions of one packet (DUPACK- and timer-driven together) after which Snoop gives up on
    /// it and forwards its DUPACKs, so that the sender recovers end to end. The count resets when the sender
    /// resends the packet (§3.1.2). Default 16: at 50 % packet loss a packet exhausts it with probability
    /// 2^-16, so the sender is almost never involved, yet a mobile out of reach is not hammered forever.
    pub max_local_rexmit: u8,
    /// Floor of the round-trip timer (Balakrishnan 1995 §6: "we do not timeout more frequently than ... 40 ms").
    /// Default 40 ms.
    pub min_rtx_timeout: Duration,
    /// Floor of the round-trip timer when the host reports transmissions (`Agent::handle_transmit`): the timer
    /// then counts from the latest transmission, not from queueing, and its base is twice the hop's
    /// unqueued round trip. Default 5 ms.
    pub min_tx_rtx_timeout: Duration,
    /// Ceiling of the round-trip timer, backoff included, and of any RTT sample. Default 400 ms: well under
    /// a BSD sender's retransmission timeout (≥ 1 s), so local recovery still comes first.
    pub max_rtx_timeout: Duration,
    /// The round-trip timeout doubles on each expiry without a new ACK, at most `2^max_rtx_backoff` times
    /// the base; a new ACK resets it. Default 2 (×4). The backoff never touches `srtt`. Transmit-timed (see
    /// the module docs), the first 4 expiries in a row do not back off.
    pub max_rtx_backoff: u32,
    /// Wireless RTT assumed before the first sample (the paper gives none). Default 50 ms, so a round-trip
    /// timeout before any measurement is 100 ms.
    pub initial_srtt: Duration,
    /// Persist timer (Balakrishnan 1995 §6): no activity from sender or receiver for this long while packets are
    /// cached triggers a retransmission. Default 200 ms.
    pub persist_timeout: Duration,
    /// TTL of regenerated ACKs. Default 64.
    pub inject_ttl: u8,
    /// Key of the connection table's hash. Default 0 (the simulator needs nothing else); a real base station
    /// exposed to untrusted traffic should pass a random value to resist hash flooding.
    pub hash_seed: u64,
    /// Keep each connection's [`ConnectionStats`] after its state goes (FIN acknowledged, RST, eviction), so
    /// that [`Snoop::connection_stats`] covers whole connections: one small record per connection ever
    /// seen. For hosts that report per connection over a bounded run (the simulator); off by default, so
    /// that a base station's memory stays bounded by `max_connections`.
    pub keep_closed_connection_stats: bool,
}

impl Default for SnoopConfig {
    fn default() -> Self {
        SnoopConfig {
            max_connections: 1024,
            high_water_bytes: 64 * 1024,
            max_cache_bytes: usize::MAX,
            max_local_rexmit: 16,
            min_rtx_timeout: Duration::from_millis(40),
            min_tx_rtx_timeout: Duration::from_millis(5),
            max_rtx_timeout: Duration::from_millis(400),
            max_rtx_backoff: 2,
            initial_srtt: Duration::from_millis(50),
            persist_timeout: Duration::from_millis(200),
            inject_ttl: 64,
            hash_seed: 0,
            keep_closed_connection_stats: false,
        }
    }
}

/// The configuration in the units the state machine uses (nanoseconds), with degenerate values clamped so
/// that a timer can never fire in a loop.
#[derive(Debug, Clone)]
pub(crate) struct Cfg {
    /// New in-sequence packets are cached while the cache covers at most this much sequence space (the
    /// high-water mark, §6).
    high_water: usize,
    /// The cache never covers more sequence space than this (twice the high-water mark).
    hard_limit: usize,
    /// The cache never holds more memory than this (`SnoopConfig::max_cache_bytes`).
    max_held: usize,
    max_local_rexmit: u8,
    min_rtx_timeout: u64,
    min_tx_rtx_timeout: u64,
    max_rtx_timeout: u64,
    max_rtx_backoff: u32,
    initial_srtt: u64,
    persist_timeout: u64,
    inject_ttl: u8,
}

fn nanos(d: Duration) -> u64 {
    d.as_nanos().min(u128::from(u64::MAX)) as u64
}

impl Cfg {
    fn from(c: &SnoopConfig) -> Cfg {
        let min_rtx = nanos(c.min_rtx_timeout).max(1);
        Cfg {
            high_water: c.high_water_bytes,
            hard_limit: c.high_water_bytes.saturating_mul(2),
            max_held: c.max_cache_bytes,
            max_local_rexmit: c.max_local_rexmit,
            min_rtx_timeout: min_rtx,
            min_tx_rtx_timeout: nanos(c.min_tx_rtx_timeout).max(1).min(nanos(c.max_rtx_timeout).max(min_rtx)),
            max_rtx_timeout: nanos(c.max_rtx_timeout).max(min_rtx),
            max_rtx_backoff: c.max_rtx_backoff.min(32),
            initial_srtt: nanos(c.initial_srtt),
            persist_timeout: nanos(c.persist_timeout).max(1),
            inject_ttl: c.inject_ttl,
        }
    }
}

/// Local retransmissions by cause.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LocalRetransmissions {
    /// On an unexpected DUPACK (§3.1.2 case 3).
    pub dupack: u64,
    /// On expiry of the round-trip timer (§6).
    pub rtx_timer: u64,
    /// On expiry of the persist timer (§6).
    pub persist_timer: u64,
}

impl LocalRetransmissions {
    pub fn total(&self) -> u64 {
        self.dupack + self.rtx_timer + self.persist_timer
    }
}

/// What Snoop did for one connection (keyed by its FH→MH 4-tuple): the part of [`SnoopStats`] that tells
/// one connection's recovery from another's when several share a base station. Exported by
/// [`Agent::connection_counters`] under the names [`Agent::counters`] gives the station's sums.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ConnectionStats {
    /// Local retransmissions, whatever their cause.
    pub local_retransmissions: u64,
    /// DUPACKs dropped (answered by a local retransmission, or expected after one).
    pub dupacks_suppressed: u64,
}

impl ConnectionStats {
    fn is_zero(&self) -> bool {
        *self == ConnectionStats::default()
    }

    pub fn add(&mut self, other: &ConnectionStats) {
        self.local_retransmissions += other.local_retransmissions;
        self.dupacks_suppressed += other.dupacks_suppressed;
    }

    /// The counters under the names of [`Agent::counters`].
    pub fn named(&self) -> Vec<(&'static str, u64)> {
        vec![("local_retransmissions", self.local_retransmissions), ("dupacks_suppressed", self.dupacks_suppressed)]
    }
}

/// What Snoop did, summed over all connections. Exported by [`Agent::counters`] under the field names
/// (`local_retransmissions` and its parts as `local_retransmissions_dupack` etc.).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SnoopStats {
    /// Packets added to a cache (new in-sequence ones under the high-water mark, and uncached
    /// out-of-sequence ones).
    pub packets_cached: u64,
    /// New packets forwarded without caching because the cache was past its high-water mark.
    pub packets_uncached_high_water: u64,
    /// The most payload bytes one connection's cache held at once (Balakrishnan 1998 "Scaling behavior": the state
    /// a connection costs the base station).
    pub cache_bytes_peak: u64,
    /// Cached packets dropped from a cache to keep it under twice the high-water mark.
    pub cache_evictions: u64,
    pub local_retransmissions: LocalRetransmissions,
    /// DUPACKs dropped (answered by a local retransmission, or expected after one).
    pub dupacks_suppressed: u64,
    /// DUPACKs passed to the sender (packet not cached, sender-retransmitted, or local retransmissions
    /// exhausted).
    pub dupacks_forwarded: u64,
    /// ACKs Snoop injected for data the mobile had already acknowledged (§3.1.1 case 2).
    pub acks_regenerated: u64,
    /// ACKs below the last ACK, dropped (§3.1.2 case 2).
    pub spurious_acks_dropped: u64,
    /// Data packets from the sender below the last sequence number seen.
    pub sender_retransmissions_seen: u64,
    /// Wireless RTT samples taken.
    pub rtt_samples: u64,
    /// Packets passed over and the connection table.
    pub pass: PassCounters,
}

/// The Snoop agent: one per base station, holding state for up to `max_connections` connections.
#[derive(Debug)]
pub struct Snoop {
    cfg: Cfg,
    config: SnoopConfig,
    table: Table,
    stats: SnoopStats,
    /// Counts of connections whose state has gone (`keep_closed_connection_stats`).
    closed: BTreeMap<FlowKey, ConnectionStats>,
}

impl Snoop {
    pub fn new(config: SnoopConfig) -> Snoop {
        Snoop {
            cfg: Cfg::from(&config),
            table: Table::new(config.max_connections, config.hash_seed),
            config,
            stats: SnoopStats::default(),
            closed: BTreeMap::new(),
        }
    }

    pub fn config(&self) -> &SnoopConfig {
        &self.config
    }

    pub fn stats(&self) -> &SnoopStats {
        &self.stats
    }

    /// Connections with state.
    pub fn connections(&self) -> usize {
        self.table.len()
    }

    /// The most connections with state at once.
    pub fn connections_peak(&self) -> usize {
        self.table.peak()
    }

    /// The agent's own accounting of what its connection table holds: the bytes allocated for the slab of
    /// per-connection state, the index and the timer heap (high-water mark: capacities never shrink),
    /// without the cached packets (bounded per connection by `high_water_bytes` and `max_cache_bytes`).
    pub fn table_bytes(&self) -> usize {
        self.table.allocated_bytes()
    }

    /// The agent's own accounting of what one connection costs its table, cache aside (see
    /// `Table::bytes_per_connection`).
    pub fn bytes_per_connection() -> usize {
        Table::bytes_per_connection()
    }

    /// `size_of` the inline state of one connection in the table (its slot).
    pub fn connection_state_size() -> usize {
        Table::slot_size()
    }

    /// Bytes of sequence space cached for a connection (FH→MH key), if it has state.
    pub fn cached_bytes(&self, key: &FlowKey) -> Option<usize> {
        self.table.lookup(key).map(|s| self.table.conn(s).cache_bytes())
    }

    /// Memory a connection's cache holds (packets whole plus their entries; what `max_cache_bytes` bounds).
    pub fn cached_memory(&self, key: &FlowKey) -> Option<usize> {
        self.table.lookup(key).map(|s| self.table.conn(s).cache_held())
    }

    /// The smoothed wireless RTT of a connection, once measured.
    pub fn srtt(&self, key: &FlowKey) -> Option<Duration> {
        self.table.lookup(key).and_then(|s| self.table.conn(s).srtt()).map(Duration::from_nanos)
    }

    /// The receiver's longest ACK hold a connection has shown lately (transmit-timed; see the module docs).
    pub fn ack_hold(&self, key: &FlowKey) -> Option<Duration> {
        self.table.lookup(key).and_then(|s| self.table.conn(s).ack_hold()).map(Duration::from_nanos)
    }

    /// What Snoop did for connection `key` (FH→MH): its live state's counts, plus, with
    /// `keep_closed_connection_stats`, those of its earlier state since gone.
    pub fn connection_stats(&self, key: &FlowKey) -> ConnectionStats {
        let mut total = self.closed.get(key).copied().unwrap_or_default();
        if let Some(s) = self.table.lookup(key) {
            total.add(&self.table.conn(s).stats());
        }
        total
    }

    /// [`connection_stats`](Self::connection_stats) of every connection with any count.
    pub fn all_connection_stats(&self) -> BTreeMap<FlowKey, ConnectionStats> {
        let mut all = self.closed.clone();
        for c in self.table.conns() {
            let stats = c.stats();
            if !stats.is_zero() {
                all.entry(c.key).or_default().add(&stats);
            }
        }
        all
    }

    fn create(&mut self, key: FlowKey, now: Time) -> Option<u32> {
        let (slot, evicted) = self.table.insert(Conn::new(key, now))?;
        self.stats.pass.connections_created += 1;
        if let Some(old) = evicted {
            self.stats.pass.connections_evicted += 1;
            self.keep_stats(&old);
        }
        Some(slot)
    }

    /// Drops connection `slot`'s state (RST, or its FIN acknowledged), keeping its counts if configured to.
    fn close(&mut self, slot: u32) {
        if let Some(conn) = self.table.remove(slot) {
            self.stats.pass.connections_closed += 1;
            self.keep_stats(&conn);
        }
    }

    fn keep_stats(&mut self, conn: &Conn) {
        let stats = conn.stats();
        if self.config.keep_closed_connection_stats && !stats.is_zero() {
            self.closed.entry(conn.key).or_default().add(&stats);
        }
    }

    /// A packet travelling toward the mobile: the fixed host's data (snoop_data) or its ACKs for the
    /// mobile's data.
    fn toward_mobile(&mut self, now: Time, seg: parse::Segment, packet: Bytes, out: &mut Vec<Action>) {
        let key = FlowKey { src: seg.src, src_port: seg.src_port, dst: seg.dst, dst_port: seg.dst_port };
        let slot = self.table.find(&key);
        if seg.rst() {
            if let Some(s) = slot {
                self.close(s);
            }
            out.push(Action::Forward(Side::ToMobile, packet));
            return;
        }
        if seg.syn() {
            if let Some(s) = slot.or_else(|| self.create(key, now)) {
                self.table.touch(s);
                self.table.conn_mut(s).handle_syn_from_fixed(now, &seg);
                self.table.schedule(s, &self.cfg);
            } else {
                self.stats.pass.unknown_forwarded += 1;
            }
            out.push(Action::Forward(Side::ToMobile, packet));
            return;
        }
        if seg.seg_len() == 0 {
            // The FH's pure ACK (for data from the mobile): forward; it only counts as sender activity.
            match slot {
                Some(s) => {
                    self.table.touch(s);
                    self.table.conn_mut(s).handle_other(now);
                }
                None => self.stats.pass.unknown_forwarded += 1,
            }
            out.push(Action::Forward(Side::ToMobile, packet));
            return;
        }
        let s = match slot {
            Some(s) => {
                self.table.touch(s);
                s
            }
            None => match self.create(key, now) {
                Some(s) => {
                    self.table.conn_mut(s).start_at(seg.seq);
                    s
                }
                None => {
                    self.stats.pass.unknown_forwarded += 1;
                    out.push(Action::Forward(Side::ToMobile, packet));
                    return;
                }
            },
        };
        self.table.conn_mut(s).handle_data(now, &seg, packet, &self.cfg, out, &mut self.stats);
        self.table.schedule(s, &self.cfg);
    }

    /// A packet travelling toward the wired network: the mobile's ACKs (snoop_ack), or its data.
    fn toward_wired(&mut self, now: Time, seg: parse::Segment, packet: Bytes, out: &mut Vec<Action>) {
        let key = FlowKey { src: seg.dst, src_port: seg.dst_port, dst: seg.src, dst_port: seg.src_port };
        let Some(s) = self.table.find(&key) else {
            self.stats.pass.unknown_forwarded += 1;
            out.push(Action::Forward(Side::ToWired, packet));
            return;
        };
        if seg.rst() {
            self.close(s);
            out.push(Action::Forward(Side::ToWired, packet));
            return;
        }
        self.table.touch(s);
        if seg.syn() {
            self.table.conn_mut(s).handle_syn_from_mobile(now, &seg);
            out.push(Action::Forward(Side::ToWired, packet));
        } else if self.table.conn_mut(s).handle_ack(now, &seg, packet, &self.cfg, out, &mut self.stats) == After::Remove
        {
            self.close(s);
            return;
        }
        self.table.schedule(s, &self.cfg);
    }
}

/// Packets of a batch prefetched together (`Agent::prefetch`): each group's index lines are asked for,
/// then its slots' lines, so that a group's lookups wait for memory once, not once per packet. 16 packets
/// ask for 16 index lines and then up to 96 slot lines, about what the processor can have in flight.
const PREFETCH_GROUP: usize = 16;

impl Agent for Snoop {
    fn handle_packet(&mut self, now: Time, side: Side, packet: Bytes, out: &mut Vec<Action>) {
        let count = &mut self.stats.pass;
        let Some(seg) = parse::classify(&packet).tcp_or_pass(side, &packet, out, count) else { return };
        match side {
            Side::ToMobile => self.toward_mobile(now, seg, packet, out),
            Side::ToWired => self.toward_wired(now, seg, packet, out),
        }
        self.table.tidy(&self.cfg);
    }

    /// The connection state a batch will touch, asked for in two rounds per group of packets: the index
    /// lines of every packet's key, then the slots those lines name. Reads the index, writes nothing.
    fn prefetch(&self, packets: &[(Side, &[u8])]) {
        let mut hashes = [0u64; PREFETCH_GROUP];
        let mut previous = None;
        for group in packets.chunks(PREFETCH_GROUP) {
            let mut n = 0;
            for &(side, bytes) in group {
                // A run of one connection's packets (a bulk flow's segments) needs its lines once.
                let key = parse::peek_key(side, bytes);
                if let Some(k) = key.filter(|_| key != previous) {
                    hashes[n] = self.table.prefetch_index(k);
                    n += 1;
                }
                previous = key;
            }
            for &hash in &hashes[..n] {
                self.table.prefetch_slot(hash);
            }
        }
    }

    fn poll_timeout(&self) -> Option<Time> {
        self.table.next_deadline()
    }

    fn handle_timeout(&mut self, now: Time, out: &mut Vec<Action>) {
        while let Some(s) = self.table.pop_due(now) {
            self.table.conn_mut(s).handle_timer(now, &self.cfg, out, &mut self.stats);
            self.table.schedule(s, &self.cfg);
        }
        self.table.tidy(&self.cfg);
    }

    /// Data toward the mobile leaving the wireless link: see `Conn::handle_transmit`. Anything else is ignored.
    fn handle_transmit(&mut self, now: Time, side: Side, packet: &Bytes) {
        if side != Side::ToMobile {
            return;
        }
        let Some((key, seq, len)) = parse::peek_data(packet) else { return };
        let Some(s) = self.table.find_packed(key) else { return };
        if self.table.conn_mut(s).handle_transmit(now, seq, len, &self.cfg) {
            self.table.schedule(s, &self.cfg);
            self.table.tidy(&self.cfg);
        }
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let s = &self.stats;
        let mut named = vec![
            ("packets_cached", s.packets_cached),
            ("packets_uncached_high_water", s.packets_uncached_high_water),
            ("cache_bytes_peak", s.cache_bytes_peak),
            ("cache_evictions", s.cache_evictions),
            ("local_retransmissions", s.local_retransmissions.total()),
            ("local_retransmissions_dupack", s.local_retransmissions.dupack),
            ("local_retransmissions_rtx_timer", s.local_retransmissions.rtx_timer),
            ("local_retransmissions_persist_timer", s.local_retransmissions.persist_timer),
            ("dupacks_suppressed", s.dupacks_suppressed),
            ("dupacks_forwarded", s.dupacks_forwarded),
            ("acks_regenerated", s.acks_regenerated),
            ("spurious_acks_dropped", s.spurious_acks_dropped),
            ("sender_retransmissions_seen", s.sender_retransmissions_seen),
            ("rtt_samples", s.rtt_samples),
            ("connections_peak", self.table.peak() as u64),
            ("table_bytes", self.table.allocated_bytes() as u64),
        ];
        named.extend(s.pass.named());
        named
    }

    fn connection_counters(&self, key: &FlowKey) -> Vec<(&'static str, u64)> {
        self.connection_stats(key).named()
    }
}
