#!/usr/bin/env python3
"""The seed's BashSession as plain Python asyncio, measured the way bench/bash_session_bench
measures deskd's: the warm `run('true')` round trip and a flood through the default limit of
20,000 characters. See bench/README.md.

The session follows the seed page (../shared/seed/000_da6fcb4129723a33.txt) literally: one
`asyncio.create_subprocess_exec('bash', stdin=PIPE, stdout=PIPE, stderr=STDOUT)`, each
command sent as `{\\n<command>\\n} < /dev/null` and `printf '\\n<marker> %s\\n' "$?"`, and a
`readline` loop until the marker line. It runs plain bash, with no sandbox (the seed's
sandbox wraps the same loop; leaving it out only makes the Python side faster).

Where the seed page does not show the code, and what this file does there:
- stopping: the seed stops its sandbox, which ends every process in it; here bash leads its
  own process group and the whole group is killed (killing bash alone leaves a flood's
  `head` and `tr` holding the pipe, and asyncio's process.wait() then never returns).
- keeping the output: the plain reading of the page is that every line is collected and
  the text cut to maximum_output_characters at the end (its start and its end, a note
  between, as deskd cuts it). A 200 MB flood would then hold 200 MB of text and more in
  memory, so by default the lines are kept the way the cut would keep them - the first
  characters, the latest characters, and a count - as they arrive
  (`output_keeping=head+tail`); --keep-all-output keeps every line (`output_keeping=all`).
- a line longer than the stream's limit (asyncio's default, 64 KiB): `readline` raises
  ValueError, and the literal seed would fail the command. The flood without newlines is
  one 200 MB line, so it is run twice: literally (the error is reported, the session
  restarted) and then with over-long lines taken in 64 KiB pieces instead (`readuntil`,
  and on LimitOverrunError `readexactly` of what was found), which is what is timed.

Prints key=value lines (python_...) on stdout, then a summary for people ('#' lines).
Python 3.11, standard library only.
"""

import argparse
import asyncio
import collections
import dataclasses
import os
import resource
import signal
import sys
import time
import uuid

_MARKER_PREFIX = '__SEED_MARK_'


@dataclasses.dataclass
class CommandOutcome:
    output: str
    exit_status: int | None
    truncated: bool


def _cut(text: str, maximum: int, total: int) -> tuple[str, bool]:
    """The seed's cut, as deskd makes it: the start and the end, one line between them.

    `text` is the whole output when it fits, otherwise its first and last `maximum`
    characters at least; `total` is the whole output's length.
    """
    if total <= maximum:
        return text, False
    room = max(0, maximum - len(f'\n[... {total} characters left out ...]\n'))
    start = room // 2
    end = room - start
    return f'{text[:start]}\n[... {total - start - end} characters left out ...]\n{text[len(text) - end:]}', True


class _AllLines:
    """Every line, as the seed keeps them; cut at the end."""

    def __init__(self, maximum: int):
        self._maximum = maximum
        self._lines: list[str] = []

    def append(self, text: str) -> None:
        self._lines.append(text)

    def outcome(self, status: int | None) -> CommandOutcome:
        text = ''.join(self._lines)
        if text.endswith('\n'):
            text = text[:-1]  # the newline the marker's printf put before itself
        output, truncated = _cut(text, self._maximum, len(text))
        return CommandOutcome(output, status, truncated)


class _HeadAndTail:
    """What the cut can keep, kept as the lines arrive: memory stays bounded."""

    def __init__(self, maximum: int):
        self._maximum = maximum
        self._head: list[str] = []  # the first `maximum` characters
        self._head_length = 0
        self._tail: collections.deque[str] = collections.deque()  # at least the last `maximum` + 1
        self._tail_length = 0
        self._total = 0

    def append(self, text: str) -> None:
        self._total += len(text)
        if self._head_length < self._maximum:
            taken = text[: self._maximum - self._head_length]
            self._head.append(taken)
            self._head_length += len(taken)
            text = text[len(taken):]
            if not text:
                return
        self._tail.append(text)
        self._tail_length += len(text)
        while self._tail_length - len(self._tail[0]) > self._maximum:
            self._tail_length -= len(self._tail.popleft())

    def outcome(self, status: int | None) -> CommandOutcome:
        # When the tail was trimmed it still holds more than `maximum` characters, so the
        # cut's end comes from it alone; otherwise head + tail is the whole output.
        text = ''.join(self._head) + ''.join(self._tail)
        total = self._total
        if text.endswith('\n'):
            text = text[:-1]  # the newline the marker's printf put before itself
            total -= 1
        output, truncated = _cut(text, self._maximum, total)
        return CommandOutcome(output, status, truncated)


