"""examples/train/train.py: a small hla language model learns in-context
successor lookup on the CPU (issue 14's "a model that learns"): its loss
falls below the stated value within 150 steps, while the same model
without attention stays near ln(vocab) (the task needs the attention)."""

import json
import os
import subprocess
import sys

import pytest

from .api_util import REPO, needs_artefacts, needs_torch

pytestmark = [needs_torch, needs_artefacts]

TRAIN = os.path.join(REPO, "examples", "train", "train.py")


def _train(*args):
    r = subprocess.run([sys.executable, TRAIN, "--steps", "150", *args], capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


# Measured on this machine (2026-12-03): linear_attention 1.13, hla3 1.34,
# the control 2.78 (ln 16 = 2.77), from 2.84-2.96 at step 1; kda (its gates
# learned, 2026-12-06) 1.13.
@pytest.mark.parametrize("op,target", [("linear_attention", 1.5), ("hla3", 1.8), ("kda", 1.5)])
def test_loss_falls_below_target(op, target):
    summary = _train("--op", op, "--target-loss", str(target))
    assert summary["final_loss"] < target < summary["first_loss"]


def test_control_without_attention_does_not_learn():
    summary = _train("--op", "none")
    assert summary["final_loss"] > 2.6
