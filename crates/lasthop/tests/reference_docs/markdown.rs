//! Reading the reference pages (the tables marked `<!-- fields: TABLE -->` or another marker word, the code
//! spans in their cells) and trying what they say on TOML documents.

use std::path::PathBuf;

/// The repository's root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The text of a page under `docs/src/reference/`.
pub fn page(name: &str) -> String {
    let path = repo().join("docs/src/reference").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A markdown table introduced by `<!-- MARKER: ARG -->` on the line before it.
#[derive(Debug)]
pub struct MarkedTable {
    /// What the marker names (a TOML table path, a list of columns…); may be empty.
    pub arg: String,
    /// Each body row's cells, trimmed; the header and the separator row are left out.
    pub rows: Vec<Vec<String>>,
    /// 1-based line of the marker, for messages.
    pub line: usize,
}

impl MarkedTable {
    /// The name in each row's first cell (its only code span).
    pub fn names(&self) -> Vec<String> {
        self.rows.iter().map(|r| first_name(&r[0])).collect()
    }
}

/// Every table of `text` introduced by `<!-- marker: ... -->`.
pub fn marked_tables(text: &str, marker: &str) -> Vec<MarkedTable> {
    let lines: Vec<&str> = text.lines().collect();
    let open = format!("<!-- {marker}:");
    let mut tables = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(rest) = line.trim().strip_prefix(&open) else { continue };
        let arg = rest.trim_end_matches("-->").trim().to_string();
        let body = lines[i + 1..].iter().take_while(|l| l.trim_start().starts_with('|'));
        let rows: Vec<Vec<String>> = body.skip(2).map(|l| cells(l)).collect();
        assert!(!rows.is_empty(), "line {}: `{line}` is not followed by a table", i + 1);
        tables.push(MarkedTable { arg, rows, line: i + 1 });
    }
    tables
}

/// The cells of a table row `| a | b |`, trimmed (`\|` is a pipe inside a cell).
pub fn cells(row: &str) -> Vec<String> {
    let row = row.trim().trim_start_matches('|');
    let row = row.strip_suffix('|').unwrap_or(row);
    let mut cells = vec![String::new()];
    let mut chars = row.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => cells.last_mut().unwrap().push(chars.next().unwrap()),
            '|' => cells.push(String::new()),
            c => cells.last_mut().unwrap().push(c),
        }
    }
    cells.iter().map(|c| c.trim().to_string()).collect()
}

/// The code spans of a cell: "`a` or `b`" gives ["a", "b"].
pub fn code_spans(cell: &str) -> Vec<String> {
    cell.split('`').skip(1).step_by(2).map(str::to_string).collect()
}

/// The name a row documents: its first cell's one code span.
fn first_name(cell: &str) -> String {
    match code_spans(cell).as_slice() {
        [one] if cell == format!("`{one}`") => one.clone(),
        _ => panic!("expected a first cell holding one name in backticks, got `{cell}`"),
    }
}

/// The names a parser says it expected after an unknown one: serde's "expected one of `a`, `b`" (or
/// "expected `a`", "there are no fields"), or a hand-written "expected a, b or c".
pub fn expected_names(message: &str) -> Option<Vec<String>> {
    if message.contains("there are no fields") {
        return Some(Vec::new());
    }
    let at = message.find("expected")?;
    let rest = &message[at + "expected".len()..];
    let rest = rest.split([')', '\n']).next().unwrap_or(rest);
    let quoted = code_spans(rest);
    if !quoted.is_empty() {
        return Some(quoted);
    }
    let words = rest.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'));
    Some(words.filter(|w| !w.is_empty() && !["or", "one", "of"].contains(w)).map(str::to_string).collect())
}

/// Sets `value` at the dotted path `at` + `key` of `doc`, creating tables on the way (a number in the path
/// indexes an array).
pub fn set(doc: &mut toml::Value, at: &str, key: &str, value: toml::Value) {
    let mut here = doc;
    for part in at.split('.').filter(|p| !p.is_empty()) {
        here = match (part.parse::<usize>(), here) {
            (Ok(i), toml::Value::Array(a)) => &mut a[i],
            (_, toml::Value::Table(t)) => t.entry(part).or_insert_with(|| toml::Value::Table(Default::default())),
            (_, other) => panic!("`{part}` of `{at}` is not a table: {other}"),
        };
    }
    here.as_table_mut().unwrap_or_else(|| panic!("`{at}` is not a table")).insert(key.to_string(), value);
}

