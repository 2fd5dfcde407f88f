"""Letta's prompts (placeholder until its rules land)."""

from __future__ import annotations

from memlife.bundled.model.script import Rule

RULES: tuple[Rule, ...] = ()
