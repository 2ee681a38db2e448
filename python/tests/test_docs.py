"""The repository's text and the user guide: no private keys, paths outside the repository or numbered issue
references anywhere; a README that stays a landing page; every relative link and #anchor in the guide and the
README resolving; every citation key resolving on the guide's references page; and the book building."""

import os
import re
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

DOCS = REPO / "docs"
SRC = DOCS / "src"
README = REPO / "README.md"
REFERENCES = SRC / "references.md"
THIS = Path(__file__).resolve()


@lru_cache(maxsize=None)
def tracked_text_files():
    """Every file git tracks that is text (no NUL byte), as (path, text)."""
    out = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    files = []
    for name in out.decode().split("\0"):
        p = REPO / name
        if not name or not p.is_file() or p.resolve() == THIS:
            continue
        data = p.read_bytes()
        if b"\0" in data:
            continue
        files.append((name, data.decode("utf-8", errors="replace")))
    assert len(files) > 100, "git ls-files found too few files: is this a checkout?"
    return tuple(files)


def _hits(pattern):
    rx = re.compile(pattern, re.IGNORECASE)
    return [f"{name}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)!r}"
            for name, text in tracked_text_files() for m in rx.finditer(text)]


@pytest.mark.parametrize("what,pattern", [
    ("a private key for a source paper (cite it by author and year)", r"\bseed 0{2}\d\b"),
    ("a path outside the repository", r"\.\./shared\b|/work/"),
    ("a numbered issue reference", r"\bissues? #?\d+\b"),
])
def test_no_forbidden_text(what, pattern):
    hits = _hits(pattern)
    assert not hits, f"{what} in tracked files:\n" + "\n".join(hits[:50])


def test_readme_is_a_landing_page():
    lines = README.read_text().splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; the guide (docs/) is the place for more"


# ---- links -------------------------------------------------------------------------------------------------

FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.MULTILINE | re.DOTALL)
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
HTML_ID = re.compile(r"""\bid=["']([^"']+)["']""")


def _prose(text):
    """Markdown without code: fenced blocks and inline code hold paths and brackets that are not links."""
    return INLINE_CODE.sub("", FENCE.sub("", text))


def slug(heading):
    """The id mdBook (and GitHub) give a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"<[^>]+>", "", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text).replace("`", "").strip().lower()
    return "".join(c if c.isalnum() or c in "-_" else "-" if c == " " else "" for c in text)


@lru_cache(maxsize=None)
def anchors(path: Path):
    text = FENCE.sub("", path.read_text())
    ids, seen = set(HTML_ID.findall(text)), {}
    for h in HEADING.findall(text):
        s = slug(h)
        n = seen.get(s, 0)
        seen[s] = n + 1
        ids.add(s if n == 0 else f"{s}-{n}")
    return ids


def _rel(p: Path):
    return os.path.relpath(p, REPO)


def link_problems(page: Path, root: Path):
    """What is wrong with the relative links of `page`: targets that do not exist, leave `root`, or name an
    anchor their page does not have."""
    problems = []
    for target in LINK.findall(_prose(page.read_text())):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:, ...
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page.resolve()
        if not dest.exists():
            problems.append(f"{_rel(page)}: {target}: no such file")
        elif root not in dest.parents and dest != root:
            problems.append(f"{_rel(page)}: {target}: leaves {_rel(root)}/")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            problems.append(f"{_rel(page)}: {target}: no heading or id {anchor!r} in {dest.name}")
    return problems


def test_the_link_checker_catches_broken_links(tmp_path):
    (tmp_path / "a.md").write_text("# Title\n\n## A `code` heading, too\n\n[ok](#title) [ok](b.md#sub-part)\n"
                                   "[ok](#a-code-heading-too) `[not a link](nowhere.md)` [web](https://x.y/)\n"
                                   "[bad](c.md) [bad](b.md#nope) [bad](#nope) [bad](../outside.md)\n")
    (tmp_path / "b.md").write_text("# B\n\n## Sub part\n")
    (tmp_path.parent / "outside.md").write_text("x")
    found = link_problems(tmp_path / "a.md", tmp_path)
    assert [p.split(": ")[1] for p in found] == ["c.md", "b.md#nope", "#nope", "../outside.md"], found


def test_guide_and_readme_links_resolve():
    pages = sorted(SRC.rglob("*.md"))
    assert (SRC / "SUMMARY.md") in pages
    problems = [p for page in pages for p in link_problems(page, SRC)]
    problems += link_problems(README, REPO)
    problems += link_problems(REPO / "CHANGELOG.md", REPO)
    assert not problems, "\n".join(problems)


INCLUDE = re.compile(r"\{\{#include ([^}:\s]+)")


def test_summary_lists_every_page_of_the_guide():
    listed = {(SRC / t).resolve() for t in LINK.findall((SRC / "SUMMARY.md").read_text()) if t}
    # a part another page includes (an experiment page's hand-written notes) is no page of its own
    included = {(p.parent / t).resolve() for p in SRC.rglob("*.md") for t in INCLUDE.findall(p.read_text())}
    pages = {p.resolve() for p in SRC.rglob("*.md") if p.name != "SUMMARY.md"} - included
    assert pages <= listed, "pages the book does not list: " + ", ".join(
        str(p.relative_to(SRC)) for p in sorted(pages - listed))


# ---- citations ---------------------------------------------------------------------------------------------

# An author–year citation: "Balakrishnan 1995", "Brown and Singh 1997", "Katz 1998" (of "Balakrishnan and Katz
# 1998"). Years up to 2019: later four-digit numbers in the text are dates of measurements, not citations.
AUTHOR_YEAR = re.compile(r"\b([A-Z][a-z]+)(?: and [A-Z][a-z]+)? (19[5-9]\d|20[01]\d)\b")
NOT_AUTHORS = {"January", "February", "March", "April", "May", "June", "July", "August", "September",
               "October", "November", "December", "Since", "Before", "After", "In", "From", "Until", "To"}
RFC = re.compile(r"\bRFC ?(\d{3,4})\b")


@lru_cache(maxsize=None)
def reference_entries():
    """The references page's entries: one per list item, the key in bold at its start."""
    text = REFERENCES.read_text()
    entries = re.findall(r"^- \*\*(.+?)\*\*(.*(?:\n  .*)*)", text, re.MULTILINE)
    return [(key, key + body) for key, body in entries]


