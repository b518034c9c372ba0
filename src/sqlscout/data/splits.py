"""Named splits by database: where help is chosen, where it is reported, where training reads.

A figure means something only on questions nothing was chosen on. Spider dev's twenty
databases are split once, here, into databases to **tune** on (prompts, assist rules,
settings) and databases to **report** on; the reporting split also leaves out the 100
questions (``--select random --seed 0 --limit 100`` over all of dev) that the rules
before this split were chosen on. Spider-DK's questions all run on reporting databases
(or on ``wta_1``, which is not here), so it is a reporting set as a whole. The tuning
databases are those Spider-DK does not use, so that no Spider-DK question paraphrases a
question rules were tuned on.

Training (issue 38, ``configs/grpo-cpu-qwen2.5-coder-0.5b.yaml``) reads the tuning
databases only (``dev-tune``: 316 human-written questions); its held-out curves and its
reported figures come from the reporting databases and Spider-DK, so no evaluated
database is ever trained on. Spider's 144 training databases are disjoint from dev by
construction (:data:`SPIDER_DEV_DATABASES` lists what ``sqlscout questions`` keeps out
when it writes questions for their gold SQL); run 3
(``configs/grpo-cpu-qwen2.5-coder-0.5b-run3.yaml``) adds such questions, checked by
execution, from ``configs/data/spider-train-questions.jsonl``.

>>> len(SPIDER_DEV_TUNE) + len(SPIDER_DEV_REPORT)
20
>>> set(SPIDER_DEV_TUNE) & set(SPIDER_DEV_REPORT)
set()
>>> len(CHOSEN_ON)
100
"""

from __future__ import annotations

from typing import Sequence

from sqlscout.env.task import Task
from sqlscout.errors import ConfigError

__all__ = [
    "CHOSEN_ON",
    "NAMED_SPLITS",
    "SPIDER_DEV_DATABASES",
    "SPIDER_DEV_REPORT",
    "SPIDER_DEV_TUNE",
    "named_split",
]

# Spider dev databases not used by Spider-DK: 316 questions in all.
SPIDER_DEV_TUNE: tuple[str, ...] = (
    "employee_hire_evaluation",
    "network_1",
    "poker_player",
    "tvshow",
    "world_1",
)

# The other fifteen (wta_1 has no database file here): 656 runnable questions, 588 once
# the questions in CHOSEN_ON are left out.
SPIDER_DEV_REPORT: tuple[str, ...] = (
    "battle_death",
    "car_1",
    "concert_singer",
    "course_teach",
    "cre_Doc_Template_Mgt",
    "dog_kennels",
    "flight_2",
    "museum_visit",
    "orchestra",
    "pets_1",
    "real_estate_properties",
    "singer",
    "student_transcripts_tracking",
    "voter_1",
    "wta_1",
)

SPIDER_DEV_DATABASES: frozenset[str] = frozenset(SPIDER_DEV_TUNE + SPIDER_DEV_REPORT)

# Spider dev question ids (positions in dev.json) of `--select random --seed 0 --limit 100`
# over the runnable dev questions: the questions every rule before the split was chosen on.
CHOSEN_ON: frozenset[str] = frozenset(
    str(i)
    for i in (
        1, 14, 41, 63, 64, 75, 82, 93, 95, 97, 101, 103, 111, 142, 143, 145, 150, 195, 209, 223,
        227, 244, 249, 256, 265, 266, 288, 308, 310, 317, 323, 327, 333, 338, 341, 362, 366, 394,
        408, 414, 492, 506, 515, 520, 545, 550, 559, 563, 567, 578, 582, 585, 595, 607, 618, 623,
        626, 627, 635, 643, 659, 678, 687, 688, 695, 702, 717, 746, 762, 782, 784, 789, 798, 809,
        835, 838, 864, 865, 880, 884, 886, 891, 906, 909, 911, 922, 926, 932, 946, 948, 950, 973,
        975, 982, 985, 991, 993, 995, 1002, 1019,
    )
)

# The named splits of Spider dev, each with what it keeps.
NAMED_SPLITS: dict[str, str] = {
    "dev-tune": "Spider dev questions on the tuning databases (choose help and settings here; GRPO trains here)",
    "dev-report": "Spider dev questions on the reporting databases, less the 100 chosen on before",
}


def named_split(tasks: Sequence[Task], name: str) -> list[Task]:
    """The questions of Spider dev ``tasks`` that the named split keeps, in file order.

    >>> from sqlscout.env.task import Task
    >>> tasks = [Task("0", "q", "a.sqlite", db_id="world_1"), Task("1", "q", "b.sqlite", db_id="car_1"),
    ...          Task("14", "q", "b.sqlite", db_id="car_1")]
    >>> [t.question_id for t in named_split(tasks, "dev-tune")], [t.question_id for t in named_split(tasks, "dev-report")]
    (['0'], ['1'])
    """
    if name == "dev-tune":
        return [t for t in tasks if t.db_id in SPIDER_DEV_TUNE]
    if name == "dev-report":
        return [t for t in tasks if t.db_id in SPIDER_DEV_REPORT and t.question_id not in CHOSEN_ON]
    raise ConfigError(f"unknown split {name!r}; choose one of {', '.join(NAMED_SPLITS)}")
