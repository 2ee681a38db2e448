"""The guide's tutorials do what they say: every shell block of a tutorial page runs, in page order, in one
shell (so a page's later blocks see what its earlier ones made), with `lasthop` the CLI under test
($LASTHOP_BIN) and `python` the one of this interpreter's environment; a ```text block right after a shell block lists lines its
output must contain. The files the pages show (scenarios, experiment files, Python) are {{#include}}d from
the repository, so what runs is what the reader sees. Install commands (```sh,install, and the README's) cost
minutes of building, so they are checked against what CI really runs (.ci/run, test.sh, the Python package's
extras) instead of being run twice. The real base station and the testbed need root and network namespaces:
CI has both (LASTHOP_NO_SKIP=1 makes their absence a failure, not a skip)."""

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TUTORIALS = REPO / "docs" / "src" / "tutorials"
PAGES = sorted(p.name for p in TUTORIALS.glob("*.md"))
# Pages whose commands build namespaces and open raw sockets.
NEEDS_ROOT = {"real-base-station.md", "testbed.md", "twin.md", "handoff-testbed.md"}
# What the one-machine base station creates, removed before and after its page runs.
NAMESPACES = ["lh-fh", "lh-bs", "lh-mh"]

BLOCK = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
INCLUDE = re.compile(r"^\{\{#include ([^}]+)\}\}$")


def blocks(page: Path):
    """The fenced blocks of a page as (info string, text)."""
    return [(info.strip(), text) for info, text in BLOCK.findall(page.read_text())]


def shell_steps(page: Path):
    """The page's shell blocks, each with the output lines shown by the ```text block that directly follows
    it (nothing but blank lines between; a text block after prose is an illustration, not checked)."""
    text = page.read_text()
    found = [(m.group(1).strip(), m.group(2), m.start(), m.end()) for m in BLOCK.finditer(text)]
    steps = []
    for i, (info, body, _, end) in enumerate(found):
        if info != "sh":
            continue
        expected = ""
        if i + 1 < len(found) and found[i + 1][0] == "text" and not text[end:found[i + 1][2]].strip():
            expected = found[i + 1][1]
        steps.append((body, [line.strip() for line in expected.splitlines() if line.strip()]))
    return steps


def _lasthop() -> Path:
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    exe = Path(os.environ.get("LASTHOP_BIN", target / "release" / "lasthop"))
    assert exe.exists(), f"{exe}: build the CLI first (cargo build --release -p lasthop) or set LASTHOP_BIN"
    return exe


def _root_or_skip(page):
    why = None
    if os.geteuid() != 0:
        why = f"{page} needs root"
    elif shutil.which("ip") is None or shutil.which("ethtool") is None:
        why = f"{page} needs ip (iproute2) and ethtool"
    elif subprocess.run(["ip", "netns", "add", "lh-probe"], capture_output=True).returncode != 0:
        why = f"{page} needs network namespaces"
    else:
        subprocess.run(["ip", "netns", "del", "lh-probe"], capture_output=True)
    if why:
        if os.environ.get("LASTHOP_NO_SKIP") == "1":
            pytest.fail(why)
        pytest.skip(why)


def _remove_namespaces():
    for ns in NAMESPACES:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


@pytest.mark.parametrize("page", PAGES)
def test_tutorial_commands_run(page, tmp_path):
    steps = shell_steps(TUTORIALS / page)
    if not steps:
        pytest.fail(f"{page} shows no command to run: a tutorial ends in something the reader does")
    if page in NEEDS_ROOT:
        _root_or_skip(page)
        _remove_namespaces()
    # The reader's view: the repository's examples and experiments beside them, `lasthop` on the PATH.
    for d in ["examples", "experiments"]:
        (tmp_path / d).symlink_to(REPO / d)
    bin_dir = tmp_path / ".bin"
    bin_dir.mkdir()
    (bin_dir / "lasthop").symlink_to(_lasthop())
    # `python` from this interpreter's own directory (a virtual environment's bin/: a link to it elsewhere
    # would not find the environment)
    env = dict(os.environ, PATH=f"{bin_dir}:{Path(sys.executable).parent}:{os.environ['PATH']}",
               MPLBACKEND="Agg")
    script = ["set -e"]
    for i, (text, _) in enumerate(steps):
        script += [f"echo '@@ step {i}'", text]
    proc = subprocess.Popen(["bash", "-c", "\n".join(script)], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=1200)
    finally:
        # whatever a failed page left running in the background (a base station, a web server) goes too
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
        if page in NEEDS_ROOT:
            _remove_namespaces()
    assert proc.returncode == 0, f"{page}: a command failed (exit {proc.returncode}):\n{out[-6000:]}"
    outputs = re.split(r"^@@ step \d+\n", out, flags=re.MULTILINE)[1:]
    assert len(outputs) == len(steps), out
    for (text, expected), got in zip(steps, outputs):
        lines = {line.strip() for line in got.splitlines()}
        for e in expected:
            assert e in lines, f"{page}: after\n{text}\nthe page shows {e!r}; the output was:\n{got}"


@pytest.mark.parametrize("page", PAGES)
def test_shown_files_are_included_from_the_repository(page):
    """A scenario, experiment file or script a tutorial shows is a real file (which its commands run), never a
    copy in the page that could drift from it."""
    for info, text in blocks(TUTORIALS / page):
        if info.split(",")[0] in {"toml", "python", "py"}:
            m = INCLUDE.match(text.strip())
            assert m, f"{page}: a ```{info} block must be an {{{{#include}}}} of a repository file:\n{text}"
            assert (TUTORIALS / m.group(1)).resolve().is_file(), f"{page}: {m.group(1)} does not exist"


def _extras():
    """python/pyproject.toml's extras: name -> requirements (read by hand: tomllib is Python 3.11's)."""
    text = (REPO / "python" / "pyproject.toml").read_text()
    section = text.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    return {name: re.findall(r'"([^"]+)"', reqs) for name, reqs in re.findall(r"^(\w+) = \[(.*)\]$", section,
                                                                              re.MULTILINE)}


def install_commands():
    """Every install command the README and the tutorials show, with where it comes from."""
    found = []
    for page in sorted(TUTORIALS.glob("*.md")):
        for info, text in blocks(page):
            if info == "sh,install":
                found += [(page.name, line) for line in text.splitlines() if line.strip()]
    for info, text in blocks(REPO / "README.md"):
        if info == "sh":
            found += [("README.md", line) for line in text.splitlines() if line.strip()]
    return found


def test_install_commands_are_what_ci_runs():
    # CI builds its `cargo install` in the `tests` profile, reusing test.sh's build; otherwise the same command.
    ci = (REPO / ".ci" / "run").read_text().replace(" --profile tests", "")
    test_sh = (REPO / "test.sh").read_text()
    extras = _extras()
    commands = install_commands()
    assert any(where == "README.md" for where, _ in commands), "the README shows no command"
    for where, line in commands:
        command = line.split("  #")[0].strip()
        pip = re.fullmatch(r'pip install "\./python\[([\w,]+)\]"', command)
        if pip:
            # each extra exists, and test.sh installs everything it brings (the test extra holds them all)
            assert '"./python[test]"' in test_sh
            for extra in pip.group(1).split(","):
                assert extra in extras, f"{where}: {command}: python/pyproject.toml has no extra {extra!r}"
                missing = set(extras[extra]) - set(extras["test"])
                assert not missing, f"{where}: {command}: the test extra lacks {sorted(missing)}"
            continue
        for part in command.split(" && "):
            assert part in ci, f"{where}: {part!r} is not what .ci/run runs:\n{ci}"
