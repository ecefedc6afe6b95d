#!/usr/bin/env python3
"""AUC per epoch of one `sampan train-local` job: a config plus overrides.

Usage (from the project root):
  bench/epochs_bench.py CONFIG|- [dotted.key=YAML_VALUE ...]

CONFIG is a job file (a preset in configs/, paths relative to the project
root) or - for the built-in defaults. Each override replaces one field, e.g.
  table.optimizer.embedding_initial_accumulator=1000
  data.validation_fraction=0.1
  model.type=DCN_V2
The job's output goes to a fresh temporary directory. Prints one line: the
overrides, then with data.validation_fraction the validation AUC after each
epoch (training stops at the first epoch that does not raise it; the test
AUC is not shown, so settings are chosen without it), otherwise the test AUC
at each point of the training curve (train-local scores the test set 10
times in a run: with data.epochs 5 every second point ends an epoch).
Env: SAMPAN (default bazel-bin/cli/sampan).
"""
import os
import re
import subprocess
import sys
import tempfile

import yaml


def set_path(doc, dotted, value):
    keys = dotted.split(".")
    for k in keys[:-1]:
        doc = doc.setdefault(k, {})
    doc[keys[-1]] = value


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    doc = {}
    if argv[1] != "-":
        with open(argv[1]) as f:
            doc = yaml.safe_load(f) or {}
    overrides = argv[2:]
    for o in overrides:
        key, _, value = o.partition("=")
        set_path(doc, key, yaml.safe_load(value))
    with tempfile.TemporaryDirectory(prefix="epochs-bench-") as tmp:
        doc["output_dir"] = os.path.join(tmp, "out")
        job = os.path.join(tmp, "job.yaml")
        with open(job, "w") as f:
            yaml.safe_dump(doc, f)
        sampan = os.environ.get("SAMPAN", "bazel-bin/cli/sampan")
        run = subprocess.run([sampan, "train-local", job],
                             capture_output=True, text=True)
        log = run.stdout + run.stderr
        if run.returncode != 0:
            sys.exit(f"{' '.join(overrides)}: exit {run.returncode}\n"
                     + "\n".join(log.splitlines()[-5:]))
    val = re.findall(r"epoch \d+: validation AUC ([0-9.]+)", log)
    if val:  # choosing settings: the test rows stay unseen
        print(f"{argv[1]} {' '.join(overrides)}: validation/epoch "
              f"{' '.join(val)}", flush=True)
        return
    test = re.findall(r"\d+ examples: test AUC ([0-9.]+)", log)
    print(f"{argv[1]} {' '.join(overrides)}: test/point {' '.join(test)}",
          flush=True)


if __name__ == "__main__":
    main(sys.argv)
