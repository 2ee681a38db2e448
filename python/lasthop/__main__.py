"""`python -m lasthop reproduce ...` (see `lasthop.reproduce.main`) and `python -m lasthop experiments`."""

import sys

from .reproduce import experiments, main


def _main(argv: list) -> int:
    if argv[:1] == ["reproduce"]:
        return main(argv[1:])
    if argv[:1] == ["experiments"]:
        for e in experiments(argv[1] if len(argv) > 1 else None):
            default = "default" if e["default"] else "-"
            print(f"{e['id']:<20} {default:<8} {e['paper']:<18} {e['title']}")
        return 0
    print("usage: python -m lasthop reproduce [IDS] [--quick] [--check] [--out DIR] [--scheduler tcp://HOST:PORT]\n"
          "       python -m lasthop experiments [DIR]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
