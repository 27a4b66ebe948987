#!/usr/bin/env python3
"""The report of a bench/chaos.sh soak, from its directory:

  <name>.jsonl   each peer's metrics (docs/METRICS.md), appended to across restarts
  <name>.log     each peer's log, likewise
  swarm.jsonl    the monitor's record of every peer's steps
  events.tsv     time, start|kill|exit|sigkill-at-stop, name, pid[, exit status]
  rss.tsv        time, name, pid, seconds since that process started, VmRSS (KiB)

The metrics' step, round and memory events (a monitor's every 30 s) carry each process's heap in
use (heap_mib: allocated, not freed), printed beside RSS but not judged: it leaves out the
allocator's free pages (RSS swings by 100-200 MiB between the 30 s trims), but in a kill soak it
swings as much with what a peer holds for a while (state snapshots pinned for downloaders, a
round's buffers, the update archive filling): 112-239 MiB within one trainer's lifetime in the
first soak that had it.

  chaos_report.py SOAK_DIR --begin T --end T [--warmup S] [--hostile KIND|none]
                  [--stall-limit S] [--rss-limit PERCENT]

Exit status 1 when a judgment (PASS/FAIL line) fails."""
import argparse
import collections
import json
import math
import os
import re
import statistics


def read_jsonl(path):
    """The JSON objects of a file and the count of lines that are not one (a SIGKILL mid-line)."""
    rows, broken = [], 0
    if not os.path.exists(path):
        return rows, broken
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            try:
                row = json.loads(line)
            except ValueError:
                broken += 1
                continue
            if isinstance(row, dict):
                rows.append(row)
    return rows, broken


