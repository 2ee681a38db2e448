//! The results table of an experiment: one row per run (grid columns, `seed`, the chosen flow's metrics and a
//! few run-wide numbers), written as `results.csv`, filtered and aggregated by claims, figures and reports.

use lasthop_net::{TestbedConfig, TestbedResult};
use lasthop_sim::{FlowMetrics, RunResult};
use std::cmp::Ordering;
use std::fmt;

/// One cell of the results table.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(String),
    /// A metric the run did not produce (e.g. `completion_time_s` of a flow that did not complete).
    Empty,
}

impl Cell {
    /// The cell as a number: integers and floats as they are, booleans as 1 / 0.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Cell::Int(i) => Some(*i as f64),
            Cell::Float(f) => Some(*f),
            Cell::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
            Cell::Str(_) | Cell::Empty => None,
        }
    }

    /// From a TOML value (grid values, filter values).
    pub fn from_toml(v: &toml::Value) -> Cell {
        match v {
            toml::Value::Integer(i) => Cell::Int(*i),
            toml::Value::Float(f) => Cell::Float(*f),
            toml::Value::Boolean(b) => Cell::Bool(*b),
            toml::Value::String(s) => Cell::Str(s.clone()),
            other => Cell::Str(other.to_string()),
        }
    }

    /// Equality as filters see it: numbers compare by value with a relative tolerance of 1e-9 (so `3.81e-6`
    /// written in a claim matches `3.81e-6` in the grid, and `1` matches `1.0`); strings and booleans exactly.
    pub fn matches(&self, other: &Cell) -> bool {
        match (self, other) {
            (Cell::Str(a), Cell::Str(b)) => a == b,
            (Cell::Bool(a), Cell::Bool(b)) => a == b,
            (Cell::Empty, Cell::Empty) => true,
            (a, b) => match (a.as_f64(), b.as_f64()) {
                (Some(x), Some(y)) if !matches!(a, Cell::Bool(_)) && !matches!(b, Cell::Bool(_)) => {
                    // Infinities (e.g. `inf` = no handoffs) equal only themselves: inf − x ≤ 1e-9·inf would hold.
                    x == y || (x.is_finite() && y.is_finite() && (x - y).abs() <= 1e-9 * x.abs().max(y.abs()))
                }
                _ => false,
            },
        }
    }

    /// A total order for sorting distinct values (numbers by value, then booleans, then strings).
    pub fn sort_cmp(&self, other: &Cell) -> Ordering {
        fn rank(c: &Cell) -> u8 {
            match c {
                Cell::Int(_) | Cell::Float(_) => 0,
                Cell::Bool(_) => 1,
                Cell::Str(_) => 2,
                Cell::Empty => 3,
            }
        }
        match (self, other) {
            (Cell::Str(a), Cell::Str(b)) => a.cmp(b),
            (Cell::Bool(a), Cell::Bool(b)) => a.cmp(b),
            _ if rank(self) == 0 && rank(other) == 0 => {
                self.as_f64().unwrap_or(0.0).total_cmp(&other.as_f64().unwrap_or(0.0))
            }
            _ => rank(self).cmp(&rank(other)),
        }
    }
}

impl From<lasthop_sim::metrics::Value> for Cell {
    fn from(v: lasthop_sim::metrics::Value) -> Cell {
        match v {
            lasthop_sim::metrics::Value::Empty => Cell::Empty,
            lasthop_sim::metrics::Value::Int(i) => Cell::Int(i),
            lasthop_sim::metrics::Value::Float(x) => Cell::Float(x),
            lasthop_sim::metrics::Value::Bool(b) => Cell::Bool(b),
            lasthop_sim::metrics::Value::Str(s) => Cell::Str(s),
        }
    }
}

impl fmt::Display for Cell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cell::Int(i) => write!(f, "{i}"),
            Cell::Float(x) => write!(f, "{}", fmt_float(*x)),
            Cell::Bool(b) => write!(f, "{b}"),
            Cell::Str(s) => f.write_str(s),
            Cell::Empty => Ok(()),
        }
    }
}

/// Shortest text that reads back as the same float; exponent form for very small or large magnitudes
/// (`3.81e-6`, `1.0`, `0.25`).
pub fn fmt_float(x: f64) -> String {
    format!("{x:?}")
}

