"""sqlscout's verifiers environment under the top-level name verifiers looks plugins up by
(``vf-eval sqlscout-verifiers``, prime-rl's environment servers); the code lives in
:mod:`sqlscout.integrations.verifiers`."""

from sqlscout.integrations.verifiers import *  # noqa: F403
