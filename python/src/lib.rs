//! `lasthop._lasthop`, the native half of the `lasthop` Python package: scenarios (parsed and validated by
//! `lasthop-sim`), single runs and the rows of `results.csv`, and reproduction through the `lasthop` crate's
//! experiment machinery. Every run releases the GIL. Sweeps, the results store and Dask live in Python.

use lasthop::experiment::{apply_override, load_dir, RunnerKind};
use lasthop::reproduce::{choose, experiments_dir, run_experiments, ReproduceOptions};
use lasthop::runner::{RunRequest, Runner, ScenarioSource, SimRunner};
use lasthop::table::{self, Cell, Table};
use lasthop_sim::RunResult;
use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

create_exception!(
    _lasthop,
    ScenarioError,
    PyValueError,
    "A scenario that cannot be read or does not make sense. `origin`, `field` and `line` say where (the last two \
     are None when the message does not name them)."
);

/// A `ScenarioError` whose `field` and `line` are taken from the message, as the CLI prints it
/// (`` `links.wavelan.error.ber` (line 12): ... `` or a TOML parse error `at line 3, column 7`).
fn scenario_error(py: Python<'_>, origin: &str, message: &str) -> PyErr {
    let text = if message.starts_with(origin) { message.to_string() } else { format!("{origin}: {message}") };
    let err = ScenarioError::new_err(text.clone());
    let field = text.split('`').nth(1).map(str::to_string);
    let line = text.split("line ").skip(1).find_map(|rest| {
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.parse::<u64>().ok()
    });
    let value = err.value(py);
    // Setting attributes on a fresh exception instance cannot fail short of memory exhaustion.
    let _ = value.setattr("origin", origin);
    let _ = value.setattr("field", field);
    let _ = value.setattr("line", line);
    err
}

/// A simulator scenario: a TOML document (after any overrides), where it came from, and the folder relative
/// file names in it are taken from. Immutable: `set` and `with_seed` return a new scenario.
#[pyclass(module = "lasthop", name = "Scenario", frozen)]
#[derive(Clone)]
struct PyScenario {
    doc: toml::Value,
    origin: String,
    base_dir: PathBuf,
}

impl PyScenario {
    /// Checks the document as the simulator will read it.
    fn validated(self, py: Python<'_>) -> PyResult<PyScenario> {
        lasthop_sim::Scenario::from_toml_in(self.doc.clone(), &self.origin, &self.base_dir)
            .map_err(|e| scenario_error(py, &self.origin, &e.detail()))?;
        Ok(self)
    }

    /// Parses text with line numbers in errors; `base_dir` resolves relative file names.
    fn parse(py: Python<'_>, text: &str, origin: &str, base_dir: &Path) -> PyResult<PyScenario> {
        // `from_str` reports the offending field with its line; it takes relative names from the current
        // folder, so the scenario is checked again below against its own folder.
        lasthop_sim::Scenario::from_str(text, origin).map_err(|e| scenario_error(py, origin, &e.detail()))?;
        let doc: toml::Value = toml::from_str(text).map_err(|e| scenario_error(py, origin, &e.to_string()))?;
        PyScenario { doc, origin: origin.to_string(), base_dir: base_dir.to_path_buf() }.validated(py)
    }
}

#[pymethods]
impl PyScenario {
    /// A scenario from a TOML file (a path, `str` or `os.PathLike`) or from TOML text. Errors name the file,
    /// the field and its line.
    #[staticmethod]
    fn from_toml(py: Python<'_>, source: &Bound<'_, PyAny>) -> PyResult<PyScenario> {
        let is_path_like = !source.is_instance_of::<PyString>();
        let text: String =
            if is_path_like { source.call_method0("__fspath__")?.extract()? } else { source.extract()? };
        let looks_like_path = is_path_like || (!text.contains('\n') && !text.contains('='));
        if looks_like_path {
            let path = PathBuf::from(&text);
            let origin = path.display().to_string();
            let body = std::fs::read_to_string(&path)
                .map_err(|e| scenario_error(py, &origin, &format!("cannot read: {e}")))?;
            PyScenario::parse(py, &body, &origin, path.parent().unwrap_or(Path::new("")))
        } else {
            PyScenario::parse(py, &text, "<string>", Path::new(""))
        }
    }

