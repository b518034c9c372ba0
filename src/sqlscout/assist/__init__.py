"""Help for models not trained on the protocol: a layer of named rules beside the episode.

The environment (``sqlscout.env``) is the protocol alone; this package joins rules to an
episode through its hook points (:mod:`sqlscout.env.hooks`) and knows the protocol only
through them. Modules:

- ``rule`` — what a rule is, and the registry; ``rules/`` — the rules, one module per kind;
- ``layer`` — a profile's rules as one episode's hooks;
- ``profile`` — named profiles, their settings and the version they record;
- ``texts`` — what the rules add to what the model reads;
- ``hints``, ``clause_repairs``, ``sqltext`` — reading a failed query to repair it.
"""

from sqlscout.assist.profile import PROFILES, Profile, get_profile, load_profile
from sqlscout.assist.rule import RULES, Rule

__all__ = ["PROFILES", "Profile", "RULES", "Rule", "get_profile", "load_profile"]
