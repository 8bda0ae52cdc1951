"""deskd's control socket as the Python benchmarks speak it: JSON lines each way.

Shared by acknowledged_trigger.py, daemon_memory.py and desk_density.py (imported from the
script's own folder, which Python puts first on sys.path)."""

import json
import socket


def connect(path):
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.connect(path)
    return client


def call(client, reader, request):
    """Sends `request` and returns the reply echoing its id (event lines in between are skipped)."""
    client.sendall((json.dumps(request) + "\n").encode())
    while True:
        line = reader.readline()
        if not line:
            raise RuntimeError("deskd closed the connection")
        reply = json.loads(line)
        if reply.get("id") == request.get("id") and "ok" in reply:
            return reply