    /// A scenario from nested dicts, lists and plain values, as TOML would read them.
    #[staticmethod]
    #[pyo3(signature = (doc, origin = "<dict>"))]
    fn from_dict(py: Python<'_>, doc: &Bound<'_, PyAny>, origin: &str) -> PyResult<PyScenario> {
        let doc = py_to_toml(doc, "")?;
        if !doc.is_table() {
            return Err(PyTypeError::new_err("a scenario is a dict of tables"));
        }
        PyScenario { doc, origin: origin.to_string(), base_dir: PathBuf::new() }.validated(py)
    }

    /// This scenario with `path` (dotted: `links.wavelan.error.ber`; `+path` adds a field left at its
    /// default) set to `value`, validated.
    fn set(&self, py: Python<'_>, path: &str, value: &Bound<'_, PyAny>) -> PyResult<PyScenario> {
        let value = py_to_toml(value, path)?;
        let mut doc = self.doc.clone();
        apply_override(&mut doc, path, &value)
            .map_err(|e| scenario_error(py, &self.origin, &format!("`{path}`: {e}")))?;
        PyScenario { doc, ..self.clone() }.validated(py)
    }

    /// This scenario with every `(path, value)` of `overrides` set in order, validated once at the end (so
    /// fields that only make sense together can change together).
    fn set_all(&self, py: Python<'_>, overrides: Vec<(String, Bound<'_, PyAny>)>) -> PyResult<PyScenario> {
        let mut doc = self.doc.clone();
        for (path, value) in &overrides {
            let value = py_to_toml(value, path)?;
            apply_override(&mut doc, path, &value)
                .map_err(|e| scenario_error(py, &self.origin, &format!("`{path}`: {e}")))?;
        }
        PyScenario { doc, ..self.clone() }.validated(py)
    }

    /// This scenario with another seed.
    fn with_seed(&self, py: Python<'_>, seed: u64) -> PyResult<PyScenario> {
        self.set(py, "+seed", &(seed as i64).into_pyobject(py)?.into_any())
    }

    /// The seed of every random stream (default 1).
    #[getter]
    fn seed(&self) -> u64 {
        self.doc.get("seed").and_then(toml::Value::as_integer).map_or(1, |s| s as u64)
    }

    #[getter]
    fn origin(&self) -> &str {
        &self.origin
    }

    #[getter]
    fn base_dir(&self) -> String {
        self.base_dir.display().to_string()
    }

    /// The document as TOML text (tables in key order: the same scenario always gives the same text).
    fn to_toml(&self) -> PyResult<String> {
        toml::to_string(&self.doc).map_err(|e| PyValueError::new_err(e.to_string()))
    }

    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        toml_to_py(py, &self.doc)
    }

    /// Rebuilds a scenario from `to_toml()`, origin and folder (pickling, worker processes).
    #[staticmethod]
    fn _restore(py: Python<'_>, text: &str, origin: &str, base_dir: &str) -> PyResult<PyScenario> {
        let doc: toml::Value = toml::from_str(text).map_err(|e| scenario_error(py, origin, &e.to_string()))?;
        Ok(PyScenario { doc, origin: origin.to_string(), base_dir: PathBuf::from(base_dir) })
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, (String, String, String))> {
        let me = slf.get();
        Ok((slf.get_type().getattr("_restore")?, (me.to_toml()?, me.origin.clone(), me.base_dir())))
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.downcast::<PyScenario>().is_ok_and(|o| o.get().doc == self.doc)
    }

    fn __repr__(&self) -> String {
        format!("Scenario(origin={:?}, seed={})", self.origin, self.seed())
    }
}