/// A number for people: 3 significant digits (`0.251`, `1.02`, `3.81e-6`, `1234`).
pub fn fmt_num(x: f64) -> String {
    if !x.is_finite() {
        return format!("{x}");
    }
    if x == 0.0 {
        return "0".into();
    }
    let a = x.abs();
    if !(1e-3..1e6).contains(&a) {
        let s = format!("{x:.2e}");
        // 3.81e-6 rather than 3.81e-6 with trailing zeros like 1.00e-6 -> 1e-6
        let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
        let m = m.trim_end_matches('0').trim_end_matches('.');
        return format!("{m}e{e}");
    }
    let digits = (2 - a.log10().floor() as i32).max(0) as usize;
    let s = format!("{x:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// The columns of a bulk flow's row ([`lasthop_sim::metrics::FLOW_COLUMNS`], from the flows' workload in
/// [`lasthop_sim::row_columns`]). Claims, filters and figures may refer to any of these and to [`RUN_COLUMNS`].
pub use lasthop_sim::metrics::FLOW_COLUMNS;

/// The columns of a web workload's row (Balakrishnan 1998 §5; [`lasthop_sim::web::WEB_COLUMNS`], from the Web
/// workload in [`lasthop_sim::row_columns`]).
pub use lasthop_sim::web::WEB_COLUMNS;

/// Columns after the flow's (or the workload's): run-wide numbers and derived ones. `ideal_ratio` = goodput /
/// ideal goodput. After them come the protocol families' columns ([`lasthop_sim::result_columns`]).
pub const RUN_COLUMNS: &[&str] = &["ideal_ratio", "sim_time_s", "events", "hit_time_limit"];

/// The columns of a scale experiment (`runner = "scale"`, `lasthop::scale`) after the grid's and `seed`.
pub const SCALE_COLUMNS: &[&str] = &[
    "n_flows",
    "flows_completed",
    "all_completed",
    "bytes_delivered",
    "corrupt_bytes",
    "sim_time_s",
    "events",
    "wall_s",
    "events_s",
    "setup_s",
    "events_per_s",
    "events_per_s_ratio",
    "peak_rss_bytes",
    "sim_bytes_per_flow",
    "snoop_bytes_per_connection",
    "snoop_table_bytes",
    "snoop_connections_peak",
    "repeats",
    "events_cpu_s",
    "events_per_s_min",
    "events_per_s_max",
];

/// Every column of a scale experiment's table: grid columns, `seed`, [`SCALE_COLUMNS`].
pub fn scale_columns(grid_columns: &[String]) -> Vec<String> {
    let mut cols: Vec<String> = grid_columns.to_vec();
    cols.push("seed".into());
    cols.extend(SCALE_COLUMNS.iter().map(|s| s.to_string()));
    cols
}

/// Flow and web columns a grid axis may take the name of, because they report what the axis sets (`tcp`: the
/// TCP variant, `tcp.variant`): the row then carries the grid value once, in the grid's place, and the run's
/// own value must equal it (Eom 2002's column contract names the variant `tcp`, as the flow does).
pub const CONFIG_COLUMNS: &[&str] = &["tcp"];

/// `names` less those that are grid columns.
fn not_in_grid<'a>(names: &'a [&'a str], grid_columns: &'a [String]) -> impl Iterator<Item = String> + 'a {
    names.iter().filter(|c| !grid_columns.iter().any(|g| g == *c)).map(|s| s.to_string())
}

/// The workload whose items a simulator experiment's rows are about: the Web workload when `web`, else the
/// bulk flows ([`lasthop_sim::row_columns`]).
fn workload_row(web: bool) -> &'static lasthop_sim::RowColumns {
    let table = if web { "web" } else { "flows" };
    lasthop_sim::row_columns().find(|(t, _)| *t == table).map(|(_, r)| r).expect("the flows and the Web give rows")
}

/// Every column of a simulator experiment's table, in CSV order: grid columns, `seed`, the workload's row
/// ([`WEB_COLUMNS`] when `web`, else [`FLOW_COLUMNS`]) less grid columns, [`RUN_COLUMNS`], then each
/// family's columns ([`lasthop_sim::result_columns`]) that every row has or whose table the scenario has
/// (`has_table("mobile_ip")`).
pub fn sim_columns(grid_columns: &[String], web: bool, has_table: &dyn Fn(&str) -> bool) -> Vec<String> {
    let mut cols: Vec<String> = grid_columns.to_vec();
    cols.push("seed".into());
    cols.extend(not_in_grid(workload_row(web).names, grid_columns));
    cols.extend(RUN_COLUMNS.iter().map(|s| s.to_string()));
    let families = lasthop_sim::result_columns().filter(|(table, c)| c.always || has_table(table));
    cols.extend(families.flat_map(|(_, c)| c.names.iter().map(|s| s.to_string())));
    cols
}

/// The columns of a flow's row when the scenario has no family with columns of its own to add
/// ([`sim_columns`]).
pub fn columns(grid_columns: &[String]) -> Vec<String> {
    sim_columns(grid_columns, false, &|_| false)
}

