"""A tiny OpenAI-compatible streaming server standing in for the GPU engine in tests.

    python3 stub_server.py --port N [--tokens 8] [--never-ready] [--die-after K] [--fail-every M]
                           [--answers table.json]

GET /health and /v1/models answer 200 (503 forever with --never-ready); POST /v1/chat/completions
streams one chunk per token, then a chunk with finish_reason and usage, then [DONE] (with
--role prefill only the first token: a disaggregated prefill worker). With
--die-after K the process exits abruptly while serving request K (a crashed engine).

POST /start_profile and /stop_profile act as SGLang's: start needs SGLANG_TORCH_PROFILER_DIR (or an
`output_dir` in the body; else 400, as an engine started without the profiler switch refuses), stop
writes one gzipped Chrome trace per rank (`<profile_id>-TP-<r>.trace.json.gz`, --ranks of them) there.

With --spec-accept-length L the stub speculates as an engine with MTP does and reports it under the
engines' own names: GET /server_info (SGLang) has `internal_states[i].avg_spec_accept_length` = L for
each of --dp-ranks ranks once a request was served, and GET /metrics (Prometheus text) has SGLang's gauge
`sglang:spec_accept_length` and vLLM's counters `vllm:spec_decode_num_drafts_total` /
`vllm:spec_decode_num_accepted_tokens_total`, grown per generated token so that 1 + accepted / drafts = L.
Without it /server_info has no acceptance and /metrics no speculative metric (speculation off).

With --rewrite-on-stop PATH, SIGTERM (the runner stopping the engine, after the client exited) first
rewrites PATH with each JSON line re-serialized (the same data, other bytes): an engine editing the
client's export after the fact. With --try-write PATH (repeatable) the stub tries to create PATH at start
and again on SIGTERM (its folders too, as an attacker would) and prints what happened; --show FILE prints
a file it must be able to read (the options file the runner wrote for it).

With --answers, the reply text comes from a table {substring: answer}: the first key found in the
last user message (or the prompt of /v1/completions) picks the answer, so an eval harness gets
known answers and its score is known exactly; no key found answers "I do not know.". Requests with
`"stream": false` (what lm-eval's API models send) get one JSON completion instead of a stream.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ARGS = None
ANSWERS: dict[str, str] | None = None
COUNT = 0
PROFILE: dict = {}
SPEC = {"drafts": 0.0, "accepted": 0.0, "served": 0}
LOCK = threading.Lock()


def _speculated(tokens: int) -> None:
    """Count `tokens` generated tokens as verification steps of acceptance length --spec-accept-length."""
    if not ARGS.spec_accept_length:
        return
    steps = tokens / ARGS.spec_accept_length
    with LOCK:
        SPEC["drafts"] += steps
        SPEC["accepted"] += tokens - steps
        SPEC["served"] += 1


def _metrics_text() -> str:
    lines = ["# HELP sglang:num_running_reqs The number of running requests.", "# TYPE sglang:num_running_reqs gauge",
             'sglang:num_running_reqs{model_name="%s",engine_type="unified",tp_rank="0"} 0.0' % ARGS.model]
    if ARGS.spec_accept_length:
        with LOCK:
            drafts, accepted, served = SPEC["drafts"], SPEC["accepted"], SPEC["served"]
        lines += ["# HELP sglang:spec_accept_length The average acceptance length of speculative decoding.",
                  "# TYPE sglang:spec_accept_length gauge"]
        lines += ['sglang:spec_accept_length{model_name="%s",engine_type="unified",tp_rank="0",dp_rank="%d"} %r'
                  % (ARGS.model, r, ARGS.spec_accept_length if served else 0.0) for r in range(ARGS.dp_ranks)]
        lines += ["# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.",
                  "# TYPE vllm:spec_decode_num_drafts_total counter",
                  'vllm:spec_decode_num_drafts_total{engine="0",model_name="%s"} %r' % (ARGS.model, drafts),
                  "# HELP vllm:spec_decode_num_accepted_tokens_total Number of accepted tokens.",
                  "# TYPE vllm:spec_decode_num_accepted_tokens_total counter",
                  'vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="%s"} %r' % (ARGS.model, accepted)]
    return "\n".join(lines) + "\n"


def _server_info() -> dict:
    state = {"last_gen_throughput": 0.0, "memory_usage": {}}
    if ARGS.spec_accept_length and SPEC["served"]:
        state["avg_spec_accept_length"] = ARGS.spec_accept_length
    return {"model_path": ARGS.model, "dp_size": ARGS.dp_ranks,
            "speculative_algorithm": "NEXTN" if ARGS.spec_accept_length else None,
            "internal_states": [dict(state) for _ in range(ARGS.dp_ranks)]}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # keep a short access log in the server log
        sys.stdout.write("stub: " + fmt % args + "\n")
        sys.stdout.flush()

    def _json(self, code: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if ARGS.never_ready:
            return self._json(503, {"status": "loading"})
        if self.path == "/health":
            return self._json(200, {"status": "ok"})
        if self.path == "/v1/models":
            return self._json(200, {"object": "list", "data": [{"id": ARGS.model, "object": "model"}]})
        if self.path in ("/server_info", "/get_server_info"):
            return self._json(200, _server_info())
        if self.path == "/metrics":
            data = _metrics_text().encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return None
        return self._json(404, {"error": "not found"})

    def do_POST(self):
        global COUNT
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        if self.path in ("/start_profile", "/stop_profile"):
            return self._profile(body)
        with LOCK:
            COUNT += 1
            n = COUNT
        if ARGS.die_after and n >= ARGS.die_after:
            print(f"stub: fatal error while serving request {n}: simulated engine crash", flush=True)
            os._exit(17)
        if ARGS.fail_every and n % ARGS.fail_every == 0:
            return self._json(500, {"error": {"message": "simulated engine error", "type": "InternalError"}})
        prompt = " ".join(str(m.get("content", "")) for m in body.get("messages", []))
        prompt_tokens = max(1, len(prompt.split()))
        if ANSWERS is not None or (body.get("stream") is False and ARGS.role == "serve"):
            return self._complete(body, n, prompt_tokens)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        rid = f"chatcmpl-{n}"
        created = int(time.time())

        def send(obj):
            self.wfile.write(b"data: " + json.dumps(obj).encode() + b"\n\n")
            self.wfile.flush()

        time.sleep(ARGS.ttft)
        # a PD prefill worker computes the prompt's KV and the first token, then hands over to decode:
        # one chunk, at once (the router streams the decode worker's answer to the client)
        tokens = 1 if ARGS.role == "prefill" else ARGS.tokens
        for i in range(tokens):
            if i:
                time.sleep(ARGS.itl)
            send({"id": rid, "object": "chat.completion.chunk", "created": created, "model": ARGS.model,
                  "choices": [{"index": 0, "delta": {"role": "assistant", "content": f" tok{i}"}, "finish_reason": None}]})
        send({"id": rid, "object": "chat.completion.chunk", "created": created, "model": ARGS.model,
              "choices": [{"index": 0, "delta": {}, "finish_reason": "length"}],
              "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": tokens,
                        "total_tokens": prompt_tokens + tokens}})
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True
        _speculated(tokens)


    def _profile(self, body: dict) -> None:
        if self.path == "/start_profile":
            where = body.get("output_dir") or os.environ.get("SGLANG_TORCH_PROFILER_DIR")
            if not where:
                return self._json(400, {"error": "the profiler is off (no SGLANG_TORCH_PROFILER_DIR)"})
            PROFILE.update(dir=where, id=body.get("profile_id") or "stub", start=COUNT)
            print(f"stub: profiling into {where}", flush=True)
            return self._json(200, {"success": True})
        if not PROFILE:
            return self._json(400, {"error": "profiling is not in progress"})
        import gzip

        os.makedirs(PROFILE["dir"], exist_ok=True)
        served = COUNT - PROFILE["start"]   # requests served in the window: in each trace's metadata
        for r in range(ARGS.ranks):
            events = [{"ph": "M", "name": "process_name", "pid": 4000 + r, "args": {"name": "python3"}},
                      {"ph": "X", "name": "forward", "cat": "cpu_op", "pid": 4000 + r, "tid": 1, "ts": 10, "dur": 5},
                      {"ph": "X", "name": "gemm_kernel", "cat": "kernel", "pid": r, "tid": 7, "ts": 11, "dur": 3,
                       "args": {"requests": served}}]
            path = os.path.join(PROFILE["dir"], f"{PROFILE['id']}-TP-{r}.trace.json.gz")
            with open(path, "wb") as fh:
                fh.write(gzip.compress(json.dumps({"traceEvents": events}).encode()))
        PROFILE.clear()
        return self._json(200, {"success": True})

    def _complete(self, body: dict, n: int, prompt_tokens: int) -> None:
        """One non-streamed completion; the text from the answer table when one is loaded."""
        users = [m for m in body.get("messages", []) if m.get("role") == "user"]
        asked = str(users[-1].get("content", "")) if users else str(body.get("prompt", ""))
        text = " ".join(f"tok{i}" for i in range(ARGS.tokens))
        if ANSWERS is not None:
            text = next((a for key, a in ANSWERS.items() if key in asked), "I do not know.")
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": len(text.split()),
                 "total_tokens": prompt_tokens + len(text.split())}
        _speculated(len(text.split()))
        if "messages" in body:
            choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
            obj = "chat.completion"
        else:
            choice = {"index": 0, "text": text, "finish_reason": "stop", "logprobs": None}
            obj = "text_completion"
        self._json(200, {"id": f"cmpl-{n}", "object": obj, "created": int(time.time()), "model": ARGS.model,
                         "choices": [choice], "usage": usage})


def _try_write(path: str, when: str) -> None:
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(f"written by the engine at {when}\n")
        print(f"stub: wrote {path} at {when}", flush=True)
    except OSError as exc:
        print(f"stub: cannot write {path} at {when}: {exc.strerror}", flush=True)


def _on_stop(signum, frame) -> None:  # noqa: ARG001
    if ARGS.rewrite_on_stop:
        with open(ARGS.rewrite_on_stop, encoding="utf-8") as fh:
            lines = [json.dumps(json.loads(line), sort_keys=True) for line in fh if line.strip()]
        with open(ARGS.rewrite_on_stop, "w", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")
        print(f"stub: rewrote {ARGS.rewrite_on_stop} on SIGTERM", flush=True)
    for path in ARGS.try_write:
        _try_write(path, "stop")
    os._exit(0)


def main() -> None:
    global ARGS, ANSWERS
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--model", default="stub")
    p.add_argument("--tokens", type=int, default=8)
    p.add_argument("--ttft", type=float, default=0.01)
    # 20 ms between token chunks: at 2 ms a client slowed by a busy test machine read several chunks at
    # once and measured an ITL of 0, which `results process` (rightly) judges a broken measurement
    p.add_argument("--itl", type=float, default=0.02)
    p.add_argument("--never-ready", action="store_true")
    p.add_argument("--die-after", type=int, default=0)
    p.add_argument("--fail-every", type=int, default=0)
    p.add_argument("--ranks", type=int, default=2, help="trace files /stop_profile writes (one per rank)")
    p.add_argument("--spec-accept-length", type=float, default=0.0,
                   help="speculate with this acceptance length and report it as SGLang and vLLM do")
    p.add_argument("--dp-ranks", type=int, default=1, help="DP ranks /server_info lists (internal_states)")
    p.add_argument("--answers", help="JSON table {substring of the question: answer text}")
    p.add_argument("--role", choices=("serve", "prefill", "decode"), default="serve",
                   help="prefill: answer with the first token only, as a disaggregated prefill worker does")
    p.add_argument("--rewrite-on-stop", help="on SIGTERM, rewrite this JSON-lines file (other bytes, same data)")
    p.add_argument("--try-write", action="append", default=[], help="try to write this file at start and on SIGTERM")
    p.add_argument("--show", help="print this file at start")
    ARGS = p.parse_args()
    for path in ARGS.try_write:
        _try_write(path, "start")
    if ARGS.show:
        with open(ARGS.show, encoding="utf-8") as fh:
            print(f"stub: {ARGS.show} reads {fh.read()!r}", flush=True)
    if ARGS.rewrite_on_stop or ARGS.try_write:
        signal.signal(signal.SIGTERM, _on_stop)
    if ARGS.answers:
        with open(ARGS.answers, encoding="utf-8") as fh:
            ANSWERS = {k: v for k, v in json.load(fh).items() if not k.startswith("_")}
    server = ThreadingHTTPServer(("127.0.0.1", ARGS.port), Handler)
    server.daemon_threads = True
    # what the scheduler or backend gave the "engine" (the Slurm tests read it from the log)
    print(f"stub: CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', '(unset)')}", flush=True)
    print(f"stub: serving {ARGS.model} on 127.0.0.1:{ARGS.port}", flush=True)
    if os.environ.get("SLURMD_NODENAME"):  # where Slurm placed this process (multi-node tests)
        print(f"stub: slurm node {os.environ['SLURMD_NODENAME']} job {os.environ.get('SLURM_JOB_ID')} "
              f"step {os.environ.get('SLURM_STEP_ID')}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
