"""Exercises parley_client against a live Session API. Run by the Go envtest suite with
PARLEY_API_URL, PARLEY_TOKEN, PARLEY_NS and PARLEY_NAME set; exits non-zero on any failure."""

import http.server
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import parley_client  # noqa: E402


def main():
    ns, name = os.environ["PARLEY_NS"], os.environ["PARLEY_NAME"]
    api = parley_client.Client(os.environ["PARLEY_API_URL"], token=os.environ["PARLEY_TOKEN"])

    batch = [
        {"id": "py-u1", "role": "user", "blocks": [{"type": "text", "text": "from python"}]},
        {"id": "py-a1", "role": "assistant", "blocks": [{"type": "text", "text": "hello python"}]},
    ]
    first = api.append(ns, name, batch)
    again = api.append(ns, name, batch)
    assert first["sequences"] == again["sequences"], (first, again)

    summary = api.conversation(ns, name)
    assert summary["messages"] == 2, summary

    page = api.messages(ns, name, after=0, limit=1)
    assert [m["id"] for m in page["messages"]] == ["py-u1"], page
    assert page["next"] == first["sequences"][0], page

    try:
        api.append(ns, name, [{"id": "py-u1", "role": "user", "blocks": [{"type": "text", "text": "changed"}]}])
        raise AssertionError("a conflicting append was accepted")
    except parley_client.Problem as p:
        assert p.status == 409 and p.type.endswith("/conflict"), p

    got = []
    done = threading.Event()

    def follow():
        for message in api.follow(ns, name, after=first["sequences"][-1]):
            got.append(message["id"])
            if len(got) == 2:
                done.set()
                return

    threading.Thread(target=follow, daemon=True).start()
    api.append(ns, name, [
        {"id": "py-u2", "role": "user", "blocks": [{"type": "text", "text": "more"}]},
        {"id": "py-a2", "role": "assistant", "blocks": [{"type": "text", "text": "sure"}]},
    ])
    assert done.wait(20), got
    assert got == ["py-u2", "py-a2"], got
    whole = api.state(ns, name)
    assert [m["id"] for m in whole["state"]["messages"]] == ["py-u1", "py-a1", "py-u2", "py-a2"], whole
    assert whole["sequence"] == summary["sequence"] + 2, (whole, summary)

    bundle = api.resume(ns, name)
    assert bundle["sessionId"] == summary["sessionId"] and "conversation.json" in bundle["files"], bundle

    part = {"schemaVersion": whole["state"]["schemaVersion"],
            "messages": [{"id": "py-i1", "role": "user", "blocks": [{"type": "text", "text": "imported"}]}]}
    imported = api.import_state(ns, name, "py-import-1", 0, part)
    assert imported == api.import_state(ns, name, "py-import-1", 0, part), imported
    assert [m["id"] for m in api.state(ns, name)["state"]["messages"]][-1] == "py-i1"
    checked = "append, idempotent retry, read, page, conflict, follow, state, resume, import (idempotent by id)"
    if os.environ.get("PARLEY_RESET_TOKEN"):
        editor = parley_client.Client(os.environ["PARLEY_API_URL"], token=os.environ["PARLEY_RESET_TOKEN"])
        try:
            api.reset(ns, name, keep_system=True)
            raise AssertionError("an agent token without delete reset the history")
        except parley_client.Problem as p:
            assert p.status == 403 and p.type.endswith("/forbidden"), p
        done = editor.reset(ns, name, keep_system=True, reset_id="py-reset-1")
        assert done["cleared"] == 5 and done["checkpoint"], done
        again = editor.reset(ns, name, keep_system=True, reset_id="py-reset-1")
        assert again == done, (again, done)
        summary = editor.conversation(ns, name)
        assert summary["messages"] == 0 and summary["epoch"] == done["epoch"], summary
        checked += ", reset (403 without delete, idempotent by id)"
    check_no_redirect()
    checked += ", a redirect followed nowhere (the token stays home)"
    print("python client: " + checked + ": ok")


def check_no_redirect():
    """A Session API address that answers 302 to another host must not get the token sent
    there: urllib follows redirects with every header unless told not to."""
    seen = []

    class Target(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append(self.headers.get("Authorization"))
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args):
            pass

    target = http.server.HTTPServer(("127.0.0.1", 0), Target)

    class Redirector(Target):
        def do_GET(self):
            self.send_response(302)
            self.send_header("Location", f"http://127.0.0.1:{target.server_port}{self.path}")
            self.end_headers()

    redirector = http.server.HTTPServer(("127.0.0.1", 0), Redirector)
    for server in (target, redirector):
        threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        api = parley_client.Client(f"http://127.0.0.1:{redirector.server_port}", token="secret", retries=0)
        try:
            api.conversation("ns", "name")
            raise AssertionError("a redirect was followed")
        except parley_client.Problem as p:
            assert p.status == 302, p
        assert seen == [], f"the token reached the redirect's target: {seen}"
    finally:
        for server in (target, redirector):
            server.shutdown()


if __name__ == "__main__":
    main()