/// A Python value as TOML: bool, int, float, str, lists/tuples and dicts with string keys.
fn py_to_toml(v: &Bound<'_, PyAny>, at: &str) -> PyResult<toml::Value> {
    let where_ = if at.is_empty() { String::new() } else { format!(" at `{at}`") };
    if v.is_instance_of::<PyBool>() {
        return Ok(toml::Value::Boolean(v.extract()?));
    }
    if v.is_instance_of::<PyInt>() {
        return Ok(toml::Value::Integer(v.extract()?));
    }
    if v.is_instance_of::<PyFloat>() {
        return Ok(toml::Value::Float(v.extract()?));
    }
    if v.is_instance_of::<PyString>() {
        return Ok(toml::Value::String(v.extract()?));
    }
    if let Ok(d) = v.downcast::<PyDict>() {
        let mut t = toml::Table::new();
        for (k, x) in d.iter() {
            let k: String =
                k.extract().map_err(|_| PyTypeError::new_err(format!("dict keys must be strings{where_}")))?;
            let path = if at.is_empty() { k.clone() } else { format!("{at}.{k}") };
            t.insert(k, py_to_toml(&x, &path)?);
        }
        return Ok(toml::Value::Table(t));
    }
    if v.downcast::<PyList>().is_ok() || v.downcast::<PyTuple>().is_ok() {
        let items: Vec<Bound<'_, PyAny>> = v.try_iter()?.collect::<PyResult<_>>()?;
        return items.iter().map(|x| py_to_toml(x, at)).collect::<PyResult<_>>().map(toml::Value::Array);
    }
    // numpy scalars and the like: ask for a plain value
    if let Ok(item) = v.call_method0("item") {
        if !item.is(v) {
            return py_to_toml(&item, at);
        }
    }
    Err(PyTypeError::new_err(format!("{} has no TOML form{where_}", v.get_type().name()?)))
}

fn toml_to_py<'py>(py: Python<'py>, v: &toml::Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        toml::Value::String(s) => s.into_pyobject(py)?.into_any(),
        toml::Value::Integer(i) => i.into_pyobject(py)?.into_any(),
        toml::Value::Float(f) => f.into_pyobject(py)?.into_any(),
        toml::Value::Boolean(b) => b.into_pyobject(py)?.to_owned().into_any(),
        toml::Value::Datetime(d) => d.to_string().into_pyobject(py)?.into_any(),
        toml::Value::Array(a) => {
            PyList::new(py, a.iter().map(|x| toml_to_py(py, x)).collect::<PyResult<Vec<_>>>()?)?.into_any()
        }
        toml::Value::Table(t) => {
            let d = PyDict::new(py);
            for (k, x) in t {
                d.set_item(k, toml_to_py(py, x)?)?;
            }
            d.into_any()
        }
    })
}

fn cell_to_py<'py>(py: Python<'py>, c: &Cell) -> PyResult<Bound<'py, PyAny>> {
    Ok(match c {
        Cell::Int(i) => i.into_pyobject(py)?.into_any(),
        Cell::Float(f) => f.into_pyobject(py)?.into_any(),
        Cell::Bool(b) => b.into_pyobject(py)?.to_owned().into_any(),
        Cell::Str(s) => s.into_pyobject(py)?.into_any(),
        Cell::Empty => py.None().into_bound(py),
    })
}

/// One run in a form that crosses process boundaries: the scenario's TOML text, origin, folder, seed.
type Job = (String, String, String, u64);

fn run_job(job: &Job, trace: bool) -> Result<RunResult, String> {
    let (text, origin, base_dir, seed) = job;
    let doc: toml::Value = toml::from_str(text).map_err(|e| format!("{origin}: {e}"))?;
    let req = RunRequest {
        scenario: ScenarioSource::Value { value: &doc, origin, base_dir: Path::new(base_dir) },
        seed: Some(*seed),
        trace,
        pcap_dir: None,
    };
    match std::panic::catch_unwind(|| SimRunner.run(&req)) {
        Ok(r) => r.map_err(|e| format!("{e:#}")),
        Err(p) => Err(format!(
            "panicked: {}",
            p.downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_default()
        )),
    }
}

