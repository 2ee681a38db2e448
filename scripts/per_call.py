"""The speed benchmark's run, per step of a packet's way: each step's instructions with everything it calls,
its calls and the quotient; then the event loop split into the protocols' own work and the rest. From
`callgrind_annotate --inclusive=yes --tree=caller --threshold=100` of one whole `lasthop run` (run by
`scripts/instructions.sh --calls`; docs/src/dev/performance.md, "The simulator: one 10 MB run").

    per_call.py TREE METRICS_JSON
"""
import json, re, sys

# (what a call is, the function as callgrind names it): the steps of a packet's way through the run.
STEPS = [
    ("event popped and handled (the whole loop)", "lasthop_sim::world::World::play"),
    ("event queued", "lasthop_sim::engine::Scheduler<E>::schedule_reserved"),
    ("link asked to start a frame (kick)", "lasthop_sim::world::World::kick"),
    ("  of which: a frame put on the air (launch)", "lasthop_sim::world::World::launch"),
    ("  of which: the link's start", "lasthop_sim::link::Link::start"),
    ("next hop found", "lasthop_sim::world::World::next_hop"),
    ("data segment built", "lasthop_tcp::sender::Sender::finish_emit"),
    ("ACK built", "lasthop_wire::tcp::TcpRepr::emit_ipv4"),
    ("a packet's bytes written (data and ACKs)", "lasthop_wire::buffer::build"),
    ("segment received and checked", "lasthop_tcp::segment::parse_counted"),
    ("  of which: the checksum verified", "lasthop_wire::tcp::TcpPacket<T>::verify_checksum"),
    ("Internet checksum (any length)", "lasthop_wire::checksum::sum"),
    ("Snoop, a packet through the base station", "<lasthop_agents::snoop::Snoop as lasthop_agents::Agent>::handle_packet"),
    ("Snoop, a transmission reported", "<lasthop_agents::snoop::Snoop as lasthop_agents::Agent>::handle_transmit"),
]

tree, metrics = sys.argv[1], sys.argv[2]


def normal_name(fn):
    """A method by its type's path whichever module its `impl` block sits in:
    `lasthop_sim::world::run::<impl lasthop_sim::world::World>::play` is `lasthop_sim::world::World::play`."""
    return re.sub(r"[\w:]*::<impl ([\w:]+)>::", r"\1::", fn)


total = None
by_caller = {}  # (function, caller) -> (instructions of the caller's calls to it with everything they call, calls)
callers = []
for line in open(tree):
    # A caller line names a caller, the instructions of its calls (with everything they call) and their
    # number. A function has one block per source file its code came from (its own, and each file whose code
    # was inlined into it, under absolute and relative paths alike), and its callers are spread over them:
    # the function's cost and calls are the sums over the caller lines of all its blocks.
    m = re.match(r"\s*([\d,]+) \(\s*[\d.]+%\)\s+(<|\*)\s+\S*?:(.*?)(?: \((\d[\d,]*)x\))?(?: \[.*\])?$", line.rstrip())
    if "PROGRAM TOTALS" in line and total is None:
        total = int(line.split()[0].replace(",", ""))
    if not m:
        if not line.strip():
            callers = []
        continue
    ir, kind, fn, calls = int(m[1].replace(",", "")), m[2], normal_name(m[3]), m[4]
    if kind == "<":
        callers.append((fn, ir, int(calls.replace(",", "")) if calls else 0))
    else:
        for caller, caller_ir, caller_calls in callers:
            had = by_caller.get((fn, caller), (0, 0))
            by_caller[(fn, caller)] = (had[0] + caller_ir, had[1] + caller_calls)
        callers = []
blocks = {}  # function -> (instructions with everything it calls, calls), summed over its callers
for (fn, _), (ir, calls) in by_caller.items():
    had = blocks.get(fn, (0, 0))
    blocks[fn] = (had[0] + ir, had[1] + calls)
events = json.load(open(metrics))["events"]
print(f"{total:,} instructions, {events:,} events: {total // events:,} per event")


def row(label, ir, calls):
    per = f"{ir // calls:,}" if calls else "-"
    print(f"{label:<48} {ir:>14,} {calls:>9,} {per:>9}")


print(f"{'step':<48} {'instructions':>14} {'calls':>9} {'per call':>9}")
for label, fn in STEPS:
    ir, calls = blocks.get(fn, (0, 0))
    if fn == "lasthop_sim::world::World::play":
        calls = events
    row(label, ir, calls)

# The event loop split in two: the protocols' own work, each entry point with everything it calls, and the
# rest, which is what the simulator spends carrying packets between them (docs/src/dev/performance.md, "The
# simulator: one 10 MB run").
PROTOCOL_WORK = [
    "lasthop_tcp::sender::Sender::poll_transmit",
    "lasthop_tcp::sender::Sender::handle_parsed",
    "lasthop_tcp::sender::Sender::handle_timeout",
    "lasthop_tcp::receiver::Receiver::handle_parsed",
    "lasthop_tcp::receiver::Receiver::poll_transmit",
    "lasthop_tcp::receiver::Receiver::handle_timeout",
    "<lasthop_agents::snoop::Snoop as lasthop_agents::Agent>::handle_packet",
    "<lasthop_agents::snoop::Snoop as lasthop_agents::Agent>::handle_transmit",
    "<lasthop_agents::snoop::Snoop as lasthop_agents::Agent>::handle_timeout",
    "<lasthop_channel::error_model::BerModel as lasthop_channel::error_model::ErrorModel>::corrupts",
]
# The flow's byte-for-byte check of what was delivered is libc's memcmp called where the bulk workload runs an endpoint
# (startup's string comparisons call it too), named by the variant libc picked for the processor
# (`__memcmp_avx2_movbe`, `__memcmp_evex_movbe`, ...).
FLOW_CHECK = "lasthop_sim::registered::Registered<F>::run_endpoint"
MEMCMP = [fn for fn in blocks if fn.startswith("__memcmp")]
loop = blocks.get("lasthop_sim::world::World::play", (0, 0))[0]
work = sum(blocks.get(fn, (0, 0))[0] for fn in PROTOCOL_WORK) + sum(
    by_caller.get((fn, FLOW_CHECK), (0, 0))[0] for fn in MEMCMP
)
absent = [fn for fn in PROTOCOL_WORK if fn not in blocks] + ([] if MEMCMP else ["memcmp"])
print()
row("the event loop", loop, events)
row("  protocol work (TCP, Snoop, error draws, check)", work, events)
row("  the simulator carrying packets (the rest)", loop - work, events)
if absent:
    # Inlined into a caller, or not run: its instructions count as the simulator's.
    print("not found as functions: " + ", ".join(absent))
