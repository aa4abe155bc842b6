"""minik8s function runtime: serves one Python handler over HTTP.

The contract (shared/apis/serverless/v1/wellknown.go):
  POST /invoke   JSON event in, the handler's JSON result out (200); 400 when the body is not
                 JSON; 500 {"error": "<Type>: <msg>", "traceback": "<tail>"} when the handler
                 raised; 503 with the same body while the module is not imported.
  GET  /healthz  200 while the server runs (liveness).
  GET  /readyz   200 once the handler's module is imported, 503 before, after a failed import
                 and while draining.
Every answer carries X-Served-By: <hostname>.

FUNCTION_HANDLER names "module.function" (else the file /opt/minik8s/function/handler a
function image's build writes, else main.handler), FUNCTION_DIR the code
(default /function), RUNTIME_PORT the port (default 8080). SIGTERM stops readiness, waits
RUNTIME_DRAIN_SECONDS (default 1) for callers to notice, stops accepting, finishes the calls in
flight and exits.

Only the standard library, and only what serving needs, is imported: a cold start pays for
every module.
"""

import importlib
import os
import signal
import socket
import socketserver
import sys
import threading

# json is what every call needs; http.server is not imported (it brings http.client, email
# and ssl, a tenth of a second of a cold start), nor traceback until something fails.
import json


def handler_name():
    """FUNCTION_HANDLER, else what the image's build wrote, else main.handler."""
    name = os.environ.get("FUNCTION_HANDLER", "").strip()
    if name:
        return name
    try:
        with open(os.environ.get("FUNCTION_HANDLER_FILE", "/opt/minik8s/function/handler")) as f:
            name = f.read().strip()
    except OSError:
        pass
    return name or "main.handler"


HANDLER = handler_name()
FUNCTION_DIR = os.environ.get("FUNCTION_DIR", "/function")
PORT = int(os.environ.get("RUNTIME_PORT", "8080"))
DRAIN_SECONDS = float(os.environ.get("RUNTIME_DRAIN_SECONDS", "1"))
MAX_BODY = int(os.environ.get("RUNTIME_MAX_BODY_BYTES", str(16 << 20)))
TRACEBACK_LINES = 20
MAX_LINE = 65536
MAX_HEADERS = 100
SERVED_BY = socket.gethostname()
REASONS = {
    100: "Continue", 200: "OK", 400: "Bad Request", 404: "Not Found",
    405: "Method Not Allowed", 413: "Payload Too Large", 414: "URI Too Long",
    431: "Request Header Fields Too Large", 500: "Internal Server Error",
    503: "Service Unavailable",
}


def log(msg):
    sys.stderr.write("runtime: %s\n" % msg)
    sys.stderr.flush()


def error_body(exc):
    """The RuntimeError body for an exception: its type and message, and the tail of its
    traceback without the runtime's own frames."""
    import traceback

    tb = exc.__traceback__
    # The first frame is the runtime's call into user code.
    if tb is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next
    lines = "".join(traceback.format_exception(type(exc), exc, tb)).rstrip("\n").split("\n")
    msg = str(exc)
    return {
        "error": type(exc).__name__ + (": " + msg if msg else ""),
        "traceback": "\n".join(lines[-TRACEBACK_LINES:]),
    }


class Function:
    """The user's handler, imported once at start."""

    def __init__(self):
        self.fn = None
        self.failure = None  # the error body of a failed import
        self.loaded = threading.Event()

    def load(self):
        module, _, name = HANDLER.rpartition(".")
        try:
            if not module or not name:
                raise ValueError("FUNCTION_HANDLER=%r is not module.function" % HANDLER)
            sys.path.insert(0, FUNCTION_DIR)
            mod = importlib.import_module(module)
            fn = getattr(mod, name, None)
            if fn is None:
                raise AttributeError("module %r has no function %r" % (module, name))
            if not callable(fn):
                raise TypeError("%s is not callable" % HANDLER)
            self.fn = fn
            log("ready: %s from %s" % (HANDLER, FUNCTION_DIR))
        except BaseException as exc:  # noqa: B902 - SystemExit in a module must not kill us
            self.failure = error_body(exc)
            self.failure["error"] = "cannot import %s: %s" % (HANDLER, self.failure["error"])
            log("%s\n%s" % (self.failure["error"], self.failure["traceback"]))
        finally:
            self.loaded.set()


