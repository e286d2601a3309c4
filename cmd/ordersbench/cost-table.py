#!/usr/bin/env python3
"""Markdown tables, and optionally an SVG chart, from cost-bench.sh's results.csv.

curve: each raftstream row is compared with the mean of the Redis rows
(same pipeline) measured right before and right after its configuration.
drain: consumed/s of the drain against the Redis drain row of the same run.
Usage: cmd/ordersbench/cost-table.py results.csv [--svg chart.svg]
The chart plots the curve: XADD/s as a ratio of Redis's, and p99 latency,
against the number of shards, one line per node count and pipeline depth.
"""
import csv
import math
import sys


def curve_points(rows):
    """One dict per raftstream curve row: nodes, shards, P, XADD/s, p99, the
    Redis XADD/s and p99s it is compared with, errors and loads."""
    curve = [r for r in rows if r["section"] == "curve"]
    out = []
    for i, r in enumerate(curve):
        if r["target"] == "redis-always":
            continue
        P = r["P"]
        before = next((x for x in reversed(curve[:i]) if x["target"] == "redis-always" and x["P"] == P), None)
        after = next((x for x in curve[i + 1:] if x["target"] == "redis-always" and x["P"] == P), None)
        reds = [x for x in (before, after) if x and x["xadd_per_s"]]
        n, s = r["target"].replace("raftstream-", "").split("x")
        p = {"target": r["target"], "nodes": int(n), "shards": int(s), "P": int(P), "errors": r["errors"],
             "loads": [x["load1"] for x in reds] + [r["load1"]], "ok": bool(reds and r["xadd_per_s"])}
        if p["ok"]:
            p["rps"] = float(r["xadd_per_s"])
            p["p99"] = float(r["xadd_p99_ms"])
            p["redis_rps"] = sum(float(x["xadd_per_s"]) for x in reds) / len(reds)
            p["redis_p99"] = [float(x["xadd_p99_ms"]) for x in reds]
            p["ratio"] = p["rps"] / p["redis_rps"]
        out.append(p)
    return out


def print_tables(rows, points):
    print("| nodes × shards | P | Redis `always` XADD/s (p99) | raftstream XADD/s (p99) | ratio | XADD errors | load |")
    print("|---|---|---|---|---|---|---|")
    for p in points:
        if not p["ok"]:
            print(f"| {p['target']} | {p['P']} | | failed | | | {p['loads'][-1]} |")
            continue
        redp99 = "/".join(f"{v:.0f}" for v in p["redis_p99"])
        print(f"| {p['nodes']} × {p['shards']} | {p['P']} | {p['redis_rps']:,.0f} ({redp99} ms) | {p['rps']:,.0f} "
              f"({p['p99']:.0f} ms) | {p['ratio']:.2f}× | {p['errors']} | {min(p['loads'])}–{max(p['loads'])} |")
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


COLORS = {1: "#1f77b4", 3: "#d62728", 5: "#2ca02c"}