/// The columns of a web workload's row when the scenario has no family with columns of its own to add
/// ([`sim_columns`]; `ideal_ratio` stays empty: no ideal goodput for a workload).
pub fn web_columns(grid_columns: &[String]) -> Vec<String> {
    sim_columns(grid_columns, true, &|_| false)
}

/// Columns of a testbed experiment that describe the run, added after `seed` unless they are grid columns.
pub const TESTBED_CONFIG_COLUMNS: &[&str] = &["agent", "cc", "sack", "ber"];

/// What a testbed run measured: goodput at the receiver, the bound C·(1 − PER) no base-station scheme can
/// beat on this hop (`TestbedConfig::ideal_goodput_mbps`, from the configuration), whether the received bytes hash like the sent ones,
/// bytes received, transfer time, the congestion control the sender's socket really used, Snoop's local
/// retransmissions (under split: the base station kernel's retransmitted segments) and suppressed DUPACKs, frames the emulated hop lost to errors and dropped from full
/// queues (both directions), the CPU seconds of the base station's loop, and the fixed host's kernel TCP
/// counters (segments retransmitted, fast retransmits, timeouts).
pub const TESTBED_COLUMNS: &[&str] = &[
    "goodput_mbps",
    "ideal_goodput_mbps",
    "hash_ok",
    "bytes_delivered",
    "duration_s",
    "cc_used",
    "local_retransmissions",
    "dupacks_suppressed",
    "hop_frames_lost",
    "hop_queue_drops",
    "bs_cpu_s",
    "sender_retrans_segs",
    "sender_fast_retrans",
    "sender_timeouts",
];

/// Every column of a testbed experiment's table: grid columns, `seed`, [`TESTBED_CONFIG_COLUMNS`] not in the
/// grid, [`TESTBED_COLUMNS`].
pub fn testbed_columns(grid_columns: &[String]) -> Vec<String> {
    let mut cols: Vec<String> = grid_columns.to_vec();
    cols.push("seed".into());
    cols.extend(TESTBED_CONFIG_COLUMNS.iter().filter(|c| !grid_columns.iter().any(|g| g == *c)).map(|s| s.to_string()));
    cols.extend(TESTBED_COLUMNS.iter().map(|s| s.to_string()));
    cols
}

/// Columns of a twin experiment that describe the run, added after `face` unless they are grid columns.
pub const TWIN_CONFIG_COLUMNS: &[&str] = &["cc", "agent", "ber", "wired_delay_ms"];

/// What each face of a twin run measured, one row per face: the grid point's values joined by `/` (`point`,
/// what a claim compares the faces of), the sender that ran (`sender`: the simulator's variant, the
/// kernel's congestion control), goodput, the sender's retransmitted segments, timeouts and fast
/// retransmits (the kernel's `RetransSegs`, `TCPTimeouts`, `TCPFastRetrans`), the base station's local
/// retransmissions, bytes delivered, whether the transfer completed (the kernel's: every byte, hash
/// equal), and on both rows the kernel's retransmitted segments (so a claim can select the points where
/// they exceed a floor).
pub const TWIN_COLUMNS: &[&str] = &[
    "point",
    "sender",
    "goodput_mbps",
    "sender_retransmissions",
    "sender_timeouts",
    "fast_retransmits",
    "local_retransmissions",
    "bytes_delivered",
    "completed",
    "kernel_sender_retransmissions",
];

/// Every column of a twin experiment's table: grid columns, `seed`, `face`, [`TWIN_CONFIG_COLUMNS`] not in
/// the grid, [`TWIN_COLUMNS`].
pub fn twin_columns(grid_columns: &[String]) -> Vec<String> {
    let mut cols: Vec<String> = grid_columns.to_vec();
    cols.extend(["seed".to_string(), "face".to_string()]);
    cols.extend(not_in_grid(TWIN_CONFIG_COLUMNS, grid_columns));
    cols.extend(TWIN_COLUMNS.iter().map(|s| s.to_string()));
    cols
}

/// What the handoff testbed (`TestbedConfig::handoff`) adds: the handoffs the mobile made, their mean
/// latency (its request to the first packet through the new base station, ms; empty when none completed),
/// and over all handoffs the segments lost (the hole at the first data segment through the new base
/// station), resent from the new base station's buffer, and duplicated (data the mobile already had,
/// within a second of the request).
pub const TESTBED_HANDOFF_COLUMNS: &[&str] =
    &["handoffs", "handoff_latency_ms", "handoff_packets_lost", "handoff_resent_from_buffer", "handoff_duplicated"];

