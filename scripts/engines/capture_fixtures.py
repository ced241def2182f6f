#!/usr/bin/env python3
"""Captures the wire behaviour of a running real engine as fixture files (exact bytes).

    scripts/engines/capture_fixtures.py vllm|llamacpp [--out DIR] [--only generate,embed,rerank]
    scripts/engines/capture_fixtures.py vllm|llamacpp --only generate --reuse-only

Reads the servers from the env files that scripts/engines/*/start.sh write (target/vllm.env,
target/vllm-embed.env, target/vllm-rerank.env; target/llamacpp*.env; a variant whose env file is
missing is skipped). Every exchange is a fresh TCP connection and a hand-written HTTP/1.1 request
(no client library in between, so nothing is re-framed): NAME.request.http holds the bytes sent,
NAME.http the bytes received, status line, headers and body as they came (chunked framing
included). Exchanges marked `reuse` then send a second request (GET /health) on the same socket
right after the response ended and record what happened (connection.json): whether the server
had already sent a FIN, whether the send went through, and what the read returned (a response,
EOF or a reset); 20 streamed requests, each followed at once by a second one, are tallied the
same way (--reuse-only runs just that tally). Start the generate server fresh (start.sh
--restart) before a full capture: metrics_before must precede every inference request (the
script warns otherwise). Default output: tests/fixtures/engines/ENGINE/, merged into an earlier
capture's index.json/connection.json. Python standard library only.
"""
import argparse
import datetime
import json
import os
import select
import socket
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def read_env(path):
    env = {}
    if not path.is_file():
        return None
    for line in path.read_text().splitlines():
        if line.startswith("export ") and "=" in line:
            k, v = line[len("export "):].split("=", 1)
            env[k] = v.strip("'")
    return env


def build_request(host, method, path, body=None, headers=()):
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}", "User-Agent: ttftbench-capture/1",
             "Accept: */*"]
    data = b""
    if body is not None:
        data = json.dumps(body).encode()
        lines += ["Content-Type: application/json", f"Content-Length: {len(data)}"]
    lines += list(headers)
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + data


