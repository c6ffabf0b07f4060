"""Error responses that say what is wrong without sending the request back.

FastAPI's default 422 lists each problem with the ``input`` that caused it: a 60 KiB
description comes back whole, and whatever a request carried ends up in the response (and in
anything that logs responses). Here each problem keeps only where it is (``loc``, each part
clipped), what is wrong (``msg``) and its ``type``, which is what the page shows. Other errors'
``detail`` (which may quote a path or a run id from the request) is clipped too.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from localhand.events import clip

LOC_CHARS = 64
MSG_CHARS = 300
DETAIL_CHARS = 1000


def install_error_handlers(app: FastAPI) -> None:
    """Replace FastAPI's handlers for validation errors and HTTP errors on ``app``."""
    app.add_exception_handler(RequestValidationError, _validation_error)  # type: ignore[arg-type]
    app.add_exception_handler(HTTPException, _http_error)  # type: ignore[arg-type]


def problems(errors: Any) -> list[dict[str, Any]]:
    """Validation errors without their ``input`` (or ``ctx``, which can quote it)."""
    return [
        {
            "loc": [
                part if isinstance(part, int) else clip(str(part), LOC_CHARS)
                for part in error.get("loc", ())
            ],
            "msg": clip(str(error.get("msg", "invalid")), MSG_CHARS),
            "type": str(error.get("type", "value_error")),
        }
        for error in errors
    ]


async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    return JSONResponse({"detail": problems(exc.errors())}, status_code=422)


async def _http_error(request: Request, exc: HTTPException) -> JSONResponse:
    detail = exc.detail if not isinstance(exc.detail, str) else clip(exc.detail, DETAIL_CHARS)
    return JSONResponse({"detail": detail}, status_code=exc.status_code, headers=exc.headers)
