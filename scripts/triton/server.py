#!/usr/bin/env python3
"""A real Triton Inference Server (PyTriton's bundled `tritonserver`) hosting CPU-only models
for ttftbench's integration tests.

Models:
  trtllm_stream    decoupled, TensorRT-LLM ensemble input layout, max_batch_size 8
                   (requests carry a batch dim: [1,1]); streams exactly max_tokens tokens.
  vllm_stream      decoupled, vLLM backend layout, max_batch_size 0; max_tokens from the JSON
                   string `sampling_parameters` (values may be strings, e.g. "64"; default 16).
  trtllm_unary     NOT decoupled, same TensorRT-LLM layout: one response with the whole text after
                   FIRST_TOKEN_DELAY + (max_tokens - 1) * ITL (for "cannot stream" checks).
  images           not decoupled: images FP32 [3,640,640] -> output0 FP32 [84], max_batch_size 8,
                   dynamic batching, compute = sleep(2 ms + 1 ms per batch item).
  yolov8s          the same, with YOLOv8's real output size: output0 FP32 [84,8400] (2.8 MB per
                   image, so responses pass gRPC's 4 MB default message limit from batch 2 on).
  text_classifier  not decoupled: input_ids INT64 [-1] -> logits FP32 [2], max_batch_size 8.

Each streamed token is one GPT-2 token with a leading space (" the", " of", " and", " to", " in"),
so the concatenated text re-tokenizes to exactly max_tokens tokens. The first token comes
FIRST_TOKEN_DELAY ms after the request reaches the model, the next ones ITL ms apart (on an
absolute schedule, so sleeps do not accumulate drift).

Ports, delays and the access token come from flags or the environment (flags win):
  --http-port / TTFTBENCH_TRITON_HTTP_PORT (8000), --grpc-port / TTFTBENCH_TRITON_GRPC_PORT (8001),
  --metrics-port / TTFTBENCH_TRITON_METRICS_PORT (8002), --first-token-delay-ms /
  TTFTBENCH_TRITON_FIRST_TOKEN_DELAY_MS (40), --itl-ms / TTFTBENCH_TRITON_ITL_MS (5),
  TTFTBENCH_TRITON_TOKEN (the access token; generated when unset).

PyTriton starts tritonserver with `--http-restricted-api` and `--grpc-restricted-protocol` set to
`shared-memory,model-repository,statistics,trace,logging:triton-access-token=<token>`. Over HTTP
the header is `triton-access-token`; over gRPC Triton expects the metadata key
`triton-grpc-protocol-triton-access-token`. `--unrestricted` turns the restriction off.

Prints `TRITON_READY http=... grpc=... metrics=...` on stdout once every model is loaded and
ready; exits non-zero with a message when startup fails. SIGTERM/SIGINT stop the server.
"""

import argparse
import asyncio
import json
import logging
import os
import secrets
import signal
import sys
import time

WORDS = (b" the", b" of", b" and", b" to", b" in")
LOG = logging.getLogger("ttftbench.triton")


def env_int(name, default):
    v = os.environ.get(name, "")
    return int(v) if v.strip() else default


def env_float(name, default):
    v = os.environ.get(name, "")
    return float(v) if v.strip() else default


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--http-port", type=int, default=env_int("TTFTBENCH_TRITON_HTTP_PORT", 8000))
    p.add_argument("--grpc-port", type=int, default=env_int("TTFTBENCH_TRITON_GRPC_PORT", 8001))
    p.add_argument("--metrics-port", type=int, default=env_int("TTFTBENCH_TRITON_METRICS_PORT", 8002))
    p.add_argument("--address", default=os.environ.get("TTFTBENCH_TRITON_ADDRESS", "127.0.0.1"))
    p.add_argument(
        "--first-token-delay-ms",
        type=float,
        default=env_float("TTFTBENCH_TRITON_FIRST_TOKEN_DELAY_MS", 40.0),
    )
    p.add_argument("--itl-ms", type=float, default=env_float("TTFTBENCH_TRITON_ITL_MS", 5.0))
    p.add_argument("--unrestricted", action="store_true", help="no access token on any API")
    p.add_argument("--log-verbose", type=int, default=0, help="tritonserver --log-verbose")
    return p.parse_args(argv)


def token_text(i):
    return WORDS[i % len(WORDS)]


def whole_text(n):
    return b"".join(token_text(i) for i in range(n))


def scalar(req, name, default):
    """First element of an optional input, or `default` when the request does not carry it."""
    if name not in req.data:
        return default
    arr = req[name]
    if arr.size == 0:
        return default
    return arr.reshape(-1)[0]


def as_bytes(v):
    if isinstance(v, bytes):
        return v
    if isinstance(v, str):
        return v.encode()
    return bytes(v)