FUNCTION = Function()


class BadRequest(Exception):
    def __init__(self, code, msg):
        super().__init__(msg)
        self.code = code


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True
    block_on_close = False  # in-flight calls are waited for by count, not by thread
    request_queue_size = 128

    def __init__(self, addr):
        super().__init__(addr, Handler)
        self.draining = False  # no more calls: idle connections close
        self.unready = False  # readiness fails: callers stop sending
        self.lock = threading.Lock()
        self.busy = 0  # requests in flight
        self.idle_done = threading.Condition(self.lock)
        self.idle_conns = set()  # connections waiting for their next request

    def drain(self):
        """Stops taking calls and returns once none is in flight."""
        with self.lock:
            self.draining = True
            idle = list(self.idle_conns)
        # A connection waiting for its next request gets end of file and its thread ends.
        for conn in idle:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        with self.lock:
            while self.busy:
                self.idle_done.wait()


class Handler(socketserver.StreamRequestHandler):
    """HTTP/1.1 with keep-alive, as much of it as the gateway, curl and probes use."""

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def handle(self):
        srv = self.server
        while True:
            with srv.lock:
                if srv.draining:
                    return
                srv.idle_conns.add(self.connection)
            line = b""
            try:
                line = self.rfile.readline(MAX_LINE + 1)
            except OSError:
                pass
            finally:
                with srv.lock:
                    srv.idle_conns.discard(self.connection)
                    # A request that arrived is served, draining or not: drain waits for it.
                    if line:
                        srv.busy += 1
            if not line:
                return
            try:
                keep = self.serve(line)
            except OSError:
                keep = False
            finally:
                with srv.lock:
                    srv.busy -= 1
                    if srv.busy == 0:
                        srv.idle_done.notify_all()
            if not keep or srv.draining:
                return

    def serve(self, line):
        """Answers one request; says whether the connection may be kept."""
        try:
            method, path, headers, keep = self.read_head(line)
        except BadRequest as exc:
            self.reply(exc.code, {"error": str(exc)}, keep=False)
            return False
        try:
            body = self.read_body(headers)
        except BadRequest as exc:
            self.reply(exc.code, {"error": str(exc)}, keep=False)
            return False
        path = path.split("?", 1)[0]
        if path == "/invoke" and method == "POST":
            self.invoke(body, keep)
        elif path == "/healthz" and method == "GET":
            self.reply(200, {"status": "ok"}, keep=keep)
        elif path == "/readyz" and method == "GET":
            self.ready(keep)
        elif path in ("/invoke", "/healthz", "/readyz"):
            self.reply(405, {"error": "%s does not take %s" % (path, method)}, keep=keep)
        else:
            self.reply(404, {"error": "no such path %s" % path}, keep=keep)
        return keep and not self.server.draining

    def read_head(self, line):
        if len(line) > MAX_LINE:
            raise BadRequest(414, "request line too long")
        parts = line.decode("latin-1").split()
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            raise BadRequest(400, "not an HTTP/1 request line: %r" % line[:100])
        method, path, version = parts
        headers = {}
        while True:
            h = self.rfile.readline(MAX_LINE + 1)
            if not h:
                raise BadRequest(400, "the connection ended in the headers")
            if h in (b"\r\n", b"\n"):
                break
            if len(h) > MAX_LINE or len(headers) >= MAX_HEADERS:
                raise BadRequest(431, "headers too large")
            name, sep, value = h.decode("latin-1").partition(":")
            if not sep:
                raise BadRequest(400, "malformed header %r" % h[:100])
            headers[name.strip().lower()] = value.strip()
        conn = headers.get("connection", "").lower()
        keep = conn != "close" if version == "HTTP/1.1" else conn == "keep-alive"
        if headers.get("expect", "").lower() == "100-continue":
            self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        return method, path, headers, keep

    def read_body(self, headers):
        if headers.get("transfer-encoding", "").lower() == "chunked":
            chunks, size = [], 0
            while True:
                line = self.rfile.readline(1024)
                try:
                    n = int(line.split(b";", 1)[0].strip(), 16)
                except ValueError:
                    raise BadRequest(400, "malformed chunked body")
                if n == 0:
                    while self.rfile.readline(MAX_LINE) not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                size += n
                if size > MAX_BODY:
                    raise BadRequest(413, "body larger than %d bytes" % MAX_BODY)
                chunks.append(self.rfile.read(n))
                self.rfile.readline(3)
        try:
            n = int(headers.get("content-length") or 0)
        except ValueError:
            n = -1
        if n < 0:
            raise BadRequest(400, "bad Content-Length")
        if n > MAX_BODY:
            raise BadRequest(413, "body larger than %d bytes" % MAX_BODY)
        body = self.rfile.read(n) if n else b""
        if len(body) < n:
            raise BadRequest(400, "the connection ended in the body")
        return body

    def reply(self, code, obj=None, body=None, keep=True):
        if body is None:
            body = json.dumps(obj).encode()
        head = "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nX-Served-By: %s\r\n" % (
            code, REASONS.get(code, ""), len(body), SERVED_BY)
        if not keep or self.server.draining:
            head += "Connection: close\r\n"
        # One write: headers and body in separate segments meet delayed ACKs.
        self.wfile.write(head.encode("latin-1") + b"\r\n" + body)

    def ready(self, keep):
        if self.server.unready or self.server.draining:
            self.reply(503, {"status": "draining"}, keep=keep)
        elif FUNCTION.fn is not None:
            self.reply(200, {"status": "ready", "handler": HANDLER}, keep=keep)
        elif FUNCTION.failure is not None:
            self.reply(503, dict(FUNCTION.failure, status="failed"), keep=keep)
        else:
            self.reply(503, {"status": "loading"}, keep=keep)

    def invoke(self, raw, keep):
        try:
            event = json.loads(raw) if raw.strip() else {}
        except ValueError as exc:  # JSONDecodeError and bad UTF-8 alike
            self.reply(400, {"error": "the body is not JSON: %s" % exc}, keep=keep)
            return
        FUNCTION.loaded.wait()
        if FUNCTION.fn is None:
            self.reply(503, FUNCTION.failure, keep=keep)
            return
        try:
            result = FUNCTION.fn(event)
        except Exception as exc:  # the handler's failure is the caller's answer
            err = error_body(exc)
            log("%s raised %s" % (HANDLER, err["error"]))
            self.reply(500, err, keep=keep)
            return
        try:
            body = json.dumps(result).encode()
        except (TypeError, ValueError) as exc:
            err = {"error": "%s: the result of %s is not JSON: %s" % (type(exc).__name__, HANDLER, exc)}
            log(err["error"])
            self.reply(500, err, keep=keep)
            return
        self.reply(200, body=body, keep=keep)


def main():
    srv = Server(("", PORT))
    stopping = threading.Event()

    def stop(signum, _frame):
        if stopping.is_set():
            return
        stopping.set()
        log("signal %d: draining" % signum)

        def run():
            # Readiness fails at once; calls keep being served while callers notice.
            srv.unready = True
            threading.Event().wait(DRAIN_SECONDS)
            srv.shutdown()

        threading.Thread(target=run, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    log("listening on :%d" % srv.server_address[1])
    # Liveness answers while the module imports; readiness waits for it.
    threading.Thread(target=FUNCTION.load, daemon=True).start()
    srv.serve_forever(poll_interval=0.2)
    srv.drain()
    srv.server_close()
    log("stopped")


if __name__ == "__main__":
    main()
