"""A small client for OpenAI-compatible chat endpoints (vLLM, Ollama, llama.cpp's server, hosted APIs).

``POST {base_url}/chat/completions`` with ``{"model", "messages", "temperature", "max_tokens", "logprobs": true}``
and ``Authorization: Bearer <key>`` when a key is set. Settings (``argora/settings.py``): ``ARGORA_LLM_BASE_URL``,
``ARGORA_LLM_MODEL``, ``ARGORA_LLM_API_KEY``, ``ARGORA_LLM_TIMEOUT``; a model annotator's ``options`` override the
base URL, the model, the time-out, and name another environment variable for the key (``api_key_env``).

Not a way out of the server (SECURITY.md): :func:`endpoint` checks again what :mod:`annotation.model_annotators`
checked on write -- a base URL other than the operator's (``ARGORA_LLM_BASE_URL``'s scheme, host and port) must not
reach the server's own networks (:mod:`argora.outbound`), and ``api_key_env`` must start with
``ARGORA_LLM_KEY_PREFIX`` -- raising :class:`~argora.errors.FieldError`, which fails the run; the call itself goes
through :func:`argora.outbound.post`, which checks every address at connect time and follows no redirect. The
operator's ``ARGORA_LLM_API_KEY`` is sent only to the operator's endpoint. A reply is read up to
``MAX_REPLY_BYTES``.

One request, one outcome, as in :mod:`prolific.client`: :func:`chat` returns a :class:`Reply` or raises
:class:`LLMFailure` whose ``kind`` says what went wrong (``timeout``, ``rate_limited`` with the ``Retry-After`` in
seconds -- a number or an HTTP date --, ``http`` for other statuses and network errors, ``malformed`` for a body
that is not a chat completion). Retrying is the caller's (:func:`annotation.model_annotators.run`: each failed
attempt is stored with its raw text, then the item is asked again after a back-off), so that every attempt is on
record. :func:`parse_answer` reads the answer object out of a reply (a bare JSON object, or one in a fenced block
or inside prose); anything else is ``malformed``.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from dataclasses import dataclass
from typing import Any

import requests
from django.conf import settings

from annotation.model_annotators import check_base_url, is_operator_endpoint, key_env_name
from argora import http, outbound

CONNECT_TIMEOUT = 5.0
MAX_REPLY_BYTES = 4_000_000  # a longer body is not read on (malformed)


class LLMFailure(Exception):
    def __init__(
        self, kind: str, message: str, *, raw: str = "", retry_after: float | None = None, seconds: float = 0.0
    ):
        super().__init__(message)
        self.kind, self.raw, self.retry_after, self.seconds = kind, raw, retry_after, seconds


@dataclass
class Reply:
    text: str
    model: str
    seconds: float
    tokens: int | None = None
    confidence: float | None = None  # mean token probability, when the endpoint sends log-probs


@dataclass
class Endpoint:
    base_url: str
    model: str
    api_key: str = ""
    timeout: float = 60.0
    temperature: float = 0.0
    max_tokens: int = 512
    trusted: bool = False  # the operator's endpoint (ARGORA_LLM_BASE_URL): no address check

    @property
    def model_id(self) -> str:
        return f"llm:{self.model}@{self.base_url}"


def endpoint(options: dict | None = None) -> Endpoint:
    """The endpoint of a model annotator: its ``options`` over the ``ARGORA_LLM_*`` settings. Raises
    :class:`~argora.errors.FieldError` (``base_url``, ``api_key_env``) for what may not be called or read (the
    options may have been written to the database past the checks)."""
    o = options or {}
    base = str(o.get("base_url") or settings.ARGORA_LLM_BASE_URL).rstrip("/")
    trusted = not o.get("base_url") or is_operator_endpoint(base)
    if not trusted:
        check_base_url(base)
    if o.get("api_key_env"):
        key = os.environ.get(key_env_name(o["api_key_env"]), "")
    else:
        key = settings.ARGORA_LLM_API_KEY if trusted else ""
    return Endpoint(
        base_url=base,
        trusted=trusted,
        model=str(o.get("model") or settings.ARGORA_LLM_MODEL),
        api_key=key or "",
        timeout=float(o.get("timeout") or settings.ARGORA_LLM_TIMEOUT),
        temperature=float(o.get("temperature") or 0.0),
        max_tokens=int(o.get("max_tokens") or 512),
    )


def retry_after(response: requests.Response) -> float:
    """Seconds a 429 asks to wait (``Retry-After``: seconds or an HTTP date; 1 when absent or unreadable), at most
    ``ARGORA_LLM_MAX_SLEEP``."""
    return http.retry_after(response, max_seconds=float(settings.ARGORA_LLM_MAX_SLEEP))


def _read(response: requests.Response) -> tuple[str, bool]:
    """The body as text, at most ``MAX_REPLY_BYTES`` of it, and whether it was longer."""
    chunks, size = [], 0
    try:
        for chunk in response.iter_content(65536):
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_REPLY_BYTES:
                break
    finally:
        response.close()
    body = b"".join(chunks)
    return body[:MAX_REPLY_BYTES].decode(response.encoding or "utf-8", errors="replace"), size > MAX_REPLY_BYTES


def chat(ep: Endpoint, messages: list[dict]) -> Reply:
    """One chat completion (see the module doc); :class:`argora.outbound.Refused` when the endpoint's address may
    not be called (it fails the run)."""
    headers = {"Content-Type": "application/json", "User-Agent": "argora"}
    if ep.api_key:
        headers["Authorization"] = f"Bearer {ep.api_key}"
    body = {
        "model": ep.model,
        "messages": messages,
        "temperature": ep.temperature,
        "max_tokens": ep.max_tokens,
        "logprobs": True,
    }
    began = time.monotonic()
    try:
        response = outbound.post(
            f"{ep.base_url}/chat/completions",
            trusted=ep.trusted,
            json=body,
            headers=headers,
            timeout=(CONNECT_TIMEOUT, ep.timeout),
            stream=True,
        )
        raw, too_long = _read(response)
    except requests.Timeout as exc:
        raise LLMFailure(
            "timeout", f"no reply within {ep.timeout:g} s ({type(exc).__name__})", seconds=time.monotonic() - began
        ) from exc
    except requests.RequestException as exc:
        raise LLMFailure(
            "http", f"no answer from {ep.base_url} ({type(exc).__name__}: {exc})", seconds=time.monotonic() - began
        ) from exc
    seconds = time.monotonic() - began
    if response.status_code == 429:
        raise LLMFailure(
            "rate_limited",
            "429: the endpoint is rate-limiting",
            raw=raw,
            retry_after=retry_after(response),
            seconds=seconds,
        )
    if response.status_code >= 400:
        raise LLMFailure("http", f"HTTP {response.status_code} from {ep.base_url}", raw=raw, seconds=seconds)
    if response.status_code >= 300:
        raise LLMFailure(
            "http",
            f"HTTP {response.status_code} from {ep.base_url}: redirects are not followed",
            raw=raw,
            seconds=seconds,
        )
    if too_long:
        raise LLMFailure("malformed", f"the reply is longer than {MAX_REPLY_BYTES} bytes", raw=raw, seconds=seconds)
    try:
        payload = json.loads(raw)
        choice = payload["choices"][0]
        text = choice["message"]["content"]
        if not isinstance(text, str):
            raise TypeError("content is not text")
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise LLMFailure(
            "malformed", f"not a chat completion ({type(exc).__name__}: {exc})", raw=raw, seconds=seconds
        ) from None
    usage = payload.get("usage") if isinstance(payload.get("usage"), dict) else {}
    return Reply(
        text=text,
        model=str(payload.get("model") or ep.model),
        seconds=seconds,
        tokens=usage.get("total_tokens") if isinstance(usage.get("total_tokens"), int) else None,
        confidence=_confidence(choice.get("logprobs")),
    )


def _confidence(logprobs) -> float | None:
    """Mean token probability from the ``logprobs.content[].logprob`` the endpoint sent (None without them)."""
    try:
        values = [float(t["logprob"]) for t in (logprobs or {}).get("content") or []]
    except (TypeError, KeyError, ValueError, AttributeError):
        return None
    return sum(math.exp(v) for v in values) / len(values) if values else None


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


def parse_answer(text: str) -> dict:
    """The answer object in a reply; ``LLMFailure("malformed")`` when there is none."""
    candidates = [text.strip()] + [m.strip() for m in _FENCE.findall(text)]
    start = text.find("{")
    if start >= 0:
        candidates.append(text[start : text.rfind("}") + 1])
    decoder = json.JSONDecoder()
    for chunk in candidates:
        if not chunk:
            continue
        try:
            value = json.loads(chunk)
        except ValueError:
            try:
                value, _ = decoder.raw_decode(chunk)
            except ValueError:
                continue
        if isinstance(value, dict):
            return value
    raise LLMFailure("malformed", "the reply holds no JSON object", raw=text)


def cost_of(tokens: int | None) -> float | None:
    price = float(settings.ARGORA_LLM_COST_PER_1K_TOKENS or 0)
    return tokens / 1000.0 * price if tokens is not None and price else None


def answer_item(ep: Endpoint, prompt: str, *, system: str = "") -> dict:
    """Ask one item: the answer dict :mod:`annotation.model_annotators` stores (without ``item``)."""
    messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
    try:
        reply = chat(ep, messages)
    except LLMFailure as exc:
        return {
            "data": None,
            "failure": exc.kind,
            "error": str(exc),
            "raw": exc.raw,
            "seconds": exc.seconds,
            "retry_after": exc.retry_after,
            "model_id": ep.model_id,
        }
    out: dict[str, Any] = {
        "raw": reply.text,
        "seconds": reply.seconds,
        "tokens": reply.tokens,
        "cost": cost_of(reply.tokens),
        "confidence": reply.confidence,
        "model_id": f"llm:{reply.model}@{ep.base_url}",
        "failure": "",
        "error": "",
    }
    try:
        out["data"] = parse_answer(reply.text)
    except LLMFailure as exc:
        out.update(data=None, failure=exc.kind, error=str(exc))
    return out
