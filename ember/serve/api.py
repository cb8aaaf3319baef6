"""The three HTTP APIs as Starlette apps: inference, management and metrics.

Paths, response shapes and status codes are TorchServe's. Errors are
``{"code": ..., "type": ..., "message": ...}``.
"""

from __future__ import annotations

import hmac
import json
import time
import uuid

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.formparsers import MultiPartException
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ember.serve.wlm import ModelManager, ServeError, run_in_background

__all__ = ["inference_app", "management_app", "metrics_app"]

_AUTH_FAILED = (
    "Token Authorization failed. Token either incorrect, expired, or not provided correctly"
)


def error_response(code: int, type_: str, message: str) -> JSONResponse:
    return JSONResponse({"code": code, "type": type_, "message": message}, status_code=code)


async def _http_error(request: Request, exc: HTTPException) -> JSONResponse:
    if exc.status_code == 404:
        return error_response(
            404,
            "ResourceNotFoundException",
            "Requested resource is not found, please refer to API document.",
        )
    if exc.status_code == 405:
        return error_response(
            405,
            "MethodNotAllowedException",
            "Requested method is not allowed, please refer to API document.",
        )
    return error_response(exc.status_code, "HttpException", str(exc.detail))


async def _serve_error(request: Request, exc: ServeError) -> JSONResponse:
    return error_response(exc.code, exc.type, exc.message)