/// Plays one scenario (GIL released) and returns its metrics as JSON (`metrics.json`'s content).
#[pyfunction]
#[pyo3(signature = (scenario, seed = None, trace = false))]
fn run_json(py: Python<'_>, scenario: &PyScenario, seed: Option<u64>, trace: bool) -> PyResult<String> {
    let s = scenario.clone();
    let result = py.allow_threads(move || -> Result<String, String> {
        let req = RunRequest {
            scenario: ScenarioSource::Value { value: &s.doc, origin: &s.origin, base_dir: &s.base_dir },
            seed,
            trace,
            pcap_dir: None,
        };
        let r = SimRunner.run(&req).map_err(|e| format!("{e:#}"))?;
        serde_json::to_string(&r).map_err(|e| e.to_string())
    });
    result.map_err(PyRuntimeError::new_err)
}

/// The columns after `seed` of a results row: `"flow"` rows ([`table::FLOW_COLUMNS`]) or `"web"` rows
/// ([`table::WEB_COLUMNS`]), the workloads' rows of `lasthop_sim::row_columns`, then [`table::RUN_COLUMNS`]
/// and the columns of the protocol families every row has (`lasthop_sim::result_columns`: mobility's).
#[pyfunction]
fn metric_columns(kind: &str) -> PyResult<Vec<String>> {
    let cols = match kind {
        "flow" => table::columns(&[]),
        "web" => table::web_columns(&[]),
        other => return Err(PyValueError::new_err(format!("row kind `{other}`: expected \"flow\" or \"web\""))),
    };
    Ok(cols.into_iter().skip(1).collect())
}

/// Runs these jobs one after another (GIL released) and returns, per job, `("flow" | "web", cells after
/// the seed)` as `results.csv` has them, or `("error", message)`. `flow` picks the flow or web workload
/// (default: the first flow, else the first web workload).
#[pyfunction]
#[pyo3(signature = (jobs, flow = None))]
fn run_rows<'py>(py: Python<'py>, jobs: Vec<Job>, flow: Option<String>) -> PyResult<Bound<'py, PyList>> {
    let rows: Vec<Result<(&'static str, Vec<Cell>), String>> = py.allow_threads(|| {
        jobs.iter()
            .map(|job| {
                let r = run_job(job, false)?;
                let web = match flow.as_deref() {
                    Some(name) => !r.flows.iter().any(|f| f.name == name) && r.families.web.iter().any(|w| w.name == name),
                    None => r.flows.is_empty() && !r.families.web.is_empty(),
                };
                let (kind, cols) = if web { ("web", table::web_columns(&[])) } else { ("flow", table::columns(&[])) };
                let mut t = Table::new(cols);
                t.push_run(&[], job.3, web, flow.as_deref(), &r).map_err(|e| format!("{}: {e}", job.1))?;
                let row = t.rows.pop().unwrap_or_default();
                Ok((kind, row.into_iter().skip(1).collect()))
            })
            .collect()
    });
    let out = PyList::empty(py);
    for r in rows {
        match r {
            Ok((kind, cells)) => {
                let cells = cells.iter().map(|c| cell_to_py(py, c)).collect::<PyResult<Vec<_>>>()?;
                out.append((kind, PyList::new(py, cells)?))?;
            }
            Err(e) => out.append(("error", e))?,
        }
    }
    Ok(out)
}

/// Runs these jobs (GIL released) and returns, per job, `(True, metrics JSON)` or `(False, error)`: what a
/// Dask worker sends back for `reproduce`.
#[pyfunction]
fn run_results(py: Python<'_>, jobs: Vec<(Job, bool)>) -> Vec<(bool, String)> {
    py.allow_threads(|| {
        jobs.iter()
            .map(|(job, trace)| {
                match run_job(job, *trace).and_then(|r| serde_json::to_string(&r).map_err(|e| e.to_string())) {
                    Ok(json) => (true, json),
                    Err(e) => (false, e),
                }
            })
            .collect()
    })
}

fn dir_or_default(dir: Option<PathBuf>) -> PathBuf {
    experiments_dir(dir.as_deref())
}

