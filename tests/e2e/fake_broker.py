#!/usr/bin/env python3
"""A fake stock broker's API over HTTPS on loopback, for the API gate's tests and benchmark.

Modelled on Zerodha's Kite Connect v3 (https://kite.trade/docs/connect/v3/): every call
carries `Authorization: token api_key:access_token` and `X-Kite-Version: 3`; replies are
{"status": "success", "data": {...}}, errors {"status": "error", "error_type": ..., "message":
...}. A call whose Authorization is not exactly --expect-authorization gets 403 with
error_type TokenException, as Kite answers an expired or wrong token.

    GET  /quote?i=NSE:INFY[&i=...]     quotes of the instruments named
    GET  /portfolio/positions          {"net": [], "day": []}
    POST /orders/VARIETY               a form (or JSON) body: tradingsymbol, exchange,
                                       transaction_type, order_type, quantity, price,
                                       product, validity -> {"order_id": "..."}
    GET  /ws                           a WebSocket (RFC 6455) that echoes each frame back

HTTP/1.1 with keep-alive (Content-Length on every reply). With --log FILE every request is
appended as one JSON line {"method", "path", "headers", "body"} and flushed and fsynced
BEFORE the reply is sent, so that a test killing deskd mid-request can trust that whatever
the broker received is in the file. --http-port also serves the same API in plain HTTP (the
tests' "other allowed host"). Prints the HTTPS port on its first line (the plain one on the
second when asked for) once it listens. Python 3 standard library only.
"""

import argparse
import base64
import hashlib
import itertools
import json
import os
import socket
import ssl
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

WEBSOCKET_MAGIC = "258EAFA5-E914-47DA-95CA-C5AB0DC11B65"
ORDER_FIELDS = ("tradingsymbol", "exchange", "transaction_type", "order_type", "quantity", "product", "validity")
QUOTES = {
    "NSE:INFY": {"instrument_token": 408065, "last_price": 1501.5, "volume": 2211841,
                 "ohlc": {"open": 1490.0, "high": 1512.25, "low": 1488.1, "close": 1495.6}},
    "NSE:TCS": {"instrument_token": 2953217, "last_price": 3902.05, "volume": 1022117,
                "ohlc": {"open": 3880.0, "high": 3911.0, "low": 3871.35, "close": 3884.9}},
}


class RequestLog:
    """The JSON-lines log of every request, on disk before the reply goes out."""

    def __init__(self, path):
        self._lock = threading.Lock()
        self._file = open(path, "a", encoding="utf-8") if path else None

    def append(self, record):
        if self._file is None:
            return
        line = json.dumps(record, sort_keys=True) + "\n"
        with self._lock:
            self._file.write(line)
            self._file.flush()
            os.fsync(self._file.fileno())


class BrokerHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: every reply has a Content-Length
    server_version = "fake-kite/3"
    order_ids = itertools.count(250101000000001)

    def log_message(self, format, *args):  # quiet: the JSON log is the record
        pass

    # --- replies ---

    def reply(self, status, payload, content_type="application/json"):
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def success(self, data):
        self.reply(200, {"status": "success", "data": data})

    def error(self, status, error_type, message):
        self.reply(status, {"status": "error", "error_type": error_type, "message": message, "data": None})

    # --- the request ---

    def read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def handle_any(self):
        body = self.read_body()
        target = urllib.parse.urlsplit(self.path)
        self.server.request_log.append({
            "method": self.command,
            "path": self.path,
            "headers": {name: value for name, value in self.headers.items()},
            "body": body.decode("utf-8", "replace"),
        })
        if target.path == "/ws" and self.headers.get("Upgrade", "").lower() == "websocket":
            return self.websocket_echo()
        expected = self.server.expected_authorization
        if expected is not None and self.headers.get("Authorization") != expected:
            return self.error(403, "TokenException", "Incorrect `api_key` or `access_token`.")
        query = urllib.parse.parse_qs(target.query)
        if self.command == "GET" and target.path == "/quote":
            instruments = query.get("i", [])
            if not instruments:
                return self.error(400, "InputException", "No instruments given.")
            return self.success({name: QUOTES.get(name, {"last_price": 100.0}) for name in instruments})
        if self.command == "GET" and target.path == "/portfolio/positions":
            return self.success({"net": [], "day": []})
        if self.command == "POST" and target.path.startswith("/orders/") and target.path.count("/") == 2:
            return self.place_order(body)
        return self.error(404, "GeneralException", "Route not found: %s %s" % (self.command, target.path))

    def place_order(self, body):
        content_type = self.headers.get("Content-Type", "")
        try:
            if content_type.startswith("application/json"):
                fields = {key: str(value) for key, value in json.loads(body or b"{}").items()}
            else:
                fields = {key: values[0] for key, values in urllib.parse.parse_qs(body.decode()).items()}
        except (ValueError, AttributeError):
            return self.error(400, "InputException", "The order's body could not be read.")
        missing = [name for name in ORDER_FIELDS if name not in fields]
        if missing:
            return self.error(400, "InputException", "Missing " + ", ".join(missing) + ".")
        return self.success({"order_id": str(next(self.order_ids))})

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = handle_any

    # --- WebSocket (RFC 6455): the handshake, then every frame echoed until a close ---

    def websocket_echo(self):
        key = self.headers.get("Sec-WebSocket-Key", "")
        accept = base64.b64encode(hashlib.sha1((key + WEBSOCKET_MAGIC).encode()).digest()).decode()
        self.send_response(101, "Switching Protocols")
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept)
        self.end_headers()
        self.wfile.flush()
        self.close_connection = True
        while True:
            frame = self.read_frame()
            if frame is None:
                return
            opcode, payload = frame
            if opcode == 0x8:  # close: answer with a close
                self.write_frame(0x8, payload[:2])
                return
            self.write_frame(0xA if opcode == 0x9 else opcode, payload)  # ping -> pong

    def read_frame(self):
        head = self.rfile.read(2)
        if len(head) < 2:
            return None
        opcode, length = head[0] & 0x0F, head[1] & 0x7F
        if length == 126:
            length = int.from_bytes(self.rfile.read(2), "big")
        elif length == 127:
            length = int.from_bytes(self.rfile.read(8), "big")
        mask = self.rfile.read(4) if head[1] & 0x80 else b"\0\0\0\0"
        payload = bytearray(self.rfile.read(length))
        for index in range(len(payload)):
            payload[index] ^= mask[index % 4]
        return opcode, bytes(payload)

    def write_frame(self, opcode, payload):
        length = len(payload)
        if length < 126:
            head = bytes([0x80 | opcode, length])
        elif length < 65536:
            head = bytes([0x80 | opcode, 126]) + length.to_bytes(2, "big")
        else:
            head = bytes([0x80 | opcode, 127]) + length.to_bytes(8, "big")
        self.wfile.write(head + payload)
        self.wfile.flush()


class BrokerServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, port, tls_context, request_log, expected_authorization):
        self.tls_context = tls_context
        self.request_log = request_log
        self.expected_authorization = expected_authorization
        super().__init__(("127.0.0.1", port), BrokerHandler)

    def finish_request(self, request, client_address):
        # The TLS handshake in the connection's own thread, so a slow client never holds
        # the accept loop.
        if self.tls_context is not None:
            try:
                request = self.tls_context.wrap_socket(request, server_side=True)
            except (ssl.SSLError, OSError):
                return
        request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            super().finish_request(request, client_address)
        except (ssl.SSLError, ConnectionError):
            pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="the HTTPS port (0: pick one)")
    parser.add_argument("--http-port", type=int, default=None, help="also serve plain HTTP here (0: pick one)")
    parser.add_argument("--cert", required=True, help="the server's certificate chain (PEM)")
    parser.add_argument("--key", required=True, help="the server's private key (PEM)")
    parser.add_argument("--log", help="append every request here as a JSON line (fsynced before the reply)")
    parser.add_argument("--expect-authorization", help="the exact Authorization every call must carry")
    arguments = parser.parse_args()

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(arguments.cert, arguments.key)
    request_log = RequestLog(arguments.log)
    servers = [BrokerServer(arguments.port, context, request_log, arguments.expect_authorization)]
    if arguments.http_port is not None:
        servers.append(BrokerServer(arguments.http_port, None, request_log, arguments.expect_authorization))
    for server in servers:
        print(server.server_address[1], flush=True)
    for server in servers[1:]:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        servers[0].serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
