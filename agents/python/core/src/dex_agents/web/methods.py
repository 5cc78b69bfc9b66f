"""What an /api path answers to a method it has no route for: `OPTIONS` lists the methods it
has (204 with `Allow`), any other method gets 405 with the same `Allow`, and a path with no
route at all gets 404, each in the API's error shape.

Without this the viewer's files (mounted at `/`) would answer: 405 with `Allow: GET, HEAD`
whatever the path has. `Allow` comes from the OpenAPI document, so it lists exactly the
documented methods (and OPTIONS). A browser's CORS preflight never gets here: the CORS
middleware answers it first.
"""

from __future__ import annotations

import re
from functools import cache

from fastapi import FastAPI, Request
from starlette.responses import Response

from .errors import error_response

METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
_PARAMETER = re.compile(r"\{[^}/]+\}")


def install(app: FastAPI) -> None:
    """Adds the fallback route for /api paths; call it after the API's routers."""

    @cache
    def routes() -> tuple[tuple[re.Pattern[str], str], ...]:
        """Each documented path as a pattern, with its methods as `Allow` spells them."""
        found = []
        for path, operations in app.openapi()["paths"].items():
            parts = _PARAMETER.split(path)
            pattern = "[^/]+".join(re.escape(part) for part in parts)
            methods = sorted(method.upper() for method in operations)
            found.append((re.compile(pattern), ", ".join([*methods, "OPTIONS"])))
        return tuple(found)

    @app.api_route("/api/{path:path}", methods=METHODS, include_in_schema=False)
    async def other_methods(request: Request, path: str) -> Response:
        target = f"/api/{path}"
        allow = next((methods for pattern, methods in routes() if pattern.fullmatch(target)), None)
        if allow is None:
            return error_response(404, "not_found", f"no API route has the path {target}")
        if request.method == "OPTIONS":
            return Response(status_code=204, headers={"Allow": allow})
        return error_response(
            405,
            "method_not_allowed",
            f"{target} takes {allow.removesuffix(', OPTIONS')}, not {request.method}",
            headers={"Allow": allow},
        )
