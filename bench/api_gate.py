#!/usr/bin/env python3
"""The API gate's cost: a gated HTTPS request against the same request sent direct.

One `deskd serve` with a desk "bench" naming the [[api]] "kite", served by the fake broker
(tests/e2e/fake_broker.py, without its request log: no fsync per request) on loopback. The
same curl, with the same measuring script, times requests to the same server two ways:

  gated   from inside the desk, with no options: curl -> the desk's proxy variables ->
          deskd's proxy -> the API gate (TLS ended with the desk's CA, rules, ledger line,
          key added) -> a kept-alive TLS connection to the broker;
  direct  from the host: curl, given the key -> the broker (TLS, trusting what the desk
          trusts: the system bundle with the broker's CA added).

(a) kept alive: one curl with N URLs reuses one connection; the time of each transfer after
    the first few (%{time_total}); median gated / median direct.
(b) new connection: K curls of one URL each; a new connection's first request (DNS or
    CONNECT, TCP, TLS and the request); median gated - median direct, in ms.

Five runs (interleaved direct, gated), the load average before and after. Goals: (a) at
most 1.3, (b) at most 2 ms added. See bench/README.md.
"""

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BROKER = os.path.join(ROOT, "tests", "e2e", "fake_broker.py")
KEY = "benchkey:benchtoken"
WARM_UP = 5
SYSTEM_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"

MEASURE = r"""#!/bin/bash
# measure.sh OUTPUT KEPT FRESH URL [CURL OPTIONS...]: kept-alive transfers, then new connections.
output=$1 kept=$2 fresh=$3 url=$4
shift 4
urls=()
for _ in $(seq "$kept"); do urls+=("$url"); done
{
  curl -sS "$@" -w '\nkept %{time_total} %{num_connects} %{http_code}\n' "${urls[@]}" | grep '^kept '
  for _ in $(seq "$fresh"); do
    curl -sS "$@" -o /dev/null -w 'fresh %{time_total} %{num_connects} %{http_code}\n' "$url"
  done
} > "$output.part" 2>&1
mv "$output.part" "$output"
"""


def certificates(folder):
    def openssl(*arguments):
        subprocess.run(["openssl", *arguments], cwd=folder, check=True, stderr=subprocess.DEVNULL)

    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
            "-subj", "/CN=deskd api_gate bench CA", "-keyout", "ca.key", "-out", "ca.pem")
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj", "/CN=broker.test",
            "-keyout", "server.key", "-out", "server.csr")
    with open(os.path.join(folder, "san.ext"), "w") as extension:
        extension.write("subjectAltName=DNS:broker.test\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days", "2",
            "-extfile", "san.ext", "-out", "server.pem")
    os.chmod(os.path.join(folder, "ca.pem"), 0o644)


def config(folder, port, runs):
    desk = os.path.join(folder, "desks", "bench")
    os.makedirs(os.path.join(desk, "scratch"))
    for path in (os.path.join(folder, "desks"), desk, os.path.join(desk, "scratch")):
        os.chmod(path, 0o777 if path.endswith("scratch") else 0o755)
    with open(os.path.join(desk, "measure.sh"), "w") as script:
        script.write(MEASURE)
    os.chmod(os.path.join(desk, "measure.sh"), 0o755)
    with open(os.path.join(folder, "kite.key"), "w") as key:
        key.write(KEY + "\n")
    os.chmod(os.path.join(folder, "kite.key"), 0o600)
    # One turn a run (and one warm-up): the desk runs measure.sh, whose arguments come from
    # a file the driver writes before each turn.
    turn = ('{"steps": [{"tool_calls": [{"name": "bash", "input": {"command": "bash measure.sh $(cat next.txt)"}}]},'
            ' {"text": "measured"}]}\n')
    with open(os.path.join(folder, "bench.jsonl"), "w") as script:
        script.write(turn * (runs + 1))
    with open(os.path.join(folder, "deskd.toml"), "w") as toml:
        toml.write(f"""[runner]
state_folder = "state"
socket = "state/deskd.sock"

[sandbox]
disk_quota_mb = "none"

[[api]]
name = "kite"
origins = ["https://broker.test:{port}"]
addresses = ["127.0.0.1"]
ca_file = "{folder}/ca.pem"

  [[api.credential]]
  variable = "KITE_API_KEY"
  key_file = "kite.key"
  header = "Authorization"
  template = "token {{key}}"

  [[api.rule]]
  name = "quotes"
  methods = ["GET"]
  path = "/quote"
  action = "allow"

[[desk]]
name = "bench"
directory = "desks/bench"
apis = ["kite"]

[desk.model]
script = "bench.jsonl"

[desk.sandbox]
network = "allowlist"
""")


def load_average():
    with open("/proc/loadavg") as loadavg:
        return " ".join(loadavg.read().split()[:3])


def read_samples(path, kind):
    samples = []
    with open(path) as measured:
        for line in measured:
            fields = line.split()
            if len(fields) == 4 and fields[0] == kind:
                if fields[3] != "200":
                    sys.exit(f"api_gate: a {kind} request got HTTP {fields[3]}: {path}")
                samples.append((float(fields[1]), int(fields[2])))
    return samples


