"""How fast the study engine trains a tuning grid, against how researchers usually write it.

One problem (default: the digits MLP, the quick budget), one optimizer at a time, ``--rates`` learning rates x
``--seeds`` seeds, the same runs four ways, every one recording the validation and test metric at the same
evaluation points:

* **usual loop** — what a training script does today: for every (rate, seed), the optimizer built with a
  Python-float rate, a ``jax.jit``-ed step (compiled again for every rate: the rate is baked in), one
  dispatch per step from a Python loop, mini-batches drawn on the host;
* **one by one** — the engine's single-run program (rate and seed traced, one ``lax.scan``), compiled once
  and called once per (rate, seed);
* **engine, 1 device** — one program for the whole grid (``jax.vmap`` over rates and seeds);
* **engine, N devices** — the same program with the run axis sharded over every device (start the process
  with ``XLA_FLAGS=--xla_force_host_platform_device_count=N`` on CPU).

Each figure includes compilation (and says how much of it was compilation). ``--compile-all`` also reports the
compile time of every contender's single-contender program and of each family's program (lax.switch).

    .venv/bin/python benchmarks/study_speed.py --optimizers adam,ftml
    XLA_FLAGS="--xla_force_host_platform_device_count=2 --xla_llvm_disable_expensive_passes=true" \\
        .venv/bin/python benchmarks/study_speed.py --optimizers adam,ftml --compile-all
"""

from __future__ import annotations

import argparse
import os
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

from mxopt_jax.compare import contenders as C
from mxopt_jax.compare import engine
from mxopt_jax.compare.problems import PROBLEMS


def usual_loop(problem, contender, lrs, seeds, steps):
    """The common script: a Python loop over (rate, seed) and over steps; one jitted step per rate.

    Returns the seconds spent in the first step of each rate (trace + compile + one step).
    """
    train, val, test = (jax.tree.map(jnp.asarray, s) for s in problem.data())
    n = jax.tree.leaves(train)[0].shape[0]
    grad = jax.value_and_grad(problem.train_loss, has_aux=True)  # any problem, with or without model state
    metric = jax.jit(problem.evaluate)
    first_steps = 0.0
    for lr in lrs:
        tx = contender.build(float(lr), jax.random.PRNGKey(0))

        @jax.jit
        def step(params, state, model, batch, tx=tx):
            (loss, model), g = grad(params, model, batch)
            updates, state = tx.update(g, state, params)
            return optax.apply_updates(params, updates), state, model, loss

        for s_i, seed in enumerate(seeds):
            rng = np.random.default_rng(seed)
            params = problem.init(jax.random.PRNGKey(seed))
            model = problem.initial_state(jax.random.PRNGKey(seed))
            state = tx.init(params)
            for i in range(steps):
                idx = rng.integers(0, n, problem.batch_size)
                batch = jax.tree.map(lambda a, idx=idx: a[idx], train)
                t0 = time.perf_counter()
                params, state, model, loss = step(params, state, model, batch)
                if i == 0 and s_i == 0:
                    jax.block_until_ready(loss)
                    first_steps += time.perf_counter() - t0
                if (i + 1) % problem.eval_every == 0:
                    float(metric(params, model, val)), float(metric(params, model, test))
    return first_steps


def one_by_one(problem, contender, lrs, seeds, steps):
    t0 = time.perf_counter()
    run = engine.single_run(problem, contender, steps)
    run(lrs[0], seeds[0])  # compiles
    compile_s = time.perf_counter() - t0
    for lr in lrs:
        for seed in seeds:
            run(lr, seed)
    return compile_s


def vmapped(problem, contender, lrs, seeds, steps, devices):
    group = engine.compile_group(problem, [contender], len(lrs) * len(seeds), steps=steps, devices=devices)
    group.run(0, {"learning_rate": lrs}, seeds)
    return group.compile_s


def timed(fn, *args):
    t0 = time.perf_counter()
    compile_s = fn(*args)
    return time.perf_counter() - t0, compile_s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--problem", default="digits_mlp", choices=list(PROBLEMS))
    ap.add_argument("--optimizers", default="adam,ftml")
    ap.add_argument("--rates", type=int, default=6)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=None, help="default: the problem's quick budget")
    ap.add_argument("--skip-usual", action="store_true", help="skip the (slow) usual loop")
    ap.add_argument("--compile-all", action="store_true", help="compile time of every contender and family")
    args = ap.parse_args()
    problem = PROBLEMS[args.problem]()
    steps = args.steps or problem.quick_steps or problem.steps
    seeds = list(range(args.seeds))
    devs = jax.devices()
    print(
        f"problem {problem.name}, {steps} steps, batch {problem.batch_size}, {args.rates} rates x {args.seeds} seeds"
    )
    print(f"devices: {len(devs)} x {devs[0].platform}; XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r}")
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    print()
    print(
        "| optimizer | usual loop | one by one | engine, 1 device | engine, %d devices | usual / engine |"
        % len(devs)
    )
    print("|---|---|---|---|---|---|")
    for name in args.optimizers.split(","):
        c = C.resolve([name])[0]
        lrs = c.default_lr * 10.0 ** (0.5 * (np.arange(args.rates) - args.rates // 2))
        cells, totals = [], {}
        for key, fn, extra in (
            ("usual", usual_loop, ()),
            ("one", one_by_one, ()),
            ("v1", vmapped, (devs[:1],)),
            ("vn", vmapped, (devs,)),
        ):
            if key == "usual" and args.skip_usual:
                cells.append("—")
                continue
            total, comp = timed(fn, problem, c, lrs, seeds, steps, *extra)
            totals[key] = total
            cells.append(f"{total:.1f} s ({comp:.1f} s compile)")
        ratio = f"{totals['usual'] / totals['vn']:.1f}x" if "usual" in totals else "—"
        print(f"| {name} | " + " | ".join(cells) + f" | {ratio} |", flush=True)
    if args.compile_all:
        print()
        print("| program | contenders | compile s |")
        print("|---|---|---|")
        families: dict[str, list] = {}
        for c in C.default_contenders():
            g = engine.compile_group(problem, [c], args.rates * args.seeds, steps=steps)
            print(f"| {c.name} | 1 | {g.compile_s:.2f} |", flush=True)
            families.setdefault(c.family, []).append(c)
        for fam, cs in families.items():
            g = engine.compile_group(problem, cs, args.rates * args.seeds, steps=steps)
            print(f"| {fam} (lax.switch) | {len(cs)} | {g.compile_s:.2f} |", flush=True)
    print(f"\nload average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