def _app(routes, key: str | None, open_paths=()) -> Starlette:
    app = Starlette(
        routes=routes,
        exception_handlers={HTTPException: _http_error, ServeError: _serve_error},
    )
    if key is not None:

        async def token_auth(request: Request, call_next):
            if request.url.path not in open_paths:
                given = request.headers.get("authorization", "")
                token = given[7:] if given[:7].lower() == "bearer " else ""
                if not hmac.compare_digest(token.encode(), key.encode()):
                    return error_response(400, "InvalidKeyException", _AUTH_FAILED)
            return await call_next(request)

        app.add_middleware(BaseHTTPMiddleware, dispatch=token_auth)
    return app


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, or 413 once it exceeds ``limit`` bytes (before reading it all)."""
    declared = request.headers.get("content-length")
    too_big = ServeError(
        413,
        "RequestEntityTooLargeException",
        f"Request body exceeds the maximum request size of {limit} bytes (max_request_size)",
    )
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise too_big
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise too_big
        chunks.append(chunk)
    return b"".join(chunks)


async def decode_inputs(request: Request, body: bytes) -> dict:
    """A request's inputs as TorchServe hands them to a handler: ``{"body": ...}`` or form
    fields by name; JSON parsed, text decoded, anything else as bytes."""
    ctype = request.headers.get("content-type", "").lower()
    data: dict = dict(request.query_params)
    if ctype.startswith("application/x-www-form-urlencoded") and not body.isascii():
        ctype = ""  # `curl --data-binary @digit.png` labels raw bytes as a form: keep the bytes
    if ctype.startswith(("multipart/form-data", "application/x-www-form-urlencoded")):
        request._body = body  # Starlette parses the form from the body already read
        try:
            form = await request.form(max_files=1000, max_fields=1000)
        except (MultiPartException, ValueError, KeyError) as exc:
            raise ServeError(400, "BadRequestException", f"Invalid form data: {exc}") from None
        if ctype.startswith("multipart/form-data") and not form and body:
            raise ServeError(400, "BadRequestException", "Invalid form data: no parts")
        for name, value in form.multi_items():
            data[name] = bytearray(await value.read()) if hasattr(value, "read") else value
        return data
    if ctype.startswith("application/json"):
        try:
            data["body"] = json.loads(body)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ServeError(400, "BadRequestException", f"Invalid JSON body: {exc}") from None
    elif ctype.startswith("text/"):
        try:
            data["body"] = body.decode("utf-8")
        except UnicodeDecodeError:
            raise ServeError(400, "BadRequestException", "text body is not UTF-8") from None
    else:
        data["body"] = bytearray(body)
    return data


def inference_app(manager: ModelManager, key: str | None = None) -> Starlette:
    """``GET /ping``, ``POST /predictions/{model_name}[/{version}]``."""
    cfg = manager.cfg

    async def ping(request: Request) -> JSONResponse:
        return JSONResponse({"status": "Healthy"})

    async def predict(request: Request) -> Response:
        name = request.path_params["model_name"]
        version = request.path_params.get("version")
        start = time.perf_counter()
        mv = manager.get(name, version)
        try:
            body = await read_body(request, cfg.max_request_size)
            data = await decode_inputs(request, body)
            headers = dict(request.headers)
            result = await mv.submit(uuid.uuid4().hex, data, headers)
        except ServeError as exc:
            manager.metrics.observe_response(mv.name, mv.version, exc.code, 0.0)
            raise
        code, ctype_or_kind, payload = result
        manager.metrics.observe_response(mv.name, mv.version, code, time.perf_counter() - start)
        if isinstance(payload, str):  # an error: (code, exception type, message)
            return error_response(code, ctype_or_kind, payload)
        return Response(payload, status_code=code, media_type=ctype_or_kind)

    routes = [
        Route("/ping", ping, methods=["GET"]),
        Route("/predictions/{model_name}", predict, methods=["POST", "PUT"]),
        Route("/predictions/{model_name}/{version}", predict, methods=["POST", "PUT"]),
    ]
    return _app(routes, key, open_paths=("/ping",))


def _int(request: Request, name: str, default=None):
    value = request.query_params.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ServeError(
            400, "BadRequestException", f"Parameter {name} must be an integer, got {value!r}"
        ) from None


def _flag(request: Request, name: str, default: bool) -> bool:
    value = request.query_params.get(name)
    return default if value is None else value.lower() == "true"


def management_app(manager: ModelManager, key: str | None = None) -> Starlette:
    """TorchServe's management API: register, list, describe, scale, set-default, unregister."""

    async def list_models(request: Request) -> JSONResponse:
        limit = _int(request, "limit", 100)
        start = _int(request, "next_page_token", 0)
        if limit <= 0 or limit > 1000:
            limit = 100
        names = sorted(manager.models)
        page = names[start : start + limit]
        out: dict = {
            "models": [
                {"modelName": n, "modelUrl": manager.get(n).url}
                for n in page
                if n in manager.models
            ]
        }
        if start + limit < len(names):
            out["nextPageToken"] = str(start + limit)
        return JSONResponse(out)

    async def register(request: Request) -> JSONResponse:
        url = request.query_params.get("url")
        if not url:
            raise ServeError(400, "BadRequestException", "Parameter url is required.")
        synchronous = _flag(request, "synchronous", True)
        workers = _int(request, "initial_workers", 0)
        mv = await manager.register(
            url,
            model_name=request.query_params.get("model_name") or None,
            batch_size=_int(request, "batch_size"),
            max_batch_delay=_int(request, "max_batch_delay"),
            initial_workers=workers,
            response_timeout=_int(request, "response_timeout"),
            synchronous=synchronous,
        )
        msg = f'Model "{mv.name}" Version: {mv.version} registered with {workers} initial workers'
        if workers == 0:
            msg += ". Use scale workers API to add workers for the model."
        return JSONResponse({"status": msg}, status_code=200 if synchronous else 202)

    async def describe(request: Request) -> JSONResponse:
        name = request.path_params["model_name"]
        version = request.path_params.get("version")
        if version == "all":
            manager.get(name)
            versions = list(manager.models[name].values())
        else:
            versions = [manager.get(name, version)]
        return JSONResponse([mv.describe() for mv in versions])

    async def scale(request: Request) -> JSONResponse:
        name = request.path_params["model_name"]
        mv = manager.get(name, request.path_params.get("version"))
        lo = _int(request, "min_worker", 1)
        hi = _int(request, "max_worker", lo)
        if lo < 0 or hi < lo:
            raise ServeError(
                400, "BadRequestException", "max_worker cannot be less than min_worker."
            )
        mv.min_workers, mv.max_workers = lo, hi
        if _flag(request, "synchronous", False):
            await mv.scale(lo)
            return JSONResponse(
                {"status": f"Workers scaled to {lo} for model: {mv.name}, version: {mv.version}"}
            )
        run_in_background(mv.scale(lo))
        return JSONResponse({"status": "Processing worker updates..."}, status_code=202)

    async def set_default(request: Request) -> JSONResponse:
        name, version = request.path_params["model_name"], request.path_params["version"]
        manager.set_default(name, version)
        return JSONResponse(
            {"status": f'Default version successfully updated for model "{name}" to "{version}"'}
        )

    async def unregister(request: Request) -> JSONResponse:
        name = request.path_params["model_name"]
        await manager.unregister(name, request.path_params.get("version"))
        return JSONResponse({"status": f'Model "{name}" unregistered'})

    routes = [
        Route("/models", list_models, methods=["GET"]),
        Route("/models", register, methods=["POST"]),
        Route("/models/{model_name}", describe, methods=["GET"]),
        Route("/models/{model_name}", scale, methods=["PUT"]),
        Route("/models/{model_name}", unregister, methods=["DELETE"]),
        Route("/models/{model_name}/{version}/set-default", set_default, methods=["PUT"]),
        Route("/models/{model_name}/{version}", describe, methods=["GET"]),
        Route("/models/{model_name}/{version}", scale, methods=["PUT"]),
        Route("/models/{model_name}/{version}", unregister, methods=["DELETE"]),
    ]
    return _app(routes, key)


def metrics_app(metrics, key: str | None = None) -> Starlette:
    """``GET /metrics``: Prometheus' text format."""
    from prometheus_client import CONTENT_TYPE_LATEST

    async def render(request: Request) -> Response:
        return Response(metrics.render(), media_type=CONTENT_TYPE_LATEST)

    return _app([Route("/metrics", render, methods=["GET"])], key)