/// A default cell that is a plain TOML value: exactly one code span and nothing else.
pub fn literal(cell: &str) -> Option<toml::Value> {
    let [one] = code_spans(cell).try_into().ok()?;
    if cell != format!("`{one}`") {
        return None;
    }
    let mut t: toml::Table = toml::from_str(&format!("v = {one}")).ok()?;
    t.remove("v")
}

/// Everything wrong with one documented table of a TOML format, as messages: `read` turns a document into
/// a fingerprint (equal for equal meaning) or the reader's error; `base` is a valid document and `at` the
/// dotted path in it where the table's keys go.
///
/// - The keys the table lists must be the ones the reader accepts: a key it does not know is refused with
///   "unknown field …, expected one of …", which lists them.
/// - Each default written as a plain TOML value must, set explicitly, read the same as the key left out.
pub fn check_table(
    place: &str,
    base: &toml::Value,
    at: &str,
    read: fn(&toml::Value) -> Result<String, String>,
    table: &MarkedTable,
) -> Vec<String> {
    let without = match read(base) {
        Ok(f) => f,
        Err(e) => return vec![format!("{place}: the base document does not load: {e}")],
    };
    let mut problems = Vec::new();
    let mut probe = base.clone();
    set(&mut probe, at, "zz_not_a_field", toml::Value::Integer(1));
    match read(&probe) {
        Ok(_) => problems.push(format!("{place}: an unknown field is accepted (no deny_unknown_fields?)")),
        Err(e) => match expected_names(&e) {
            Some(accepted) => problems.extend(compare(place, &table.names(), &accepted)),
            None => problems.push(format!("{place}: the error does not list the expected fields: {e}")),
        },
    }
    for (row, field) in table.rows.iter().zip(table.names()) {
        let default = &row[2];
        let Some(value) = literal(default) else { continue };
        let mut with = base.clone();
        set(&mut with, at, &field, value.clone());
        match read(&with) {
            Ok(f) if f == without => {}
            Ok(_) => problems.push(format!("{place}: `{field} = {value}` is not the default")),
            Err(e) => problems.push(format!("{place}: `{field} = {value}` is refused: {e}")),
        }
    }
    problems
}

/// What is in one set and not the other, as a readable complaint (None when they agree).
pub fn compare(what: &str, documented: &[String], in_code: &[String]) -> Option<String> {
    let missing: Vec<&String> = in_code.iter().filter(|n| !documented.contains(n)).collect();
    let stale: Vec<&String> = documented.iter().filter(|n| !in_code.contains(n)).collect();
    if missing.is_empty() && stale.is_empty() {
        return None;
    }
    Some(format!("{what}: in the code but not documented: {missing:?}; documented but not in the code: {stale:?}"))
}

#[test]
fn cells_split_on_unescaped_pipes_and_names_come_from_code_spans() {
    assert_eq!(cells("| `a` | x \\| y | `\"b\"` |"), ["`a`", "x | y", "`\"b\"`"]);
    assert_eq!(code_spans("`\"half\"`, `\"full\"`"), ["\"half\"", "\"full\""]);
    let serde = "unknown field `zz`, expected one of `seed`, `time_limit_s`";
    assert_eq!(expected_names(serde).unwrap(), ["seed", "time_limit_s"]);
    let hand = "t:3: zz: unknown key (expected rate_mbps, packet_bytes or source)";
    assert_eq!(expected_names(hand).unwrap(), ["rate_mbps", "packet_bytes", "source"]);
    assert_eq!(expected_names("unknown field `zz`, there are no fields").unwrap(), Vec::<String>::new());
    let page = "<!-- fields: a.b -->\n| field | x |\n|---|---|\n| `f` | 1 |\n\nafter\n";
    let t = marked_tables(page, "fields");
    assert_eq!((t.len(), t[0].arg.as_str(), t[0].names()), (1, "a.b", vec!["f".to_string()]));
}