def _cited_text():
    # fuzz/corpus holds mutated inputs for the fuzzers, not text anyone wrote
    return [(n, t) for n, t in tracked_text_files() if not n.startswith("fuzz/corpus/")]


def test_the_source_papers_are_keyed_as_cited():
    keys = {k for k, _ in reference_entries()}
    for key in ["Balakrishnan 1995", "Eom 2002", "Balakrishnan 1998", "Sriramulu (undated)", "Caceres 1995"]:
        assert key in keys, f"{key} is not an entry of {REFERENCES.relative_to(REPO)}"


def test_every_author_year_citation_resolves():
    entries = reference_entries()
    missing = {}
    for name, text in _cited_text():
        for m in AUTHOR_YEAR.finditer(text):
            author, year = m.groups()
            if author in NOT_AUTHORS:
                continue
            # resolved by an entry that names the author and the year (so "Katz 1998" finds Balakrishnan 1998)
            if not any(re.search(rf"\b{author}\b", body) and year in body for _, body in entries):
                missing.setdefault(m.group(0), name)
    assert not missing, f"citations with no entry in {REFERENCES.relative_to(REPO)}: " + ", ".join(
        f"{c} ({where})" for c, where in sorted(missing.items()))


def test_every_rfc_cited_resolves():
    listed = {re.match(r"RFC (\d+)$", k).group(1) for k, _ in reference_entries() if re.match(r"RFC \d+$", k)}
    missing = {}
    for name, text in _cited_text():
        for n in RFC.findall(text):
            if n not in listed:
                missing.setdefault(f"RFC {n}", name)
    assert not missing, f"RFCs with no entry in {REFERENCES.relative_to(REPO)}: " + ", ".join(
        f"{c} ({where})" for c, where in sorted(missing.items()))


# ---- the book ----------------------------------------------------------------------------------------------

def test_the_book_builds(tmp_path):
    mdbook = shutil.which("mdbook")
    if mdbook is None:
        message = "mdbook is not installed (.ci/run installs it: cargo install mdbook --version 0.5.4 --locked)"
        if os.environ.get("LASTHOP_NO_SKIP") == "1":
            pytest.fail(message)
        pytest.skip(message)
    r = subprocess.run([mdbook, "build", str(DOCS), "--dest-dir", str(tmp_path / "book")], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    # a warning is a page that does not render as written (an {{#include}} that found nothing, ...)
    assert "WARN" not in r.stderr and "ERROR" not in r.stderr, r.stderr
    html = (tmp_path / "book" / "tutorials" / "first-scenario.html").read_text()
    assert "mac_overhead_us" in html, "the tutorial's scenario file was not included into its page"
