#!/usr/bin/env python3
"""A Causeway function service in Python, with nothing but the standard library.

It speaks protocol v1 (docs/protocol.md) as causeway/functions does: an unsigned health check, a
signed manifest, signed invocations; HS256 tokens checked for signature, issuer, audience, times,
route, body digest and replay; bodies over the limit refused before they are read. Its handlers greet
a new KopfExample and list what changed in an updated one.

    CAUSEWAY_SECRET=... python3 function.py [--port 8080] [--host 127.0.0.1]
    causeway gateway --functions py-greeter=http://127.0.0.1:8080 --namespace default
"""

import argparse
import base64
import hashlib
import hmac
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

NAME = "py-greeter"
PROTOCOL = "causeway.dev/v1"
ISSUER = "causeway-gateway"
MAX_TOKEN_SECONDS = 60
CLOCK_TOLERANCE_SECONDS = 5
MAX_BODY_BYTES = 16 * 1024 * 1024
KOPFEXAMPLES = {"name": "kopfexamples", "group": "kopf.dev", "version": "v1"}


def create_fn(call):
    return {"message": f"hello {call['body']['metadata']['name']}", "from": "python"}


def update_fn(call):
    return {"changed": [".".join(path) for _op, path, _old, _new in call["due"].get("diff", [])]}


HANDLERS = {
    "create_fn": ("create", create_fn),
    "update_fn": ("update", update_fn),
}

MANIFEST = {
    "protocol": PROTOCOL,
    "name": NAME,
    "handlers": [{"id": id, "kind": kind, "resource": KOPFEXAMPLES} for id, (kind, _fn) in HANDLERS.items()],
}


