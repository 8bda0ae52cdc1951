#!/usr/bin/env python3
"""The servers of the egress tests' small internet, run inside the test's own network
namespace (see up.sh): a DNS server, HTTP and HTTPS servers under several names, a dumb-HTTP
git repository, and canaries on the refused addresses that record every connection.

DNS: the wire format of RFC 1035 section 4 (header, question, A answer with a compressed
name pointer 0xc00c), A records only; AAAA and other types get an empty NOERROR answer, an
unknown name NXDOMAIN. "rebind.egress.test" answers first in the allowed subnet, then in the
refused one, alternately (a DNS-rebinding resolver), with TTL 0.
HTTP/HTTPS: Python's http.server (the dumb HTTP protocol git speaks is plain GETs of
info/refs and objects, see gitprotocol-http(5)), TLS from Python's ssl with the test's CA.

usage: servers.py FOLDER   (FOLDER holds server.pem, server.key, www/ and gets canary.log)
"""
import http.server
import os
import socket
import socketserver
import ssl
import struct
import sys
import threading

FOLDER = sys.argv[1]
ALLOWED_NET = "10.201.0."
REFUSED_NET = "10.202.0."

RECORDS = {
    "www.egress.test": ALLOWED_NET + "10",
    "other.egress.test": ALLOWED_NET + "10",       # reachable, but not on the allowlist
    "git.svc.egress.test": ALLOWED_NET + "11",
    "api.svc.egress.test": ALLOWED_NET + "10",
    "inside.egress.test": REFUSED_NET + "10",      # an allowed name in the refused subnet
    "loop.egress.test": "127.0.0.1",               # an allowed name resolving to loopback
    "meta.egress.test": "169.254.169.254",
}
REBIND_NAME = "rebind.egress.test"
rebind_queries = 0
lock = threading.Lock()


def dns_answer(query):
    global rebind_queries
    if len(query) < 12:
        return None
    ident, flags, questions = struct.unpack("!HHH", query[:6])
    if questions != 1:
        return None
    labels, position = [], 12
    while position < len(query) and query[position] != 0:
        length = query[position]
        labels.append(query[position + 1:position + 1 + length].decode("ascii", "replace"))
        position += 1 + length
    question_end = position + 5
    if question_end > len(query):
        return None
    qtype, _ = struct.unpack("!HH", query[position + 1:question_end])
    name = ".".join(labels).lower()
    address = RECORDS.get(name)
    if name == REBIND_NAME:
        if qtype == 1:
            with lock:
                rebind_queries += 1
                address = (ALLOWED_NET if rebind_queries % 2 == 1 else REFUSED_NET) + "12"
        else:
            address = "none"
    rcode = 0 if address is not None else 3
    answers = b""
    if address not in (None, "none") and qtype == 1:
        answers = struct.pack("!HHHIH", 0xC00C, 1, 1, 0, 4) + socket.inet_aton(address)
    header = struct.pack("!HHHHHH", ident, 0x8180 | rcode | (flags & 0x0100), 1, 1 if answers else 0, 0, 0)
    return header + query[12:question_end] + answers


def serve_dns():
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((ALLOWED_NET + "53", 53))
    while True:
        query, peer = sock.recvfrom(512)
        answer = dns_answer(query)
        if answer:
            sock.sendto(answer, peer)


class Handler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, directory=os.path.join(FOLDER, "www"), **kwargs)

    def do_GET(self):
        if self.path.startswith("/hello"):
            body = ("hello from %s at %s\n" % (self.headers.get("Host"), self.connection.getsockname()[0])).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if self.path.startswith("/file/"):
            # A file of www/ sent by the kernel (sendfile): the server is never the
            # bottleneck of bench/egress.
            path = os.path.join(FOLDER, "www", os.path.basename(self.path))
            with open(path, "rb") as data:
                size = os.fstat(data.fileno()).st_size
                self.send_response(200)
                self.send_header("Content-Length", str(size))
                self.end_headers()
                self.wfile.flush()
                self.connection.sendfile(data)
            return
        if self.path.startswith("/bytes/"):
            count = int(self.path.split("/")[2])
            self.send_response(200)
            self.send_header("Content-Length", str(count))
            self.end_headers()
            chunk = b"x" * 65536
            while count > 0:
                self.wfile.write(chunk[:min(count, len(chunk))])
                count -= len(chunk)
            return
        super().do_GET()

    def log_message(self, *args):
        pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def serve_http(address, port, tls):
    server = Server((address, port), Handler)
    if tls:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(os.path.join(FOLDER, "server.pem"), os.path.join(FOLDER, "server.key"))
        server.socket = context.wrap_socket(server.socket, server_side=True)
    server.serve_forever()


def serve_canary(address, port):
    """Records every connection to an address the desk must never reach."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((address, port))
    sock.listen(16)
    while True:
        connection, peer = sock.accept()
        with open(os.path.join(FOLDER, "canary.log"), "a") as log:
            log.write("%s:%d reached from %s\n" % (address, port, peer[0]))
        connection.close()


def main():
    threads = [threading.Thread(target=serve_dns)]
    for last in ("10", "11", "12"):
        threads.append(threading.Thread(target=serve_http, args=(ALLOWED_NET + last, 80, False)))
        threads.append(threading.Thread(target=serve_http, args=(ALLOWED_NET + last, 443, True)))
    for last in ("10", "12"):
        for port in (80, 443):
            threads.append(threading.Thread(target=serve_canary, args=(REFUSED_NET + last, port)))
    for thread in threads:
        thread.daemon = True
        thread.start()
    with open(os.path.join(FOLDER, "servers.ready"), "w") as ready:
        ready.write("ready\n")
    threading.Event().wait()


if __name__ == "__main__":
    main()