class Reader:
    """Reads exactly one HTTP/1.1 response off a socket, keeping every byte."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""
        self.raw = b""
        self.eof = False

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            self.eof = True
            raise EOFError
        self.buf += chunk

    def _take(self, n):
        while len(self.buf) < n:
            self._fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        self.raw += out
        return out

    def _line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        i = self.buf.index(b"\r\n") + 2
        return self._take(i)

    def response(self):
        self.raw = b""
        status = self._line()
        headers = {}
        while True:
            line = self._line()
            if line == b"\r\n":
                break
            k, v = line.decode("latin-1").split(":", 1)
            headers[k.strip().lower()] = v.strip()
        code = int(status.split()[1])
        if headers.get("transfer-encoding", "").lower() == "chunked":
            while True:
                size = int(self._line().split(b";")[0], 16)
                if size == 0:
                    while self._line() != b"\r\n":
                        pass
                    break
                self._take(size + 2)
        elif "content-length" in headers:
            self._take(int(headers["content-length"]))
        else:  # delimited by close
            try:
                while True:
                    self._fill()
                    self._take(len(self.buf))
            except EOFError:
                pass
        return code, headers, self.raw


def peer_state(sock, wait_s):
    """'fin' if the peer has closed its side within wait_s, 'open' if nothing arrived,
    'data' if unexpected bytes arrived, 'reset' on a reset."""
    r, _, _ = select.select([sock], [], [], wait_s)
    if not r:
        return "open"
    try:
        b = sock.recv(65536, socket.MSG_PEEK)
    except ConnectionResetError:
        return "reset"
    return "fin" if b == b"" else "data"


def second_request(sock, host):
    """Sends GET /health on a used connection; returns what happened."""
    out = {}
    req = build_request(host, "GET", "/health")
    try:
        sock.sendall(req)
        out["send"] = "ok"
    except (BrokenPipeError, ConnectionResetError) as e:
        out["send"] = type(e).__name__
        return out
    rd = Reader(sock)
    sock.settimeout(10)
    try:
        code, _, raw = rd.response()
        out["read"] = f"response {code}"
    except EOFError:
        out["read"] = "EOF (recv returned 0 bytes: the server had closed the connection)"
    except ConnectionResetError:
        out["read"] = "ECONNRESET (the server's kernel answered the request with RST)"
    except socket.timeout:
        out["read"] = "timeout"
    return out


class Capture:
    def __init__(self, out, engine):
        self.out = out
        self.engine = engine
        self.index = []
        self.conn = {}

    def exchange(self, name, url, method, path, body=None, headers=(), reuse=False,
                 idle_s=None, note=None):
        host, port = url.rsplit(":", 1)
        req = build_request(url, method, path, body, headers)
        sock = socket.create_connection((host, int(port)), timeout=120)
        t0 = time.monotonic()
        sock.sendall(req)
        rd = Reader(sock)
        code, hdrs, raw = rd.response()
        dt = time.monotonic() - t0
        if body is not None:
            (self.out / f"{name}.request.http").write_bytes(req)
        (self.out / f"{name}.http").write_bytes(raw)
        entry = {"file": f"{name}.http", "request": f"{method} {path}", "status": code,
                 "bytes": len(raw), "seconds": round(dt, 3)}
        if note:
            entry["note"] = note
        self.index.append(entry)
        print(f"{self.engine}: {name}: {code}, {len(raw)} bytes, {dt:.2f}s", file=sys.stderr)
        if reuse:
            c = {"request": f"{method} {path}", "status": code,
                 "connection_header": hdrs.get("connection"),
                 "keep_alive_header": hdrs.get("keep-alive"),
                 "transfer_encoding": hdrs.get("transfer-encoding"),
                 "content_length": hdrs.get("content-length"),
                 "leftover_bytes_after_response": len(rd.buf)}
            if idle_s:
                time.sleep(idle_s)
                c["idle_seconds_before_second_request"] = idle_s
                c["peer_state_after_idle"] = peer_state(sock, 0)
            else:
                c["peer_state_within_200ms"] = peer_state(sock, 0.2)
            c["second_request_GET_/health"] = second_request(sock, url)
            self.conn[name] = c
        sock.close()
        return code, hdrs, raw


def openapi_paths(cap, url, variant):
    """vLLM's routes, from GET /openapi.json (only the paths and methods are kept)."""
    host, port = url.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=30)
    sock.sendall(build_request(url, "GET", "/openapi.json"))
    _, _, raw = Reader(sock).response()
    sock.close()
    paths = body_json(raw)["paths"]
    routes = {p: sorted(m.upper() for m in v) for p, v in sorted(paths.items())}
    (cap.out / f"routes_{variant}.json").write_text(json.dumps(routes, indent=1) + "\n")
    cap.index.append({"file": f"routes_{variant}.json", "request": "GET /openapi.json",
                      "note": "paths and methods only"})


def immediate_reuse_tally(cap, url, path, body, runs=20):
    """A streamed request, then at once (no wait for a FIN) GET /health on the same socket,
    `runs` times: how often the second request gets a response, EOF, or a reset."""
    host, port = url.rsplit(":", 1)
    tally = {}
    for _ in range(runs):
        sock = socket.create_connection((host, int(port)), timeout=30)
        sock.sendall(build_request(url, "POST", path, body))
        Reader(sock).response()
        r = second_request(sock, url)
        key = r.get("read") or f"send {r['send']}"
        tally[key] = tally.get(key, 0) + 1
        sock.close()
    cap.conn[f"immediate_second_request_after_stream ({runs} runs)"] = {
        "request": f"POST {path} (stream: true)", "outcomes": tally}
    print(f"{cap.engine}: immediate reuse after a stream: {tally}", file=sys.stderr)


def body_json(raw):
    head, _, body = raw.partition(b"\r\n\r\n")
    if b"chunked" in head.lower():
        out, rest = b"", body
        while True:
            size_line, _, rest = rest.partition(b"\r\n")
            size = int(size_line.split(b";")[0], 16)
            if size == 0:
                break
            out, rest = out + rest[:size], rest[size + 2:]
        body = out
    return json.loads(body)


