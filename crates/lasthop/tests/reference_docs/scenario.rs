//! The scenario pages (`scenario.md`, `scenario/*.md`) and `error-models.md` against the simulator's
//! scenario types. For every table a page documents (`<!-- fields: TABLE -->`):
//!
//! - the fields it lists are exactly the ones the code accepts: a field the code does not know is refused
//!   with serde's "unknown field …, expected one of …" (every scenario type denies unknown fields), which
//!   lists the accepted ones;
//! - each default written as a plain TOML value (`` `600` ``) gives, set explicitly, the same scenario as
//!   the field left out: the name and the default are both right.
//!
//! The CDF files of the empirical channel are checked the same way; loss traces (a line format of their
//! own, marked `<!-- keys: trace-file -->`) for their keys.

use crate::markdown::{
    check_table, code_spans, compare, expected_names, literal, marked_tables, page, set, MarkedTable,
};
use lasthop_agents::eln::ElnRole;
use lasthop_sim::channel::{parse_cdfs, parse_trace};
use lasthop_sim::Scenario;

/// A small static topology: a wired host, a base station and a mobile, one bulk flow.
const STATIC: &str = r#"
[nodes.fh]
addr = "10.0.0.1"
[nodes.bs]
addr = "10.0.0.2"
[nodes.mh]
addr = "10.0.0.3"
[links.ether]
ends = ["fh", "bs"]
kind = "wired"
rate_mbps = 10.0
[links.wavelan]
ends = ["bs", "mh"]
kind = "wireless"
rate_mbps = 2.0
[flows.bulk]
from = "fh"
to = "mh"
bytes = 100000
"#;

/// A Web workload on [`STATIC`]: its default browsing time (1000 s) must end within the time limit.
const WEB: &str = "[web.browse]\nclient = \"mh\"\nserver = \"fh\"";

/// Two cells under a home agent, for `[mobility]`.
const CELLS: &str = r#"
[nodes.fh]
addr = "10.0.0.1"
[nodes.ha]
addr = "10.0.0.2"
[nodes.bs1]
addr = "10.0.1.1"
[nodes.bs2]
addr = "10.0.2.1"
[nodes.mh]
addr = "10.0.3.1"
[links.fh-ha]
ends = ["fh", "ha"]
kind = "wired"
rate_mbps = 10.0
[links.ha-bs1]
ends = ["ha", "bs1"]
kind = "wired"
rate_mbps = 10.0
[links.ha-bs2]
ends = ["ha", "bs2"]
kind = "wired"
rate_mbps = 10.0
[links.cell1]
ends = ["bs1", "mh"]
kind = "wireless"
rate_mbps = 2.0
[links.cell2]
ends = ["bs2", "mh"]
kind = "wireless"
rate_mbps = 2.0
[flows.bulk]
from = "fh"
to = "mh"
bytes = 100000
[mobility]
mobile = "mh"
home_agent = "ha"
base_stations = ["bs1", "bs2"]
"#;

/// Eom 2002's Fig. 4 reduced to what `[mobile_ip]` requires.
const MOBILE_IP: &str = r#"
[nodes.ch]
addr = "10.9.0.1"
[nodes.chr]
addr = "10.9.0.254"
[nodes.ha]
addr = "10.1.0.1"
[nodes.fa1]
addr = "10.2.0.1"
[nodes.bs1]
addr = "10.2.0.2"
[nodes.fa2]
addr = "10.3.0.1"
[nodes.bs2]
addr = "10.3.0.2"
[nodes.mh]
addr = "10.1.0.9"
[links.ch-access]
ends = ["ch", "chr"]
kind = "wired"
rate_mbps = 1000.0
[links.ch-ha]
ends = ["chr", "ha"]
kind = "wired"
rate_mbps = 100.0
[links.ha-fa1]
ends = ["ha", "fa1"]
kind = "wired"
rate_mbps = 100.0
[links.ha-fa2]
ends = ["ha", "fa2"]
kind = "wired"
rate_mbps = 100.0
[links.fa1-bs1]
ends = ["fa1", "bs1"]
kind = "wired"
rate_mbps = 10.0
[links.fa2-bs2]
ends = ["fa2", "bs2"]
kind = "wired"
rate_mbps = 10.0
[links.air1]
ends = ["bs1", "mh"]
kind = "wireless"
rate_mbps = 1.6
[links.air2]
ends = ["bs2", "mh"]
kind = "wireless"
rate_mbps = 1.6
[flows.bulk]
from = "ch"
to = "mh"
bytes = 100000
[mobile_ip]
correspondent = "ch"
home_agent = "ha"
mobile = "mh"
cells = [{ foreign_agent = "fa1", base_station = "bs1" }, { foreign_agent = "fa2", base_station = "bs2" }]
"#;