/// Every experiment file: id, default, paper, title, runner, file, grid columns, runs (full and quick).
#[pyfunction]
#[pyo3(signature = (experiments = None))]
fn experiments<'py>(py: Python<'py>, experiments: Option<PathBuf>) -> PyResult<Bound<'py, PyList>> {
    let dir = dir_or_default(experiments);
    let all = load_dir(&dir).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let out = PyList::empty(py);
    for e in all {
        let d = PyDict::new(py);
        d.set_item("id", &e.id)?;
        d.set_item("default", e.default)?;
        d.set_item("paper", &e.paper)?;
        d.set_item("title", &e.title)?;
        let runner = match e.runner {
            RunnerKind::Sim => "sim",
            RunnerKind::Testbed => "testbed",
            RunnerKind::Scale => "scale",
            RunnerKind::Twin => "twin",
        };
        d.set_item("runner", runner)?;
        d.set_item("file", e.file.display().to_string())?;
        d.set_item("grid", e.grid_columns())?;
        for (key, quick) in [("runs", false), ("quick_runs", true)] {
            let points = e.points(quick).map(|p| p.len()).unwrap_or(0);
            d.set_item(key, points * e.seed_list(quick).len())?;
        }
        out.append(d)?;
    }
    Ok(out)
}

/// The simulator runs `reproduce` would make for these experiments, in its order (experiment, grid point,
/// seed): `((scenario text, origin, folder, seed), trace)`. Testbed experiments are left out (they run where
/// the base station is), and so are scale experiments (each run is a child process measured alone).
#[pyfunction]
#[pyo3(signature = (ids, quick, experiments = None))]
fn plan(ids: Vec<String>, quick: bool, experiments: Option<PathBuf>) -> PyResult<Vec<(Job, bool)>> {
    let dir = dir_or_default(experiments);
    let all = load_dir(&dir).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let chosen = choose(all, &ids).map_err(|e| PyValueError::new_err(format!("{e:#}")))?;
    let mut jobs = Vec::new();
    for exp in chosen.iter().filter(|e| e.runner == RunnerKind::Sim) {
        let points = exp.points(quick).map_err(|e| PyValueError::new_err(format!("{}: {e}", exp.file.display())))?;
        let base_dir = exp.scenario_file.parent().unwrap_or(Path::new("")).display().to_string();
        for point in &points {
            let text = toml::to_string(&point.scenario).map_err(|e| PyValueError::new_err(e.to_string()))?;
            let origin = format!("{} [{}]", exp.file.display(), exp.point_label(point));
            for seed in exp.seed_list(quick) {
                let trace = exp.figure.traces(seed);
                jobs.push(((text.clone(), origin.clone(), base_dir.clone(), seed), trace));
            }
        }
    }
    Ok(jobs)
}

/// Results made elsewhere (a Dask cluster), handed to `reproduce` by (origin, seed, trace); a request whose
/// scenario differs from the one that was run, or that is missing, runs here.
struct Precomputed {
    results: HashMap<(String, u64, bool), (toml::Value, RunResult)>,
    used: AtomicUsize,
    ran_here: Mutex<Vec<String>>,
}

impl Runner for Precomputed {
    fn run(&self, req: &RunRequest<'_>) -> anyhow::Result<RunResult> {
        if let (ScenarioSource::Value { value, origin, .. }, Some(seed)) = (req.scenario, req.seed) {
            if let Some((doc, r)) = self.results.get(&(origin.to_string(), seed, req.trace)) {
                if doc == value && req.pcap_dir.is_none() {
                    self.used.fetch_add(1, Ordering::Relaxed);
                    return Ok(r.clone());
                }
            }
            if let Ok(mut v) = self.ran_here.lock() {
                v.push(format!("{origin} seed {seed}"));
            }
        }
        SimRunner.run(req)
    }
}