def generative(cap, url, model, engine):
    chat = [{"role": "user", "content": "Hello, how are you?"}]
    # temperature 1 with a seed: varied tokens (at temperature 0 the random model repeats one), the
    # same ones on every run of the same build
    sample = {"temperature": 1.0, "seed": 7}
    common = {"max_tokens": 8, "ignore_eos": True, **sample}
    cap.exchange("health", url, "GET", "/health")
    cap.exchange("models", url, "GET", "/v1/models")
    _, _, raw = cap.exchange("metrics_before", url, "GET", "/metrics",
                             note="right after start: readiness probes only, no inference request yet")
    served = [ln for ln in raw.decode().splitlines()
              if ln.split("{")[0].split(" ")[0] in ("vllm:prompt_tokens_total",
                                                     "llamacpp:prompt_tokens_total")
              and float(ln.rsplit(" ", 1)[1]) > 0]
    if served:
        cap.index[-1]["note"] = "NOT fresh: the server had served requests before this capture"
        print(f"{engine}: WARNING: metrics_before is not from a fresh server ({served[0]}); "
              "restart it (start.sh --restart) for a clean capture", file=sys.stderr)
    if engine == "llamacpp":
        cap.exchange("slots_before", url, "GET", "/slots")
        cap.exchange("props", url, "GET", "/props")
    cap.exchange("chat_stream", url, "POST", "/v1/chat/completions",
                 {"model": model, "messages": chat, "stream": True,
                  "stream_options": {"include_usage": True}, **common}, reuse=True)
    cap.exchange("chat", url, "POST", "/v1/chat/completions",
                 {"model": model, "messages": chat, **common}, reuse=True)
    cap.exchange("completions_stream", url, "POST", "/v1/completions",
                 {"model": model, "prompt": "Once upon a time", "stream": True,
                  "stream_options": {"include_usage": True}, **common}, reuse=True)
    cap.exchange("completions", url, "POST", "/v1/completions",
                 {"model": model, "prompt": "Once upon a time", **common}, reuse=True)
    immediate_reuse_tally(cap, url, "/v1/chat/completions",
                          {"model": model, "messages": chat, "stream": True, **common})
    cap.exchange("chat_stream_no_usage", url, "POST", "/v1/chat/completions",
                 {"model": model, "messages": chat, "stream": True, **common})
    # the idle keep-alive timeout (5 s on both): a 6 s pause before the second request
    cap.exchange("chat_idle6s", url, "POST", "/v1/chat/completions",
                 {"model": model, "messages": chat, **common}, reuse=True, idle_s=6)
    cap.exchange("responses_stream", url, "POST", "/v1/responses",
                 {"model": model, "input": "Hello, how are you?", "max_output_tokens": 8,
                  **sample, "stream": True})
    cap.exchange("responses", url, "POST", "/v1/responses",
                 {"model": model, "input": "Hello, how are you?", "max_output_tokens": 8,
                  **sample})
    anthropic = ("anthropic-version: 2023-06-01",)
    cap.exchange("messages_stream", url, "POST", "/v1/messages",
                 {"model": model, "max_tokens": 8, "messages": chat, "stream": True,
                  **sample}, headers=anthropic)
    cap.exchange("messages", url, "POST", "/v1/messages",
                 {"model": model, "max_tokens": 8, "messages": chat, **sample},
                 headers=anthropic)
    # errors
    cap.exchange("error_unknown_model", url, "POST", "/v1/chat/completions",
                 {"model": "no-such-model", "messages": chat, "max_tokens": 4}, reuse=True)
    cap.exchange("error_unknown_model_stream", url, "POST", "/v1/chat/completions",
                 {"model": "no-such-model", "messages": chat, "max_tokens": 4, "stream": True})
    cap.exchange("error_embeddings_on_generate_server", url, "POST", "/v1/embeddings",
                 {"model": model, "input": "hello"})
    if engine == "vllm":
        cap.exchange("version", url, "GET", "/version")
        _, _, raw = cap.exchange("tokenize", url, "POST", "/tokenize",
                                 {"model": model, "prompt": "Hello, how are you?"})
        tokens = body_json(raw)["tokens"]
        cap.exchange("tokenize_chat", url, "POST", "/tokenize",
                     {"model": model, "messages": chat, "add_generation_prompt": True})
        cap.exchange("detokenize", url, "POST", "/detokenize", {"model": model, "tokens": tokens})
    else:
        _, _, raw = cap.exchange("tokenize", url, "POST", "/tokenize",
                                 {"content": "Hello, how are you?"})
        tokens = body_json(raw)["tokens"]
        cap.exchange("detokenize", url, "POST", "/detokenize", {"tokens": tokens})
        cap.exchange("completion_native_stream", url, "POST", "/completion",
                     {"prompt": "Once upon a time", "n_predict": 8, "stream": True,
                      "ignore_eos": True, **sample}, reuse=True)
        cap.exchange("slots_after", url, "GET", "/slots")
    cap.exchange("metrics_after", url, "GET", "/metrics",
                 note="after the requests above")


