#!/usr/bin/env python3
"""The user guide's Experiments pages (docs/src/experiments/): one page per experiment file, made from the file
and a reproduction's output, an index, and a check that the committed pages still carry the files' claims.

    lasthop reproduce --out OUT                       # the default experiments, full runs
    scripts/experiment-pages.py OUT [OUT2 ...]        # the pages of every experiment run in OUT, and the index
    scripts/experiment-pages.py --check               # exit 1 when a page's claims differ from its experiment file
    scripts/experiment-pages.py --summary             # the lines of the book's SUMMARY.md for these pages

A page shows the experiment file's title, paper, description, claims (the paper's words, our number, holds or
fails as recorded) and each recorded divergence's `why`; the reproduction's parameters, results table and
figure (copied next to the page); and docs/src/experiments/notes/ID.md, hand-written, which the page includes.
Hand-written prose therefore lives in the experiment files and in notes/: regenerating loses none of it.

An experiment with no output in any OUT keeps its page as it is if that page shows a run, and otherwise gets a
page without figure and numbers that says how to run it. A run whose claims do not come out as recorded is
refused (`lasthop reproduce --check` fails on it too): the pages show what the record says.

--check needs no run: it compares every page's claims (number, text, the paper's words, the recorded outcome)
and a digest of the experiment file's title, paper, description and claims with the experiment files, checks
that every experiment has a page and every page an experiment, that each figure a page shows exists, and that
the index is the one these pages make.
"""
import argparse
import datetime
import hashlib
import json
import os
import pathlib
import re
import shutil
import sys

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib

REPO = pathlib.Path(__file__).resolve().parents[1]
GENERATOR = "scripts/experiment-pages.py"
# A figure's SVG above this size is replaced by its PNG (a sequence plot's SVG holds every point).
MAX_SVG_BYTES = 300_000

# The index's sections, in reading order; an experiment not named here goes under the last heading.
SECTIONS = [
    ("Snoop under bit errors (Balakrishnan 1995)", ["snoop-ber", "snoop-seq", "tcp-behaviours", "testbed-ber", "testbed-rtt", "twin-ber"]),
    ("Handoffs (Balakrishnan 1995)", ["handoff-seq", "handoff-latency", "snoop-handoff-ber", "handoff-rate",
                                      "handoff-window", "handoff-walk", "handoff-schemes"]),
    ("ELN, NACKs, Snoop's memory, the Web (Balakrishnan 1998)", ["eln-ber", "eln-transit", "nack-ber", "snoop-memory", "web"]),
    ("Motion and fast retransmit (Caceres 1995)", ["motion", "fast-rexmit", "fast-rexmit-sh"]),
    ("The alternatives: split connections, M-TCP, link ARQ", ["compare-ber", "compare-burst", "compare-handoff",
                                                              "compare-semantics"]),
    ("Mobile IP and base-station buffering (Eom 2002)", ["mip-smooth", "mip-seq", "mip-analysis", "mip-buffer",
                                                          "mip-buffer-size", "mip-handoff-rate", "mip-variants", "mip-snoop"]),
    ("Beyond the papers", ["scale"]),
]

HOLDS, FAILS = "✅ holds", "❌ fails (recorded divergence)"
HOLDS_NOT_RUN, FAILS_NOT_RUN = "holds (as recorded; not run here)", "fails (recorded divergence; not run here)"
CLAIMS_HEADER = "| # | claim | the paper | ours | checked | outcome |"


class PageError(Exception):
    """A problem with an input file: the message names the file and what was expected."""


# --- the experiment files ----------------------------------------------------------------------------------


def load_experiments(exp_dir):
    """Every experiment file of `exp_dir`, by id."""
    exps = {}
    for path in sorted(exp_dir.glob("*.toml")):
        try:
            data = tomllib.loads(path.read_text())
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise PageError(f"{path}: not a TOML experiment file: {e}") from None
        for field in ("id", "title", "paper"):
            if not isinstance(data.get(field), str):
                raise PageError(f"{path}: field `{field}`: expected a string")
        data["_file"] = path
        exps[data["id"]] = data
    if not exps:
        raise PageError(f"{exp_dir}: no experiment files (*.toml)")
    return exps


