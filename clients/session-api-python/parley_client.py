"""Parley Session API client for Python agents: one module, standard library only.

Inside an agent pod it needs no configuration (``Client.from_environment()``): the URL comes
from PARLEY_API_URL, the token from the pod's projected ServiceAccount token
(PARLEY_TOKEN_FILE, default /var/run/secrets/parley.dev/serviceaccount/token), the CA from
PARLEY_CA_FILE. Every call is idempotent (messages and events carry ids), so 429, 503 and
connection failures are retried with backoff, honouring Retry-After. Errors from the API raise
``Problem`` with the RFC 9457 fields of the answer.
"""

import json
import os
import secrets
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request

DEFAULT_TOKEN_FILE = "/var/run/secrets/parley.dev/serviceaccount/token"
RETRYABLE = {429, 502, 503, 504}


class Problem(Exception):
    """An application/problem+json answer of the Session API."""

    def __init__(self, status, type_="", title="", detail=""):
        super().__init__(f"{status} {title}: {detail}" if detail else f"{status} {title}")
        self.status, self.type, self.title, self.detail = status, type_, title, detail


class EpochChanged(Exception):
    """The conversation was compacted while following: read the new epoch from the start."""


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """urllib would follow a redirect with every header, the token included, to any host: the
    Session API never redirects, so a 3xx is answered as the error it is."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


class Client:
    def __init__(self, url, token=None, token_file=None, ca_file=None, retries=5, max_backoff=10.0, timeout=60.0):
        parsed = urllib.parse.urlparse(url or "")
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(f"{url!r} is not an http(s) URL")
        self.url = url.rstrip("/")
        self.token, self.token_file = token, token_file
        self.retries, self.max_backoff, self.timeout = retries, max_backoff, timeout
        self.context = ssl.create_default_context(cafile=ca_file) if ca_file else None
        self._opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=self.context), _NoRedirect())

    @classmethod
    def from_environment(cls):
        return cls(
            os.environ.get("PARLEY_API_URL", ""),
            token_file=os.environ.get("PARLEY_TOKEN_FILE", DEFAULT_TOKEN_FILE),
            ca_file=os.environ.get("PARLEY_CA_FILE") or None,
        )

    # The calls ------------------------------------------------------------------------------

    def conversation(self, namespace, name):
        return self._call("GET", _path(namespace, name))

    def messages(self, namespace, name, after=0, limit=0):
        query = {k: v for k, v in (("after", after), ("limit", limit)) if v}
        suffix = "/messages" + ("?" + urllib.parse.urlencode(query) if query else "")
        return self._call("GET", _path(namespace, name) + suffix)

    def append(self, namespace, name, messages):
        """Append messages (dicts with id, role, blocks); returns {"epoch", "sequences"}."""
        return self._call("POST", _path(namespace, name) + "/messages", {"messages": messages})

    def append_events(self, namespace, name, events):
        """Append reducer events, each {"id": ..., "event": {...}}."""
        return self._call("POST", _path(namespace, name) + "/events", {"events": events})

    def put_adapter_state(self, namespace, name, adapter_type, state, idempotency_key=None):
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
        return self._call("PUT", _path(namespace, name) + "/adapter-state", {"type": adapter_type, "state": state}, headers)

    def checkpoint(self, namespace, name, checkpoint_name="", turn=None):
        body = {"name": checkpoint_name} if checkpoint_name else {}
        if turn is not None:
            body["turn"] = turn
        return self._call("POST", _path(namespace, name) + "/checkpoints", body)["name"]

    def compact(self, namespace, name):
        return self._call("POST", _path(namespace, name) + "/compact", {})

    def reset(self, namespace, name, keep_system=False, reset_id=None):
        """Clear the history once a Reset Checkpoint holds it (needs delete on
        conversations/history); returns {"epoch", "checkpoint", "cleared", "kept"}. reset_id makes
        a retry answer the first reset instead of clearing again; without one a fresh id is made
        for this call and repeated on its own retries."""
        body = {"id": reset_id or secrets.token_hex(16)}
        if keep_system:
            body["keepSystem"] = True
        return self._call("POST", _path(namespace, name) + "/reset", body)

    def state(self, namespace, name):
        """The whole conversation of the current epoch: {"epoch", "sequence", "tokens", "state"}."""
        return self._call("GET", _path(namespace, name) + "/state")

    def resume(self, namespace, name, turn=0):
        """The resume bundle a new agent pod would have mounted now, cut at turn (0: the latest
        complete turn): {"sessionId", "turn", "attempt", "files"}."""
        suffix = "/resume" + ("?" + urllib.parse.urlencode({"turn": turn}) if turn else "")
        return self._call("GET", _path(namespace, name) + suffix)

    def import_state(self, namespace, name, import_id, part, state):
        """Append one part of a whole conversation state (POST …/import); retrying a part with the
        same import_id and part stores nothing twice. Returns {"sequences"}."""
        return self._call("POST", _path(namespace, name) + "/import", {"id": import_id, "part": part, "state": state})

    def follow(self, namespace, name, after=0):
        """Yield messages appended after the sequence `after`, resuming a dropped stream."""
        backoff = 0.1
        while True:
            try:
                for seq, message in self._stream(namespace, name, after):
                    after, backoff = seq, 0.1
                    yield message
            except Problem as p:
                if p.status not in RETRYABLE:
                    raise
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(backoff)
            backoff = min(backoff * 2, self.max_backoff)

    # Plumbing -------------------------------------------------------------------------------

    def _headers(self):
        token = self.token
        if self.token_file:
            with open(self.token_file, encoding="utf-8") as f:
                token = f.read().strip()
        return {"Authorization": f"Bearer {token}"} if token else {}

    def _call(self, method, path, body=None, headers=None):
        data = json.dumps(body).encode() if body is not None else None
        backoff = 0.1
        for attempt in range(max(self.retries, 0) + 1):
            hdrs = self._headers()
            hdrs.update(headers or {})
            if data is not None:
                hdrs["Content-Type"] = "application/json"
            req = urllib.request.Request(self.url + path, data=data, method=method, headers=hdrs)
            try:
                with self._opener.open(req, timeout=self.timeout) as resp:
                    raw = resp.read()
                    return json.loads(raw) if raw else None
            except urllib.error.HTTPError as e:
                problem = _problem(e)
                if problem.status not in RETRYABLE or attempt == self.retries:
                    raise problem from None
                wait = e.headers.get("Retry-After")
                time.sleep(min(float(wait) if wait and wait.isdigit() else backoff, self.max_backoff))
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if attempt == self.retries:
                    raise
                time.sleep(backoff)
            backoff = min(backoff * 2, self.max_backoff)
        raise AssertionError("unreachable")

    def _stream(self, namespace, name, after):
        hdrs = self._headers()
        hdrs.update({"Accept": "text/event-stream", "Last-Event-ID": str(after)})
        req = urllib.request.Request(self.url + _path(namespace, name) + "/messages?follow=true", headers=hdrs)
        try:
            resp = self._opener.open(req, timeout=self.timeout)
        except urllib.error.HTTPError as e:
            raise _problem(e) from None
        with resp:
            event, ident, data = "", "", ""
            for raw in resp:
                line = raw.decode("utf-8").rstrip("\r\n")
                if line == "":
                    if event == "epoch":
                        raise EpochChanged()
                    if event == "message" and data:
                        yield int(ident or 0), json.loads(data)
                    event, ident, data = "", "", ""
                elif line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("id: "):
                    ident = line[4:]
                elif line.startswith("data: "):
                    data += line[6:]


def _path(namespace, name):
    return f"/v1/namespaces/{urllib.parse.quote(namespace)}/conversations/{urllib.parse.quote(name)}"


def _problem(err):
    try:
        body = json.loads(err.read() or b"{}")
    except ValueError:
        body = {}
    return Problem(err.code, body.get("type", ""), body.get("title", err.reason), body.get("detail", ""))