def embed(cap, url, model):
    cap.exchange("embeddings", url, "POST", "/v1/embeddings",
                 {"model": model, "input": ["hello world", "ttftbench"]})
    cap.exchange("embeddings_stream_true", url, "POST", "/v1/embeddings",
                 {"model": model, "input": "hello world", "stream": True})
    cap.exchange("error_embeddings_unknown_model", url, "POST", "/v1/embeddings",
                 {"model": "no-such-model", "input": "hello world"})


def rerank(cap, url, model):
    cap.exchange("rerank", url, "POST", "/v1/rerank",
                 {"model": model, "query": "what is a cat?",
                  "documents": ["a cat is a small animal", "the stock market fell", "cats purr"]})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("engine", choices=["vllm", "llamacpp"])
    ap.add_argument("--out")
    ap.add_argument("--only", help="comma-separated variants: generate,embed,rerank")
    ap.add_argument("--reuse-only", action="store_true",
                    help="only the immediate-second-request tally (no fixture files but "
                         "connection.json; safe on a server that has served requests)")
    a = ap.parse_args()
    out = Path(a.out) if a.out else REPO / "tests" / "fixtures" / "engines" / a.engine
    out.mkdir(parents=True, exist_ok=True)
    prefix = {"vllm": "TTFTBENCH_VLLM", "llamacpp": "TTFTBENCH_LLAMACPP"}[a.engine]
    only = set(a.only.split(",")) if a.only else {"generate", "embed", "rerank"}
    cap = Capture(out, a.engine)
    versions = {}
    for variant, suffix, fn in (("generate", "", generative), ("embed", "-embed", embed),
                                ("rerank", "-rerank", rerank)):
        if variant not in only:
            continue
        env = read_env(REPO / "target" / f"{a.engine}{suffix}.env")
        p = prefix + ("" if variant == "generate" else "_" + variant.upper())
        if env is None or f"{p}_URL" not in env:
            print(f"{a.engine}: no {variant} server (target/{a.engine}{suffix}.env): skipped",
                  file=sys.stderr)
            continue
        url, model = env[f"{p}_URL"], env[f"{p}_MODEL"]
        if not a.reuse_only:
            versions[variant] = {"version": env.get(f"{p}_VERSION"), "args": env.get(f"{p}_ARGS")}
        if variant == "generate" and a.reuse_only:
            immediate_reuse_tally(cap, url, "/v1/chat/completions",
                                  {"model": model, "messages": [{"role": "user", "content": "Hi"}],
                                   "stream": True, "max_tokens": 8, "ignore_eos": True})
            continue
        if variant == "generate":
            fn(cap, url, model, a.engine)
        else:
            fn(cap, url, model)
        if a.engine == "vllm":
            openapi_paths(cap, url, variant)
    # Merge with an earlier capture's index (a run with --only replaces just its own entries).
    stamp = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    meta = {"engine": a.engine, "servers": {}, "exchanges": []}
    if (out / "index.json").is_file():
        meta = json.loads((out / "index.json").read_text())
    for v in versions.values():
        v["captured_at"] = stamp
    meta["servers"].update(versions)
    mine = {e["file"] for e in cap.index}
    meta["exchanges"] = [e for e in meta["exchanges"] if e["file"] not in mine] + cap.index
    (out / "index.json").write_text(json.dumps(meta, indent=1) + "\n")
    if cap.conn:
        conn = {}
        if (out / "connection.json").is_file():
            conn = json.loads((out / "connection.json").read_text())
        conn.update(cap.conn)
        (out / "connection.json").write_text(json.dumps(conn, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