def read_tsv(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [line.rstrip("\n").split("\t") for line in f if line.strip()]


def finite(x):
    return isinstance(x, (int, float)) and math.isfinite(x)


def trainer_stats(name, rows, broken, typical_norm):
    steps = [r for r in rows if r.get("event") == "step"]
    averaged = sum(1 for r in steps if r.get("averaged") is True)
    non_finite = sum(1 for r in steps if "loss" in r and not finite(r["loss"]))
    return {"name": name, "steps": len(steps), "averaged": averaged, "non_finite": non_finite,
            "skipped": sum(1 for r in steps if r.get("applied") is False),
            "big_grad": sum(1 for r in steps if finite(r.get("grad_norm")) and r["grad_norm"] > 10 * typical_norm),
            "no_loss": sum(1 for r in steps if "loss" not in r),
            "last_step": max((r.get("step", 0) for r in steps), default=0), "broken": broken,
            "times": sorted(r["time"] for r in steps if finite(r.get("time"))),
            "peer_id": next((r["peer_id"] for r in rows if r.get("peer_id")), "")}


def print_trainers(stats):
    print(f"{'trainer':<10} {'steps':>6} {'averaged':>9} {'non-finite':>10} {'skipped':>8} {'no loss':>8} "
          f"{'big grad':>8} {'last step':>9} {'broken lines':>12}")
    for s in stats:
        frac = s["averaged"] / s["steps"] if s["steps"] else 0.0
        print(f"{s['name']:<10} {s['steps']:>6} {frac:>9.3f} {s['non_finite']:>10} {s['skipped']:>8} "
              f"{s['no_loss']:>8} {s['big_grad']:>8} {s['last_step']:>9} {s['broken']:>12}")
    print("(averaged: fraction of its steps; no loss: steps without samples of its own; big grad: steps whose "
          "grad_norm was over 10 x the median of all trainers')")


def longest_stall(times, begin, end):
    """Longest gap between consecutive step events (and from the last one to the end)."""
    if not times:
        return end - begin, begin, end
    points = sorted(times) + [end]
    gap, at = max((b - a, a) for a, b in zip(points, points[1:]))
    return gap, at, at + gap


RSS_WINDOW = 60.0  # seconds of samples whose median stands for the start and for the end
LONG_LIFE = 600.0  # seconds of samples after warm-up from which a lifetime is judged on its own


def rss_lives(rows, warmup):
    """{(name, pid): [(time, age, KiB)]} of the samples from `warmup` s after each start, and the
    count of lifetimes with fewer than two such samples."""
    lives = collections.defaultdict(list)
    for t, name, pid, age, kib in rows:
        lives[(name, pid)].append((float(t), float(age), int(kib)))
    warm = {k: [s for s in v if s[1] >= warmup] for k, v in lives.items()}
    return {k: v for k, v in warm.items() if len(v) >= 2}, sum(1 for v in warm.values() if len(v) < 2)


def heap_rows(events, work_rows):
    """rss.tsv-like rows (time, name, pid, age, KiB) of the heap in use that the metrics events
    carry, each event given to its process by the last start of its name before it."""
    starts = collections.defaultdict(list)
    for row in events:
        if row[1] == "start":
            starts[row[2]].append((float(row[0]), row[3]))
    out = []
    for name, rows in work_rows.items():
        begun = sorted(starts.get(name, []))
        for r in rows:
            t, heap = r.get("time"), r.get("heap_mib")
            if not (finite(t) and finite(heap)):
                continue
            life = [b for b in begun if b[0] <= t]
            if life:
                out.append((t, name, life[-1][1], t - life[-1][0], int(heap * 1024)))
    return sorted(out)


def rss_growth(lives):
    """Per process lifetime (name, pid): the median RSS of its first RSS_WINDOW s of warm samples
    against the median of its last RSS_WINDOW s (a peer gives its allocator's free pages back every
    30 s, so one sample lies anywhere in that cycle), and trend(). Oldest first."""
    out = []
    for (name, pid), warm in sorted(lives.items(), key=lambda kv: kv[1][0][0]):
        first = statistics.median(s[2] for s in warm if s[1] <= warm[0][1] + RSS_WINDOW)
        last = statistics.median(s[2] for s in warm if s[1] >= warm[-1][1] - RSS_WINDOW)
        span = warm[-1][1] - warm[0][1]
        out.append((name, pid, warm[-1][1], first, last, 100.0 * (last - first) / first, trend(warm), span))
    return out


def trend(warm):
    """Growth over the samples' span by a least-squares line through all of them, in percent of
    their mean: a process whose RSS swings (a monitor serving state to restarted peers) shows its
    trend here rather than where its first and last minutes happened to fall."""
    ages = [s[1] for s in warm]
    kib = [s[2] for s in warm]
    mean_kib = statistics.mean(kib)
    if len(set(ages)) < 2 or mean_kib == 0:
        return 0.0
    slope = statistics.linear_regression(ages, kib).slope
    return 100.0 * slope * (ages[-1] - ages[0]) / mean_kib


def role(name):
    return "trainer" if name.startswith("trainer") else name


def work_done(rows, started, until):
    """Steps, rounds and catch-ups (state downloads, replays) a process made from its start to
    `until`: a monitor that does not reduce only downloads."""
    return sum(1 for r in rows if r.get("event") in ("step", "round", "catch_up") and finite(r.get("time"))
               and started <= r["time"] <= until)


def adjusted_difference(early, late):
    """Least squares of RSS = a + b x work + g x [late] over (work, KiB) samples (both groups
    non-empty): g, the late lifetimes' RSS above the early ones' at equal work (b is the slope
    within each group)."""
    def centred(group):
        mx = statistics.mean(x for x, _ in group)
        my = statistics.mean(y for _, y in group)
        return mx, my, sum((x - mx) * (y - my) for x, y in group), sum((x - mx) ** 2 for x, _ in group)
    (ex, ey, esxy, esxx), (lx, ly, lsxy, lsxx) = centred(early), centred(late)
    slope = (esxy + lsxy) / (esxx + lsxx) if esxx + lsxx > 0 else 0.0
    return (ly - ey) - slope * (lx - ex), slope


def restart_growth(lives, begin, end, warmup, work_rows):
    """Lifetimes too short to be judged alone, compared across the run: per role (the honest
    trainers pooled), their RSS samples in the first RSS_WINDOW s after warm-up, the lifetimes that
    started in the run's first third against those that started in its last third, at equal work.
    A young process's RSS follows the steps it made (each step adds to the heap until the next
    trim, a stalled one sits at the trimmed floor), and how fast the swarm steps varies across a
    soak: the same age is not the same load. So each sample carries the steps (rounds) its process
    had made by then (from its metrics), and the judgment is the late lifetimes' difference at
    equal work (adjusted_difference) in percent of the early mean. A leak that outlives a process
    (state on disk, a donor's growing reply) shows here; the work of each young process does not.
    [(role, early lifetimes, late lifetimes, early MiB, late MiB, plain percent, adjusted percent,
    MiB per step)], None where a third holds no lifetime."""
    third = (end - begin) / 3.0
    samples = collections.defaultdict(lambda: ([], []))
    lifetimes = collections.defaultdict(lambda: [0, 0])
    for (name, _), warm in lives.items():
        if warm[-1][1] - warm[0][1] >= LONG_LIFE:
            continue
        started = warm[0][0] - warm[0][1]
        young = [(work_done(work_rows.get(name, []), started, t), kib) for t, age, kib in warm
                 if age <= warmup + RSS_WINDOW]
        which = 0 if started < begin + third else 1 if started >= end - third else None
        if which is not None:
            samples[role(name)][which].extend(young)
            lifetimes[role(name)][which] += 1
    out = []
    for r, (early, late) in sorted(samples.items()):
        e = statistics.median(y for _, y in early) if early else None
        l = statistics.median(y for _, y in late) if late else None
        plain = adjusted = per_step = None
        if early and late and e > 0:
            plain = 100.0 * (l - e) / e
            g, slope = adjusted_difference(early, late)
            adjusted = 100.0 * g / statistics.mean(y for _, y in early)
            per_step = slope / 1024
        out.append((r, lifetimes[r][0], lifetimes[r][1], (e or 0) / 1024, (l or 0) / 1024, plain, adjusted, per_step))
    return out


def print_rss(growth, short, across, warmup, what="RSS"):
    print(f"{what} per process lifetime (median of its first {RSS_WINDOW:.0f} s of samples from {warmup:.0f} s after "
          f"its start vs of its last {RSS_WINDOW:.0f} s, and a least-squares line through all of them; "
          f"{short} lifetime(s) too short to tell):")
    for name, pid, age, first, last, pct, line, span in growth:
        judged = "  judged by its line" if span >= LONG_LIFE else ""
        print(f"  {name:<10} pid {pid:>7}  lived {age:>5.0f} s  {first / 1024:7.1f} -> {last / 1024:7.1f} MiB  "
              f"{pct:+6.1f}%  (line through all: {line:+6.1f}%){judged}")
    print(f"{what} at the same age ({warmup:.0f}-{warmup + RSS_WINDOW:.0f} s) of lifetimes under {LONG_LIFE:.0f} s, "
          "started in the run's first third vs its last third (medians), and the difference at equal work "
          "(steps or rounds made by each sample):")
    for r, ne, nl, e, l, plain, adjusted, per_step in across:
        print(f"  {r:<10} {ne} early, {nl} late: {e:7.1f} -> {l:7.1f} MiB  "
              + (f"{plain:+6.1f}%; at equal work {adjusted:+6.1f}% ({per_step:+.2f} MiB per step)"
                 if plain is not None else "(a third without a lifetime)"))


def rss_verdict(growth, across):
    """The largest judged growth: long lifetimes by their line, short ones across restarts.
    (percent, what) or None when nothing could be judged."""
    judged = [(g[6], f"{g[0]} pid {g[1]}, line through {g[7]:.0f} s") for g in growth if g[7] >= LONG_LIFE]
    judged += [(a[6], f"{a[0]} restarts at equal work, {a[1]} early vs {a[2]} late") for a in across
               if a[6] is not None]
    return max(judged, default=None)


def restarts(events, times_by_name, end):
    """(name, restart time, seconds to its first step after it or None, seconds it lived)."""
    starts = collections.defaultdict(list)
    for row in events:
        if row[1] == "start":
            starts[row[2]].append(float(row[0]))
    out = []
    for name, ts in starts.items():
        for i, t in enumerate(ts[1:], start=1):
            until = ts[i + 1] if i + 1 < len(ts) else end
            first = next((x for x in times_by_name.get(name, []) if t < x <= until), None)
            out.append((name, t, None if first is None else first - t, until - t))
    return sorted(out, key=lambda r: r[1])


def print_restarts(rows, begin):
    rejoined = [r[2] for r in rows if r[2] is not None]
    print(f"restarts: {len(rows)}, stepped again before the next kill or the end: {len(rejoined)}"
          + (f" (median {statistics.median(rejoined):.0f} s, max {max(rejoined):.0f} s after the restart)"
             if rejoined else ""))
    for name, t, took, lived in rows:
        if took is None:
            print(f"  {name} restarted at +{t - begin:.0f} s never stepped in the {lived:.0f} s it then ran")


BANNED = re.compile(r"\b([0-9a-f]{16}) is banned for")


def bans(soak, honest, ids):
    """{honest name: set of names (or id prefixes) its log says it banned}."""
    by_prefix = {pid[:16]: name for name, pid in ids.items() if pid}
    out = {}
    for name in honest:
        path = os.path.join(soak, name + ".log")
        text = open(path, encoding="utf-8", errors="replace").read() if os.path.exists(path) else ""
        out[name] = {by_prefix.get(p, p) for p in BANNED.findall(text)}
    return out


def last_validation(rows):
    vals = [(r.get("time", r.get("recorded_at", 0)), r.get("step"), r["val_loss"]) for r in rows if "val_loss" in r]
    return (min(vals), max(vals)) if vals else (None, None)


def judge(ok, text):
    print(("PASS: " if ok else "FAIL: ") + text)
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("soak")
    ap.add_argument("--begin", type=float, required=True)
    ap.add_argument("--end", type=float, required=True)
    ap.add_argument("--warmup", type=float, default=120)
    ap.add_argument("--hostile", default="none")
    ap.add_argument("--stall-limit", type=float, default=120)
    ap.add_argument("--rss-limit", type=float, default=10)
    a = ap.parse_args()
    if not os.path.isfile(os.path.join(a.soak, "events.tsv")):
        ap.error(f"{a.soak}: not a soak directory (no events.tsv)")
    if a.end <= a.begin:
        ap.error("--end must be after --begin")
    events = read_tsv(os.path.join(a.soak, "events.tsv"))
    names = sorted({row[2] for row in events if row[1] == "start" and row[2] != "monitor"})
    honest = [n for n in names if n != "hostile"]
    rows = {n: read_jsonl(os.path.join(a.soak, n + ".jsonl")) for n in names}
    norms = [r["grad_norm"] for n in names for r in rows[n][0] if r.get("event") == "step" and finite(r.get("grad_norm"))]
    stats = {n: trainer_stats(n, *rows[n], statistics.median(norms) if norms else math.inf) for n in names}
    swarm, swarm_broken = read_jsonl(os.path.join(a.soak, "swarm.jsonl"))

    print(f"chaos soak {os.path.basename(a.soak)}: {(a.end - a.begin) / 60:.1f} min, hostile: {a.hostile}")
    print_trainers([stats[n] for n in names])
    total = sum(stats[n]["steps"] for n in honest)
    averaged = sum(stats[n]["averaged"] for n in honest)
    non_finite = sum(stats[n]["non_finite"] for n in honest)
    print(f"honest total: {total} steps, {averaged / total if total else 0:.3f} averaged, {non_finite} non-finite "
          f"losses, {sum(stats[n]['skipped'] for n in honest)} skipped by the non-finite guard")
    print(f"swarm.jsonl: {len(swarm)} rows ({swarm_broken} broken), {len({r.get('peer_id') for r in swarm})} peers, "
          f"global epoch {max((r.get('global_epoch', 0) for r in swarm), default=0)}")
    times = sorted(t for n in honest for t in stats[n]["times"])
    gap, at, until = longest_stall(times, a.begin, a.end)
    print(f"longest stall between honest steps: {gap:.1f} s (+{at - a.begin:.0f} s to +{until - a.begin:.0f} s); "
          f"first step at +{(times[0] - a.begin) if times else float('nan'):.0f} s")
    honest_ids = {stats[n]["peer_id"] for n in honest}
    first_val, last_val = last_validation([r for r in swarm if r.get("peer_id") in honest_ids] + [
        r for n in honest for r in rows[n][0]])
    if last_val:
        print(f"val_loss: {first_val[2]:.4f} at step {first_val[1]} -> {last_val[2]:.4f} at step {last_val[1]} (last)")
    else:
        print("val_loss: none recorded")
    lives, short = rss_lives(read_tsv(os.path.join(a.soak, "rss.tsv")), a.warmup)
    growth = rss_growth(lives)
    work_rows = {n: rows[n][0] for n in names}
    work_rows["monitor"] = read_jsonl(os.path.join(a.soak, "monitor.jsonl"))[0]
    across = restart_growth(lives, a.begin, a.end, a.warmup, work_rows)
    print_rss(growth, short, across, a.warmup)
    heap_lives, heap_short = rss_lives(heap_rows(events, work_rows), a.warmup)
    heap_growth = rss_growth(heap_lives)
    heap_across = restart_growth(heap_lives, a.begin, a.end, a.warmup, work_rows)
    if heap_lives:
        print_rss(heap_growth, heap_short, heap_across, a.warmup, "Heap in use (metrics' heap_mib)")
    print_restarts(restarts(events, {n: stats[n]["times"] for n in names}, a.end), a.begin)
    crashes = [row for row in events if row[1] == "exit"]
    for row in crashes:
        print(f"  {row[2]} (pid {row[3]}) exited by itself at +{float(row[0]) - a.begin:.0f} s, status {row[4]}")
    banned = bans(a.soak, honest, {n: stats[n]["peer_id"] for n in names})
    honest_bans = {n: sorted(b & set(honest)) for n, b in banned.items() if b & set(honest)}
    if "hostile" in names:
        print(f"honest peers that banned the hostile one: {sum('hostile' in b for b in banned.values())} of {len(honest)}")
    for n, b in sorted(banned.items()):
        print(f"  {n} banned: {', '.join(sorted(b)) or 'nobody'}")

    worst = rss_verdict(growth, across)
    ok = [judge(total > 0 and non_finite == 0, f"{non_finite} NaN or non-finite losses in {total} honest steps"),
          judge(gap <= a.stall_limit, f"no stall over {a.stall_limit:.0f} s (longest {gap:.1f} s)"),
          judge(worst is None or worst[0] < a.rss_limit,
                f"RSS growth under {a.rss_limit:.0f}% (largest "
                + (f"{worst[0]:+.1f}%, {worst[1]})" if worst else "not judged: no lifetime long enough, no restarts)")),
          judge(not honest_bans, "no honest peer banned another honest one"
                + "".join(f"; {n} banned {', '.join(b)}" for n, b in honest_bans.items())),
          judge(not crashes, f"no peer exited by itself ({len(crashes)} did)")]
    return 0 if all(ok) else 1


if __name__ == "__main__":
    raise SystemExit(main())
