"""Run by ``test_train_distributed.py``, under ``torchrun`` or alone: train a config with
a scripted sampler whose answers depend only on the question (and how many times it
was asked), so that one process and several play the very same episodes; each
process writes the questions it played to ``LOG_DIR/rank-R.txt``.

    python tests/distributed_train.py CONFIG LOG_DIR
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections import Counter
from pathlib import Path

from sqlscout.backends.offline_tokenizers import qwen3_5_tokenizer
from sqlscout.backends.scripted import ScriptedBackend, ScriptTurn
from sqlscout.errors import SqlscoutError
from sqlscout.train.config import load_config
from sqlscout.train.loop import train
from sqlscout.train.questions import load_questions


def always_right(question: str) -> bool:
    """About half the questions are always answered right: their groups are uniform."""
    return hashlib.blake2b(question.encode(), digest_size=2).digest()[0] % 2 == 0


def main(config_path: str, log_dir: str) -> None:
    cfg = load_config(config_path)
    gold = {t.question: t.gold_sql for t in load_questions(cfg.data)}
    asked: Counter[str] = Counter()
    log = Path(log_dir) / f"rank-{os.environ.get('RANK', '0')}.txt"

    def reply(turn: ScriptTurn) -> str:
        question = next(q for q in gold if q in turn.prompt)
        k = asked[question]
        asked[question] += 1
        with log.open("a", encoding="utf-8") as f:
            f.write(question + "\n")
        sql = gold[question] if always_right(question) else [gold[question], "SELECT 1", None][k % 3]
        return json.dumps({"tool": "submit_sql", "args": {"sql": sql}}) if sql else "I do not know."

    try:
        train(cfg, backend=ScriptedBackend(reply, tokenizer=qwen3_5_tokenizer()))
    except SqlscoutError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main(*sys.argv[1:])
