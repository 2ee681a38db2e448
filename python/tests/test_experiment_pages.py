"""The user guide's Experiments pages (docs/src/experiments/) against the experiment files: the committed pages
carry every claim as recorded, and a claim changed without regenerating the pages is caught."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

SCRIPT = REPO / "scripts" / "experiment-pages.py"
DOCS = REPO / "docs" / "src" / "experiments"


def _lasthop_binary():
    """The CLI test.sh builds (`cargo build --profile tests -p lasthop`), or LASTHOP_BIN."""
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    exe = Path(os.environ.get("LASTHOP_BIN", target / "tests" / "lasthop"))
    assert exe.exists(), f"{exe}: build the CLI first (cargo build --profile tests -p lasthop) or set LASTHOP_BIN"
    return exe


def _check(*args):
    return subprocess.run([sys.executable, str(SCRIPT), "--check", *map(str, args)], capture_output=True, text=True)


def _copies(tmp_path):
    """Copies of the experiment files and the pages, to change one of them."""
    exps, docs = tmp_path / "experiments", tmp_path / "docs"
    shutil.copytree(REPO / "experiments", exps)
    shutil.copytree(DOCS, docs)
    for shared in ("examples", "channels"):  # what the experiment files' scenarios refer to
        (tmp_path / shared).symlink_to(REPO / shared)
    return exps, docs


def test_committed_pages_match_the_experiment_files():
    r = _check()
    assert r.returncode == 0, r.stderr


def test_every_experiment_has_a_page_and_the_index_lists_it():
    index = (DOCS / "README.md").read_text()
    for f in sorted((REPO / "experiments").glob("*.toml")):
        assert (DOCS / f"{f.stem}.md").exists(), f
        assert f"({f.stem}.md)" in index, f.stem


def _edit(path, old, new):
    text = path.read_text()
    assert old in text, f"{path}: {old!r} not found"
    path.write_text(text.replace(old, new, 1))


# (what changes in experiments/snoop-ber.toml, what --check must say about the committed page)
CLAIM_CHANGES = {
    "the paper's words": ('paper = "\\"we see little difference', 'paper = "\\"we see no difference',
                          "snoop-ber.md: claim 1, the paper's words"),
    # claim 6 (Snoop completes at one error per 16 Kbit) is recorded to hold
    "a divergence recorded": ('kind = "all"\nmetric = "completed"',
                              'kind = "all"\nmetric = "completed"\nexpect = "fails"\nwhy = "a test"',
                              "snoop-ber.md: claim 6, recorded outcome: the page has 'holds'"),
    "a tolerance": ("value = [3.0, 5.0]", "value = [2.0, 6.0]",
                    "snoop-ber.md: experiments/snoop-ber.toml's title, paper, description or claims changed"),
}


@pytest.mark.parametrize("change", CLAIM_CHANGES)
def test_a_claim_changed_without_new_pages_fails_the_check(tmp_path, change):
    old, new, message = CLAIM_CHANGES[change]
    exps, docs = _copies(tmp_path)
    _edit(exps / "snoop-ber.toml", old, new)
    r = _check("--experiments", exps, "--docs", docs)
    assert r.returncode == 1
    assert message in r.stderr, r.stderr


def test_a_new_experiment_without_a_page_and_a_page_without_an_experiment_fail_the_check(tmp_path):
    exps, docs = _copies(tmp_path)
    (exps / "snoop-ber.toml").rename(exps / "snoop-ber-2.toml")
    _edit(exps / "snoop-ber-2.toml", 'id = "snoop-ber"', 'id = "snoop-ber-2"')
    r = _check("--experiments", exps, "--docs", docs)
    assert r.returncode == 1
    assert "snoop-ber-2.md: missing" in r.stderr and "snoop-ber.md: no experiment file" in r.stderr, r.stderr


def _lasthop(tmp_path, *args):
    exe = _lasthop_binary()
    r = subprocess.run([str(exe), "reproduce", *map(str, args), "--jobs", "2"], capture_output=True, text=True,
                       cwd=tmp_path)
    assert r.returncode == 0, r.stderr


def _generate(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True)


def test_a_quick_run_makes_a_page_that_passes_the_check(tmp_path):
    exps, docs = _copies(tmp_path)
    out = tmp_path / "out"
    _lasthop(tmp_path, "mip-seq", "--quick", "--out", out, "--experiments", exps)
    r = _generate(out, "--experiments", exps, "--docs", docs)
    assert r.returncode == 0, r.stderr
    page = (docs / "mip-seq.md").read_text()
    assert "*A quick run (`--quick`)" in page and "<!-- run: lasthop reproduce mip-seq --quick --out OUT |" in page
    figure = next(f for f in ("mip-seq.svg", "mip-seq.png") if (docs / f).exists())
    assert f"]({figure})" in page
    # every claim of the file, with our number and its outcome as recorded
    rows = [line.split(" | ") for line in page.splitlines() if line.startswith("| ") and line[2:3].isdigit()]
    assert len(rows) == 5, rows
    assert all(r[3] != "–" and r[5] in ("✅ holds |", "❌ fails (recorded divergence) |") for r in rows), rows
    r = _check("--experiments", exps, "--docs", docs)
    assert r.returncode == 0, r.stderr
    assert "`lasthop reproduce mip-seq --quick --out OUT`" in (docs / "README.md").read_text()


def test_a_run_whose_claims_differ_from_the_record_is_refused(tmp_path):
    exps, docs = _copies(tmp_path)
    out = tmp_path / "out"
    _lasthop(tmp_path, "snoop-seq", "--quick", "--out", out, "--experiments", exps)
    # the run says claim 1 of snoop-seq holds; record it (after the run) as failing
    _edit(exps / "snoop-seq.toml", 'op = "between"\nvalue = [3.0, 5.0]',
          'op = "between"\nvalue = [3.0, 5.0]\nexpect = "fails"\nwhy = "a test"')
    before = (docs / "snoop-seq.md").read_text()
    r = _generate(out, "--experiments", exps, "--docs", docs)
    assert r.returncode == 1
    assert "snoop-seq/report.md: claim 1" in r.stderr and "recorded to fail" in r.stderr, r.stderr
    assert (docs / "snoop-seq.md").read_text() == before