def make_llm_parser(kind):
    """(prompt, max_tokens, stream, exclude_input_in_output) of one request, for the TensorRT-LLM
    layout (`max_tokens` tensor) or the vLLM one (`sampling_parameters` JSON; values may be strings)."""

    def parse(req):
        prompt = as_bytes(scalar(req, "text_input", b""))
        stream = bool(scalar(req, "stream", False))
        exclude = bool(scalar(req, "exclude_input_in_output", False))
        if kind == "trtllm":
            n = int(scalar(req, "max_tokens", 16))
        else:
            raw = scalar(req, "sampling_parameters", b"")
            n = 16
            if raw:
                params = json.loads(as_bytes(raw).decode("utf-8"))
                if "max_tokens" in params:
                    n = int(float(params["max_tokens"]))
        return prompt, max(0, min(n, 8192)), stream, exclude

    return parse


def make_llm(kind, first_delay_s, itl_s, batched):
    """An async generator infer function for a decoupled LLM model.

    PyTriton calls it with the list of requests Triton put into one execution and sends each
    yielded list (one response dict per request) as one response per request; when the generator
    ends it sends the FINAL flag (a flags-only final: Triton sends it on as an empty response
    only when the request carries `triton_enable_empty_final_response`, as perf_analyzer's and
    ttftbench's do). The models are configured without a dynamic batcher, so a list holds one
    request; several are still handled (finished ones get empty responses).
    """
    import numpy as np

    def out(text):
        arr = np.array([text], dtype=np.object_)
        return {"text_output": arr.reshape(1, -1) if batched else arr}

    parse = make_llm_parser(kind)

    async def infer(requests):
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        asks = [parse(r) for r in requests]
        steps = max([a[1] if a[2] else 1 for a in asks] or [0])
        for step in range(steps):
            due = t0 + first_delay_s + step * itl_s
            delay = due - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            responses = []
            for prompt, n, stream, exclude in asks:
                if stream:
                    responses.append(out(token_text(step) if step < n else b""))
                else:
                    # One response with the whole text; like TRT-LLM and vLLM, the prompt is
                    # echoed in front unless exclude_input_in_output is true.
                    body = whole_text(n)
                    responses.append(out(body if exclude else prompt + body))
            yield responses

    return infer


def make_llm_unary(first_delay_s, itl_s):
    """A non-decoupled TensorRT-LLM-layout model: one response per request with the whole text,
    ready when the last token would have been streamed."""
    import numpy as np

    parse = make_llm_parser("trtllm")

    async def infer(requests):
        asks = [parse(r) for r in requests]
        longest = max([a[1] for a in asks] or [0])
        await asyncio.sleep(first_delay_s + max(0, longest - 1) * itl_s)
        outs = []
        for prompt, n, _stream, exclude in asks:
            body = whole_text(n)
            text = body if exclude else prompt + body
            outs.append({"text_output": np.array([[text]], dtype=np.object_)})
        return outs

    return infer


def make_images(out_shape):
    """An image model: output0 of `out_shape` per item, zeros but for its first three values, the
    input's per-channel means (cheap, deterministic, and they show the input arrived intact)."""
    import numpy as np

    async def infer(requests):
        total = 0
        outs = []
        for r in requests:
            x = r["images"]
            b = x.shape[0]
            total += b
            o = np.zeros((b,) + tuple(out_shape), dtype=np.float32)
            o.reshape(b, -1)[:, :3] = x.reshape(b, 3, -1).mean(axis=2, dtype=np.float32)
            outs.append({"output0": o})
        await asyncio.sleep(0.002 + 0.001 * total)
        return outs

    return infer


def make_classifier():
    import numpy as np

    async def infer(requests):
        outs = []
        for r in requests:
            ids = r["input_ids"]
            s = ids.astype(np.float64).sum(axis=-1) if ids.size else np.zeros(ids.shape[:1])
            logits = np.stack([np.tanh(s / 1e5), -np.tanh(s / 1e5)], axis=-1).astype(np.float32)
            outs.append({"logits": logits.reshape(ids.shape[0], 2)})
        await asyncio.sleep(0.001)
        return outs

    return infer


