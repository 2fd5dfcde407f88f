"""What the index of a run's values costs a worker, which holds it for the whole run: bytes
per value (tracemalloc, the items as recorder/values.py keeps them) and the time to find
the values a reply names, on values drawn as the nightly's pairs draw them; and the same
for the index of their other forms (rules/variants.py) the worker keeps beside it.

    ./scripts/bench value-index [--pairs 2000] [--replies 3000]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import tracemalloc

from bench.materialize import NIGHTLY

# Each reply names this many of the run's values amid ordinary words.
NAMED_PER_REPLY = 3


def measure(pairs: int, replies: int) -> dict[str, float]:
    from memlife.rules.pairs import generated_pairs, pair_values
    from memlife.rules.scenario_file import load_scenario
    from memlife.rules.scoring import ValueIndex, normalize
    from memlife.rules.variants import FormIndex, canonical

    scenario = load_scenario(NIGHTLY)
    assert scenario.generate is not None
    scenario = scenario.model_copy(
        update={"generate": scenario.generate.model_copy(update={"count": pairs})}
    )
    # Every value the suite records for the run (activities/record.py, _value_rows).
    rows = [
        (v.pair, v.domain, v.alias, v.text)
        for v in pair_values(list(generated_pairs(scenario, "bench-value-index")), 0)
    ]
    rng = random.Random(7)
    texts = [
        normalize(
            "Según lo que recuerdo, "
            + " y ".join(row[3] for row in rng.sample(rows, NAMED_PER_REPLY))
            + ", y nada más de tu cuenta."
        )
        for _ in range(replies)
    ]
    tracemalloc.start()
    # The strings copied, as a worker's come fresh from the recorder (recorder/values.py).
    index = ValueIndex(
        (text, (pair, sys.intern(domain), sys.intern(alias), text))
        for pair, domain, alias, text in ((p, d, a, "".join(list(t))) for p, d, a, t in rows)
    )
    held, _ = tracemalloc.get_traced_memory()
    # And the index of their other forms beside it, as recorder/values.py builds both.
    owners = [(p, sys.intern(d), sys.intern(a), t) for p, d, a, t in rows]
    forms_index = FormIndex((owner[3], owner) for owner in owners)
    with_forms, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    started = time.perf_counter()
    found = sum(len(index.found_in(text)) for text in texts)
    seconds = time.perf_counter() - started
    started = time.perf_counter()
    for text in texts:
        forms_index.candidates(canonical(text))
    forms_seconds = time.perf_counter() - started
    if found < NAMED_PER_REPLY * replies:  # every named value must be found
        raise SystemExit(
            f"bench value-index: {found} values found in replies naming {NAMED_PER_REPLY * replies}"
        )
    return {
        "values": index.size,
        "mb": held / 2**20,
        "bytes_per_value": held / index.size,
        "us_per_reply": seconds / replies * 1e6,
        "forms": forms_index.size,
        "forms_bytes_per_value": (with_forms - held) / index.size,
        "forms_us_per_reply": forms_seconds / replies * 1e6,
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench value-index", description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=2000, help="pairs drawn (default 2000)")
    parser.add_argument(
        "--replies", type=int, default=3000, help="replies looked through (default 3000)"
    )
    args = parser.parse_args(argv)
    if args.pairs < 1 or args.replies < 1:
        parser.error("--pairs and --replies: at least 1")
    figures = measure(args.pairs, args.replies)
    print(
        f"{figures['values']:,} values of {args.pairs:,} pairs: {figures['mb']:.1f} MB, "
        f"{figures['bytes_per_value']:.0f} bytes a value; {figures['us_per_reply']:.0f} µs "
        f"to find the values in each of {args.replies:,} replies"
    )
    print(
        f"the index of their other forms (rules/variants.py, {figures['forms']:,} "
        "values filed): "
        f"{figures['forms_bytes_per_value']:.0f} bytes a value more; "
        f"{figures['forms_us_per_reply']:.0f} µs more per reply"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