def one_line(s):
    return " ".join(str(s).split())


def claim_record(exp):
    """(number, text, the paper's words, "holds" | "fails") of every claim, as the experiment file records it."""
    out = []
    for i, c in enumerate(exp.get("claims", []), 1):
        out.append((str(i), one_line(c.get("text", "")), one_line(c.get("paper", "")),
                    "fails" if c.get("expect") == "fails" else "holds"))
    return out


def digest(exp):
    """What a page shows of its experiment file: a change to any of it means the page is out of date."""
    shown = {k: exp.get(k) for k in ("title", "paper", "description", "claims")}
    return hashlib.sha256(json.dumps(shown, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


# --- markdown tables ---------------------------------------------------------------------------------------


def cells(line):
    """The cells of a markdown table row, `\\|` kept as part of a cell."""
    inner = line.strip()
    if not (inner.startswith("|") and inner.endswith("|")):
        return None
    return [c.strip() for c in re.split(r"(?<!\\)\|", inner[1:-1])]


def esc(s):
    return one_line(s).replace("|", "\\|")


def unesc(s):
    return s.replace("\\|", "|")


def section(text, heading):
    """The lines of a `## heading` section (up to the next `## `), None when absent."""
    lines = text.splitlines()
    try:
        start = lines.index(heading) + 1
    except ValueError:
        return None
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    return "\n".join(lines[start:end]).strip("\n")


# --- a reproduction's output -------------------------------------------------------------------------------


def read_report(report_path, exp):
    """What a page takes from OUT/ID/report.md: parameters, claims with our numbers, details, results."""
    text = report_path.read_text()
    where = report_path
    claims_md = section(text, "## Claims")
    if claims_md is None:
        raise PageError(f"{where}: no `## Claims` section; is it a `lasthop reproduce` report?")
    rows = []
    for line in claims_md.splitlines():
        c = cells(line)
        if c is None or len(c) != 6 or c[1] == "claim" or set(c[0]) <= set("-"):
            continue
        mark, text_, paper, ours, checked, record = (unesc(x) for x in c)
        rows.append({"holds": mark.startswith("✅"), "text": text_, "paper": paper, "ours": ours,
                     "checked": checked, "record": record})
    recorded = claim_record(exp)
    if [(r["text"], r["paper"]) for r in rows] != [(t, p) for _, t, p, _ in recorded]:
        raise PageError(f"{where}: its claims are not those of {exp['_file']} (was the run made from another "
                        f"version of the file?); rerun `lasthop reproduce {exp['id']}`")
    for (n, text_, _, expected), r in zip(recorded, rows):
        if ("holds" if r["holds"] else "fails") != expected or r["record"].startswith("**"):
            raise PageError(f"{where}: claim {n} ({text_}) {'holds' if r['holds'] else 'fails'} in this run but "
                            f"is recorded to {'hold' if expected == 'holds' else 'fail'}: fix the record or the "
                            "model before making the pages")
    details = re.findall(r"<details><summary>claim (\d+):.*?</summary>\n(.*?)\n</details>", text, re.S)
    return {
        "quick": "*Quick run (`--quick`)" in text,
        "parameters": section(text, "## Parameters") or "",
        "claims": rows,
        "details": {int(n): body.strip() for n, body in details},
        "failed_runs": section(text, "## Failed runs"),
        "results": section(text, "## Results (mean ± std over seeds)") or "",
    }


def machine():
    """The processor and core count of this machine (the runs are deterministic; only `scale`'s clocks are not)."""
    model = ""
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = one_line(line.split(":", 1)[1])
                break
    except OSError:
        pass
    return f"{model or 'unknown processor'}, {os.cpu_count()} cores"


def run_note(out, ids_run, default_ids, quick):
    """`command | machine | date` of a reproduction output directory."""
    ids = sorted(ids_run)
    what = "" if ids == sorted(default_ids) else " " + " ".join(ids)
    stamp = (out / "summary.md") if (out / "summary.md").exists() else out
    date = datetime.datetime.fromtimestamp(stamp.stat().st_mtime, datetime.timezone.utc).strftime("%Y-%m-%d")
    return f"lasthop reproduce{what}{' --quick' if quick else ''} --out OUT | {machine()} | {date}"


# --- the pages ---------------------------------------------------------------------------------------------


def figure_file(out_dir, docs, exp_id):
    """Copies the run's figure next to the page (the PNG when the SVG is large); returns its name."""
    svg, png = out_dir / "figure.svg", out_dir / "figure.png"
    for stale in (docs / f"{exp_id}.svg", docs / f"{exp_id}.png"):
        stale.unlink(missing_ok=True)
    if svg.exists() and (svg.stat().st_size <= MAX_SVG_BYTES or not png.exists()):
        shutil.copyfile(svg, docs / f"{exp_id}.svg")
        return f"{exp_id}.svg"
    if png.exists():
        shutil.copyfile(png, docs / f"{exp_id}.png")
        return f"{exp_id}.png"
    return None


def how_to_run(exp):
    i = exp["id"]
    lines = ["## Running it", ""]
    runner = exp.get("runner", "sim")
    if runner == "testbed":
        lines += ["Real kernel TCP through the real base station on network namespaces: it needs root, `ip`",
                  "(iproute2) and network namespaces, and runs one transfer at a time.", ""]
    elif runner == "scale":
        lines += ["Each run is a child `lasthop run --timing` process, run alone; its clock numbers vary between",
                  "runs and machines.", ""]
    default = exp.get("default", False)
    lines += ["```sh",
              f"lasthop reproduce {i} --out out            # full runs"
              + ("; also part of `lasthop reproduce`" if default else ""),
              f"lasthop reproduce {i} --quick --out out    # fewer seeds, smaller runs",
              "```", "",
              f"Every run is in `out/{i}/results.csv`, the claims in `out/{i}/report.md`.", ""]
    return lines


def short(v):
    """A grid value as the reports write it (3.9e-6, not 3.9e-06)."""
    return re.sub(r"e([+-])0(\d)", r"e\1\2", str(v))


def grid_from_file(exp):
    """The set-up as the experiment file states it (for a page without a run)."""
    lines = [f"- base scenario: `{exp.get('scenario', '')}`"] if exp.get("scenario") else []
    for path, v in exp.get("set", {}).items():
        lines.append(f"- `{path}` = `{json.dumps(v, ensure_ascii=False)}`")
    for col, axis in exp.get("grid", {}).items():
        values = list(axis.get("variants", {})) or axis.get("values", [])
        lines.append(f"- grid `{col}`: {', '.join(short(v) for v in values)}")
    if "seeds" in exp:
        lines.append(f"- seeds: {exp['seeds']} per grid point")
    return "\n".join(lines)


def page(exp, docs, report=None, figure=None, run=None):
    i = exp["id"]
    record = claim_record(exp)
    md = [f"<!-- Generated by {GENERATOR} from experiments/{i}.toml and a reproduction's output: do not edit.",
          f"     Edit the experiment file (description, claims' why) or notes/{i}.md, then regenerate. -->",
          f"<!-- record: {digest(exp)} -->"]
    if run:
        md.append(f"<!-- run: {run} -->")
    md += ["", f"# {exp['title']}", "",
           f"Reproduces **{exp['paper']}** ([references](../references.md)). Experiment file: "
           f"`experiments/{i}.toml`; {'in' if exp.get('default') else 'not in'} the default set.", ""]
    md += ["## The set-up", ""]
    if exp.get("description"):
        md += [exp["description"].strip(), ""]
    md += [(report["parameters"] if report else grid_from_file(exp)), ""]

    md += ["## Results", ""]
    if report:
        if figure:
            md += [f"![{exp['title']}]({figure})", "", f"*Ours; the paper's is {exp['paper']}.*", ""]
        if report["quick"]:
            md += ["*A quick run (`--quick`): fewer seeds, smaller runs; the numbers are indicative only.*", ""]
    else:
        why = {"testbed": "it needs root and network namespaces, and takes real time (minutes to half an hour)",
               "scale": "its numbers are clock numbers of the machine that runs it"}.get(exp.get("runner"), "it is not in the default set")
        md += [f"Not run for these pages: {why}. There is no figure, and the claims show their record only; see "
               "[Running it](#running-it).", ""]

    md += ["### Claims", ""]
    if not record:
        md += ["This experiment states no claims: it measures.", ""]
    else:
        md += [CLAIMS_HEADER, "|---|---|---|---|---|---|"]
        for (n, text, paper, expected), r in zip(record, report["claims"] if report else [None] * len(record)):
            if r:
                outcome = HOLDS if expected == "holds" else FAILS
                ours, checked = esc(r["ours"]), esc(r["checked"])
            else:
                outcome = HOLDS_NOT_RUN if expected == "holds" else FAILS_NOT_RUN
                ours, checked = "–", "–"
            md.append(f"| {n} | {esc(text)} | {esc(paper)} | {ours} | {checked} | {outcome} |")
        md.append("")
        per_group = [(n, text) for n, text, _, _ in record if report and int(n) in report["details"]]
        for n, text in per_group:
            md += [f"<details><summary>Claim {n}, every group: {esc(text)}</summary>", "",
                   report["details"][int(n)], "", "</details>", ""]

    divergences = [(n, c) for (n, *_), c in zip(record, exp.get("claims", [])) if c.get("expect") == "fails"]
    if divergences:
        md += ["### Divergences from the paper, and why", ""]
        for n, c in divergences:
            md += [f"**Claim {n}: {one_line(c['text'])}.** {one_line(c.get('why', ''))}", ""]

    if report and report["failed_runs"]:
        md += ["### Failed runs", "", report["failed_runs"], ""]
    if report and report["results"]:
        md += ["### Numbers (mean ± std over seeds)", "", report["results"], ""]

    if (docs / "notes" / f"{i}.md").exists():
        md += ["## Discussion", "", f"{{{{#include notes/{i}.md}}}}", ""]
    md += how_to_run(exp)
    if run:
        command, where, date = (x.strip() for x in run.split("|"))
        md += [f"The numbers and the figure on this page are from `{command}` on {where}, {date}.", ""]
    return "\n".join(md).rstrip("\n") + "\n"


def plural(n, noun):
    return noun if n == 1 else noun + "s"


def read_run(page_text):
    m = re.search(r"^<!-- run: (.*) -->$", page_text, re.M)
    return m.group(1) if m else None


def sections(exps):
    """(heading, ids) in reading order; experiments no section names go under the last heading."""
    placed = {i for _, ids in SECTIONS for i in ids}
    out = [(title, [i for i in ids if i in exps]) for title, ids in SECTIONS]
    out[-1][1].extend(i for i in sorted(exps) if i not in placed)
    return [(title, ids) for title, ids in out if ids]


def summary_lines(exps):
    """The book's SUMMARY.md lines for these pages (paths relative to docs/src)."""
    lines = ["- [Experiments](experiments/README.md)"]
    for _, ids in sections(exps):
        lines += [f"  - [{exps[i]['title']}](experiments/{i}.md)" for i in ids]
    return lines


def index(exps, docs):
    """docs/src/experiments/README.md: every experiment by section, its claims, and how the pages were made."""
    md = [f"<!-- Generated by {GENERATOR}: do not edit. -->", "", "# Experiments", "",
          "Each page reproduces a figure, table or section of a source paper (see [references](../references.md)):",
          "its set-up, our figure, the paper's claims in its own words beside our numbers, and every claim our",
          "model does not reproduce, kept as the paper states it, recorded as a divergence and explained by the",
          "mechanism traced in the runs. `lasthop reproduce --check` fails when a claim's outcome differs from",
          "its record.", ""]
    runs = {}
    for title, ids in sections(exps):
        md += [f"## {title}", "", "| experiment | reproduces | claims | default set |", "|---|---|---|---|"]
        for i in ids:
            e = exps[i]
            rec = claim_record(e)
            fails = sum(1 for r in rec if r[3] == "fails")
            claims = "none" if not rec else (
                f"{len(rec) - fails} hold" + (f", {fails} {plural(fails, 'recorded divergence')}" if fails else ""))
            md.append(f"| [{esc(e['title'])}]({i}.md) (`{i}`) | {esc(e['paper'])} | {claims} | "
                      f"{'yes' if e.get('default') else 'no'} |")
            page_path = docs / f"{i}.md"
            run = read_run(page_path.read_text()) if page_path.exists() else None
            runs.setdefault(run, []).append(i)
        md.append("")
    md += ["## How these pages are made", "",
           "Every page is generated from its experiment file and a reproduction's output; the hand-written prose",
           "is in the experiment files (`description`, each recorded divergence's `why`) and in",
           "`docs/src/experiments/notes/`. The simulator's results are deterministic: the same command gives",
           "the same numbers on any machine (only `scale`'s clock numbers vary).", "",
           "```sh",
           "cargo build --profile tests -p lasthop",
           "target/tests/lasthop reproduce --jobs 2 --out OUT          # the default experiments",
           f"{GENERATOR} OUT                          # the pages of every experiment in OUT",
           f"{GENERATOR} --check                      # the pages against the experiment files (CI)",
           "```", ""]
    if (docs / "notes" / "README.md").exists():
        md += ["{{#include notes/README.md}}", ""]
    for run, ids in sorted(runs.items(), key=lambda kv: (kv[0] is None, kv[0] or "")):
        if run is None:
            md.append(f"- Not run for these pages: {', '.join(f'`{i}`' for i in ids)}.")
        else:
            command, where, date = (x.strip() for x in run.split("|"))
            md.append(f"- `{command}` on {where}, {date}: {', '.join(f'`{i}`' for i in ids)}.")
    return "\n".join(md).rstrip("\n") + "\n"


def generate(outs, exp_dir, docs):
    exps = load_experiments(exp_dir)
    default_ids = [i for i, e in exps.items() if e.get("default")]
    docs.mkdir(parents=True, exist_ok=True)
    done = set()
    for out in outs:
        ids_run = [i for i in exps if (out / i / "report.md").exists()]
        unknown = [d.name for d in out.iterdir() if d.is_dir() and (d / "report.md").exists() and d.name not in exps]
        if unknown:
            raise PageError(f"{out}: outputs of experiments with no file in {exp_dir}: {', '.join(sorted(unknown))}")
        if not ids_run:
            raise PageError(f"{out}: no experiment output (OUT/ID/report.md); run `lasthop reproduce --out {out}`")
        reports = {i: read_report(out / i / "report.md", exps[i]) for i in ids_run}
        quick = any(r["quick"] for r in reports.values())
        run = run_note(out, ids_run, default_ids, quick)
        for i in ids_run:
            fig = figure_file(out / i, docs, i)
            (docs / f"{i}.md").write_text(page(exps[i], docs, reports[i], fig, run))
            done.add(i)
            print(f"{docs / (i + '.md')}: from {out / i}" + (" (quick run)" if reports[i]["quick"] else ""))
    for i, exp in exps.items():
        p = docs / f"{i}.md"
        if i in done or (p.exists() and read_run(p.read_text())):
            continue
        p.write_text(page(exp, docs))
        print(f"{p}: not run (no figure, no numbers)")
    (docs / "README.md").write_text(index(exps, docs))


# --- the check ---------------------------------------------------------------------------------------------


def page_claims(text):
    """(number, text, the paper's words, "holds" | "fails") of every row of a page's claims table."""
    lines = text.splitlines()
    if CLAIMS_HEADER not in lines:
        return []
    out = []
    for line in lines[lines.index(CLAIMS_HEADER) + 2:]:
        c = cells(line)
        if c is None:
            break
        out.append((c[0], unesc(c[1]), unesc(c[2]), "fails" if "fails" in c[5] else "holds"))
    return out


def check(exp_dir, docs):
    """The problems found, one line each, naming the page and the experiment file."""
    exps = load_experiments(exp_dir)
    problems = []
    regen = f"regenerate: `lasthop reproduce ID --out OUT && {GENERATOR} OUT`"
    for i, exp in exps.items():
        p = docs / f"{i}.md"
        f = exp["_file"].relative_to(exp_dir.parent) if exp["_file"].is_relative_to(exp_dir.parent) else exp["_file"]
        if not p.exists():
            problems.append(f"{p}: missing: {f} has no page")
            continue
        text = p.read_text()
        want, have = claim_record(exp), page_claims(text)
        for n in range(max(len(want), len(have))):
            w, h = (want[n] if n < len(want) else None), (have[n] if n < len(have) else None)
            if w == h:
                continue
            if h is None:
                problems.append(f"{p}: claim {w[0]} of {f} ({w[1]}) is not on the page")
            elif w is None:
                problems.append(f"{p}: claim {h[0]} ({h[1]}) is no longer in {f}")
            else:
                for k, name in ((0, "number"), (1, "text"), (2, "the paper's words"), (3, "recorded outcome")):
                    if w[k] != h[k]:
                        problems.append(f"{p}: claim {w[0]}, {name}: the page has {h[k]!r}, {f} has {w[k]!r}")
        m = re.search(r"^<!-- record: ([0-9a-f]{64}) -->$", text, re.M)
        if not m:
            problems.append(f"{p}: no `<!-- record: ... -->` line: not made by {GENERATOR}")
        elif m.group(1) != digest(exp):
            problems.append(f"{p}: {f}'s title, paper, description or claims changed since the page was made")
        for fig in re.findall(r"^!\[[^\]]*\]\(([^)]+)\)$", text, re.M):
            if not (docs / fig).exists():
                problems.append(f"{p}: the figure {fig} is missing from {docs}")
    for p in sorted(docs.glob("*.md")):
        if p.name != "README.md" and p.stem not in exps:
            problems.append(f"{p}: no experiment file {exp_dir / (p.stem + '.toml')}: remove the page")
    readme = docs / "README.md"
    if not readme.exists() or readme.read_text() != index(exps, docs):
        problems.append(f"{readme}: not the index of these pages: {GENERATOR} OUT writes it")
    if problems:
        problems.append(f"({regen}; ID is the experiment's id)")
    return problems


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("outs", nargs="*", type=pathlib.Path, metavar="OUT", help="a `lasthop reproduce --out` directory")
    p.add_argument("--check", action="store_true", help="check the committed pages against the experiment files")
    p.add_argument("--summary", action="store_true", help="print the lines of the book's SUMMARY.md for these pages")
    p.add_argument("--experiments", type=pathlib.Path, default=REPO / "experiments", help="default: experiments/")
    p.add_argument("--docs", type=pathlib.Path, default=REPO / "docs" / "src" / "experiments",
                   help="default: docs/src/experiments/")
    a = p.parse_args()
    try:
        if a.summary:
            print("\n".join(summary_lines(load_experiments(a.experiments))))
            return 0
        if a.check:
            if a.outs:
                p.error("--check takes no OUT")
            problems = check(a.experiments, a.docs)
            for line in problems:
                print(line, file=sys.stderr)
            if problems:
                return 1
            print(f"{a.docs}: every page matches {a.experiments}")
            return 0
        if not a.outs:
            p.error("give a `lasthop reproduce --out` directory, or --check")
        generate(a.outs, a.experiments, a.docs)
        return 0
    except PageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
