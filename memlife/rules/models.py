"""The base of memlife's value models: frozen pydantic models (verdicts, evidence, the
contracts between workflows and activities), hashable and never changed in place. Pure."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)