/// [`testbed_columns`] followed by [`TESTBED_HANDOFF_COLUMNS`].
pub fn testbed_handoff_columns(grid_columns: &[String]) -> Vec<String> {
    let mut cols = testbed_columns(grid_columns);
    cols.extend(TESTBED_HANDOFF_COLUMNS.iter().map(|s| s.to_string()));
    cols
}

/// Every column of a twin experiment on the handoff testbed (its base a `TestbedConfig` with `handoff`): grid
/// columns, `seed`, `face`, [`TESTBED_CONFIG_COLUMNS`] not in the grid, `point` (as [`TWIN_COLUMNS`]'s),
/// [`TESTBED_COLUMNS`], [`TESTBED_HANDOFF_COLUMNS`]: the handoff testbed's table with a row per face.
pub fn twin_handoff_columns(grid_columns: &[String]) -> Vec<String> {
    let mut cols: Vec<String> = grid_columns.to_vec();
    cols.extend(["seed".to_string(), "face".to_string()]);
    cols.extend(not_in_grid(TESTBED_CONFIG_COLUMNS, grid_columns));
    cols.push("point".into());
    cols.extend(TESTBED_COLUMNS.iter().chain(TESTBED_HANDOFF_COLUMNS).map(|s| s.to_string()));
    cols
}

/// A results table: named columns, rows in run order (grid order, then seed).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Cell>>,
}

impl Table {
    pub fn new(columns: Vec<String>) -> Table {
        Table { columns, rows: Vec::new() }
    }