def bind_models(triton, args):
    import numpy as np
    from pytriton.model_config import DynamicBatcher, ModelConfig, Tensor

    first = args.first_token_delay_ms / 1000.0
    itl = args.itl_ms / 1000.0
    text_out = [Tensor(name="text_output", dtype=np.bytes_, shape=(-1,))]
    # TensorRT-LLM ensemble layout (tensorrtllm_backend all_models/inflight_batcher_llm/ensemble).
    trtllm_inputs = [
        Tensor(name="text_input", dtype=np.bytes_, shape=(1,)),
        Tensor(name="max_tokens", dtype=np.int32, shape=(1,)),
        Tensor(name="stream", dtype=np.bool_, shape=(1,), optional=True),
        Tensor(name="exclude_input_in_output", dtype=np.bool_, shape=(1,), optional=True),
        Tensor(name="min_tokens", dtype=np.int32, shape=(1,), optional=True),
        Tensor(name="temperature", dtype=np.float32, shape=(1,), optional=True),
    ]
    triton.bind(
        model_name="trtllm_stream",
        infer_func=make_llm("trtllm", first, itl, batched=True),
        inputs=trtllm_inputs,
        outputs=text_out,
        config=ModelConfig(batching=True, max_batch_size=8, batcher=None, decoupled=True),
    )
    # The same layout, not decoupled: one response per request.
    triton.bind(
        model_name="trtllm_unary",
        infer_func=make_llm_unary(first, itl),
        inputs=trtllm_inputs,
        outputs=text_out,
        config=ModelConfig(batching=True, max_batch_size=8, batcher=None),
    )
    # vLLM backend layout (no batch dimension).
    triton.bind(
        model_name="vllm_stream",
        infer_func=make_llm("vllm", first, itl, batched=False),
        inputs=[
            Tensor(name="text_input", dtype=np.bytes_, shape=(1,)),
            Tensor(name="stream", dtype=np.bool_, shape=(1,), optional=True),
            Tensor(name="sampling_parameters", dtype=np.bytes_, shape=(1,), optional=True),
            Tensor(name="exclude_input_in_output", dtype=np.bool_, shape=(1,), optional=True),
        ],
        outputs=text_out,
        config=ModelConfig(batching=False, decoupled=True),
    )
    triton.bind(
        model_name="images",
        infer_func=make_images((84,)),
        inputs=[Tensor(name="images", dtype=np.float32, shape=(3, 640, 640))],
        outputs=[Tensor(name="output0", dtype=np.float32, shape=(84,))],
        config=ModelConfig(batching=True, max_batch_size=8, batcher=DynamicBatcher(max_queue_delay_microseconds=500)),
    )
    # The second seed's yolov8s: same input and timing, the real model's output size.
    triton.bind(
        model_name="yolov8s",
        infer_func=make_images((84, 8400)),
        inputs=[Tensor(name="images", dtype=np.float32, shape=(3, 640, 640))],
        outputs=[Tensor(name="output0", dtype=np.float32, shape=(84, 8400))],
        config=ModelConfig(batching=True, max_batch_size=8, batcher=DynamicBatcher(max_queue_delay_microseconds=500)),
    )
    triton.bind(
        model_name="text_classifier",
        infer_func=make_classifier(),
        inputs=[Tensor(name="input_ids", dtype=np.int64, shape=(-1,))],
        outputs=[Tensor(name="logits", dtype=np.float32, shape=(2,))],
        config=ModelConfig(batching=True, max_batch_size=8, batcher=DynamicBatcher()),
    )
    return ["trtllm_stream", "trtllm_unary", "vllm_stream", "images", "yolov8s", "text_classifier"]


class Stop(Exception):
    pass


def main(argv):
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    try:
        from pytriton.triton import Triton, TritonConfig, TritonSecurityConfig
    except ImportError as e:
        print(f"error: cannot import pytriton ({e}); run scripts/triton/start.sh, which installs it", file=sys.stderr)
        return 3

    if args.unrestricted:
        token = ""
        security = TritonSecurityConfig(access_token=None, restricted_endpoints=[])
    else:
        token = os.environ.get("TTFTBENCH_TRITON_TOKEN", "").strip() or secrets.token_urlsafe(24)
        security = TritonSecurityConfig(access_token=token)

    config = TritonConfig(
        http_address=args.address,
        http_port=args.http_port,
        grpc_address=args.address,
        grpc_port=args.grpc_port,
        metrics_address=args.address,
        metrics_port=args.metrics_port,
        allow_gpu_metrics=False,
        log_verbose=args.log_verbose,
        exit_on_error=True,
        # Triton waits this long for models to unload on shutdown (default 30 s); PyTriton's
        # decoupled proxies may not unload at all, so do not let them hold stop.sh up.
        exit_timeout_secs=5,
    )

    def on_signal(signum, _frame):
        raise Stop(signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    t0 = time.monotonic()
    triton = None
    try:
        triton = Triton(config=config, security_config=security)
        names = bind_models(triton, args)
        # run(): starts tritonserver, loads the models and waits until they answer.
        triton.run()
        if not triton.is_alive():
            print("error: tritonserver exited during startup; see the log above", file=sys.stderr)
            return 1
        print(
            f"TRITON_READY http={args.address}:{args.http_port} grpc={args.address}:{args.grpc_port} "
            f"metrics=http://{args.address}:{args.metrics_port}/metrics models={','.join(names)} "
            f"first_token_delay_ms={args.first_token_delay_ms:g} itl_ms={args.itl_ms:g} "
            f"restricted={'no' if args.unrestricted else 'yes'} startup_s={time.monotonic() - t0:.1f}",
            flush=True,
        )
        while triton.is_alive():
            time.sleep(0.5)
        print("error: tritonserver or a model proxy died; see the log above", file=sys.stderr)
        return 1
    except Stop as s:
        print(f"stopping on {s}", file=sys.stderr, flush=True)
        return 0
    except Exception as e:  # startup failures: bad ports, missing libpython, ...
        LOG.exception("startup failed")
        print(f"error: the Triton server failed: {e}", file=sys.stderr, flush=True)
        return 1
    finally:
        if triton is not None:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            try:
                triton.stop()
            except Exception as e:  # noqa: BLE001
                print(f"warning: stopping tritonserver: {e}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
