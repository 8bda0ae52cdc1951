#!/usr/bin/env python3
"""How fast deskd acknowledges triggers without losing durability; run by
bench/acknowledged_trigger (see bench/README.md).

Starts a real `deskd serve` on a temporary config with one script-model desk and measures,
through its real control socket:

  a) --sends `send`s at once: --connections clients each pipeline their share, all written
     before any reply is read; from the first byte written to the last acknowledgement
     read, in acknowledgements per second. Then kill -9, and every acknowledged trigger
     must be a TRIGGER_ACCEPTED line of the journal (the benchmark fails otherwise).
  b) `deskctl ask one /status` beside `deskctl desks` (a request that touches no journal)
     and `deskctl --help` (process start alone), interleaved, --runs each: median and p90.

Prints key=value lines, then a summary for people on lines starting with '#'. Exits 1 when a
goal is missed: at least 5,000 acknowledgements per second, and every one journaled.
"""

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from control_socket import call, connect


LONG_TURN = ('{"steps": [{"text": "waiting", "tool_calls": [{"name": "bash", "input": {"command": "sleep 600"}}]},'
             ' {"text": "done waiting"}]}\n')


def start_deskd(binary, folder, turns, busy):
    socket_path = os.path.join(folder, "state", "deskd.sock")
    desk = os.path.join(folder, "desks", "one")
    os.makedirs(desk)
    with open(os.path.join(desk, "README.md"), "w") as readme:
        readme.write("A desk for the acknowledged-trigger benchmark.\n")
    with open(os.path.join(folder, "one.jsonl"), "w") as script:
        if busy:
            script.write(LONG_TURN)
        script.write('{"text": "noted"}\n' * turns)
    with open(os.path.join(folder, "deskd.toml"), "w") as config:
        config.write('[runner]\nstate_folder = "state"\nsocket = "state/deskd.sock"\n'
                     'shutdown_grace_seconds = 1\nlog_level = "warn"\n'
                     '[sandbox]\ndisk_quota_mb = "none"\n'
                     '[[desk]]\nname = "one"\ndirectory = "desks/one"\n'
                     '[desk.model]\nscript = "one.jsonl"\n')
    log = open(os.path.join(folder, "deskd.log"), "w")
    process = subprocess.Popen([binary, "serve", "--config", os.path.join(folder, "deskd.toml")],
                               stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError("deskd exited: " + open(log.name).read())
        try:
            with connect(socket_path) as client:
                reader = client.makefile("r")
                desks = call(client, reader, {"id": 1, "op": "desks"})
                if desks["ok"] and desks["desks"][0]["state"] == "idle":
                    return process, socket_path
        except (OSError, RuntimeError, KeyError, IndexError):
            pass
        time.sleep(0.05)
    process.kill()
    raise RuntimeError("deskd did not answer within 30 s")


def concurrent_sends(socket_path, sends, connections):
    clients = [connect(socket_path) for _ in range(connections)]
    shares = [sends // connections + (1 if index < sends % connections else 0) for index in range(connections)]
    payloads = []
    for index, share in enumerate(shares):
        payloads.append("".join(json.dumps({"id": n, "op": "send", "desk": "one", "text": f"message {index}.{n}"}) + "\n"
                                for n in range(share)).encode())
    acknowledged = []
    began = time.monotonic()
    for client, payload in zip(clients, payloads):
        client.sendall(payload)
    for client, share in zip(clients, shares):
        reader = client.makefile("r")
        for _ in range(share):
            reply = json.loads(reader.readline())
            if not reply.get("ok"):
                raise RuntimeError("a send was refused: " + json.dumps(reply))
            acknowledged.append(reply["trigger"])
    took = time.monotonic() - began
    for client in clients:
        client.close()
    return acknowledged, took


def journaled_triggers(path):
    found = set()
    with open(path) as journal:
        for line in journal:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("kind") == "TRIGGER_ACCEPTED":
                found.add(event["data"]["id"])
    return found


def timed(command, environment):
    began = time.monotonic()
    finished = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              env=environment)
    took = time.monotonic() - began
    if finished.returncode != 0:
        raise RuntimeError(" ".join(command) + " failed: " + finished.stderr.decode(errors="replace"))
    return took


def percentile(samples, fraction):
    ordered = sorted(samples)
    return ordered[max(0, min(len(ordered) - 1, int(round(fraction * len(ordered) + 0.5)) - 1))]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deskd", required=True)
    parser.add_argument("--deskctl", required=True)
    parser.add_argument("--sends", type=int, default=1000)
    parser.add_argument("--connections", type=int, default=100)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--busy", action="store_true",
                        help="send while the desk's first turn runs a long command, so that every send waits as "
                             "steering: the acknowledgement path alone, without 1,000 turns running beside it")
    options = parser.parse_args()

    folder = tempfile.mkdtemp(prefix="deskd-ack-bench-", dir="/var/tmp")
    failed = False
    try:
        process, socket_path = start_deskd(options.deskd, folder, options.sends + 2 * options.runs + 10, options.busy)
        environment = dict(os.environ, DESKD_SOCKET=socket_path)
        commands = {
            "ask_status": [options.deskctl, "ask", "one", "/status"],
            "desks": [options.deskctl, "desks"],
            "process_start": [options.deskctl, "--help"],
        }
        samples = {name: [] for name in commands}
        if options.busy:
            with connect(socket_path) as client:
                call(client, client.makefile("r"), {"id": 1, "op": "send", "desk": "one", "text": "start the long turn"})
            time.sleep(1)
        for name, command in commands.items():
            timed(command, environment)  # warm-up
        for _ in range(options.runs):
            for name, command in commands.items():
                samples[name].append(timed(command, environment))

        acknowledged, took = concurrent_sends(socket_path, options.sends, options.connections)
        process.send_signal(signal.SIGKILL)
        process.wait()
        journaled = journaled_triggers(os.path.join(folder, "state", "desks", "one", "journal.jsonl"))
        lost = [trigger for trigger in acknowledged if trigger not in journaled]
        rate = len(acknowledged) / took

        print(f"deskd_desk_busy={'yes' if options.busy else 'no'}")
        print(f"deskd_sends={len(acknowledged)}")
        print(f"deskd_send_connections={options.connections}")
        print(f"deskd_sends_seconds={took:.4f}")
        print(f"deskd_acknowledged_per_second={rate:.0f}")
        print(f"deskd_acknowledged_not_journaled={len(lost)}")
        for name in commands:
            print(f"deskctl_{name}_median_ms={statistics.median(samples[name]) * 1e3:.2f}")
            print(f"deskctl_{name}_p90_ms={percentile(samples[name], 0.9) * 1e3:.2f}")
        ask = statistics.median(samples["ask_status"])
        desks = statistics.median(samples["desks"])
        start = statistics.median(samples["process_start"])
        print(f"# {len(acknowledged)} sends on {options.connections} connections: {took * 1e3:.1f} ms, "
              f"{rate:.0f} acknowledgements/s (goal >= 5000), {len(lost)} acknowledged but not journaled after kill -9")
        print(f"# median of {options.runs}: ask /status {ask * 1e3:.2f} ms, desks {desks * 1e3:.2f} ms, "
              f"deskctl --help {start * 1e3:.2f} ms; ask/desks {ask / desks:.2f}, ask/process start {ask / start:.2f}")
        failed = rate < 5000 or bool(lost)
    finally:
        if options.keep:
            print(f"# kept {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