    pub fn col(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == name)
    }

    /// The cell of `row` in column `name` (Empty when the column does not exist).
    pub fn get<'a>(&self, row: &'a [Cell], name: &str) -> &'a Cell {
        static EMPTY: Cell = Cell::Empty;
        self.col(name).and_then(|i| row.get(i)).unwrap_or(&EMPTY)
    }

    /// Appends the row of one simulator run: `grid` values in column order, the seed, the row of item `name`
    /// (the first when `None`) of the Web workload when `web`, else of the bulk flows ([`sim_columns`]), then
    /// the run-wide cells. Fails when the run has no such item, or when a grid column named like one of the
    /// row's columns does not hold what the run reports.
    pub fn push_run(
        &mut self,
        grid: &[Cell],
        seed: u64,
        web: bool,
        name: Option<&str>,
        result: &RunResult,
    ) -> Result<(), String> {
        let workload = workload_row(web);
        let cells: Vec<Cell> = (workload.cells)(result, name)?.into_iter().map(Cell::from).collect();
        let item = cells[0].to_string();
        let mut row: Vec<Cell> = grid.to_vec();
        row.push(Cell::Int(seed as i64));
        for (column, cell) in workload.names.iter().zip(&cells) {
            match self.grid_cell(grid, column) {
                Some(g) => check_config_column(column, g, cell, &item)?,
                None => row.push(cell.clone()),
            }
        }
        let cell = |column| workload.names.iter().position(|c| *c == column).map(|i| &cells[i]);
        let ideal_ratio = match (cell("goodput_mbps"), cell("ideal_goodput_mbps")) {
            (Some(Cell::Float(goodput)), Some(Cell::Float(ideal))) if *ideal > 0.0 => Cell::Float(goodput / ideal),
            _ => Cell::Empty,
        };
        self.push_run_cells(&mut row, ideal_ratio, result);
        if row.len() != self.columns.len() {
            return Err(format!("internal: row has {} cells for {} columns", row.len(), self.columns.len()));
        }
        self.rows.push(row);
        Ok(())
    }

    /// Appends the row of one testbed run (a table made with [`testbed_columns`]): `grid` values in column
    /// order, the seed, the configuration run and what it measured.
    pub fn push_testbed(
        &mut self,
        grid: &[Cell],
        seed: u64,
        cfg: &TestbedConfig,
        r: &TestbedResult,
    ) -> Result<(), String> {
        let mut row = Vec::with_capacity(self.columns.len());
        for (i, name) in self.columns.iter().enumerate() {
            row.push(if i < grid.len() { grid[i].clone() } else { testbed_cell(name, seed, cfg, r)? });
        }
        self.rows.push(row);
        Ok(())
    }

    /// Appends the two rows of one twin run (a table made with [`twin_columns`]), the simulator's then the
    /// kernel's: `grid` values in column order, the seed, the testbed configuration the scenario became, the
    /// simulator's flow and the testbed's result.
    pub fn push_twin(
        &mut self,
        grid: &[Cell],
        seed: u64,
        cfg: &TestbedConfig,
        sim: &FlowMetrics,
        kernel: &TestbedResult,
    ) -> Result<(), String> {
        let config = |name: &str| match name {
            "cc" => Cell::Str(cfg.cc.clone()),
            "agent" => Cell::Str(cfg.agent.to_string()),
            "ber" => Cell::Float(cfg.ber),
            _ => Cell::Float(cfg.wired_delay_ms),
        };
        for c in TWIN_CONFIG_COLUMNS {
            if let Some(g) = self.grid_cell(grid, c) {
                check_config_column(c, g, &config(c), &sim.name)?;
            }
        }
        let int = |x: u64| Cell::Int(x as i64);
        let point = grid.iter().map(Cell::to_string).collect::<Vec<_>>().join("/");
        let local = kernel.counters.agent_counter("local_retransmissions");
        let faces = [
            (
                crate::experiment::TWIN_FACES[0],
                sim.tcp.clone(),
                sim.goodput_mbps,
                [
                    sim.segments_retransmitted,
                    sim.sender_timeouts,
                    sim.fast_retransmits,
                    sim.local_retransmissions,
                    sim.bytes_delivered,
                ],
                sim.completed,
            ),
            (
                crate::experiment::TWIN_FACES[1],
                kernel.cc.clone(),
                kernel.goodput_mbps,
                [kernel.sender.retrans_segs, kernel.sender.timeouts, kernel.sender.fast_retrans, local, kernel.bytes],
                kernel.hash_ok,
            ),
        ];
        for (face, sender, goodput, counts, completed) in faces {
            let mut row: Vec<Cell> = grid.to_vec();
            row.extend([int(seed), Cell::Str(face.into())]);
            row.extend(TWIN_CONFIG_COLUMNS.iter().filter(|c| self.grid_cell(grid, c).is_none()).map(|c| config(c)));
            row.extend([Cell::Str(point.clone()), Cell::Str(sender), Cell::Float(goodput)]);
            row.extend(counts.map(int));
            row.extend([Cell::Bool(completed), int(kernel.sender.retrans_segs)]);
            if row.len() != self.columns.len() {
                return Err(format!("internal: row has {} cells for {} columns", row.len(), self.columns.len()));
            }
            self.rows.push(row);
        }
        Ok(())
    }

    /// Appends the two rows of one twin run on the handoff testbed (a table made with
    /// [`twin_handoff_columns`]), the simulator's then the kernel's: `grid` values in column order, the seed,
    /// the testbed configuration, the simulator's run and flow, the testbed's result.
    pub fn push_twin_handoff(
        &mut self,
        grid: &[Cell],
        seed: u64,
        cfg: &TestbedConfig,
        sim: (&RunResult, &FlowMetrics),
        kernel: &TestbedResult,
    ) -> Result<(), String> {
        let point = Cell::Str(grid.iter().map(Cell::to_string).collect::<Vec<_>>().join("/"));
        for face in crate::experiment::TWIN_FACES {
            let mut row = Vec::with_capacity(self.columns.len());
            for (i, name) in self.columns.iter().enumerate() {
                row.push(match name.as_str() {
                    _ if i < grid.len() => grid[i].clone(),
                    "face" => Cell::Str(face.into()),
                    "point" => point.clone(),
                    _ if face == "kernel" => testbed_cell(name, seed, cfg, kernel)?,
                    _ => sim_handoff_cell(name, seed, cfg, sim)?,
                });
            }
            self.rows.push(row);
        }
        Ok(())
    }

    /// Appends the run-wide cells of `result` to a row: [`RUN_COLUMNS`] (`ideal_ratio` given), then the
    /// cells of each family whose columns the table has ([`sim_columns`]).
    fn push_run_cells(&self, row: &mut Vec<Cell>, ideal_ratio: Cell, result: &RunResult) {
        row.extend([
            ideal_ratio,
            Cell::Float(result.sim_time_s),
            Cell::Int(result.events as i64),
            Cell::Bool(result.hit_time_limit),
        ]);
        for (_, family) in lasthop_sim::result_columns().filter(|(_, c)| self.col(c.names[0]).is_some()) {
            row.extend((family.cells)(result).into_iter().map(Cell::from));
        }
    }

    /// The value of grid column `name` among a row's `grid` values (the table's first columns).
    fn grid_cell<'a>(&self, grid: &'a [Cell], name: &str) -> Option<&'a Cell> {
        self.columns[..grid.len().min(self.columns.len())].iter().position(|c| c == name).map(|i| &grid[i])
    }

    /// CSV text: a header line, then one line per row; fields with commas, quotes or newlines are quoted.
    pub fn to_csv(&self) -> String {
        csv_text(
            std::iter::once(self.columns.clone())
                .chain(self.rows.iter().map(|r| r.iter().map(Cell::to_string).collect())),
        )
    }
}

