#!/usr/bin/env python3
"""A warm `true` through `deskd shell --json`, driven from Python, beside the seed's session
in the same process (bench/python_seed_session.py); see bench/README.md.

One Python process drives both, in interleaved rounds: a `deskd shell --json` on a temporary
desk under /var/tmp, one request line {"tool": "bash", "input": {"command": "true"}} written
and its reply line read per sample (from just before the write to just after the read), and
the seed's BashSession: `await session.run("true")`. Prints key=value lines and a summary on
lines starting with '#'. Goal: deskd shell --json / the seed in process <= 0.8 at the median (issue 34).
"""

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from python_seed_session import SeedBashSession  # noqa: E402


def shell_round_trips(shell, runs):
    request = (json.dumps({"tool": "bash", "input": {"command": "true"}}) + "\n").encode()
    samples = []
    for _ in range(runs):
        start = time.perf_counter_ns()
        shell.stdin.write(request)
        shell.stdin.flush()
        line = shell.stdout.readline()
        end = time.perf_counter_ns()
        reply = json.loads(line)
        if reply.get("is_error") or reply.get("exit_status") != 0:
            raise RuntimeError("deskd shell --json: " + line.decode(errors="replace"))
        samples.append((end - start) / 1000)
    return samples


async def seed_round_trips(session, runs):
    samples = []
    for _ in range(runs):
        start = time.perf_counter_ns()
        outcome = await session.run("true")
        end = time.perf_counter_ns()
        if outcome.exit_status != 0:
            raise RuntimeError(f"the seed's run(\"true\") failed: {outcome!r}")
        samples.append((end - start) / 1000)
    return samples


def load_average():
    """The 1, 5 and 15 minute load averages, as /proc/loadavg gives them."""
    with open("/proc/loadavg") as loadavg:
        return " ".join(loadavg.read().split()[:3])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deskd", required=True)
    parser.add_argument("-n", "--runs", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=20)
    options = parser.parse_args()
    load_before = load_average()

    folder = tempfile.mkdtemp(prefix="deskd-shell-bench-", dir="/var/tmp")
    os.chmod(folder, 0o755)
    desk = os.path.join(folder, "desk")
    os.makedirs(desk)
    shell = subprocess.Popen([options.deskd, "shell", "--desk", desk, "--json"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    session = SeedBashSession(120, 20000)
    loop = asyncio.new_event_loop()
    deskd_samples, seed_samples = [], []
    try:
        shell_round_trips(shell, options.warmup)
        loop.run_until_complete(seed_round_trips(session, options.warmup))
        per_round = max(1, options.runs // options.rounds)
        for _ in range(options.rounds):
            deskd_samples += shell_round_trips(shell, per_round)
            seed_samples += loop.run_until_complete(seed_round_trips(session, per_round))
    finally:
        shell.stdin.close()
        shell.wait(30)
        loop.run_until_complete(session.close()) if hasattr(session, "close") else None
        loop.close()
        shutil.rmtree(folder, ignore_errors=True)
    deskd_median = statistics.median(deskd_samples)
    seed_median = statistics.median(seed_samples)
    print(f"deskd_shell_json_median_us={deskd_median:.1f}")
    print(f"python_seed_median_us={seed_median:.1f}")
    print(f"ratio={deskd_median / seed_median:.2f}")
    print(f"load_average_before={load_before}")
    print(f"load_average_after={load_average()}")
    print(f"# warm true: deskd shell --json (driven from Python) {deskd_median:.1f} us, the seed in process "
          f"{seed_median:.1f} us (medians of {len(deskd_samples)}): ratio {deskd_median / seed_median:.2f} "
          f"(goal <= 0.8)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