/// A CDF file with only what is required.
const CDFS: &str = r#"
[error_free]
values_s = [0.008, 0.4]
cdf = [0.5, 1.0]
[error]
values_s = [0.008]
cdf = [1.0]
"#;

/// How one documented table is tried: a base document, where in it the table's fields go, and how the
/// document is read (to a fingerprint that is equal for equal meaning, or the reader's error).
struct Harness {
    base: String,
    at: &'static str,
    read: fn(&toml::Value) -> Result<String, String>,
}

/// The harness of each table the pages document, by the name its marker gives.
fn harness(table: &str) -> Option<Harness> {
    let scenario = |base: &str, extra: &str, at| Harness { base: format!("{base}\n{extra}"), at, read: read_scenario };
    let error = |fields: &str| scenario(STATIC, &format!("[links.wavelan.error]\n{fields}"), "links.wavelan.error");
    Some(match table {
        "" => scenario(STATIC, "", ""),
        "nodes.NAME" => scenario(STATIC, "", "nodes.bs"),
        "links.NAME" => scenario(STATIC, "", "links.wavelan"),
        "links.NAME.arq" => scenario(STATIC, "[links.wavelan.arq]", "links.wavelan.arq"),
        "links.NAME.error model=ber" => error("model = \"ber\"\nber = 1e-6"),
        "links.NAME.error model=packet" => error("model = \"packet\"\nloss = 0.01"),
        "links.NAME.error model=burst" => error("model = \"burst\"\nber = 1e-6\nframes = 2"),
        "links.NAME.error model=markov" => {
            error("model = \"markov\"\ngood_ber = 1e-6\nbad_ber = 1e-4\nmean_good_s = 1.0\nmean_bad_s = 0.1")
        }
        "links.NAME.error model=empirical" => error("model = \"empirical\"\nbuiltin = \"reinas\""),
        "flows.NAME" => scenario(STATIC, "", "flows.bulk"),
        "web.NAME" => scenario(&format!("time_limit_s = 2000\n{STATIC}"), WEB, "web.browse"),
        "tcp" => scenario(STATIC, "", "tcp"),
        "snoop" => scenario(STATIC, "", "snoop"),
        "eln" => scenario(STATIC, "", "eln"),
        "nack" => scenario(STATIC, "", "nack"),
        "split" => scenario(STATIC, "", "split"),
        "split.handoff" => scenario(STATIC, "", "split.handoff"),
        "failure" => scenario(STATIC, "[failure]\nnode = \"bs\"\nat_s = 1.0", "failure"),
        // The table is consumed by the expansion: `total_bytes` makes `min_flow_bytes` show in the copies.
        "scale" => scenario(STATIC, "[scale]\ncount = 2\ntotal_bytes = 2000", "scale"),
        "mobility" => scenario(CELLS, "", "mobility"),
        "mobile_ip" => scenario(MOBILE_IP, "", "mobile_ip"),
        "mobile_ip.cells" => scenario(MOBILE_IP, "", "mobile_ip.cells.0"),
        "cdf-file" => Harness { base: CDFS.into(), at: "", read: read_cdfs },
        "cdf-file.error_free" => Harness { base: CDFS.into(), at: "error_free", read: read_cdfs },
        _ => return None,
    })
}

/// A scenario's meaning, as text: its parsed form with each default that the types keep as "absent"
/// (an `Option`, a raw `[tcp]` table) replaced by the value in force, so that a field set to its default
/// reads the same as the field left out.
fn read_scenario(doc: &toml::Value) -> Result<String, String> {
    let mut s = Scenario::from_toml(doc.clone(), "scenario").map_err(|e| e.to_string())?;
    let tcp = |c: lasthop_tcp::TcpConfig| {
        let behaviours = c.behaviours();
        let c = lasthop_tcp::TcpConfig {
            limited_transmit: None,
            ssthresh_from: None,
            recover_guard: None,
            quick_acks: None,
            rto_backoff_reset: None,
            rto_restart: None,
            ack_rules: None,
            prr: None,
            rack_tlp: None,
            count_acked_segments: None,
            ..c
        };
        format!("{c:?} {behaviours:?}")
    };
    let mut resolved = Vec::new();
    for name in s.flows.keys() {
        resolved.push(tcp(s.flow_tcp(name)?));
    }
    for name in s.web.keys() {
        resolved.push(tcp(s.web_tcp(name)?));
    }
    resolved.push(format!("{:?}", s.snoop.config()));
    resolved.push(format!("{:?}", s.eln.config(ElnRole::Mark)));
    resolved.push(format!("{:?}", s.nack.config()));
    s.tcp.clear();
    s.flows.values_mut().for_each(|f| f.tcp.clear());
    s.web.values_mut().for_each(|w| w.tcp.clear());
    s.snoop = Default::default();
    s.eln = Default::default();
    s.nack = Default::default();
    for l in s.links.values_mut() {
        l.duplex = Some(l.duplex());
        l.access = Some(l.access());
    }
    Ok(format!("{s:?}\n{}", resolved.join("\n")))
}

