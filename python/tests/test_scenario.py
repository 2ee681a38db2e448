"""Scenarios from Python: files, text, dicts, overrides, and validation errors that say where."""

import pickle

import pytest

import lasthop

from conftest import EXAMPLE


def test_from_file_text_and_dict_agree():
    from_file = lasthop.Scenario.from_toml(EXAMPLE)
    from_path = lasthop.Scenario.from_toml(str(EXAMPLE))
    from_text = lasthop.Scenario.from_toml(EXAMPLE.read_text())
    from_dict = lasthop.Scenario.from_dict(from_file.to_dict())
    assert from_file == from_path == from_text == from_dict
    assert from_file.origin == str(EXAMPLE)
    assert from_file.seed == 1


def test_set_returns_a_new_validated_scenario():
    base = lasthop.Scenario.from_toml(EXAMPLE)
    s = base.set("links.wavelan.error.ber", 1e-5).set("nodes.bs.agent", "none")
    assert s.to_dict()["links"]["wavelan"]["error"]["ber"] == 1e-5
    assert s.to_dict()["nodes"]["bs"]["agent"] == "none"
    assert base.to_dict()["nodes"]["bs"]["agent"] == "snoop"
    # an integer where a float was becomes a float, as on the command line
    assert base.set("links.wavelan.rate_mbps", 1).to_dict()["links"]["wavelan"]["rate_mbps"] == 1.0
    assert base.with_seed(7).seed == 7
    assert base.set_all([("nodes.bs.agent", "none"), ("+seed", 3)]).seed == 3


def test_pickles():
    s = lasthop.Scenario.from_toml(EXAMPLE).set("flows.bulk.bytes", 1000)
    t = pickle.loads(pickle.dumps(s))
    assert t == s and t.origin == s.origin and t.base_dir == s.base_dir


def test_error_names_field_and_line(tmp_path):
    text = EXAMPLE.read_text().replace("rate_mbps = 2.0", "rate_mbps = -2.0")
    f = tmp_path / "bad.toml"
    f.write_text(text)
    with pytest.raises(lasthop.ScenarioError) as e:
        lasthop.Scenario.from_toml(f)
    # as the CLI says it: the line the field is written on, in its table
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines, 1) if l.startswith("[links.wavelan]"))
    line = next(i for i, l in enumerate(lines, 1) if i > start and l.strip().startswith("rate_mbps"))
    assert e.value.field == "links.wavelan.rate_mbps"
    assert e.value.line == line
    assert e.value.origin == str(f)
    assert str(f) in str(e.value) and f"line {line}" in str(e.value)
    assert isinstance(e.value, ValueError)


def test_syntax_error_has_its_line():
    with pytest.raises(lasthop.ScenarioError) as e:
        lasthop.Scenario.from_toml("seed = 1\n[nodes.fh\naddr = 1\n")
    assert e.value.line == 2


def test_unknown_field_and_bad_override():
    base = lasthop.Scenario.from_toml(EXAMPLE)
    with pytest.raises(lasthop.ScenarioError) as e:
        base.set("links.wavelan.error.bre", 1e-5)
    assert e.value.field == "links.wavelan.error.bre"
    assert "+links.wavelan.error.bre" in str(e.value)
    with pytest.raises(lasthop.ScenarioError) as e:
        base.set("links.wavelan.error.ber", "high")
    assert "a float" in str(e.value)
    with pytest.raises(lasthop.ScenarioError) as e:
        base.set("links.wavelan.error.ber", -1.0)
    assert e.value.field == "links.wavelan.error" and "ber: expected a bit-error rate" in str(e.value)
    with pytest.raises(TypeError):
        base.set("links.wavelan.error.ber", None)


def test_missing_file():
    with pytest.raises(lasthop.ScenarioError) as e:
        lasthop.Scenario.from_toml("no/such/file.toml")
    assert "cannot read" in str(e.value)


def test_tcp_profile_linux_and_the_fields_it_refuses():
    base = lasthop.Scenario.from_toml(EXAMPLE)
    linux = base.set("+tcp.profile", "linux")
    assert linux.to_dict()["tcp"]["profile"] == "linux"
    # fields Linux can run with are kept; a BSD slow-timer tick is refused, by name
    assert linux.set("+tcp.initial_cwnd", 4).to_dict()["tcp"]["initial_cwnd"] == 4
    with pytest.raises(lasthop.ScenarioError) as e:
        linux.set("+tcp.tick_ms", 500.0)
    assert e.value.field == "tcp.tick_ms" and "linux" in str(e.value)
    with pytest.raises(lasthop.ScenarioError) as e:
        base.set_all([("+tcp.profile", "linux"), ("+tcp.timer", "ns")])
    assert e.value.field == "tcp.timer"
