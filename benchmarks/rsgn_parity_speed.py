"""rsgn_parity message passing: the notebook's 3-operand einsum vs the broadcast matmul used now.

    OMP_NUM_THREADS=1 python benchmarks/rsgn_parity_speed.py [--batches 4] [--out results/rsgn/parity_speed.json]

Times (1) the message op alone, forward + backward, at the hierarchical configuration (batch 64,
256 nodes, d_h 128), and (2) full training steps of ``rsgn_parity`` on rsgn_hierarchical with each
op (the module-level ``dense_messages`` swapped for the einsum), scaled to one epoch (63 batches).
"""
import argparse
import json
import os
import time

import torch

import hebbnets as hn
from hebbnets.rsgn import parity


def einsum_messages(W, send, h):
    return torch.einsum("ji,bj,bjd->bid", W, send, h)  # the notebook's form


def time_op(fn, W, send, h, repeats):
    fn(W, send, h).sum().backward()  # warm-up
    t0 = time.perf_counter()
    for _ in range(repeats):
        fn(W, send, h).sum().backward()
    return (time.perf_counter() - t0) / repeats


def time_epoch(task, fn, batches):
    parity.dense_messages = fn
    m = hn.models.make("rsgn_parity", task=task, progress=False)
    m.spec = hn.DataSpec.from_split(task.train)
    m._build(m.spec)
    m.train()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    bs = m.config.batch_size
    x, y = task.train.x[: bs * (batches + 1)], task.train.y[: bs * (batches + 1)]
    times = []
    for b in range(batches + 1):  # the first batch is a warm-up
        t0 = time.perf_counter()
        loss = torch.nn.functional.cross_entropy(m._forward(x[b * bs : (b + 1) * bs], None), y[b * bs : (b + 1) * bs])
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    n_batches = -(-len(task.train) // bs)
    return sum(times[1:]) / batches * n_batches


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--out", default="results/rsgn/parity_speed.json")
    args = ap.parse_args()
    torch.manual_seed(0)
    B, N, D = 64, 256, 128
    W = torch.rand(N, N, requires_grad=True)
    send = torch.rand(B, N)
    h = torch.randn(B, N, D, requires_grad=True)
    matmul = parity.dense_messages
    res = {"batch": B, "nodes": N, "d_hidden": D, "threads": torch.get_num_threads(), "batches_timed": args.batches,
           "einsum_s": time_op(einsum_messages, W, send, h, args.repeats),
           "matmul_s": time_op(matmul, W, send, h, args.repeats),
           "max_abs_diff": float((einsum_messages(W, send, h) - matmul(W, send, h)).abs().max())}
    task = hn.tasks.make("rsgn_hierarchical")
    res["epoch_einsum_s"] = time_epoch(task, einsum_messages, args.batches)
    res["epoch_matmul_s"] = time_epoch(task, matmul, args.batches)
    parity.dense_messages = matmul
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(res, fh, indent=2)
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
