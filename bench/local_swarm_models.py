#!/usr/bin/env python3
"""Per global step of a local swarm (bench/local_swarm_models.sh): the trainers that took it, the
distinct params_sha they hold after it (first 8 digits, with counts) and their steps'
(group size, groups merged); then the steps with a single params_sha."""
import collections
import glob
import json
import sys


def main(metrics_dir):
    steps = collections.defaultdict(dict)
    for path in sorted(glob.glob(metrics_dir + '/*.jsonl')):
        name = path.rsplit('/', 1)[-1][:-len('.jsonl')]
        if name == 'swarm':  # the monitor's record of the swarm, not a trainer
            continue
        with open(path) as f:
            for line in f:
                try:
                    j = json.loads(line)
                except ValueError:
                    continue
                if 'step' in j and 'params_sha' in j:
                    steps[j['step']][name] = j
    one = 0
    for step in sorted(steps):
        e = steps[step]
        shas = collections.Counter(v['params_sha'][:8] for v in e.values())
        groups = collections.Counter((v.get('group_size', 0), v.get('merged_groups', 0)) for v in e.values())
        one += len(shas) == 1
        print(f"step {step}: {len(e)} trainers, {len(shas)} model(s) {dict(shas.most_common())}, "
              f"(group size, groups merged): {dict(groups)}")
    print(f"{len(steps)} steps, {one} with one params_sha across the trainers that took them")


if __name__ == '__main__':
    main(sys.argv[1] if len(sys.argv) > 1 else '/tmp/dedloc-models/metrics')
