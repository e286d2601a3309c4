#!/usr/bin/env python3
"""Markdown tables from cost-bench.sh's results.csv.

curve: each raftstream row is compared with the mean of the Redis rows
(same pipeline) measured right before and right after its configuration.
drain: consumed/s of the drain against the Redis drain row of the same run.
Usage: cmd/ordersbench/cost-table.py results.csv
"""
import csv
import sys


def main(path):
    rows = list(csv.DictReader(open(path)))
    curve = [r for r in rows if r["section"] == "curve"]
    print("| nodes × shards | P | Redis `always` XADD/s (p99) | raftstream XADD/s (p99) | ratio | XADD errors | load |")
    print("|---|---|---|---|---|---|---|")
    for i, r in enumerate(curve):
        if r["target"] == "redis-always":
            continue
        P = r["P"]
        before = next((x for x in reversed(curve[:i]) if x["target"] == "redis-always" and x["P"] == P), None)
        after = next((x for x in curve[i + 1:] if x["target"] == "redis-always" and x["P"] == P), None)
        reds = [x for x in (before, after) if x and x["xadd_per_s"]]
        if not reds or not r["xadd_per_s"]:
            print(f"| {r['target']} | {P} | | failed | | | {r['load1']} |")
            continue
        red = sum(float(x["xadd_per_s"]) for x in reds) / len(reds)
        redp99 = "/".join(f"{float(x['xadd_p99_ms']):.0f}" for x in reds)
        n, s = r["target"].replace("raftstream-", "").split("x")
        loads = [x["load1"] for x in reds] + [r["load1"]]
        print(f"| {n} × {s} | {P} | {red:,.0f} ({redp99} ms) | {float(r['xadd_per_s']):,.0f} "
              f"({float(r['xadd_p99_ms']):.0f} ms) | {float(r['xadd_per_s']) / red:.2f}× | {r['errors']} | "
              f"{min(loads)}–{max(loads)} |")
    drain = [r for r in rows if r["section"] == "drain"]
    red = next((r for r in drain if r["target"] == "redis-always"), None)
    if drain:
        print()
        print("| server | consumed/s (drain) | ratio | produce errors | verify | load |")
        print("|---|---|---|---|---|---|")
        for r in drain:
            ratio = ""
            if red and red["consumed_per_s"] and r["consumed_per_s"]:
                ratio = f"{float(r['consumed_per_s']) / float(red['consumed_per_s']):.2f}×"
            print(f"| {r['target']} | {r['consumed_per_s']} | {ratio} | {r['errors']} | {r['extra']} | {r['load1']} |")
    for r in rows:
        if r["section"] == "rss":
            print(f"\nrss {r['target']}: {r['extra']} (load {r['load1']})")


if __name__ == "__main__":
    main(sys.argv[1])
