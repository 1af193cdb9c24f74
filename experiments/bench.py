"""``make bench``: run every registered benchmark, one JSON file each under out/bench/."""

from __future__ import annotations

import sys
import time

from rob_twin.experiments.output import OUT_DIR, write_json
from rob_twin.experiments.registry import benchmarks

USAGE = """usage: python -m rob_twin.experiments.bench [-h] [NAME ...]

Run the named benchmarks (default: every one), each written to out/bench/NAME.json
(simulated figures, hardware_io: false). Exit 0: done; 2: an unknown name.

benchmarks:"""


def main(argv: list[str] | None = None) -> int:
    names = argv if argv is not None else sys.argv[1:]
    table = benchmarks()
    if any(n in ("-h", "--help", "--list") for n in names):
        print(USAGE)
        for name in table:
            print(f"  {name}")
        return 0
    chosen = names or list(table)
    unknown = [n for n in chosen if n not in table]
    if unknown:
        print(f"unknown benchmark(s) {unknown}; valid: {', '.join(table)}", file=sys.stderr)
        return 2
    for name in chosen:
        t0 = time.perf_counter()
        print(f"[bench] {name} ...", file=sys.stderr, flush=True)
        result = table[name]()
        result["bench_wall_s"] = round(time.perf_counter() - t0, 3)
        path = OUT_DIR / "bench" / f"{name}.json"
        write_json(path, result)
        print(f"[bench] {name} -> {path} ({result['bench_wall_s']} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
