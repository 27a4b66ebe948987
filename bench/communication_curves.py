#!/usr/bin/env python3
"""Validation loss of bench/bench_communication runs over samples and over wall time, as a table
and an SVG plot (no plotting library: Debian 12's python3 alone). Each argument is LABEL=DIR,
DIR a mode's directory that the bench kept (DEDLOC_KEEP_BENCH_DIR=1: <work dir>/<mode>):

    bench/communication_curves.py OUT.svg gradients=/tmp/bench_communication.1/gradients ...
"""
import datetime
import glob
import json
import os
import sys

COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]


def started(mode_dir):
    """When the first trainer started: the earliest time stamp of the trainers' logs (unix s)."""
    times = []
    for f in glob.glob(os.path.join(mode_dir, "peers", "trainer-*", "log.txt")):
        with open(f) as log:
            first = log.readline().split(" ", 1)[0]
        try:
            times.append(datetime.datetime.strptime(first, "%Y-%m-%dT%H:%M:%SZ")
                         .replace(tzinfo=datetime.timezone.utc).timestamp())
        except ValueError:
            pass
    return min(times) if times else None


def curve(mode_dir):
    """[(samples so far, seconds since the trainers started, val_loss)] over the validated steps."""
    batch, val, first = {}, {}, started(mode_dir)
    for f in sorted(glob.glob(os.path.join(mode_dir, "peers", "trainer-*", "metrics.jsonl"))):
        for line in open(f):
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if e.get("event") != "step":
                continue
            s = e["step"]
            batch[s] = max(batch.get(s, 0), e.get("batch_samples", 0))
            first = e["time"] if first is None else min(first, e["time"])
            if "val_loss" in e:
                val.setdefault(s, (e["time"], e["val_loss"]))
    out, samples = [], 0
    for s in sorted(batch):
        samples += batch[s]
        if s in val:
            out.append((samples, val[s][0] - first, val[s][1]))
    return out


def panel(parts, curves, x0, title, axis, key):
    w, h, pad = 380, 260, 45
    xs = [p[key] for c in curves.values() for p in c]
    ys = [p[2] for c in curves.values() for p in c]
    xmax, ylo, yhi = max(xs) * 1.05, min(ys) - 0.05, max(ys) + 0.05
    X = lambda v: x0 + pad + v / xmax * (w - pad - 10)
    Y = lambda v: 30 + (yhi - v) / (yhi - ylo) * (h - 60)
    parts.append(f'<text x="{x0 + w / 2}" y="18" text-anchor="middle">{title}</text>')
    parts.append(f'<rect x="{x0 + pad}" y="30" width="{w - pad - 10}" height="{h - 60}" fill="none" stroke="#999"/>')
    for i in range(5):
        yv = ylo + (yhi - ylo) * i / 4
        parts.append(f'<text x="{x0 + pad - 4}" y="{Y(yv) + 4:.1f}" text-anchor="end">{yv:.2f}</text>')
        xv = xmax * i / 4
        parts.append(f'<text x="{X(xv):.1f}" y="{h - 14}" text-anchor="middle">{xv:.0f}</text>')
    parts.append(f'<text x="{x0 + w / 2}" y="{h}" text-anchor="middle">{axis}</text>')
    for (label, c), colour in zip(curves.items(), COLOURS):
        pts = " ".join(f"{X(p[key]):.1f},{Y(p[2]):.1f}" for p in c)
        parts.append(f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for p in c:
            parts.append(f'<circle cx="{X(p[key]):.1f}" cy="{Y(p[2]):.1f}" r="3" fill="{colour}"/>')


def svg(curves, file):
    rows = (len(curves) + 1) // 2
    height = 280 + 16 * rows
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="800" height="{height}" font-family="sans-serif" '
             f'font-size="11"><rect width="800" height="{height}" fill="white"/>']
    panel(parts, curves, 0, "validation loss over samples", "samples of the swarm", 0)
    panel(parts, curves, 400, "validation loss over wall time", "seconds", 1)
    for i, (label, colour) in enumerate(zip(curves, COLOURS)):
        parts.append(f'<text x="{60 + 400 * (i % 2)}" y="{284 + 16 * (i // 2)}" fill="{colour}">&#9632; {label}</text>')
    parts.append("</svg>")
    with open(file, "w") as f:
        f.write("\n".join(parts) + "\n")


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    curves = {}
    for arg in sys.argv[2:]:
        label, _, path = arg.partition("=")
        curves[label] = curve(path)
        print(label + ": " + ", ".join(f"{l:.3f} ({s}, {t:.0f} s)" for s, t, l in curves[label]))
    svg({k: v for k, v in curves.items() if v}, sys.argv[1])


if __name__ == "__main__":
    main()
