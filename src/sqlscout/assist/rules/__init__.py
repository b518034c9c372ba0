"""The rules of help, one module per kind; importing this package registers them all,
in the order they act (:data:`sqlscout.assist.rule.RULES`)."""

from sqlscout.assist.rules import prompt, replies, repair, loops, turns, draft  # noqa: F401  (registration order)
