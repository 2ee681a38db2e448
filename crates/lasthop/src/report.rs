//! Markdown reports: one per experiment (`DIR/ID/report.md`) and a summary (`DIR/summary.md`).

use crate::claims::{Cond, Filter, Outcome};
use crate::experiment::{Experiment, Point};
use crate::reproduce::{ExperimentOutcome, Summary};
use crate::table::{fmt_num, mean_std, Cell, Table};
use std::fmt::Write;

fn mark(holds: bool) -> &'static str {
    if holds {
        "✅ holds"
    } else {
        "❌ fails"
    }
}

/// The outcome against its record: as recorded (holding, or an expected divergence), or not.
fn recorded(o: &Outcome) -> &'static str {
    match (o.as_expected(), o.holds) {
        (true, true) => "as recorded",
        (true, false) => "expected divergence",
        (false, true) => "**differs: recorded to fail**",
        (false, false) if o.expect.holds() => "**differs: recorded to hold**",
        (false, false) => "**differs: not measured**",
    }
}

fn esc(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

fn toml_inline(v: &toml::Value) -> String {
    match v {
        toml::Value::Float(f) => crate::table::fmt_float(*f),
        other => other.to_string(),
    }
}

/// The report of one experiment.
pub fn experiment_md(
    exp: &Experiment,
    points: &[Point],
    seeds: &[u64],
    table: &Table,
    outcome: &ExperimentOutcome,
    quick: bool,
) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# {}\n", exp.title);
    let _ = writeln!(
        md,
        "Reproduces **{}**.{}\n",
        exp.paper,
        if quick { " *Quick run (`--quick`): fewer seeds, smaller runs; numbers are indicative only.*" } else { "" }
    );
    if let Some(d) = &exp.description {
        let _ = writeln!(md, "{}\n", d.trim());
    }

    let _ = writeln!(md, "## Parameters\n");
    let file = exp.file.file_name().map(|f| f.to_string_lossy().to_string()).unwrap_or_default();
    let _ = writeln!(md, "- experiment: `experiments/{file}`; base scenario: `{}`", exp.scenario);
    let testbed = exp.runner == crate::experiment::RunnerKind::Testbed;
    let scale = exp.runner == crate::experiment::RunnerKind::Scale;
    // the column that says a run went right: the flow completed (simulator), the bytes arrived intact
    // (testbed, and a twin on the handoff testbed, whose rows are the testbed's), every flow completed (scale)
    let ok_col = if testbed || exp.columns().iter().any(|c| c == "hash_ok") {
        "hash_ok"
    } else if scale {
        "all_completed"
    } else {
        "completed"
    };
    if scale {
        let _ = writeln!(
            md,
            "- runs: each a child `lasthop run` process, one at a time; wall_s and events_per_s (events over the \
             event loop's CPU time, the median of the experiment's repeats) vary between runs"
        );
    } else if testbed {
        let _ = writeln!(
            md,
            "- runs: real kernel-TCP transfers through the real base station on network namespaces, one at a time"
        );
    } else if exp.runner == crate::experiment::RunnerKind::Twin {
        let what = if crate::twin::handoff::is_handoff_testbed(&exp.base) {
            "the simulation of the configuration's twin (`face` = sim) and then a real kernel-TCP transfer on the \
             handoff testbed's network namespaces (`face` = kernel)"
        } else {
            "the simulation of the scenario (`face` = sim) and then a real kernel-TCP transfer of it through the \
             real base station on network namespaces (`face` = kernel)"
        };
        let _ = writeln!(md, "- runs: each {what}, one at a time");
    } else {
        let _ = writeln!(md, "- flow measured: `{}`", exp.flow.as_deref().unwrap_or("(the first flow)"));
    }
    for (p, v) in &exp.set {
        match exp.quick.set.iter().find(|(q, _)| q == p).filter(|_| quick) {
            Some((_, qv)) => {
                let _ = writeln!(md, "- `{p}` = `{}` (quick; full runs: `{}`)", toml_inline(qv), toml_inline(v));
            }
            None => {
                let _ = writeln!(md, "- `{p}` = `{}`", toml_inline(v));
            }
        }
    }
    if quick {
        for (p, v) in exp.quick.set.iter().filter(|(q, _)| !exp.set.iter().any(|(s, _)| s == q)) {
            let _ = writeln!(md, "- `{p}` = `{}` (quick)", toml_inline(v));
        }
    }
    for a in &exp.grid {
        let vals: Vec<String> = exp.axis_values(a, quick).iter().map(|v| Cell::from_toml(v).to_string()).collect();
        let _ = writeln!(md, "- grid `{}` ({}): {}", a.column, a.describe(), vals.join(", "));
    }
    let _ = writeln!(
        md,
        "- seeds: {} per grid point ({}); {} grid points, {} runs\n",
        seeds.len(),
        match seeds {
            [] => "none".to_string(),
            [s] => format!("seed {s}"),
            [a, .., b] => format!("seeds {a}..={b}"),
        },
        points.len(),
        outcome.runs
    );

    let _ = writeln!(md, "## Claims\n");
    if outcome.claims.is_empty() {
        let _ = writeln!(md, "(none)\n");
    } else {
        let _ = writeln!(md, "| | claim | paper | ours | checked | record |\n|---|---|---|---|---|---|");
        for (text, paper, o) in &outcome.claims {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} |",
                mark(o.holds),
                esc(text),
                esc(paper),
                esc(&o.ours),
                esc(&o.required),
                recorded(o)
            );
        }
        md.push('\n');
        let diverging: Vec<(usize, &String, &str)> = outcome
            .claims
            .iter()
            .enumerate()
            .filter_map(|(i, (text, _, o))| o.expect.why().map(|w| (i + 1, text, w)))
            .collect();
        if !diverging.is_empty() {
            let _ = writeln!(md, "### Expected divergences from the paper, and why\n");
            for (i, text, why) in diverging {
                let _ = writeln!(md, "- claim {i}, {}: {}", esc(text), esc(why));
            }
            md.push('\n');
        }
        for (i, (text, _, o)) in outcome.claims.iter().enumerate() {
            if o.detail.len() > 1 {
                let _ = writeln!(md, "<details><summary>claim {}: {}</summary>\n", i + 1, esc(text));
                for d in &o.detail {
                    let _ = writeln!(md, "- {d}");
                }
                let _ = writeln!(md, "\n</details>\n");
            }
        }
    }

    if !outcome.failed_runs.is_empty() {
        let _ = writeln!(md, "## Failed runs\n");
        for f in &outcome.failed_runs {
            let _ = writeln!(md, "- {}", esc(f));
        }
        md.push('\n');
    }

    let _ = writeln!(md, "## Results (mean ± std over seeds)\n");
    let grid_cols = exp.grid_columns();
    let mut header: Vec<String> = grid_cols.clone();
    header.push("runs".into());
    header.extend(exp.table.iter().map(|m| m.name()));
    header.push(ok_col.into());
    let _ = writeln!(md, "| {} |", header.iter().map(|h| esc(h)).collect::<Vec<_>>().join(" | "));
    let _ = writeln!(md, "|{}", "---|".repeat(header.len()));
    for p in points {
        let filters: Vec<Filter> = grid_cols
            .iter()
            .zip(&p.values)
            .map(|(c, v)| Filter { column: c.clone(), cond: Cond::Eq(v.clone()) })
            .collect();
        let rows = crate::claims::select(table, &table.rows, &filters);
        let mut cells: Vec<String> = p.values.iter().map(Cell::to_string).collect();
        cells.push(rows.len().to_string());
        for m in &exp.table {
            let vs: Vec<f64> = rows.iter().filter_map(|r| m.eval(table, r)).collect();
            cells.push(if vs.is_empty() {
                "–".into()
            } else {
                let (mean, std) = mean_std(&vs);
                let missing =
                    if vs.len() < rows.len() { format!(" ({} of {})", vs.len(), rows.len()) } else { String::new() };
                format!("{} ± {}{missing}", fmt_num(mean), fmt_num(std))
            });
        }
        let done = rows.iter().filter(|r| matches!(table.get(r, ok_col), Cell::Bool(true))).count();
        cells.push(format!("{done}/{}", rows.len()));
        let _ = writeln!(md, "| {} |", cells.iter().map(|c| esc(c)).collect::<Vec<_>>().join(" | "));
    }
    md.push('\n');

    let _ = writeln!(md, "## Figure\n");
    let _ = writeln!(md, "Ours (the paper's is {} in the source paper):\n", exp.paper);
    let _ = writeln!(md, "![{}](figure.svg)\n", esc(&exp.title));
    let _ = writeln!(md, "Also as [figure.png](figure.png); every run is in [results.csv](results.csv).");
    md
}