class SeedBashSession:
    """A persistent bash, as the seed's BashSession runs it (without its sandbox)."""

    def __init__(self, timeout_seconds: float, maximum_output_characters: int,
                 keep_all_output: bool = False, long_lines_in_pieces: bool = False):
        self.timeout_seconds = timeout_seconds
        self._maximum_output_characters = maximum_output_characters
        self._keep_all_output = keep_all_output
        self._long_lines_in_pieces = long_lines_in_pieces
        self._process = None
        self._lock = asyncio.Lock()

    async def _started_process(self):
        if self._process is None or self._process.returncode is not None:
            self._process = await asyncio.create_subprocess_exec(
                'bash',
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,  # so that _stop can end all of it, as the sandbox does
            )
        return self._process

    async def run(self, command: str) -> CommandOutcome:
        async with self._lock:
            process = await self._started_process()
            marker = f'{_MARKER_PREFIX}{uuid.uuid4().hex}'
            script = '\n'.join(
                [
                    '{',
                    command,
                    '} < /dev/null',
                    f'printf \'\\n{marker} %s\\n\' "$?"',
                    '',
                ]
            )
            process.stdin.write(script.encode('utf-8'))
            await process.stdin.drain()
            try:
                return await asyncio.wait_for(
                    self._read_until(process, marker),
                    timeout=self.timeout_seconds,
                )
            except TimeoutError:
                await self._stop()
                return CommandOutcome(
                    output=f'The command did not finish within {self.timeout_seconds:g} seconds. The terminal was restarted, so the folder and variables are reset; use bash_background for long commands.',
                    exit_status=None,
                    truncated=False,
                )

    async def _readline(self, stream: asyncio.StreamReader) -> bytes:
        if not self._long_lines_in_pieces:
            return await stream.readline()
        try:
            return await stream.readuntil(b'\n')
        except asyncio.IncompleteReadError as error:
            return error.partial
        except asyncio.LimitOverrunError as error:
            return await stream.readexactly(error.consumed)

    async def _read_until(self, process, marker: str) -> CommandOutcome:
        kept = _AllLines(self._maximum_output_characters) if self._keep_all_output else _HeadAndTail(
            self._maximum_output_characters)
        prefix = f'{marker} '
        while True:
            line = await self._readline(process.stdout)
            if not line:
                await process.wait()
                return kept.outcome(None)
            text = line.decode('utf-8', errors='replace')
            if text.startswith(prefix):
                return kept.outcome(int(text[len(prefix):]))
            kept.append(text)

    async def restart(self) -> None:
        async with self._lock:
            await self._stop()

    async def close(self) -> None:
        await self._stop()

    async def _stop(self) -> None:
        # The seed stops its sandbox, which ends every process in it. Killing only bash is
        # not enough: a child still holding the output pipe (the rest of a flood, say) keeps
        # asyncio's process.wait() waiting for the pipe to close, forever.
        # And asyncio's process.wait() also waits for the output pipe to close, which it
        # never sees while reading is paused on a full buffer: read what is left first.
        if self._process is not None:
            try:
                os.killpg(self._process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            while await self._process.stdout.read(2**16):
                pass
            await self._process.wait()
        self._process = None


def _percentiles(samples: list[float]) -> tuple[float, float]:
    """The median, and the 90th percentile by nearest rank, as bench/cold_start computes them."""
    ordered = sorted(samples)
    count = len(ordered)
    median = ordered[count // 2] if count % 2 else (ordered[count // 2 - 1] + ordered[count // 2]) / 2
    rank = max(1, -(-9 * count // 10))
    return median, ordered[rank - 1]


def _status_kb(field: str) -> int:
    with open('/proc/self/status') as status:
        for line in status:
            if line.startswith(field + ':'):
                return int(line.split()[1])
    return -1


def _reset_peak_rss() -> bool:
    try:
        with open('/proc/self/clear_refs', 'w') as clear_refs:
            clear_refs.write('5')
        return True
    except OSError:
        return False


def _maxrss_kb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


async def _round_trips(session: SeedBashSession, warmup: int, runs: int) -> list[float]:
    for _ in range(warmup):
        outcome = await session.run('true')
        if outcome.exit_status != 0:
            raise RuntimeError(f'a warm-up run("true") failed: {outcome!r}')
    samples = []
    for _ in range(runs):
        start = time.perf_counter_ns()
        outcome = await session.run('true')
        end = time.perf_counter_ns()
        if outcome.exit_status != 0 or outcome.output:
            raise RuntimeError(f'run("true") did not give status 0 and no output: {outcome!r}')
        samples.append((end - start) / 1000)
    return samples


def _check_flood(outcome: CommandOutcome, flood_bytes: int, maximum: int, first: str) -> str:
    """Why the outcome is not what the flood printed, or '' when it is."""
    if outcome.exit_status != 0:
        return f'exit status {outcome.exit_status}: {outcome.output[:200]!r}'
    if not outcome.truncated:
        return 'the outcome is not marked truncated'
    if len(outcome.output) > maximum:
        return f'the output has {len(outcome.output)} characters, over the limit'
    marker = outcome.output.find('\n[... ')
    if not outcome.output.startswith(first) or marker < 0:
        return f'the output does not look like the flood: {outcome.output[:120]!r}'
    left_out = int(outcome.output[marker + 6:].split(' ', 1)[0])
    note_end = outcome.output.find('characters left out ...]\n', marker) + 25
    kept = marker + len(outcome.output) - note_end
    if kept + left_out != flood_bytes:
        return f'kept {kept} + left out {left_out} characters is not the {flood_bytes} printed'
    return ''


async def _flood(args, name: str, command: str, first: str, out: dict) -> None:
    prefix = f'python_flood_{name}_'
    out[prefix + 'command'] = command
    out[prefix + 'bytes'] = args.flood_bytes

    if name == 'nonl' and not args.keep_all_output:
        # The literal seed first: readline on a line longer than the stream's limit.
        session = SeedBashSession(args.timeout, args.maximum_characters, args.keep_all_output)
        await session.run('true')
        start = time.perf_counter()
        try:
            outcome = await session.run(command)
            literal = 'ok' if not _check_flood(outcome, args.flood_bytes, args.maximum_characters, first) else 'wrong-output'
        except ValueError as error:
            literal = f'ValueError: {error}'
        out[prefix + 'literal_readline'] = literal
        out[prefix + 'literal_seconds'] = f'{time.perf_counter() - start:.3f}'
        await session.close()

    session = SeedBashSession(args.timeout, args.maximum_characters, args.keep_all_output,
                              long_lines_in_pieces=True)
    await session.run('true')
    # Both high-water marks (VmHWM, and ru_maxrss, which reads the same counter) reset to
    # the current RSS first, so growth is measured from here, not from an earlier peak.
    peak_reset = _reset_peak_rss()
    maxrss_before = _maxrss_kb()
    rss_start = _status_kb('VmHWM' if peak_reset else 'VmRSS')
    start = time.perf_counter()
    outcome = await session.run(command)
    seconds = time.perf_counter() - start
    peak = _status_kb('VmHWM')
    maxrss_after = _maxrss_kb()
    problem = _check_flood(outcome, args.flood_bytes, args.maximum_characters, first)
    after = await session.run('echo after')
    await session.close()

    out[prefix + 'seconds'] = f'{seconds:.3f}'
    out[prefix + 'mb_per_s'] = f'{args.flood_bytes / 1e6 / seconds:.1f}'
    out[prefix + 'ru_maxrss_before_kb'] = maxrss_before
    out[prefix + 'ru_maxrss_after_kb'] = maxrss_after
    out[prefix + 'ru_maxrss_growth_kb'] = maxrss_after - maxrss_before
    out[prefix + 'rss_start_kb'] = rss_start
    out[prefix + 'peak_rss_kb'] = peak
    out[prefix + 'peak_rss_growth_kb'] = peak - rss_start
    out[prefix + 'peak_reset'] = 'yes' if peak_reset else 'no'
    out[prefix + 'exit_status'] = outcome.exit_status
    out[prefix + 'output_characters'] = len(outcome.output)
    out[prefix + 'truncated'] = 'yes' if outcome.truncated else 'no'
    out[prefix + 'output_ok'] = 'no' if problem else 'yes'
    if problem:
        out[prefix + 'problem'] = problem
    out[prefix + 'after_flood_ok'] = 'yes' if after.output == 'after\n' else 'no'


async def _main(args) -> int:
    out: dict = {
        'python_version': sys.version.split()[0],
        'python_output_keeping': 'all' if args.keep_all_output else 'head+tail',
        'python_maximum_output_characters': args.maximum_characters,
    }
    if not args.no_round_trip:
        session = SeedBashSession(args.timeout, args.maximum_characters, args.keep_all_output)
        start = time.perf_counter()
        first = await session.run('true')
        out['python_first_run_ms'] = f'{(time.perf_counter() - start) * 1000:.3f}'
        if first.exit_status != 0:
            print(f'python_seed_session: bash does not run `true`: {first!r}', file=sys.stderr)
            return 1
        samples = await _round_trips(session, args.warmup, args.runs)
        await session.close()
        if args.raw:
            with open(args.raw, 'a') as raw:
                raw.writelines(f'{sample:.3f}\n' for sample in samples)
        median, p90 = _percentiles(samples)
        out['python_round_trip_runs'] = args.runs
        out['python_round_trip_warmup'] = args.warmup
        out['python_round_trip_median_us'] = f'{median:.1f}'
        out['python_round_trip_p90_us'] = f'{p90:.1f}'
        out['python_round_trip_min_us'] = f'{min(samples):.1f}'
        out['python_round_trip_mean_us'] = f'{sum(samples) / len(samples):.1f}'
    if not args.no_flood:
        await _flood(args, 'nonl', f"head -c {args.flood_bytes} /dev/zero | tr '\\0' x", 'x', out)
        await _flood(args, 'lines', f'yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c {args.flood_bytes}', '0', out)

    for key, value in out.items():
        print(f'{key}={value}')
    print(f'# Python seed session (plain bash, no sandbox), limit {args.maximum_characters} characters, '
          f'output kept: {out["python_output_keeping"]}')
    if 'python_round_trip_median_us' in out:
        print(f'#   run("true") round trip, {args.runs} runs after {args.warmup} warm-up: '
              f'median {out["python_round_trip_median_us"]} us, p90 {out["python_round_trip_p90_us"]} us '
              f'(min {out["python_round_trip_min_us"]})')
    for name in ('nonl', 'lines'):
        prefix = f'python_flood_{name}_'
        if prefix + 'seconds' not in out:
            continue
        print(f'#   flood {name:<5} {args.flood_bytes} bytes in {out[prefix + "seconds"]} s = '
              f'{out[prefix + "mb_per_s"]} MB/s; peak RSS +{out[prefix + "peak_rss_growth_kb"] * 1024 / 1e6:.2f} MB '
              f'(ru_maxrss +{out[prefix + "ru_maxrss_growth_kb"] * 1024 / 1e6:.2f} MB)'
              + ('' if out[prefix + 'output_ok'] == 'yes' else f', WRONG OUTPUT: {out.get(prefix + "problem")}'))
        if prefix + 'literal_readline' in out:
            print(f'#     the literal readline on its one {args.flood_bytes}-byte line: {out[prefix + "literal_readline"]}')
    return 0 if all(out.get(f'python_flood_{n}_output_ok', 'yes') == 'yes' for n in ('nonl', 'lines')) else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('-n', '--runs', type=int, default=2000, help='timed round trips (default 2000)')
    parser.add_argument('--warmup', type=int, default=20, help='untimed round trips first (default 20)')
    parser.add_argument('--flood-bytes', type=int, default=200_000_000, help='size of each flood')
    parser.add_argument('--maximum-characters', type=int, default=20_000, help='output limit (default 20000)')
    parser.add_argument('--timeout', type=float, default=120, help='timeout_seconds (default 120)')
    parser.add_argument('--keep-all-output', action='store_true',
                        help='keep every line in memory as the seed does (a 200 MB flood holds 200 MB+)')
    parser.add_argument('--no-round-trip', action='store_true', help='skip the round trips')
    parser.add_argument('--no-flood', action='store_true', help='skip the floods')
    parser.add_argument('--raw', help='append every round trip, in microseconds, to this file')
    args = parser.parse_args()
    if args.runs < 1 or args.warmup < 0 or args.flood_bytes < 1:
        parser.error('counts must be positive')
    return asyncio.run(_main(args))


if __name__ == '__main__':
    sys.exit(main())
