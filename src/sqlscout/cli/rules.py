"""``sqlscout rules``: the rules of help, their parameters, and the named profiles."""

from __future__ import annotations

import json
from dataclasses import asdict, fields

import typer

from sqlscout.cli.common import console


def rules(as_json: bool = typer.Option(False, "--json", help="Print the rules and profiles as JSON.")) -> None:
    """List the rules of help and the profiles that name them, with their parameters."""
    from sqlscout.assist import PROFILES, RULES

    listing = {
        "rules": {
            name: {
                "summary": rule.summary,
                "measured": rule.measured,
                "needs": list(rule.needs),
                "single_shot": rule.single_shot,
                "params": {f.name: {"default": f.default, "help": f.metadata.get("help", "")} for f in fields(rule.Params)},
            }
            for name, rule in RULES.items()
        },
        "profiles": {name: {"rules": {n: asdict(p) for n, p in profile.rules.items()}, "version": profile.version()} for name, profile in PROFILES.items()},
    }
    if as_json:
        print(json.dumps(listing, indent=2))
        return
    console.rule("[bold]rules[/] (in the order they act; --assist-set RULE=on|off, RULE.PARAM=VALUE)")
    for name, rule in listing["rules"].items():
        console.print(f"[bold]{name}[/]: {rule['summary']}", soft_wrap=True)
        for param, spec in rule["params"].items():
            console.print(f"    {name}.{param} (default {spec['default']!r}): {spec['help']}", markup=False, soft_wrap=True)
        if rule["needs"]:
            console.print(f"    needs: {', '.join(rule['needs'])}", markup=False)
        console.print(f"    measured: {rule['measured']}", markup=False, soft_wrap=True)
    console.rule("[bold]profiles[/] (--assist NAME, or a YAML file with name, base and rules)")
    for name, profile in listing["profiles"].items():
        shown = ", ".join(n + (f"({', '.join(f'{k}={v!r}' for k, v in p.items())})" if p else "") for n, p in profile["rules"].items())
        console.print(f"[bold]{name}[/] {profile['version']}: {shown or 'no rules: the plain protocol'}", soft_wrap=True)


def register(app: typer.Typer) -> None:
    app.command()(rules)