fn read_cdfs(doc: &toml::Value) -> Result<String, String> {
    let text = toml::to_string(doc).map_err(|e| e.to_string())?;
    parse_cdfs(&text, "cdfs.toml").map(|c| format!("{c:?}")).map_err(|e| e.to_string())
}

/// Everything wrong with one documented table, as messages.
fn check(page_name: &str, table: &MarkedTable) -> Vec<String> {
    let place = format!("{page_name}:{} `{}`", table.line, table.arg);
    let Some(h) = harness(&table.arg) else {
        return vec![format!("{place}: no harness for this table; add one to reference_docs/scenario.rs")];
    };
    let base: toml::Value = toml::from_str(&h.base).expect("harness base");
    check_table(&place, &base, h.at, h.read, table)
}

/// The scenario's reference pages, with every table they document.
fn pages() -> Vec<(String, Vec<MarkedTable>)> {
    let dir = crate::markdown::repo().join("docs/src/reference/scenario");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| format!("scenario/{}", e.unwrap().file_name().to_string_lossy()))
        .collect();
    names.sort();
    names.insert(0, "scenario.md".into());
    names.push("error-models.md".into());
    names.into_iter().map(|n| (n.clone(), marked_tables(&page(&n), "fields"))).collect()
}

#[test]
fn every_scenario_field_is_documented_with_its_default() {
    let pages = pages();
    let mut problems: Vec<String> =
        pages.iter().flat_map(|(name, tables)| tables.iter().flat_map(move |t| check(name, t))).collect();
    let documented: Vec<&str> = pages.iter().flat_map(|(_, t)| t.iter().map(|t| t.arg.as_str())).collect();
    for table in HARNESSED {
        if !documented.contains(table) {
            problems.push(format!("table `{table}` is documented on no page"));
        }
    }
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
}

/// Every table with a harness, so that a page dropped (or a marker misspelt) is noticed.
const HARNESSED: &[&str] = &[
    "",
    "nodes.NAME",
    "links.NAME",
    "links.NAME.arq",
    "links.NAME.error model=ber",
    "links.NAME.error model=packet",
    "links.NAME.error model=burst",
    "links.NAME.error model=markov",
    "links.NAME.error model=empirical",
    "flows.NAME",
    "web.NAME",
    "tcp",
    "snoop",
    "eln",
    "nack",
    "split",
    "split.handoff",
    "failure",
    "scale",
    "mobility",
    "mobile_ip",
    "mobile_ip.cells",
    "cdf-file",
    "cdf-file.error_free",
];

/// The `model` row (marked `<!-- kinds: links.NAME.error -->`) lists every kind, each kind has its table,
/// and the default kind is the error-free channel.
#[test]
fn every_error_model_kind_is_documented() {
    let text = page("error-models.md");
    let with_tables: Vec<String> = marked_tables(&text, "fields")
        .iter()
        .filter_map(|t| t.arg.strip_prefix("links.NAME.error model=").map(str::to_string))
        .chain(["none".to_string()])
        .collect();
    let [kinds] = marked_tables(&text, "kinds").try_into().expect("one table marked `kinds`");
    let model = &kinds.rows[0];
    assert_eq!(kinds.names(), ["model"]);
    let listed: Vec<String> = code_spans(&model[3]).iter().map(|s| s.trim_matches('"').to_string()).collect();
    let base: toml::Value = toml::from_str(STATIC).unwrap();
    let mut probe = base.clone();
    set(&mut probe, "links.wavelan.error", "model", toml::Value::String("zz_not_a_model".into()));
    let e = read_scenario(&probe).unwrap_err();
    let accepted = expected_names(&e).unwrap_or_else(|| panic!("no list of models in: {e}"));
    let mut problems: Vec<String> = compare("kinds with a table of their own", &with_tables, &accepted)
        .into_iter()
        .chain(compare("kinds in the `model` row", &listed, &accepted))
        .collect();
    let mut with = base.clone();
    set(&mut with, "links.wavelan.error", "model", literal(&model[2]).expect("a plain default"));
    if read_scenario(&with) != read_scenario(&base) {
        problems.push(format!("`model = {}` is not the default", model[2]));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_trace_file_key_is_documented() {
    let [table] = marked_tables(&page("error-models.md"), "keys").try_into().expect("one table marked `keys`");
    assert_eq!(table.arg, "trace-file");
    let e = parse_trace("rate_mbps = 1\npacket_bytes = 1000\nzz_not_a_key = 1\n1\n", "t").unwrap_err().to_string();
    let accepted = expected_names(&e).unwrap_or_else(|| panic!("no list of keys in: {e}"));
    if let Some(p) = compare("trace-file", &table.names(), &accepted) {
        panic!("{p}");
    }
}
