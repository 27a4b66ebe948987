#!/usr/bin/env python3
"""Summary of bench/learning_quality.sh: validation loss of the swarm and of the single peer over
samples and time, the downstream scores of the evaluated snapshots, and an SVG plot of the
validation loss over samples (no plotting library: Debian 12's python3 alone)."""
import glob
import json
import os
import sys


def events(files):
    for f in files:
        for line in open(f):
            try:
                yield json.loads(line)
            except ValueError:
                pass


def swarm_curve(out):
    """step -> (samples of the model's batches so far, time, val_loss) for the swarm."""
    files = sorted(glob.glob(os.path.join(out, "swarm-metrics", "trainer*.jsonl")))
    batch, val, first = {}, {}, None
    for e in events(files):
        if e.get("event") == "step":
            batch[e["step"]] = max(batch.get(e["step"], 0), e.get("batch_samples", e.get("samples", 0)))
        elif e.get("event") == "validation":
            val.setdefault(e["step"], (e["time"], e["val_loss"]))
        first = e["time"] if first is None else min(first, e["time"])
    return curve(batch, val, first)


def solo_curve(out):
    batch, val, first = {}, {}, None
    for e in events([os.path.join(out, "solo.jsonl")]):
        if e.get("event") == "step":
            batch[e["step"]] = e.get("samples", 0)
        elif e.get("event") == "validation":
            val.setdefault(e["step"], (e["time"], e["val_loss"]))
        first = e["time"] if first is None else min(first, e["time"])
    return curve(batch, val, first)


def curve(batch, val, first):
    rows, total = [], 0
    for step in range(0, max(list(batch) + list(val) + [0]) + 1):
        total += batch.get(step, 0)
        if step in val:
            rows.append((step, total, val[step][0] - first, val[step][1]))
    return rows


def scores(out):
    result = {}
    for f in glob.glob(os.path.join(out, "eval", "*.json")):
        j = json.load(open(f))
        name = os.path.basename(f)[:-5]
        result[name] = j
    return result


def svg(swarm, solo, file):
    w, h, left, bottom = 640, 400, 60, 40
    xs = [r[1] for r in swarm + solo]
    ys = [r[3] for r in swarm + solo]
    x0, x1, y0, y1 = 0, max(xs), min(ys) - 0.1, max(ys) + 0.1

    def px(x, y):
        return (left + (x - x0) / (x1 - x0) * (w - left - 20), h - bottom - (y - y0) / (y1 - y0) * (h - bottom - 20))

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
             f'<rect width="{w}" height="{h}" fill="white"/>',
             f'<line x1="{left}" y1="{h - bottom}" x2="{w - 20}" y2="{h - bottom}" stroke="black"/>',
             f'<line x1="{left}" y1="20" x2="{left}" y2="{h - bottom}" stroke="black"/>']
    for i in range(6):
        x = x0 + (x1 - x0) * i / 5
        X, _ = px(x, y0)
        parts.append(f'<text x="{X:.0f}" y="{h - bottom + 16}" text-anchor="middle">{x / 1000:.0f}k</text>')
        y = y0 + (y1 - y0) * i / 5
        _, Y = px(x0, y)
        parts.append(f'<text x="{left - 6}" y="{Y + 4:.0f}" text-anchor="end">{y:.2f}</text>')
    parts.append(f'<text x="{(w + left) / 2:.0f}" y="{h - 6}" text-anchor="middle">samples (sequences of 128 tokens)</text>')
    parts.append(f'<text x="14" y="{h / 2:.0f}" transform="rotate(-90 14 {h / 2:.0f})" text-anchor="middle">'
                 'validation loss (nats per masked token)</text>')
    for rows, colour, label, dy in ((swarm, "#1f77b4", "local swarm, 2 trainers", 0), (solo, "#d62728", "single peer", 16)):
        points = " ".join("%.1f,%.1f" % px(r[1], r[3]) for r in rows)
        parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{points}"/>')
        parts.append(f'<text x="{w - 200}" y="{40 + dy}" fill="{colour}">{label}</text>')
    parts.append("</svg>")
    with open(file, "w") as f:
        f.write("\n".join(parts) + "\n")


def main():
    out, plot = sys.argv[1], sys.argv[2]
    swarm, solo = swarm_curve(out), solo_curve(out)
    print("| step | swarm samples | swarm minutes | swarm val loss | single-peer samples | single-peer minutes | single-peer val loss |")
    print("|---|---|---|---|---|---|---|")
    solo_by_step = {r[0]: r for r in solo}
    for r in swarm:
        s = solo_by_step.get(r[0])
        tail = f"{s[1]} | {s[2] / 60:.1f} | {s[3]:.3f}" if s else "- | - | -"
        print(f"| {r[0]} | {r[1]} | {r[2] / 60:.1f} | {r[3]:.3f} | {tail} |")
    print()
    print("| checkpoint | step | test accuracy | test macro-F1 | dev accuracy | control test accuracy | control test macro-F1 |")
    print("|---|---|---|---|---|---|---|")
    for name, j in sorted(scores(out).items(), key=lambda kv: (kv[0].split("-")[0], kv[1].get("epoch") or 0)):
        p, c = j["pretrained"], j.get("control")
        dev = p["dev"]["accuracy"] if p.get("dev") else None
        ctl = f'{c["test"]["accuracy"]:.4f} | {c["test"]["macro_f1"]:.4f}' if c else "- | -"
        print(f'| {name} | {j.get("epoch")} | {p["test"]["accuracy"]:.4f} | {p["test"]["macro_f1"]:.4f} | '
              f'{dev:.4f} | {ctl} |' if dev is not None else f'| {name} | {j.get("epoch")} | {p["test"]["accuracy"]:.4f} | '
              f'{p["test"]["macro_f1"]:.4f} | - | {ctl} |')
    if swarm and solo:
        svg(swarm, solo, plot)
        print(f"\nplot: {plot}")


if __name__ == "__main__":
    main()