/// Every experiment, every claim.
pub fn summary_md(s: &Summary, quick: bool) -> String {
    let mut md = String::from("# lasthop: reproduced claims\n\n");
    if quick {
        md.push_str("*Quick run (`--quick`): fewer seeds, smaller runs; numbers are indicative only.*\n\n");
    }
    let claims = || s.experiments.iter().flat_map(|e| e.claims.iter().map(move |c| (e, c)));
    let total = claims().count();
    let holding = claims().filter(|(_, c)| c.2.holds).count();
    let diverging = claims().filter(|(_, c)| !c.2.holds && c.2.as_expected()).count();
    let differing = claims().filter(|(_, c)| !c.2.as_expected()).count();
    let _ = writeln!(
        md,
        "{holding} of {total} claims hold; {diverging} fail as recorded (expected divergences from the paper, each \
         explained below); {differing} differ from the record{}.\n",
        if differing > 0 { " (`--check` fails)" } else { "" }
    );
    let _ = writeln!(
        md,
        "| experiment | paper | claim | paper's number | ours | | record |\n|---|---|---|---|---|---|---|"
    );
    for e in &s.experiments {
        for (text, paper, o) in &e.claims {
            let _ = writeln!(
                md,
                "| [{}]({}/report.md) | {} | {} | {} | {} | {} | {} |",
                e.id,
                e.id,
                esc(&e.paper),
                esc(text),
                esc(paper),
                esc(&o.ours),
                mark(o.holds),
                recorded(o)
            );
        }
        if !e.failed_runs.is_empty() {
            let _ = writeln!(
                md,
                "| [{}]({}/report.md) | {} | **{} runs failed** | | | ❌ | |",
                e.id,
                e.id,
                esc(&e.paper),
                e.failed_runs.len()
            );
        }
    }
    let recorded_divergences: Vec<_> = claims().filter_map(|(e, c)| c.2.expect.why().map(|w| (e, c, w))).collect();
    if !recorded_divergences.is_empty() {
        let _ = writeln!(md, "\n## Expected divergences, and why\n");
        for (e, (text, _, o), why) in recorded_divergences {
            let now = if o.holds { " **(holds now: the record is out of date)**" } else { "" };
            let _ = writeln!(md, "- [{}]({}/report.md), {}{now}: {}", e.id, e.id, esc(text), esc(why));
        }
    }
    md
}
