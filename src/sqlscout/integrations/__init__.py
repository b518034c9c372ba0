"""sqlscout's environment in the trainers people already use. Each module is a thin
adapter over ``sqlscout.env``, the runner and ``sqlscout.scoring`` (no tool, prompt or
reward of its own) and imports its trainer only when used:

- ``trl`` — a ``rollout_func`` and a reward function for TRL's ``GRPOTrainer``.
- ``verifiers`` — a verifiers (0.4, ``verifiers.v1``) taskset, harness and reward over sqlscout's runner and scoring.
- ``skyrl`` — a ``skyrl-gym`` environment (SkyRL's ``BaseTextEnv``), registered as ``sqlscout``.
"""
