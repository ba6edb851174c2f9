#!/bin/bash
# VN benchmarks I, rounds 2-3: every command behind reports/vn_benchmarks_i.{md,json,png}, in order.
# One process at a time, one thread each (about 75 min on one shared CPU core).
set -ex
cd "$(dirname "$0")/.."
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
# 1. configuration search on validation data carved from the seed-0 training split
#    (the choices are then written by hand into MODEL_CONFIGS / TUNING of the task modules)
python benchmarks/vn_benchmarks_i.py search --bench spatial2d_reconstruct
python benchmarks/vn_benchmarks_i.py search --bench spatial2d_decode
python benchmarks/vn_benchmarks_i.py search --bench functions1d_masked
# 1b. round 3: the moves round 2 left out, baselines without the CPU cap (validation only)
python benchmarks/vn_benchmarks_i.py extend --bench functions1d_masked
python benchmarks/vn_benchmarks_i.py extend --bench spatial2d_decode
python benchmarks/vn_benchmarks_i.py extend --bench spatial2d_reconstruct
# 2. 3-seed test tables (spatial2d with per-centre error maps from the same fits)
python benchmarks/vn1_spatial2d_runs.py --mode decode --models vn,cnn,vae,factorized,mlp --seeds 0,1,2 --out results/vn1
python benchmarks/vn1_spatial2d_runs.py --mode reconstruct --models vn,cnn,vae,factorized,mlp --seeds 0,1,2 --out results/vn1
# functions1d: one process per (mode, model, seed) so two cores run them side by side, then one
# table per mode (equivalent to `hebbnets run functions1d --models vn,transformer,mamba,mlp --seeds 0,1,2`)
for mode in masked reconstruct; do
  for model in vn mamba transformer mlp; do
    for seed in 0 1 2; do
      hebbnets run functions1d --models $model --seeds $seed --set mode=$mode --no-progress \
        --out results/vn1_r3/${mode}_${model}_s$seed --resume
    done
  done
  hebbnets merge results/vn1/functions1d_quick_mode-$mode.json results/vn1_r3/${mode}_*/functions1d_quick_mode-$mode.json
done
# 3. is ood_pairs compositional? the current split and the round-1 split
python benchmarks/vn1_split_check.py --models mlp --seeds 0,1,2 --out results/vn1/split_check_new.json
python benchmarks/vn1_split_check.py --models mlp --seeds 0,1,2 --out results/vn1/split_check_old.json \
  --set 'train_combos=["sin","cos","poly","gauss","sin+cos","sin+poly","cos+gauss","poly+gauss","sin(poly)","gauss(sin)"]' \
  --set 'ood_pairs=["sin+gauss","cos+poly"]' --set freq_high=2.5 --set mask_fraction=0.25
# 4. diagnostic outside the parameter budget, then the report
python benchmarks/vn1_capacity_probe.py --mode reconstruct --atoms 784 --seeds 0,1,2 --out results/vn1/capacity_probe_reconstruct.json
python benchmarks/vn1_report.py --results results/vn1 --reports reports
