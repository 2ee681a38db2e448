#!/usr/bin/env python3
"""Compares the results.csv of every experiment in two reproduction outputs (`lasthop reproduce --out DIR`),
field by field, with the columns named by --ignore left out: a change that is meant to alter only those
columns (a run that plays fewer events alters `events`) proves that every other column is unchanged.

    scripts/results-diff.py BEFORE_DIR AFTER_DIR [--ignore events] [--ignore ...]

Exits 0 when both hold the same experiments and every other field of every row is the same string,
1 otherwise (and prints the first differences).
"""
import argparse
import csv
import pathlib
import sys


def table(path, ignore):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if not rows:
        return [], []
    keep = [i for i, name in enumerate(rows[0]) if name not in ignore]
    return [[row[i] for i in keep if i < len(row)] for row in rows], [n for n in rows[0] if n in ignore]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("before", type=pathlib.Path)
    p.add_argument("after", type=pathlib.Path)
    p.add_argument("--ignore", action="append", default=[], metavar="COLUMN", help="a column to leave out")
    a = p.parse_args()
    names = lambda d: sorted(x.parent.name for x in d.glob("*/results.csv"))
    before, after = names(a.before), names(a.after)
    failed = False
    if before != after:
        print(f"experiments differ: only before {sorted(set(before) - set(after))}, "
              f"only after {sorted(set(after) - set(before))}")
        failed = True
    dropped = set()
    for name in sorted(set(before) & set(after)):
        (x, gone), (y, _) = (table(d / name / "results.csv", a.ignore) for d in (a.before, a.after))
        dropped.update(gone)
        if x == y:
            continue
        failed = True
        if len(x) != len(y):
            print(f"{name}: {len(x) - 1} rows before, {len(y) - 1} after")
        header = x[0] if x else []
        for n, (r, s) in enumerate(zip(x, y)):
            if r != s:
                cols = [f"{header[i] if i < len(header) else i}: {u!r} -> {v!r}" for i, (u, v) in enumerate(zip(r, s)) if u != v]
                print(f"{name}: line {n + 1}: {'; '.join(cols) or 'row lengths differ'}")
                break
    common = len(set(before) & set(after))
    print(f"results-diff: {common} experiments compared, columns left out where present: {sorted(dropped) or 'none'}; "
          + ("DIFFERENT" if failed else "every other field identical"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