/// The cell of testbed column `name` (any but a grid column) for one run of configuration `cfg`.
fn testbed_cell(name: &str, seed: u64, cfg: &TestbedConfig, r: &TestbedResult) -> Result<Cell, String> {
    if let Some(cell) = config_cell(name, seed, cfg) {
        return Ok(cell);
    }
    let c = &r.counters;
    Ok(match name {
        "goodput_mbps" => Cell::Float(r.goodput_mbps),
        "hash_ok" => Cell::Bool(r.hash_ok),
        "bytes_delivered" => Cell::Int(r.bytes as i64),
        "duration_s" => Cell::Float(r.duration_s),
        "cc_used" => Cell::Str(r.cc.clone()),
        // under split, the base station's own kernel TCP retransmits over the hop
        "local_retransmissions" => {
            Cell::Int(r.split.map_or(c.agent_counter("local_retransmissions"), |s| s.kernel_retrans_segs) as i64)
        }
        "dupacks_suppressed" => Cell::Int(c.agent_counter("dupacks_suppressed") as i64),
        "hop_frames_lost" => Cell::Int((c.hop_down.frames_lost + c.hop_up.frames_lost) as i64),
        "hop_queue_drops" => Cell::Int((c.hop_down.queue_drops + c.hop_up.queue_drops) as i64),
        "bs_cpu_s" => Cell::Float(c.cpu_s),
        "sender_retrans_segs" => Cell::Int(r.sender.retrans_segs as i64),
        "sender_fast_retrans" => Cell::Int(r.sender.fast_retrans as i64),
        "sender_timeouts" => Cell::Int(r.sender.timeouts as i64),
        handoff if TESTBED_HANDOFF_COLUMNS.contains(&handoff) => {
            let Some(h) = &r.handoff else {
                return Err(format!("internal: column `{handoff}` for a run without handoffs"));
            };
            let sum = |f: fn(&lasthop_net::handoff::HandoffRecord) -> u64| {
                Cell::Int(h.handoffs.iter().map(f).sum::<u64>() as i64)
            };
            match handoff {
                "handoffs" => Cell::Int(h.handoffs.len() as i64),
                "handoff_latency_ms" => h.mean_latency_ms().map_or(Cell::Empty, Cell::Float),
                "handoff_packets_lost" => Cell::Int(h.packets_lost() as i64),
                "handoff_resent_from_buffer" => sum(|x| x.resent_from_buffer),
                _ => sum(|x| x.duplicated),
            }
        }
        other => return Err(format!("internal: no testbed column `{other}`")),
    })
}

/// The cell of testbed column `name` when it describes the run rather than measures it (`None`: it measures).
fn config_cell(name: &str, seed: u64, cfg: &TestbedConfig) -> Option<Cell> {
    Some(match name {
        "seed" => Cell::Int(seed as i64),
        "agent" => Cell::Str(cfg.agent.to_string()),
        "cc" => Cell::Str(cfg.cc.clone()),
        "sack" => Cell::Bool(cfg.sack),
        "ber" => Cell::Float(cfg.ber),
        "ideal_goodput_mbps" => cfg.ideal_goodput_mbps().map_or(Cell::Empty, Cell::Float),
        _ => return None,
    })
}