/// Runs experiments and writes everything `lasthop reproduce` writes under `out` (GIL released). Results in
/// `precomputed` (`[((text, origin, folder, seed), trace, ok, metrics JSON or error)]`) are used instead
/// of running; failed ones are failed runs. Returns the summary: per experiment its id, title, paper, runs,
/// failed runs, folder and claims; plus how many precomputed results were used and which runs ran here.
#[pyfunction]
#[pyo3(signature = (ids, quick, out, jobs, experiments = None, progress = false, precomputed = None))]
#[allow(clippy::too_many_arguments)]
fn reproduce<'py>(
    py: Python<'py>,
    ids: Vec<String>,
    quick: bool,
    out: PathBuf,
    jobs: usize,
    experiments: Option<PathBuf>,
    progress: bool,
    precomputed: Option<Vec<(Job, bool, bool, String)>>,
) -> PyResult<Bound<'py, PyDict>> {
    let mut results = HashMap::new();
    let mut failed: HashMap<(String, u64, bool), String> = HashMap::new();
    for ((text, origin, _, seed), trace, ok, payload) in precomputed.unwrap_or_default() {
        let key = (origin, seed, trace);
        if !ok {
            failed.insert(key, payload);
            continue;
        }
        let doc: toml::Value = toml::from_str(&text).map_err(|e| PyValueError::new_err(e.to_string()))?;
        let r: RunResult =
            serde_json::from_str(&payload).map_err(|e| PyValueError::new_err(format!("metrics: {e}")))?;
        results.insert(key, (doc, r));
    }
    let runner = Precomputed { results, used: AtomicUsize::new(0), ran_here: Mutex::new(Vec::new()) };
    // A run that failed on a worker fails here too, with the worker's message.
    let failing = |req: &RunRequest<'_>| -> anyhow::Result<RunResult> {
        if let (ScenarioSource::Value { origin, .. }, Some(seed)) = (req.scenario, req.seed) {
            if let Some(e) = failed.get(&(origin.to_string(), seed, req.trace)) {
                anyhow::bail!("{e}");
            }
        }
        runner.run(req)
    };
    let opts =
        ReproduceOptions { ids, quick, jobs: jobs.max(1), out, experiments_dir: dir_or_default(experiments), progress };
    let summary = py
        .allow_threads(|| {
            let all = load_dir(&opts.experiments_dir)?;
            let chosen = choose(all, &opts.ids)?;
            run_experiments(chosen, &opts, &failing)
        })
        .map_err(|e| PyRuntimeError::new_err(format!("{e:#}")))?;

    let d = PyDict::new(py);
    let exps = PyList::empty(py);
    for e in &summary.experiments {
        let x = PyDict::new(py);
        x.set_item("id", &e.id)?;
        x.set_item("title", &e.title)?;
        x.set_item("paper", &e.paper)?;
        x.set_item("runs", e.runs)?;
        x.set_item("failed_runs", &e.failed_runs)?;
        x.set_item("dir", e.dir.display().to_string())?;
        let claims = PyList::empty(py);
        for (text, paper, o) in &e.claims {
            let c = PyDict::new(py);
            c.set_item("text", text)?;
            c.set_item("paper", paper)?;
            c.set_item("holds", o.holds)?;
            c.set_item("expected", if o.expect.holds() { "holds" } else { "fails" })?;
            c.set_item("why", o.expect.why())?;
            c.set_item("as_recorded", o.as_expected())?;
            c.set_item("ours", &o.ours)?;
            c.set_item("required", &o.required)?;
            claims.append(c)?;
        }
        x.set_item("claims", claims)?;
        exps.append(x)?;
    }
    d.set_item("experiments", exps)?;
    d.set_item("summary", opts.out.join("summary.md").display().to_string())?;
    d.set_item("precomputed_used", runner.used.load(Ordering::Relaxed))?;
    d.set_item("ran_here", runner.ran_here.lock().map(|v| v.clone()).unwrap_or_default())?;
    Ok(d)
}

/// The version of the Rust crates this module was built from (part of every results-store key).
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

#[pymodule]
fn _lasthop(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyScenario>()?;
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add_function(wrap_pyfunction!(run_json, m)?)?;
    m.add_function(wrap_pyfunction!(metric_columns, m)?)?;
    m.add_function(wrap_pyfunction!(run_rows, m)?)?;
    m.add_function(wrap_pyfunction!(run_results, m)?)?;
    m.add_function(wrap_pyfunction!(experiments, m)?)?;
    m.add_function(wrap_pyfunction!(plan, m)?)?;
    m.add_function(wrap_pyfunction!(reproduce, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    Ok(())
}