def summarise(path, kept, fresh):
    kept_samples = read_samples(path, "kept")
    fresh_samples = read_samples(path, "fresh")
    if len(kept_samples) != kept or len(fresh_samples) != fresh:
        sys.exit(f"api_gate: {path} has {len(kept_samples)} kept and {len(fresh_samples)} fresh samples")
    if any(connects for _, connects in kept_samples[1:]):
        sys.exit(f"api_gate: curl opened a new connection during the kept-alive transfers: {path}")
    reused = [seconds for seconds, _ in kept_samples[WARM_UP:]]
    return statistics.median(reused), statistics.median(seconds for seconds, _ in fresh_samples)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deskd", required=True)
    parser.add_argument("--deskctl", required=True)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--requests", type=int, default=200, help="kept-alive transfers a run (default 200)")
    parser.add_argument("--connections", type=int, default=50, help="new connections a run (default 50)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    arguments = parser.parse_args()

    # A SIGTERM (timeout(1), a CI's stop) still stops deskd and the broker.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    folder = tempfile.mkdtemp(prefix="deskd-api-gate-bench-", dir="/var/tmp")
    os.chmod(folder, 0o755)
    broker = deskd = None
    try:
        certificates(folder)
        broker = subprocess.Popen(["python3", BROKER, "--port", "0", "--cert", f"{folder}/server.pem", "--key",
                                   f"{folder}/server.key", "--expect-authorization", "token " + KEY],
                                  stdout=subprocess.PIPE, text=True)
        port = int(broker.stdout.readline())
        config(folder, port, arguments.runs)
        deskd_log = open(os.path.join(folder, "deskd.log"), "w")
        deskd = subprocess.Popen([arguments.deskd, "serve", "--config", f"{folder}/deskd.toml"],
                                 stdout=deskd_log, stderr=subprocess.STDOUT)
        socket_path = f"{folder}/state/deskd.sock"
        desk = os.path.join(folder, "desks", "bench")
        url = f"https://broker.test:{port}/quote?i=NSE:INFY"
        # The same trust as the desk's: the system bundle with the CA added (curl parses the
        # whole bundle on each new connection's handshake, ~30 ms for Debian's 140 CAs).
        with open(f"{folder}/bundle.pem", "w") as bundle:
            if os.path.exists(SYSTEM_BUNDLE):
                with open(SYSTEM_BUNDLE) as system:
                    bundle.write(system.read() + "\n")
            with open(f"{folder}/ca.pem") as authority:
                bundle.write(authority.read())
        direct_options = ["--cacert", f"{folder}/bundle.pem", "--resolve", f"broker.test:{port}:127.0.0.1",
                          "--noproxy", "*", "-H", "Authorization: token " + KEY]

        def gated(name):
            with open(os.path.join(desk, "next.txt"), "w") as next_run:
                next_run.write(f"scratch/{name} {arguments.requests} {arguments.connections} {url}\n")
            result = os.path.join(desk, "scratch", name)
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                asked = subprocess.run([arguments.deskctl, "--socket", socket_path, "ask", "bench", "go"],
                                       capture_output=True, text=True)
                if asked.returncode == 0:
                    break
                if deskd.poll() is not None:
                    sys.exit(f"api_gate: deskd exited ({deskd.returncode}); see {folder}/deskd.log")
                time.sleep(0.2)  # deskd still starting
            while not os.path.exists(result):
                if time.monotonic() > deadline or deskd.poll() is not None:
                    sys.exit(f"api_gate: the desk's measurement did not finish; see {folder}/deskd.log")
                time.sleep(0.1)
            return result

        def direct(name):
            result = os.path.join(folder, name)
            subprocess.run(["bash", os.path.join(desk, "measure.sh"), result, str(arguments.requests),
                            str(arguments.connections), url, *direct_options], check=True)
            return result

        load_before = load_average()
        direct("warm-direct")
        gated("warm-gated")
        ratios, added = [], []
        for run in range(1, arguments.runs + 1):
            direct_kept, direct_fresh = summarise(direct(f"direct-{run}"), arguments.requests, arguments.connections)
            gated_kept, gated_fresh = summarise(gated(f"gated-{run}"), arguments.requests, arguments.connections)
            ratios.append(gated_kept / direct_kept)
            added.append((gated_fresh - direct_fresh) * 1000)
            print(f"run {run}: kept alive {gated_kept * 1e6:7.0f} / {direct_kept * 1e6:7.0f} us = {ratios[-1]:.2f}x"
                  f"   new connection {gated_fresh * 1e3:6.2f} / {direct_fresh * 1e3:6.2f} ms = {added[-1]:+.2f} ms",
                  flush=True)
        print(f"kept-alive gated/direct: median {statistics.median(ratios):.2f}x over {arguments.runs} runs "
              f"(goal: at most 1.3)")
        print(f"new connection's first request: median {statistics.median(added):+.2f} ms gated "
              f"(goal: at most 2 ms)")
        print(f"load average before: {load_before}   after: {load_average()}")
        return 0
    finally:
        for process in (deskd, broker):
            if process is not None and process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
        if arguments.keep:
            print(f"kept {folder}", file=sys.stderr)
        else:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
