"""A cell's seeds split over several devices (`bcl.engine.sequence.seed_mesh`, nbs/engine/23_sequence.ipynb), on the CPU with two
host devices (`XLA_FLAGS=--xla_force_host_platform_device_count=2`, in a subprocess: JAX fixes its devices when it
starts): the numbers per seed equal those of the single-device program within float32 rounding."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = r'''
import json, sys
import numpy as np, jax, jax.numpy as jnp
from bcl.core import Split, Task, TaskSequence, tree_sum
from bcl.models import make_model
from bcl.engine.sequence import TrainOptions, seed_mesh, train_sequence
from bcl.engine.train import Method, MethodState, Training, nll_sum, predict_probabilities

rng = np.random.default_rng(0)
def blobs(centres, labels, n=12):
    xs = np.concatenate([rng.normal(c, 0.3, size=(n, 2)) for c in centres]).astype(np.float32)
    return Split(xs, np.repeat(np.asarray(labels, np.int32), n))
tasks = tuple(Task(*(blobs(c, l) for _ in range(3)), classes=tuple(l))
              for c, l in [([(-1, 0), (1, 0)], [0, 1]), ([(0, 1.5)], [2])])
sequence = TaskSequence("toy", tasks, 3, "softmax", (2,), (np.full(2, -2.0), np.full(2, 2.0)))
model = make_model("fcnn16", 3, (2,))
def loss(params, memory, key, batch, hyper, task):
    nll = nll_sum(model.apply(params, batch.xs), batch.ys, "softmax", batch.mask)
    return nll + 0.5 * tree_sum(jax.tree.map(jnp.square, params)) / task.n_batches, {}
method = Method("toy", model, "softmax", lambda k, s: MethodState(model.init(k), ()), loss, lambda k, s, sp, h, t: s,
                lambda k, p, xs: predict_probabilities(model.apply(p, xs), "softmax"), Training(5, 4))
seeds = (0, 1, 2, 3)
out = {"devices": len(jax.devices()), "mesh": None if seed_mesh(len(seeds)) is None else seed_mesh(len(seeds)).size}
for shard in (True, False):
    result = train_sequence(method, sequence, {"learning_rate": [0.05, 0.01]}, seeds=seeds, progress=False,
                            options=TrainOptions(shard_seeds=shard))
    leaf = jax.tree.leaves(result.state.params)[0]
    out[str(shard)] = {"params": [np.asarray(l).tolist() for l in jax.tree.leaves(result.state.params)],
                       "losses": result.losses.tolist(), "nll": result.metrics["test/nll"].tolist(),
                       "accuracy": result.metrics["test/accuracy"].tolist(),
                       "params_on": len(leaf.sharding.device_set)}
print(json.dumps(out))
'''


def run(devices: int) -> dict:
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "TQDM_DISABLE": "1", "PYTHONPATH": str(ROOT),
           "XLA_FLAGS": f"--xla_force_host_platform_device_count={devices}"}
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_seeds_split_over_two_host_devices_give_the_single_device_numbers():
    two, one = run(2), run(1)
    assert two["devices"] == 2 and two["mesh"] == 2 and one["mesh"] is None
    assert two["True"]["params_on"] == 2  # the seeds were split: each device holds two of the four
    assert two["False"]["params_on"] == 1 and one["True"]["params_on"] == 1
    for name in ("params", "losses", "nll"):
        reference = one["True"][name]
        for run_ in (two["True"], two["False"]):
            for a, b in zip(run_[name] if name == "params" else [run_[name]],
                            reference if name == "params" else [reference]):
                np.testing.assert_allclose(np.asarray(a, np.float32), np.asarray(b, np.float32), rtol=1e-4,
                                           atol=1e-5, err_msg=name)  # float32 rounding: summation orders differ
    # a prediction on a near-tie may flip with the rounding: accuracies agree within one flipped prediction of the
    # smallest test task (one of 24 points moves an accuracy by 0.042)
    np.testing.assert_allclose(two["True"]["accuracy"], one["True"]["accuracy"], atol=1 / 24 + 1e-6)
    # the run learnt something (so that equality is not that of untouched initial parameters)
    losses = np.asarray(one["True"]["losses"])
    assert (losses[0, 0, :, -1] < losses[0, 0, :, 0]).all()