class Refused(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


class Replays:
    """The token ids admitted, until they expire: one process's memory, as the SDK's default."""

    def __init__(self):
        self._seen = {}
        self._lock = threading.Lock()

    def admit(self, jti, exp):
        now = time.time()
        with self._lock:
            for old in [id for id, until in self._seen.items() if until + CLOCK_TOLERANCE_SECONDS < now]:
                del self._seen[old]
            if jti in self._seen:
                return False
            self._seen[jti] = exp
            return True


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def verify_token(secret, authorization, method, path):
    """The token alone, before the body is read."""
    if not authorization or not authorization.startswith("Bearer "):
        raise Refused(401, 'unsigned request: expected "Authorization: Bearer <token>" from the gateway')
    try:
        header_part, payload_part, signature_part = authorization[len("Bearer "):].strip().split(".")
        header = json.loads(b64url_decode(header_part))
        claims = json.loads(b64url_decode(payload_part))
        signature = b64url_decode(signature_part)
    except (ValueError, json.JSONDecodeError):
        raise Refused(401, "malformed token")
    if header.get("alg") != "HS256":
        raise Refused(401, "token is not HS256")
    expected = hmac.new(secret, f"{header_part}.{payload_part}".encode(), hashlib.sha256).digest()
    if not hmac.compare_digest(expected, signature):
        raise Refused(401, "bad signature: signed with another secret")
    for claim in ("iss", "aud", "iat", "exp", "jti", "req", "bsh"):
        if claim not in claims:
            raise Refused(401, f'token has no "{claim}" claim')
    now = time.time()
    if claims["iss"] != ISSUER:
        raise Refused(401, f'token is not from the gateway: its issuer is not "{ISSUER}"')
    audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
    if NAME not in audiences:
        raise Refused(401, f'token is for another audience, not "{NAME}"')
    if not isinstance(claims["iat"], (int, float)) or not isinstance(claims["exp"], (int, float)):
        raise Refused(401, "token times are not numbers")
    if now > claims["exp"] + CLOCK_TOLERANCE_SECONDS:
        raise Refused(401, "token expired")
    if claims["iat"] > now + CLOCK_TOLERANCE_SECONDS:
        raise Refused(401, "token issued in the future")
    if now - claims["iat"] > MAX_TOKEN_SECONDS + CLOCK_TOLERANCE_SECONDS:
        raise Refused(401, f"token issued more than {MAX_TOKEN_SECONDS}s ago")
    if claims["exp"] - claims["iat"] > MAX_TOKEN_SECONDS:
        raise Refused(401, f"token lifetime exceeds the {MAX_TOKEN_SECONDS}s limit")
    if claims["req"] != f"{method} {path}":
        raise Refused(401, f'token was signed for "{claims["req"]}", not "{method} {path}"')
    return claims


def invoke(request):
    """Runs the due handlers in order; each one's outcome, as causeway/functions reports them."""
    if not isinstance(request, dict) or request.get("protocol") != PROTOCOL:
        raise Refused(400, f'not an invocation of protocol "{PROTOCOL}"')
    if not isinstance(request.get("handlers"), list) or not isinstance(request.get("body"), dict):
        raise Refused(400, "an invocation has handlers (a list) and a body (an object)")
    outcomes, logs = {}, []
    for due in request["handlers"]:
        id = due.get("id") if isinstance(due, dict) else None
        if id not in HANDLERS:
            raise Refused(400, f"no handler {json.dumps(id)} in {NAME}")
        try:
            result = HANDLERS[id][1]({"body": request["body"], "due": due, "reason": request.get("reason")})
            outcomes[id] = {"status": "success", **({"result": result} if result is not None else {})}
        except Exception as error:  # as the SDK: an unexpected error is retried after the backoff
            outcomes[id] = {"status": "temporary", "message": str(error), "delay": 60}
            logs.append({"level": "error", "message": f"{id} failed: {error}", "handler": id})
    return {"protocol": PROTOCOL, "outcomes": outcomes, "logs": logs}


def make_handler(secret, replays):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the gateway's pool expects

        def do_GET(self):
            self._serve("GET")

        def do_POST(self):
            self._serve("POST")

        def _serve(self, method):
            try:
                if method == "GET" and self.path == "/healthz":
                    return self._answer(200, {"status": "ok", "protocol": PROTOCOL, "name": NAME})
                routes = {("GET", "/causeway/v1/manifest"), ("POST", "/causeway/v1/invoke")}
                if (method, self.path) not in routes:
                    raise Refused(404, f"no route for {method} {self.path}")
                length = int(self.headers.get("Content-Length") or 0)
                if length > MAX_BODY_BYTES:
                    raise Refused(413, f"the body is larger than {MAX_BODY_BYTES} bytes")
                claims = verify_token(secret, self.headers.get("Authorization"), method, self.path)
                body = self.rfile.read(length) if length else b""
                if claims["bsh"] != b64url(hashlib.sha256(body).digest()):
                    raise Refused(401, "body does not match the signed digest: the request was altered")
                if not replays.admit(claims["jti"], claims["exp"]):
                    raise Refused(401, "token was already used: replayed request")
                if method == "GET":
                    return self._answer(200, MANIFEST)
                try:
                    request = json.loads(body)
                except json.JSONDecodeError as error:
                    raise Refused(400, f"the body is not JSON: {error}")
                self._answer(200, invoke(request))
            except Refused as refused:
                self._answer(refused.status, {"protocol": PROTOCOL, "error": str(refused)})
                if refused.status == 413:
                    self.close_connection = True  # the body was not read: this connection is done
            except Exception as error:
                self._answer(500, {"protocol": PROTOCOL, "error": f"internal error: {error}"})

        def _answer(self, status, value):
            data = json.dumps(value).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format, *args):  # quiet: the gateway logs the calls
            pass

    return Handler


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--host", default="127.0.0.1")
    options = parser.parse_args()
    secret = os.environ.get("CAUSEWAY_SECRET", "").encode()
    if len(secret) < 32:
        sys.exit("no signing secret: set CAUSEWAY_SECRET (at least 32 bytes, the gateway's)")
    server = ThreadingHTTPServer((options.host, options.port), make_handler(secret, Replays()))
    host, port = server.server_address[:2]
    print(f"function service {NAME} listening on http://{host}:{port}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