def svg_chart(points, title):
    """Two panels side by side: XADD/s ÷ Redis's, and p99 in ms (log scale),
    against shards (log scale). Solid lines are -P 16, dashed -P 1; the
    colour is the node count. Grey lines mark Redis: 1.0× on the ratio
    panel, the median of its p99s at each depth on the latency panel."""
    pts = [p for p in points if p["ok"]]
    if not pts:
        raise SystemExit("no curve rows to plot")
    W, H, M = 440, 300, (50, 20, 45, 60)  # panel width/height, margins: left, right, top, bottom
    shards = sorted({p["shards"] for p in pts})
    xs_lo, xs_hi = math.log2(min(shards)), math.log2(max(shards))
    if xs_hi == xs_lo:
        xs_hi = xs_lo + 1

    def xpos(s):
        return M[0] + (math.log2(s) - xs_lo) / (xs_hi - xs_lo) * (W - M[0] - M[1])

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{2 * W}" height="{H + 40}" '
           f'font-family="sans-serif" font-size="11">',
           f'<rect width="{2 * W}" height="{H + 40}" fill="white"/>',
           f'<text x="{W}" y="16" text-anchor="middle" font-size="13">{esc(title)}</text>']
    panels = [("XADD/s ÷ Redis AOF always (same run)", "ratio", False),
              ("XADD p99 latency, ms (log scale)", "p99", True)]
    for k, (label, key, logy) in enumerate(panels):
        ox = k * W
        vals = [p[key] for p in pts]
        if logy:
            lo, hi = math.floor(math.log10(min(vals))), math.ceil(math.log10(max(vals)))
            hi = max(hi, lo + 1)
            ticks = [10 ** e for e in range(lo, hi + 1)]
            f = lambda v: (math.log10(v) - lo) / (hi - lo)
        else:
            top = max(1.0, max(vals))
            step = 0.25 if top <= 1.5 else 0.5
            hi = math.ceil(top / step) * step
            ticks = [i * step for i in range(int(hi / step) + 1)]
            f = lambda v: v / hi
        ypos = lambda v: M[2] + (1 - f(v)) * (H - M[2] - M[3]) + 20
        x0, x1 = ox + M[0], ox + W - M[1]
        out.append(f'<text x="{ox + W / 2}" y="{M[2] + 8}" text-anchor="middle">{esc(label)}</text>')
        for t in ticks:
            y = ypos(t)
            out.append(f'<line x1="{x0}" x2="{x1}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>')
            out.append(f'<text x="{x0 - 4}" y="{y + 4:.1f}" text-anchor="end">{t:g}</text>')
        if not logy:
            y = ypos(1.0)
            out.append(f'<line x1="{x0}" x2="{x1}" y1="{y:.1f}" y2="{y:.1f}" stroke="#888" stroke-dasharray="2,2"/>')
            out.append(f'<text x="{x1 - 4}" y="{y - 4:.1f}" text-anchor="end" fill="#666">Redis</text>')
        else:
            # Redis's p99, the median of its rows, per pipeline depth.
            for P, dash in ((16, "6,3"), (1, "2,2")):
                reds = sorted(v for p in pts if p["P"] == P for v in p["redis_p99"])
                if not reds:
                    continue
                v = reds[len(reds) // 2]
                if 10 ** lo <= v <= 10 ** hi:
                    y = ypos(v)
                    out.append(f'<line x1="{x0}" x2="{x1}" y1="{y:.1f}" y2="{y:.1f}" stroke="#888" '
                               f'stroke-dasharray="{dash}"/>')
                    out.append(f'<text x="{x0 + 40}" y="{y - 4:.1f}" fill="#666">Redis -P {P}</text>')
        for s in shards:
            x = ox + xpos(s)
            out.append(f'<text x="{x:.1f}" y="{H + 20 - M[3] + 16}" text-anchor="middle">{s}</text>')
        out.append(f'<text x="{ox + W / 2}" y="{H + 20 - M[3] + 32}" text-anchor="middle">shards</text>')
        out.append(f'<rect x="{x0}" y="{M[2] + 20}" width="{x1 - x0}" height="{H - M[2] - M[3]}" '
                   f'fill="none" stroke="#444"/>')
        for nodes in sorted({p["nodes"] for p in pts}):
            for P, dash in ((16, ""), (1, ' stroke-dasharray="5,3"')):
                line = sorted((p for p in pts if p["nodes"] == nodes and p["P"] == P), key=lambda p: p["shards"])
                if not line:
                    continue
                c = COLORS.get(nodes, "#555")
                xy = " ".join(f"{ox + xpos(p['shards']):.1f},{ypos(p[key]):.1f}" for p in line)
                if len(line) > 1:
                    out.append(f'<polyline points="{xy}" fill="none" stroke="{c}" stroke-width="2"{dash}/>')
                for p in line:
                    shape = "circle" if P == 16 else "rect"
                    x, y = ox + xpos(p["shards"]), ypos(p[key])
                    if shape == "circle":
                        out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{c}"/>')
                    else:
                        out.append(f'<rect x="{x - 3:.1f}" y="{y - 3:.1f}" width="6" height="6" fill="{c}"/>')
    # legend
    ly = H + 32
    lx = 60
    for nodes in sorted({p["nodes"] for p in pts}):
        c = COLORS.get(nodes, "#555")
        out.append(f'<line x1="{lx}" x2="{lx + 24}" y1="{ly}" y2="{ly}" stroke="{c}" stroke-width="2"/>')
        out.append(f'<text x="{lx + 28}" y="{ly + 4}">{nodes} node{"s" if nodes > 1 else ""}</text>')
        lx += 100
    out.append(f'<line x1="{lx}" x2="{lx + 24}" y1="{ly}" y2="{ly}" stroke="#333" stroke-width="2"/>'
               f'<text x="{lx + 28}" y="{ly + 4}">-P 16 (circles)</text>')
    lx += 130
    out.append(f'<line x1="{lx}" x2="{lx + 24}" y1="{ly}" y2="{ly}" stroke="#333" stroke-width="2" '
               f'stroke-dasharray="5,3"/><text x="{lx + 28}" y="{ly + 4}">-P 1 (squares)</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def main(argv):
    if len(argv) not in (1, 3) or (len(argv) == 3 and argv[1] != "--svg"):
        raise SystemExit("usage: cost-table.py results.csv [--svg chart.svg]")
    rows = list(csv.DictReader(open(argv[0])))
    points = curve_points(rows)
    print_tables(rows, points)
    if len(argv) == 3:
        loads = [float(l) for p in points for l in p["loads"] if l]
        title = "raftstream cost curve: 50 producers, orders:{0..15}, fsync on; replication factor min(3, nodes)"
        if loads:
            title += f" (load {min(loads):.1f}–{max(loads):.1f})"
        with open(argv[2], "w") as f:
            f.write(svg_chart(points, title))


if __name__ == "__main__":
    main(sys.argv[1:])
