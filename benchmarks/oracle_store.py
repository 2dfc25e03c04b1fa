"""Re-evaluate committed runs through the oracle store and check their ``eval*.json`` byte for byte.

For each run (default: the five cheapest finished runs of ``supp_exp2_d8_budget``) and each of its
committed evaluation files, copy the run's config, metrics and weights to a scratch directory,
evaluate there with the committed evaluation spec through an :class:`~pfntheory.nn.oracle_store.
OracleStore`, and compare the written file with the committed one byte for byte. Prints per run and
design: the store's hits and misses, the process CPU seconds of the evaluation and whether the bytes
agree. The first run of a design fills the store (misses: the cost of the oracle once per grid);
the others read it (hits: the cost of a run's evaluation with the store).

Run it pinned to one core, e.g. ``taskset -c 1 python benchmarks/oracle_store.py --store DIR``;
exit status 1 when any file differs.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "reports" / "runs"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("runs", nargs="*", help="run directories (default: five d = 8 budget runs)")
    p.add_argument("--store", required=True, help="oracle store directory")
    p.add_argument("--json", default=None, help="also write the table as JSON here")
    args = p.parse_args(argv)

    import torch

    from pfntheory.infra.tree import EvalSpec
    from pfntheory.nn.evaluate import evaluate
    from pfntheory.nn.oracle_store import OracleStore

    torch.set_num_threads(1)
    runs = [Path(r) for r in args.runs] or sorted(
        (p.parent for p in (ROOT / "supp_exp2_d8_budget").glob("*/eval_uniform.json")),
        key=lambda r: (r.name.split("-L")[1].split("-")[0].zfill(3), r.name),
    )[:5]
    store = OracleStore(args.store)
    rows, bad = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        for run in runs:
            for name in ("eval.json", "eval_uniform.json"):
                if not (run / name).is_file():
                    continue
                committed = (run / name).read_bytes()
                doc = json.loads(committed)
                spec = EvalSpec(
                    n_eval=tuple(int(n) for n in doc["results"]),
                    n_instances=int(doc["n_instances"]),
                    seed=int(doc["seed"]),
                    covariates=None if name == "eval.json" else name[5:-5],
                )
                dst = Path(tmp) / f"{run.name}-{name}"
                dst.mkdir()
                for f in ("config.json", "metrics.json", "weights.pt"):
                    shutil.copy(run / f, dst / f)
                before = len(store.events)
                t0 = time.process_time()
                evaluate(dst, spec, store=store)
                cpu = time.process_time() - t0
                kinds = [k for k, _ in store.events[before:]]
                same = (dst / spec.filename).read_bytes() == committed
                bad += not same
                row = {
                    "run": run.name,
                    "file": name,
                    "hits": kinds.count("hit"),
                    "misses": len(kinds) - kinds.count("hit"),
                    "cpu_s": round(cpu, 1),
                    "byte_identical": same,
                }
                rows.append(row)
                print(
                    f"{row['run']:55s} {name:18s} hits {row['hits']:2d} misses "
                    f"{row['misses']:2d}  cpu {cpu:6.1f} s  "
                    f"{'identical' if same else 'DIFFERS'}",
                    flush=True,
                )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