/// The simulator face's cell of testbed column `name` in a twin run on the handoff testbed: the configuration
/// as [`testbed_cell`]'s, the flow's and the run's own measures where the simulator has them (`hash_ok`: the
/// flow completed, every byte verified; the hop's: every link's), empty where it has not (`bs_cpu_s`, and
/// `handoff_packets_lost`: the testbed counts the hole at the first segment through the new base station,
/// the simulator frames lost on the cell the mobile left, another quantity).
fn sim_handoff_cell(
    name: &str,
    seed: u64,
    cfg: &TestbedConfig,
    sim: (&RunResult, &FlowMetrics),
) -> Result<Cell, String> {
    let (run, f) = sim;
    let int = |x: u64| Cell::Int(x as i64);
    let handoffs = |g: fn(&lasthop_sim::HandoffMetrics) -> u64| int(run.families.handoffs.iter().map(g).sum());
    if let Some(cell) = config_cell(name, seed, cfg) {
        return Ok(cell);
    }
    Ok(match name {
        "goodput_mbps" => Cell::Float(f.goodput_mbps),
        "hash_ok" => Cell::Bool(f.completed && f.corrupt_bytes == 0),
        "bytes_delivered" => int(f.bytes_delivered),
        "duration_s" => Cell::Float(f.duration_s),
        "cc_used" => Cell::Str(f.tcp.clone()),
        "local_retransmissions" => int(f.local_retransmissions),
        "dupacks_suppressed" => int(f.dupacks_suppressed),
        "hop_frames_lost" => int(run.links.iter().map(|l| l.frames_lost_to_errors).sum()),
        "hop_queue_drops" => int(run.links.iter().map(|l| l.frames_dropped_queue).sum()),
        "sender_retrans_segs" => int(f.segments_retransmitted),
        "sender_fast_retrans" => int(f.fast_retransmits),
        "sender_timeouts" => int(f.sender_timeouts),
        "handoffs" => int(run.families.handoffs.len() as u64),
        // the testbed's: the request to the first packet through the new base station, data or its acceptance
        // (the simulator's completion; its `latency_s` waits for data)
        "handoff_latency_ms" => {
            let l: Vec<f64> = run.families.handoffs.iter().filter_map(|h| h.completion_s).collect();
            if l.is_empty() {
                Cell::Empty
            } else {
                Cell::Float(l.iter().sum::<f64>() / l.len() as f64 * 1e3)
            }
        }
        "handoff_resent_from_buffer" => handoffs(|h| h.resent_from_buffer),
        "handoff_duplicated" => handoffs(|h| h.duplicates),
        "bs_cpu_s" | "handoff_packets_lost" => Cell::Empty,
        other => return Err(format!("internal: no testbed column `{other}`")),
    })
}

/// A grid axis named like one of [`CONFIG_COLUMNS`] must set what the run reports there.
fn check_config_column(column: &str, grid: &Cell, run: &Cell, flow: &str) -> Result<(), String> {
    if grid.matches(run) {
        Ok(())
    } else {
        Err(format!(
            "grid column `{column}` is {grid} but `{flow}` ran {run}: an axis named like the results column \
             `{column}` must set what it reports"
        ))
    }
}

/// CSV text of `records` (the header first): fields joined by `,`, each line ending in `\n`, a field quoted
/// only when it holds a comma, a quote or a line break (RFC 4180 quoting, by the `csv` crate).
pub fn csv_text<R, F>(records: impl IntoIterator<Item = R>) -> String
where
    R: IntoIterator<Item = F>,
    F: AsRef<[u8]>,
{
    // Records may differ in length (flexible), so writing to memory cannot fail.
    let mut w = csv::WriterBuilder::new().flexible(true).from_writer(Vec::new());
    for r in records {
        w.write_record(r).expect("writing CSV to memory");
    }
    let bytes = w.into_inner().expect("flushing CSV to memory");
    String::from_utf8(bytes).expect("CSV of UTF-8 fields is UTF-8")
}

/// The median of sorted values (the mean of the middle two for an even count).
pub use lasthop_sim::metrics::median;

