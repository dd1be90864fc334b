# Call 4, on the machine of call 3 (still held), whose log was /tmp/tune_gpu_2178.db:
DB=/tmp/tune_gpu_2178.db; B=bundle; T=$B/bin/tessel
for c in dense_bias_gelu_1024x768x3072 bmm_qk_96x128x64x128 conv2d_bias_relu_b1_64x56x56_k3; do
  $T run --suite $B/suite.json --case $c --target cuda --best --db $DB --no-flush-l2 --json >> $OUT/best_noflush.jsonl
  $T run --suite $B/suite.json --case $c --target cuda --schedule default --no-flush-l2 --json >> $OUT/default_noflush.jsonl
done
# (then the best ok record per workload exported to $OUT/best_records.jsonl: the committed schedules)
CASES="dense_bias_gelu_1024x768x3072 bmm_qk_96x128x64x128 conv2d_bias_relu_b1_64x56x56_k3" BUDGET_S=200 OUT=$OUT \
  timeout 420 python3 experiments/tune/torch_subset.py $B/torch_baselines.py > $OUT/torch.txt 2>&1
