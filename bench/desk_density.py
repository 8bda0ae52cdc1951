#!/usr/bin/env python3
"""How many desks one deskd holds, and what each costs; run by bench/desk_density (see bench/README.md).

For each desk count of --desks (and --runs times each), writes a config with that many desks
on the script model (each desk a folder of its own under one temporary folder in /var/tmp;
`disk_quota_mb = "none"`, so no ext4 image and no loop mounts per desk), starts `deskd serve`
on it (as the user running this: root gives every desk its own uid and cgroup) and measures:

  - the socket file: from deskd's start until the control socket exists;
  - the first answer: from the socket's appearance until a `desks` request sent then is
    answered (today's deskd answers only once every desk has started);
  - all ready: from deskd's start until `desks` shows every desk idle;
  - deskd's RSS per idle desk: (VmRSS with N idle desks - VmRSS of a 1-desk base run) / (N - 1),
    read --settle-seconds after all were ready, and again after every desk ran its command;
  - all bash answered: every desk is sent one message at once (one connection, pipelined);
    its script's turn runs one bash command in the desk's sandbox; from the first send
    until the last TURN_FINISHED / TURN_FAILED seen on a follow of every desk;
  - an idle desk's host memory (issue 34): the USS, PSS, RSS and page tables of every
    process under deskd (each desk's inits, bash and file opener) once the turns are over,
    what the desks' memory cgroups are charged less file cache, and deskd's RSS per desk;
    with --idle-minutes, what is left once each desk's terminal was idle that long.

Prints key=value lines for every run, then one table (medians over the runs) with the goals
beside it. Exits 1 when something went wrong (a desk did not start, a turn failed, a bash did
not exit 0, deskd did not stop cleanly); a goal not met is reported in the table, not as a
failure, since the goals are what the work on issue 27 aims at.
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
import threading
import time

from control_socket import call, connect

# The script every desk plays: one bash command, then a closing text.
# read_file starts the desk's file opener, so an idle desk holds all it keeps: init, bash, opener.
TURN = {"steps": [{"text": "running", "tool_calls": [{"name": "bash", "input": {"command": 'echo "ran in $PWD"'}},
                                                     {"name": "read_file", "input": {"path": "README.md"}}]},
                  {"text": "done"}]}
TURN_ENDS = ("TURN_FINISHED", "TURN_FAILED", "TURN_STOPPED")

GOALS = {  # metric: (goal text, test of the measured value) — issue 27's closing note
    "first_answer_ms": ("<= 100 ms", lambda value: value <= 100),
    "ready_s": ("<= 10 s at 1,000", None),  # checked at 1,000 desks only, below
    "deskd_kb_per_desk": ("<= 150 KB", lambda value: value <= 150),
    # Issue 34: an idle desk's host memory; a Firecracker microVM's own overhead is about 5 MiB.
    "idle_desk_kb": ("<= 4096 KB", lambda value: value <= 4096),
}


def per_desk(result, count):
    """The sums over all desks, divided by the desks; and the idle desk's host memory: what its
    cgroup is charged less file cache (its processes' private pages and the kernel's memory for
    them: page tables, stacks, namespaces, mounts, pipes) when it has a cgroup, else the USS of
    its processes (the pages only they map: what closing them frees; PSS would add a share of
    bash's and libc's pages, which the host holds once however many desks run) plus their page
    tables; the larger of the two when both are known; plus deskd's own RSS per desk once the
    desks ran their turns."""
    for key in ("sandbox_rss_kb", "sandbox_pss_kb", "sandbox_uss_kb", "sandbox_page_tables_kb", "cgroup_usage_kb",
                "cgroup_file_cache_kb", "cgroup_kernel_kb", "closed_sandbox_uss_kb"):
        if key in result:
            result[key.replace("_kb", "_kb_per_desk")] = result[key] / count
    if "cgroup_usage_kb" in result:
        result["cgroup_charge_kb_per_desk"] = (result["cgroup_usage_kb"] - result["cgroup_file_cache_kb"]) / count
    if "sandbox_uss_kb" in result and "deskd_kb_per_desk_after_bash" in result:
        own = (result["sandbox_uss_kb"] + result["sandbox_page_tables_kb"]) / count
        own = max(own, result.get("cgroup_charge_kb_per_desk", 0))
        result["idle_desk_kb"] = own + result["deskd_kb_per_desk_after_bash"]



def desk_name(index):
    return f"d{index:04d}"


def status_kb(pid, name):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(name + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {name} in /proc/{pid}/status")


def load_average():
    with open("/proc/loadavg") as loadavg:
        return float(loadavg.read().split()[0])


def descendants(root_pid):
    """Every process below root_pid, from /proc/*/stat's parent pids."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                text = stat.read()
        except OSError:
            continue
        # The command name is in parentheses and may hold spaces: the fields follow the last ')'.
        fields = text[text.rindex(")") + 2:].split()
        children.setdefault(int(fields[1]), []).append(int(entry))
    found, waiting = [], [root_pid]
    while waiting:
        for child in children.get(waiting.pop(), []):
            found.append(child)
            waiting.append(child)
    return found


def process_memory_kb(pid):
    """One process's memory in KB from /proc/PID/smaps_rollup and status, or None when it
    cannot be read (gone, or not ours): rss, pss, uss (Private_Clean + Private_Dirty: the
    pages only it maps, which its end would free) and page_tables (VmPTE)."""
    found = {}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            for line in rollup:
                key, _, rest = line.partition(":")
                if key in ("Rss", "Pss", "Private_Clean", "Private_Dirty"):
                    found[key] = int(rest.split()[0])
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmPTE:"):
                    found["VmPTE"] = int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    if "Pss" not in found:
        return None
    return {"rss": found.get("Rss", 0), "pss": found["Pss"],
            "uss": found.get("Private_Clean", 0) + found.get("Private_Dirty", 0), "page_tables": found.get("VmPTE", 0)}


def memory_cgroup(pid):
    """The folder of the memory cgroup `pid` is in (v1's memory hierarchy, else v2's), or None."""
    try:
        with open(f"/proc/{pid}/cgroup") as groups:
            lines = [line.rstrip("\n").split(":", 2) for line in groups]
    except OSError:
        return None
    for number, controllers, path in lines:
        if "memory" in controllers.split(","):
            return "/sys/fs/cgroup/memory" + path
    for number, controllers, path in lines:
        if number == "0" and controllers == "" and os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
            return "/sys/fs/cgroup" + path
    return None


def cgroup_charge_kb(folder):
    """What the kernel charges a memory cgroup (its subtree), in KB: the whole charge, the
    file-backed page cache in it (which the kernel reclaims under pressure, and which is
    charged to whoever read a file first, so the desk's share of bash's binary may sit in
    another cgroup), and kernel memory where the kernel says (v2's `kernel`; v1's
    memory.kmem.usage_in_bytes while that file exists). None when it cannot be read."""
    def number(name):
        try:
            with open(os.path.join(folder, name)) as value:
                return int(value.read().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    stats = {}
    try:
        with open(os.path.join(folder, "memory.stat")) as stat:
            for line in stat:
                key, _, value = line.partition(" ")
                stats[key] = int(value)
    except (OSError, ValueError):
        return None
    if os.path.exists(os.path.join(folder, "memory.current")):  # v2: file includes shmem
        usage, cache = number("memory.current"), stats.get("file", 0) - stats.get("shmem", 0)
        kernel = stats.get("kernel")
    else:  # v1: the total_ values are the subtree's; cache includes shmem
        usage = number("memory.usage_in_bytes")
        cache = stats.get("total_cache", stats.get("cache", 0)) - stats.get("total_shmem", stats.get("shmem", 0))
        kernel = number("memory.kmem.usage_in_bytes")
    if usage is None:
        return None
    return {"usage": usage // 1024, "file_cache": cache // 1024, "kernel": None if kernel is None else kernel // 1024}


def command_name(pid):
    try:
        with open(f"/proc/{pid}/comm") as comm:
            return comm.read().strip()
    except OSError:
        return "?"


def idle_desks_memory(deskd_pid):
    """The memory of every process under deskd (each desk's inits, bashes and file openers)
    and of the memory cgroups they are in, summed over all desks."""
    below = descendants(deskd_pid)
    readings = [(pid, process_memory_kb(pid)) for pid in below]
    found = {"sandbox_processes": len(below), "sandbox_unreadable": sum(1 for _, memory in readings if memory is None)}
    for measure in ("rss", "pss", "uss", "page_tables"):
        found[f"sandbox_{measure}_kb"] = sum(memory[measure] for _, memory in readings if memory is not None)
    names = {}
    for pid, _ in readings:
        names[command_name(pid)] = names.get(command_name(pid), 0) + 1
    found["sandbox_commands"] = ",".join(f"{name}:{count}" for name, count in sorted(names.items()))
    # Each sandbox has a cgroup of its own inside its desk's (deskd's layout: .../desk-ID/
    # sandbox-ID): the desk's folder holds them all. A process caught while it ends may show
    # another folder; it is left out rather than charging the desk with its parents' whole tree.
    folders = [memory_cgroup(pid) for pid in below]
    desk_folders = {os.path.dirname(folder) for folder in folders
                    if folder is not None and os.path.basename(folder).startswith("sandbox-")
                    and os.path.basename(os.path.dirname(folder)).startswith("desk-")}
    charges = [charge for charge in (cgroup_charge_kb(folder) for folder in desk_folders) if charge is not None]
    if charges:
        found["cgroups"] = len(charges)
        found["cgroup_usage_kb"] = sum(charge["usage"] for charge in charges)
        found["cgroup_file_cache_kb"] = sum(charge["file_cache"] for charge in charges)
        if all(charge["kernel"] is not None for charge in charges):
            found["cgroup_kernel_kb"] = sum(charge["kernel"] for charge in charges)
    return found


def write_config(folder, desks, idle_minutes):
    os.makedirs(os.path.join(folder, "desks"))
    with open(os.path.join(folder, "turn.jsonl"), "w") as script:
        script.write(json.dumps(TURN) + "\n")
    lines = ['[runner]', 'state_folder = "state"', 'socket = "state/deskd.sock"', 'shutdown_grace_seconds = 1',
             'log_level = "warn"',
             # No quota image per desk: what is measured is deskd and the sandboxes, not ext4.
             '[sandbox]', 'disk_quota_mb = "none"']
    for index in range(desks):
        name = desk_name(index)
        directory = os.path.join(folder, "desks", name)
        os.makedirs(directory)
        os.chmod(directory, 0o755)
        with open(os.path.join(directory, "README.md"), "w") as readme:
            readme.write("A desk of the density benchmark.\n")
        lines += ['[[desk]]', f'name = "{name}"', f'directory = "desks/{name}"']
        if idle_minutes is not None:
            lines.append(f"idle_terminal_minutes = {idle_minutes}")
        lines += ['[desk.model]', 'script = "turn.jsonl"']
    with open(os.path.join(folder, "deskd.toml"), "w") as config:
        config.write("\n".join(lines) + "\n")


class Follower(threading.Thread):
    """A follow of every desk: the end of each desk's turn, and what its bash call did."""

    def __init__(self, socket_path):
        super().__init__(daemon=True)
        self.client = connect(socket_path)
        self.reader = self.client.makefile("r")
        reply = call(self.client, self.reader, {"id": "follow", "op": "follow"})
        if not reply.get("ok"):
            raise RuntimeError("the follow was refused: " + json.dumps(reply))
        self.lock = threading.Lock()
        self.ended = {}      # desk: (kind, error, time)
        self.bash = {}       # desk: (exit status, is_error, text)
        self.all_ended = threading.Event()
        self.expected = None

    def run(self):
        for line in self.reader:
            try:
                event = json.loads(line).get("event")
            except ValueError:
                continue
            if not isinstance(event, dict):
                continue
            kind, desk, data = event.get("kind"), event.get("desk"), event.get("data") or {}
            with self.lock:
                if kind == "TOOL_FINISHED" and data.get("tool") == "bash":
                    self.bash[desk] = (data.get("exit_status"), data.get("is_error"), data.get("text", ""))
                elif kind in TURN_ENDS and desk not in self.ended:
                    self.ended[desk] = (kind, data.get("error", ""), time.monotonic())
                    if self.expected is not None and len(self.ended) >= self.expected:
                        self.all_ended.set()

    def close(self):
        self.client.close()


def wait_for_socket(process, path, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if os.path.exists(path):
            return time.monotonic()
        if process.poll() is not None:
            raise RuntimeError(f"deskd exited with status {process.returncode} before its socket appeared")
        time.sleep(0.001)
    raise RuntimeError(f"no socket after {timeout} s")


def first_answer(process, path, timeout):
    """The time a `desks` request, sent as soon as the socket takes connections, is answered."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"deskd exited with status {process.returncode}")
        try:
            with connect(path) as client:
                client.settimeout(max(0.1, deadline - time.monotonic()))
                reply = call(client, client.makefile("r"), {"id": 1, "op": "desks"})
                return time.monotonic(), reply
        except (OSError, RuntimeError):
            time.sleep(0.001)  # not listening yet, or it closed the connection
    raise RuntimeError(f"the socket did not answer within {timeout} s")


def wait_all_ready(process, path, desks, reply, timeout):
    """The time `desks` first shows every desk idle; refuses a desk that stopped with an error."""
    deadline = time.monotonic() + timeout
    while True:
        states = {desk["name"]: desk for desk in reply.get("desks", [])}
        failed = [name for name, desk in states.items() if desk.get("state") == "stopped"]
        if failed:
            raise RuntimeError(f"{len(failed)} desks did not start, {failed[0]}: {states[failed[0]].get('error')}")
        if len(states) == desks and all(desk.get("state") == "idle" for desk in states.values()):
            return time.monotonic()
        if time.monotonic() > deadline:
            starting = sum(1 for desk in states.values() if desk.get("state") != "idle")
            raise RuntimeError(f"{starting} of {desks} desks still not idle after {timeout} s")
        if process.poll() is not None:
            raise RuntimeError(f"deskd exited with status {process.returncode}")
        time.sleep(0.02)
        with connect(path) as client:
            reply = call(client, client.makefile("r"), {"id": 2, "op": "desks"})


def one_run(binary, desks, settle_seconds, timeout, keep, idle_minutes=None):
    folder = tempfile.mkdtemp(prefix=f"deskd-density-{desks}-", dir="/var/tmp")
    os.chmod(folder, 0o755)  # under a root deskd each desk's uid must enter its folder
    result = {"desks": desks, "load_start": load_average()}
    process = None
    try:
        write_config(folder, desks, idle_minutes)
        idle_seconds = (idle_minutes or 0) * 60
        socket_path = os.path.join(folder, "state", "deskd.sock")
        log = open(os.path.join(folder, "deskd.log"), "w")
        began = time.monotonic()
        process = subprocess.Popen([binary, "serve", "--config", os.path.join(folder, "deskd.toml")],
                                   stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        # Each figure is kept as soon as it is known: a run that fails later still reports it.
        socket_seen = wait_for_socket(process, socket_path, timeout)
        result["socket_s"] = socket_seen - began
        answered, reply = first_answer(process, socket_path, timeout)
        result["first_answer_ms"] = (answered - socket_seen) * 1e3
        ready = wait_all_ready(process, socket_path, desks, reply, timeout)
        result["ready_s"] = ready - began
        time.sleep(settle_seconds)
        result["deskd_rss_kb"] = status_kb(process.pid, "VmRSS")

        if desks > 1:
            follower = Follower(socket_path)
            follower.expected = desks
            follower.start()
            sender = connect(socket_path)
            reader = sender.makefile("r")
            requests = "".join(json.dumps({"id": index, "op": "send", "desk": desk_name(index), "text": "run it"}) + "\n"
                               for index in range(desks)).encode()
            sent = time.monotonic()
            sender.sendall(requests)
            refused = [reply for reply in (json.loads(reader.readline()) for _ in range(desks)) if not reply.get("ok")]
            if refused:
                raise RuntimeError(f"{len(refused)} sends refused: {json.dumps(refused[0])}")
            if not follower.all_ended.wait(timeout):
                raise RuntimeError(f"only {len(follower.ended)} of {desks} turns ended within {timeout} s")
            with follower.lock:
                last_end = max(end[2] for end in follower.ended.values())
                failed = {desk: end for desk, end in follower.ended.items() if end[0] != "TURN_FINISHED"}
                wrong = [desk for desk in follower.ended
                         if follower.bash.get(desk, (None, True, ""))[0] != 0 or follower.bash[desk][1]
                         or f"/{desk}" not in follower.bash[desk][2]]
            sender.close()
            follower.close()
            result["bash_s"] = last_end - sent
            result["turns_failed"] = len(failed)
            result["bash_wrong"] = len(wrong)
            if failed:
                desk, (kind, error, _) = next(iter(failed.items()))
                result["first_failure"] = f"{desk} {kind}: {error}"
            elif wrong:
                result["first_failure"] = f"{wrong[0]}'s bash: {follower.bash.get(wrong[0])}"

            time.sleep(settle_seconds)
            result["deskd_rss_after_kb"] = status_kb(process.pid, "VmRSS")
            result.update(idle_desks_memory(process.pid))
            if idle_seconds:
                # The terminals and file openers close after idle_terminal_minutes: what is left.
                time.sleep(idle_seconds + settle_seconds)
                after = idle_desks_memory(process.pid)
                result["closed_sandbox_processes"] = after["sandbox_processes"]
                result["closed_sandbox_uss_kb"] = after["sandbox_uss_kb"]
                result["closed_deskd_rss_kb"] = status_kb(process.pid, "VmRSS")

        result["load_end"] = load_average()
        stopping = time.monotonic()
        process.send_signal(signal.SIGTERM)
        try:
            result["exit_status"] = process.wait(120)
        except subprocess.TimeoutExpired:
            process.kill()
            result["exit_status"] = "killed"
        result["stop_s"] = time.monotonic() - stopping
    except Exception as problem:  # noqa: BLE001 — reported as the run's failure
        result["error"] = str(problem)
    finally:
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()
        if keep:
            result["folder"] = folder
        else:
            shutil.rmtree(folder, ignore_errors=True)
    return result


def format_result(result):
    return " ".join(f"{key}={value:.3f}" if isinstance(value, float) else f"{key}={value}" for key, value in result.items())


def median(results, key):
    values = [result[key] for result in results if key in result]
    return statistics.median(values) if values else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--deskd", required=True, help="the deskd binary")
    parser.add_argument("--desks", default="100,300,1000", help="desk counts, comma-separated (default 100,300,1000)")
    parser.add_argument("--runs", type=int, default=5, help="runs of each count (default 5)")
    parser.add_argument("--settle-seconds", type=float, default=2.0, help="wait before reading RSS (default 2)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds each wait may take (default 900)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folders (deskd's log is in them)")
    parser.add_argument("--idle-minutes", type=float, default=None,
                        help="write idle_terminal_minutes into each desk and measure again once it passed "
                             "(default: the key is not written, deskd's default holds)")
    options = parser.parse_args()
    counts = [int(count) for count in options.desks.split(",")]

    print(f"# deskd {options.deskd}, as uid {os.getuid()}{' (root: a uid and a cgroup per desk)' if os.getuid() == 0 else ''}; "
          "desks without a disk quota (disk_quota_mb = \"none\": no ext4 image or loop device per desk)", flush=True)
    bases, runs = [], {count: [] for count in counts}
    failed = False
    for run in range(options.runs):
        base = one_run(options.deskd, 1, options.settle_seconds, options.timeout, options.keep, options.idle_minutes)
        bases.append(base)
        print(f"base_run={run} " + format_result(base), flush=True)
        failed = failed or "error" in base
        for count in counts:
            result = one_run(options.deskd, count, options.settle_seconds, options.timeout, options.keep,
                             options.idle_minutes)
            if "deskd_rss_kb" in result and "deskd_rss_kb" in base:
                result["deskd_kb_per_desk"] = (result["deskd_rss_kb"] - base["deskd_rss_kb"]) / (count - 1)
                if "closed_deskd_rss_kb" in result:
                    result["closed_deskd_kb_per_desk"] = (result["closed_deskd_rss_kb"] - base["deskd_rss_kb"]) / (count - 1)
                if "deskd_rss_after_kb" in result:
                    result["deskd_kb_per_desk_after_bash"] = (result["deskd_rss_after_kb"] - base["deskd_rss_kb"]) / (count - 1)
            per_desk(result, count)
            runs[count].append(result)
            print(f"run={run} " + format_result(result), flush=True)
            failed = failed or "error" in result or result.get("turns_failed", 0) > 0 or result.get("bash_wrong", 0) > 0 \
                or result.get("exit_status") != 0

    rows = [
        ("socket file after deskd's start (s)", "socket_s", "", "{:.2f}"),
        ("first answer after the socket appeared (ms)", "first_answer_ms", "first_answer_ms", "{:.0f}"),
        ("every desk idle after deskd's start (s)", "ready_s", "ready_s", "{:.1f}"),
        ("deskd RSS per idle desk above the base (KB)", "deskd_kb_per_desk", "deskd_kb_per_desk", "{:.0f}"),
        ("  the same once every desk ran its turn (KB)", "deskd_kb_per_desk_after_bash", "", "{:.0f}"),
        ("every desk's bash answered after the sends (s)", "bash_s", "", "{:.2f}"),
        ("idle desk: its cgroup (or USS + page tables) + deskd's (KB)", "idle_desk_kb", "idle_desk_kb", "{:.0f}"),
        ("  its processes' USS per desk (KB)", "sandbox_uss_kb_per_desk", "", "{:.0f}"),
        ("  their PSS per desk (KB)", "sandbox_pss_kb_per_desk", "", "{:.0f}"),
        ("  their RSS per desk (KB)", "sandbox_rss_kb_per_desk", "", "{:.0f}"),
        ("  their page tables per desk (KB)", "sandbox_page_tables_kb_per_desk", "", "{:.0f}"),
        ("  cgroup charge less file cache per desk (KB)", "cgroup_charge_kb_per_desk", "", "{:.0f}"),
        ("    of which kernel memory (KB)", "cgroup_kernel_kb_per_desk", "", "{:.0f}"),
        ("    file cache charged per desk (KB)", "cgroup_file_cache_kb_per_desk", "", "{:.0f}"),
        ("processes under deskd after the turns", "sandbox_processes", "", "{:.0f}"),
        ("  after idle_terminal_minutes", "closed_sandbox_processes", "", "{:.0f}"),
        ("  their USS per desk then (KB)", "closed_sandbox_uss_kb_per_desk", "", "{:.0f}"),
        ("  deskd RSS per desk above the base then (KB)", "closed_deskd_kb_per_desk", "", "{:.0f}"),
        ("turns failed, or bash not exit 0 (sum of runs)", None, "", None),
        ("deskd stop after SIGTERM (s)", "stop_s", "", "{:.2f}"),
        ("load average at the runs' start (1 min)", "load_start", "", "{:.1f}"),
    ]
    base_rss = median(bases, "deskd_rss_kb")
    print(f"# medians of {options.runs} run(s); base: deskd with 1 idle desk, VmRSS {base_rss} KB")
    header = f"# {'':58} {'goal':>18}" + "".join(f" {count:>9}" for count in counts)
    print(header)
    for title, key, goal_key, form in rows:
        goal = GOALS[goal_key][0] if goal_key else ""
        cells = []
        for count in counts:
            if key is None:
                cells.append(str(sum(result.get("turns_failed", 0) + result.get("bash_wrong", 0) for result in runs[count])))
                continue
            value = median(runs[count], key)
            cell = "-" if value is None else form.format(value)
            if value is not None and goal_key:
                check = GOALS[goal_key][1]
                met = value <= 10 if goal_key == "ready_s" and count >= 1000 else (check(value) if check else None)
                if met is not None:
                    cell += "" if met else "!"
            cells.append(cell)
        print(f"# {title:58} {goal:>18}" + "".join(f" {cell:>9}" for cell in cells))
    print("# '!' marks a goal not met. Load average over all runs: "
          f"{min(r['load_start'] for rs in runs.values() for r in rs):.1f} to "
          f"{max(r.get('load_end', r['load_start']) for rs in runs.values() for r in rs):.1f}")
    for count in counts:
        for result in runs[count]:
            if "error" in result or "first_failure" in result:
                print(f"# {count} desks: {result.get('error') or result.get('first_failure')}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
