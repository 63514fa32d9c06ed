"""A small client for OpenAI-compatible chat endpoints (vLLM, Ollama, llama.cpp's server, hosted APIs).

``POST {base_url}/chat/completions`` with ``{"model", "messages", "temperature", "max_tokens", "logprobs": true}``
and ``Authorization: Bearer <key>`` when a key is set. Settings (``argora/settings.py``): ``ARGORA_LLM_BASE_URL``,
``ARGORA_LLM_MODEL``, ``ARGORA_LLM_API_KEY``, ``ARGORA_LLM_TIMEOUT``; a model annotator's ``options`` override the
base URL, the model, the time-out, and name another environment variable for the key (``api_key_env``).

One request, one outcome, as in :mod:`prolific.client`: :func:`chat` returns a :class:`Reply` or raises
:class:`LLMFailure` whose ``kind`` says what went wrong (``timeout``, ``rate_limited`` with the ``Retry-After`` in
seconds -- a number or an HTTP date --, ``http`` for other statuses and network errors, ``malformed`` for a body
that is not a chat completion). Retrying is the caller's (:func:`annotation.model_annotators.run`: each failed
attempt is stored with its raw text, then the item is asked again after a back-off), so that every attempt is on
record. :func:`parse_answer` reads the answer object out of a reply (a bare JSON object, or one in a fenced block
or inside prose); anything else is ``malformed``.
"""
from __future__ import annotations

import email.utils
import json
import math
import os
import re
import time
from dataclasses import dataclass
from typing import Any

import requests
from django.conf import settings
from django.utils import timezone

CONNECT_TIMEOUT = 5.0


class LLMFailure(Exception):
    def __init__(self, kind: str, message: str, *, raw: str = "", retry_after: float | None = None,
                 seconds: float = 0.0):
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

    @property
    def model_id(self) -> str:
        return f"llm:{self.model}@{self.base_url}"


def endpoint(options: dict | None = None) -> Endpoint:
    """The endpoint of a model annotator: its ``options`` over the ``ARGORA_LLM_*`` settings."""
    o = options or {}
    key = os.environ.get(o["api_key_env"], "") if o.get("api_key_env") else settings.ARGORA_LLM_API_KEY
    return Endpoint(base_url=str(o.get("base_url") or settings.ARGORA_LLM_BASE_URL).rstrip("/"),
                    model=str(o.get("model") or settings.ARGORA_LLM_MODEL), api_key=key or "",
                    timeout=float(o.get("timeout") or settings.ARGORA_LLM_TIMEOUT),
                    temperature=float(o.get("temperature") or 0.0), max_tokens=int(o.get("max_tokens") or 512))


def retry_after(response: requests.Response) -> float:
    """Seconds a 429 asks to wait (``Retry-After``: seconds or an HTTP date; 1 when absent or unreadable)."""
    value = (response.headers.get("Retry-After") or "").strip()
    if not value:
        return 1.0
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return 1.0
        seconds = (when - timezone.now()).total_seconds()
    return min(max(seconds, 0.0), float(settings.ARGORA_LLM_MAX_SLEEP))


def chat(ep: Endpoint, messages: list[dict]) -> Reply:
    """One chat completion (see the module doc)."""
    headers = {"Content-Type": "application/json", "User-Agent": "argora"}
    if ep.api_key:
        headers["Authorization"] = f"Bearer {ep.api_key}"
    body = {"model": ep.model, "messages": messages, "temperature": ep.temperature, "max_tokens": ep.max_tokens,
            "logprobs": True}
    began = time.monotonic()
    try:
        response = requests.post(f"{ep.base_url}/chat/completions", json=body, headers=headers,
                                 timeout=(CONNECT_TIMEOUT, ep.timeout))
    except requests.Timeout as exc:
        raise LLMFailure("timeout", f"no reply within {ep.timeout:g} s ({type(exc).__name__})",
                         seconds=time.monotonic() - began) from exc
    except requests.RequestException as exc:
        raise LLMFailure("http", f"no answer from {ep.base_url} ({type(exc).__name__}: {exc})",
                         seconds=time.monotonic() - began) from exc
    seconds = time.monotonic() - began
    raw = response.text[:20000]
    if response.status_code == 429:
        raise LLMFailure("rate_limited", "429: the endpoint is rate-limiting", raw=raw,
                         retry_after=retry_after(response), seconds=seconds)
    if response.status_code >= 400:
        raise LLMFailure("http", f"HTTP {response.status_code} from {ep.base_url}", raw=raw, seconds=seconds)
    try:
        payload = response.json()
        choice = payload["choices"][0]
        text = choice["message"]["content"]
        if not isinstance(text, str):
            raise TypeError("content is not text")
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise LLMFailure("malformed", f"not a chat completion ({type(exc).__name__}: {exc})", raw=raw,
                         seconds=seconds) from None
    usage = payload.get("usage") if isinstance(payload.get("usage"), dict) else {}
    return Reply(text=text, model=str(payload.get("model") or ep.model), seconds=seconds,
                 tokens=usage.get("total_tokens") if isinstance(usage.get("total_tokens"), int) else None,
                 confidence=_confidence(choice.get("logprobs")))


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
        candidates.append(text[start:text.rfind("}") + 1])
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
        return {"data": None, "failure": exc.kind, "error": str(exc), "raw": exc.raw, "seconds": exc.seconds,
                "retry_after": exc.retry_after, "model_id": ep.model_id}
    out: dict[str, Any] = {"raw": reply.text, "seconds": reply.seconds, "tokens": reply.tokens,
                           "cost": cost_of(reply.tokens), "confidence": reply.confidence,
                           "model_id": f"llm:{reply.model}@{ep.base_url}", "failure": "", "error": ""}
    try:
        out["data"] = parse_answer(reply.text)
    except LLMFailure as exc:
        out.update(data=None, failure=exc.kind, error=str(exc))
    return out