/// Mean and sample standard deviation (0 for a single value).
pub fn mean_std(xs: &[f64]) -> (f64, f64) {
    if xs.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    if xs.len() < 2 {
        return (mean, 0.0);
    }
    let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0);
    (mean, var.sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::Metric;

    #[test]
    fn number_formats() {
        assert_eq!(fmt_float(3.81e-6), "3.81e-6");
        assert_eq!(fmt_float(1.0), "1.0");
        assert_eq!(fmt_num(0.2514), "0.251");
        assert_eq!(fmt_num(1.0234), "1.02");
        assert_eq!(fmt_num(3.81e-6), "3.81e-6");
        assert_eq!(fmt_num(1e-6), "1e-6");
        assert_eq!(fmt_num(1234.0), "1234");
        assert_eq!(fmt_num(20.0), "20");
    }

    #[test]
    fn matching_and_order() {
        assert!(Cell::Float(3.81e-6).matches(&Cell::Float(3.81e-6 * (1.0 + 1e-12))));
        assert!(Cell::Int(1).matches(&Cell::Float(1.0)));
        assert!(!Cell::Bool(true).matches(&Cell::Int(1)));
        assert!(!Cell::Str("a".into()).matches(&Cell::Str("b".into())));
        let mut v = vec![Cell::Float(2.0), Cell::Int(1), Cell::Str("x".into())];
        v.sort_by(|a, b| a.sort_cmp(b));
        assert_eq!(v, vec![Cell::Int(1), Cell::Float(2.0), Cell::Str("x".into())]);
    }

    #[test]
    fn csv_quotes() {
        let mut t = Table::new(vec!["a".into(), "b".into()]);
        t.rows.push(vec![Cell::Str("x,y".into()), Cell::Str("say \"hi\"".into())]);
        assert_eq!(t.to_csv(), "a,b\n\"x,y\",\"say \"\"hi\"\"\"\n");
        t.rows.push(vec![Cell::Float(3.81e-6), Cell::Str(String::new())]);
        let back: Vec<csv::StringRecord> =
            csv::Reader::from_reader(t.to_csv().as_bytes()).records().collect::<Result<_, _>>().unwrap();
        assert_eq!(back[0].iter().collect::<Vec<_>>(), ["x,y", "say \"hi\""]);
        assert_eq!(back[1].iter().collect::<Vec<_>>(), ["3.81e-6", ""]);
    }

    #[test]
    fn testbed_rows_carry_the_ideal_goodput_of_their_configuration() {
        let grid = vec!["agent".to_string(), "wired_delay_ms".to_string(), "ber".to_string()];
        let mut t = Table::new(testbed_columns(&grid));
        let result = |cfg: &TestbedConfig| TestbedResult {
            goodput_mbps: 1.5,
            hash_ok: true,
            bytes: cfg.bytes,
            duration_s: 1.0,
            cc: cfg.cc.clone(),
            sack: cfg.sack,
            agent: cfg.agent,
            counters: Default::default(),
            sender: Default::default(),
            split: None,
            handoff: None,
        };
        let cell = |t: &Table, i: usize, c: &str| t.get(&t.rows[i], c).clone();
        let lossy = TestbedConfig { ber: 1.6e-5, wired_delay_ms: 20.0, ..TestbedConfig::default() };
        let values = [Cell::Str("none".into()), Cell::Float(20.0), Cell::Float(1.6e-5)];
        t.push_testbed(&values, 3, &lossy, &result(&lossy)).unwrap();
        let ideal = lossy.ideal_goodput_mbps().unwrap();
        assert_eq!(cell(&t, 0, "ideal_goodput_mbps"), Cell::Float(ideal));
        // 1.6e-5 loses 17.5 % of the full frames: the bound is well under the clean one
        assert!((1.55..1.58).contains(&ideal), "{ideal}");
        assert_eq!(cell(&t, 0, "goodput_mbps"), Cell::Float(1.5));
        assert_eq!(cell(&t, 0, "seed"), Cell::Int(3));
        let ratio = Metric::parse("ratio:goodput_mbps/ideal_goodput_mbps").unwrap();
        assert!((ratio.eval(&t, &t.rows[0]).unwrap() - 1.5 / ideal).abs() < 1e-12);
        // an unlimited hop has no bound: the cell stays empty
        let unlimited = TestbedConfig { rate_mbps: 0.0, ..TestbedConfig::default() };
        t.push_testbed(&values, 1, &unlimited, &result(&unlimited)).unwrap();
        assert_eq!(cell(&t, 1, "ideal_goodput_mbps"), Cell::Empty);
        assert_eq!(ratio.eval(&t, &t.rows[1]), None);
    }

    #[test]
    fn a_grid_axis_named_tcp_takes_the_flow_column_over_and_must_match_the_run() {
        let grid = vec!["scheme".to_string(), "tcp".to_string()];
        let cols = columns(&grid);
        assert_eq!(cols.iter().filter(|c| *c == "tcp").count(), 1);
        assert_eq!(&cols[..4], ["scheme", "tcp", "seed", "flow"]);
        assert_eq!(columns(&[]).iter().filter(|c| *c == "tcp").count(), 1, "the flow's own column otherwise");
        assert_eq!(web_columns(&grid).iter().filter(|c| *c == "tcp").count(), 1);
        let result = |variant: &str| RunResult {
            flows: vec![FlowMetrics { name: "file".into(), tcp: variant.into(), ..FlowMetrics::default() }],
            ..RunResult::default()
        };
        let mut t = Table::new(cols.clone());
        let values = [Cell::Str("ro".into()), Cell::Str("tahoe".into())];
        t.push_run(&values, 1, false, None, &result("tahoe")).unwrap();
        assert_eq!(t.rows[0].len(), cols.len());
        assert_eq!(t.get(&t.rows[0], "tcp"), &Cell::Str("tahoe".into()));
        assert_eq!(t.get(&t.rows[0], "flow"), &Cell::Str("file".into()));
        let e = t.push_run(&values, 1, false, None, &result("reno")).unwrap_err();
        assert!(e.contains("grid column `tcp` is tahoe but `file` ran reno"), "{e}");
    }

    #[test]
    fn mean_and_std() {
        let (m, s) = mean_std(&[1.0, 2.0, 3.0]);
        assert_eq!(m, 2.0);
        assert!((s - 1.0).abs() < 1e-12);
        assert_eq!(mean_std(&[5.0]), (5.0, 0.0));
    }
}
