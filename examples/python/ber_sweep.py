# Balakrishnan 1995 Fig. 7: goodput against bit-error rate, Reno with and without Snoop
# at the base station.
import lasthop

base = lasthop.Scenario.from_toml("examples/snoop.toml")
base = base.set("flows.bulk.bytes", 2_000_000)
grid = {
    "nodes.bs.agent": ["none", "snoop"],
    "links.wavelan.error.ber": [2.0**-k for k in range(14, 25)],
}
names = {"nodes.bs.agent": "agent", "links.wavelan.error.ber": "ber"}
df = lasthop.sweep(base, grid, seeds=5, names=names)
goodput = df.groupby(["ber", "agent"])["goodput_mbps"].mean().unstack()
ax = goodput.plot(logx=True, marker="o", ylabel="goodput (Mb/s)",
                  title="Reno over a 2 Mb/s WaveLAN hop")
ax.figure.savefig("ber-sweep.png")
print(goodput)
