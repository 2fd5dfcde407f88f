"""`headers`: the secrets every request carries, from the document's security schemes (or
its authorization-ish header parameters, or what the document was fetched with), each read
from an environment variable named after the service."""

from __future__ import annotations

import re
from typing import Any

from memlife.rules.openapi.document import Op
from memlife.rules.openapi.proposal import Guess
from memlife.rules.openapi.vocabulary import normalized

# What the authorization-ish header parameters of a document without securitySchemes are.
AUTH_HEADERS = ("authorization", "x-api-key", "api-key", "apikey", "x-api-token")


def _env_name(name: str) -> str:
    first = re.split(r"[^A-Za-z0-9]+", name.strip())[0] or "TARGET"
    return re.sub(r"[^A-Z0-9]", "_", first.upper()) + "_API_KEY"


def security_headers(
    document: dict[str, Any], ops: list[Op], name: str
) -> tuple[dict[str, Any], list[Guess]]:
    """The secrets every request carries: one scheme the chosen operations accept."""
    env = _env_name(name)
    schemes = (document.get("components") or {}).get("securitySchemes") or {}
    used: list[str] = []
    for op in ops:
        for requirement in op.security or []:
            if isinstance(requirement, dict):
                used += [n for n in requirement if n not in used]
    candidates = [n for n in used if isinstance(schemes.get(n), dict)] or [
        n for n in schemes if isinstance(schemes[n], dict)
    ]

    def rank(scheme_name: str) -> int:
        scheme = schemes[scheme_name]
        kind = scheme.get("type")
        if kind == "apiKey" and scheme.get("in") == "header":
            return 0
        if kind == "http" and str(scheme.get("scheme", "")).lower() == "bearer":
            return 1
        if kind in ("oauth2", "openIdConnect"):
            return 2
        if kind == "http":
            return 3
        return 9

    headers: dict[str, Any] = {}
    guesses: list[Guess] = []
    if candidates:
        chosen = min(candidates, key=rank)
        scheme = schemes[chosen]
        others = [n for n in candidates if n != chosen]
        also = f"; the document also accepts {', '.join(others)}" if others else ""
        kind = scheme.get("type")
        source = f"securitySchemes.{chosen} ({kind}"
        if kind == "apiKey" and scheme.get("in") == "header":
            headers[str(scheme.get("name"))] = {"env": env}
            source += f" in header {scheme.get('name')})"
            confirm = [f"{env} holds the key{also}"]
        elif kind == "apiKey":
            source += f" in {scheme.get('in')} {scheme.get('name')})"
            return {}, [
                Guess(
                    "headers",
                    {},
                    "low",
                    source,
                    (
                        f"the key goes in the {scheme.get('in')} parameter "
                        f"{scheme.get('name')!r}: a target file keeps secrets in headers only, "
                        "so none is written; put the key in a header if the service takes one",
                    ),
                )
            ]
        elif kind == "http" and str(scheme.get("scheme", "")).lower() == "basic":
            headers["Authorization"] = {"env": env, "prefix": "Basic "}
            source += " basic)"
            confirm = [f"{env} holds base64 of user:password{also}"]
        else:
            headers["Authorization"] = {"env": env, "prefix": "Bearer "}
            source += f" {scheme.get('scheme', '')})".replace(" )", ")")
            confirm = [f"{env} holds the token{also}"]
        guesses.append(Guess("headers", headers, "medium", source, tuple(confirm)))
        return headers, guesses
    # No securitySchemes: a header parameter the operations take (FastAPI's Header()).
    for op in ops:
        for param in op.params:
            if param.where == "header" and normalized(param.name) in {
                normalized(h) for h in AUTH_HEADERS
            }:
                is_auth = normalized(param.name) == "authorization"
                header = "Authorization" if is_auth else param.name
                # A scheme the parameter's description or example shows (`Api-Key <key>`).
                said = " ".join(
                    str(x) for x in (param.description, param.schema.get("example")) if x
                )
                shown = re.search(r"\b(Bearer|Api-Key|Token|Basic|Key)\s+[<{\w]", said)
                prefix = f"{shown.group(1)} " if shown else "Bearer "
                headers[header] = {"env": env, "prefix": prefix} if is_auth else {"env": env}
                confirm = [f"{env} holds the key"]
                if is_auth and not shown:
                    confirm.append(
                        "the document does not say the scheme: `Bearer ` is a guess "
                        "(others: `Api-Key `, `Token `, `Basic `)"
                    )
                guesses.append(
                    Guess(
                        "headers",
                        headers,
                        "medium",
                        f"the header parameter {param.name!r} of {op.describe()}",
                        tuple(confirm),
                    )
                )
                return headers, guesses
    return {}, []


def fetched_headers(fetched_with: dict[str, str], name: str) -> tuple[dict[str, Any], list[Guess]]:
    """The headers the document itself was fetched with (names and their schemes only): a
    server that guards its document guards its API the same way."""
    env = _env_name(name)
    headers: dict[str, Any] = {}
    for header, prefix in fetched_with.items():
        headers[header] = {"env": env, "prefix": prefix} if prefix else {"env": env}
    confirm = (f"{env} holds what the document was fetched with",)
    source = "the header(s) the document was fetched with (it names no security scheme)"
    return headers, [Guess("headers", headers, "medium", source, confirm)]
