"""Follows no service: a wrapper around any stand-in.

Every request a stand-in receives, as `METHOD /path?query`, in order: wrap the app, read
`requests`. For tests that must prove what memlife did not send."""

from __future__ import annotations

from typing import Any


class Recording:
    """Pure ASGI middleware around a stand-in app."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.requests: list[str] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            query = scope.get("query_string", b"").decode("latin-1")
            self.requests.append(
                f"{scope['method']} {scope['path']}" + (f"?{query}" if query else "")
            )
        await self.app(scope, receive, send)

    def writes(self) -> list[str]:
        """What could have changed the service's data (anything but reads and searches)."""
        return [
            r
            for r in self.requests
            if not r.startswith("GET ") and not r.startswith("POST /search")
        ]
