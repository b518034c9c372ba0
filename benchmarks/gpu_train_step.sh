#!/usr/bin/env bash
# Training-step throughput on a GPU: our GRPO update against a plain forward + backward +
# AdamW step over the same tokens, for a randomly initialised model with Qwen3.5-2B's
# configuration, at the recipe's batch shape (144 episodes = 18 questions x a group of 8),
# bf16 autocast through accelerate and gradient checkpointing, as `sqlscout train` runs it.
#
# Needs only torch, transformers (with Qwen3.5), accelerate and numpy — what the lent H200
# has (no vLLM, no tokenizer packages, no data: the episodes are synthetic token ids with
# the shape of real ones). Run from the repository root:
#
#   bash benchmarks/gpu_train_step.sh                 # 144 episodes x 4096 tokens
#   SEQ_LEN=2048 EPISODES=72 bash benchmarks/gpu_train_step.sh
#   MODEL=tiny-cpu EPISODES=8 SEQ_LEN=2048 bash benchmarks/gpu_train_step.sh   # the same on a CPU, tiny model
#
# Prints one JSON line per variant as it finishes (plain, grpo, grpo+kl), then a table with
# seconds per step, trained tokens per second, peak GPU memory and the throughput ratio.
# If $OUT is set, the output is also written to $OUT/gpu_train_step.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
EPISODES="${EPISODES:-144}"
SEQ_LEN="${SEQ_LEN:-4096}"
MICRO="${MICRO_BATCH_TOKENS:-32768}"
REPS="${REPS:-1}"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
export TRANSFORMERS_VERBOSITY=error TOKENIZERS_PARALLELISM=false
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
"$PYTHON" -c "import torch, transformers, accelerate; print('torch', torch.__version__, 'transformers', transformers.__version__, 'accelerate', accelerate.__version__, 'cuda', torch.cuda.is_available())"
run() {
  "$PYTHON" benchmarks/train_step.py --part update --synthetic "${MODEL:-qwen3.5-2b}" \
    --episodes "$EPISODES" --seq-len "$SEQ_LEN" --micro-batch-tokens "$MICRO" --reps "$REPS" --threads 8
}
if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT"
  run 2>&1 | tee "$OUT/gpu_train_step.txt"
else
  run
fi
