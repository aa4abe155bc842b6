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
import json
import os
import signal
import socket
import sys
import threading
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


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
SERVED_BY = socket.gethostname()


def log(msg):
    sys.stderr.write("runtime: %s\n" % msg)
    sys.stderr.flush()


def error_body(exc):
    """The RuntimeError body for an exception: its type and message, and the tail of its
    traceback without the runtime's own frames."""
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
                raise ValueError(
                    "%s=%r is not module.function" % ("FUNCTION_HANDLER", HANDLER))
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


class Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # in-flight calls are waited for by count, not by thread
    request_queue_size = 128

    def __init__(self, addr):
        super().__init__(addr, Handler)
        self.draining = False  # no more calls: idle connections close
        self.unready = False  # readiness fails: callers stop sending
        self.lock = threading.Lock()
        self.busy = 0  # calls in flight
        self.idle_done = threading.Condition(self.lock)
        self.idle_conns = set()  # connections waiting for their next request

    def server_bind(self):
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.socket.bind(self.server_address)
        self.server_address = self.socket.getsockname()
        self.server_name, self.server_port = self.server_address[:2]

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


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "minik8s-python-runtime"
    sys_version = ""

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def handle_one_request(self):
        srv = self.server
        with srv.lock:
            if srv.draining:
                self.close_connection = True
                return
            srv.idle_conns.add(self.connection)
        try:
            self.raw_requestline = self.rfile.readline(65537)
        finally:
            with srv.lock:
                srv.idle_conns.discard(self.connection)
                # A request that arrived is served, draining or not: drain waits for it.
                if self.raw_requestline:
                    srv.busy += 1
        if not self.raw_requestline:
            self.close_connection = True
            return
        try:
            if len(self.raw_requestline) > 65536:
                self.send_error(414)
                return
            if not self.parse_request():
                return
            method = getattr(self, "do_" + self.command, None)
            if method is None:
                self.reply(405, {"error": "method %s not allowed" % self.command})
                return
            method()
            self.wfile.flush()
        except (ConnectionError, socket.timeout):
            self.close_connection = True
        finally:
            with srv.lock:
                srv.busy -= 1
                if srv.draining:
                    self.close_connection = True
                if srv.busy == 0:
                    srv.idle_done.notify_all()

    def reply(self, code, obj=None, body=None):
        if body is None:
            body = json.dumps(obj).encode()
        head = [
            "HTTP/1.1 %d %s" % (code, self.responses.get(code, ("",))[0]),
            "Content-Type: application/json",
            "Content-Length: %d" % len(body),
            "X-Served-By: " + SERVED_BY,
        ]
        if self.close_connection or self.server.draining:
            head.append("Connection: close")
            self.close_connection = True
        # One write: headers and body in separate segments meet delayed ACKs.
        self.wfile.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)

    def read_body(self):
        """The request body, or None after answering an error."""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks, size = [], 0
            while True:
                line = self.rfile.readline(1024)
                try:
                    n = int(line.split(b";", 1)[0].strip(), 16)
                except ValueError:
                    self.close_connection = True
                    self.reply(400, {"error": "malformed chunked body"})
                    return None
                if n == 0:
                    while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                size += n
                if size > MAX_BODY:
                    self.close_connection = True
                    self.reply(413, {"error": "body larger than %d bytes" % MAX_BODY})
                    return None
                chunks.append(self.rfile.read(n))
                self.rfile.readline(3)
        try:
            n = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            n = -1
        if n < 0:
            self.close_connection = True
            self.reply(400, {"error": "bad Content-Length"})
            return None
        if n > MAX_BODY:
            self.close_connection = True
            self.reply(413, {"error": "body larger than %d bytes" % MAX_BODY})
            return None
        return self.rfile.read(n) if n else b""

    def do_GET(self):
        path = self.path.split("?", 1)[0]
        if path == "/healthz":
            self.reply(200, {"status": "ok"})
        elif path == "/readyz":
            if self.server.unready or self.server.draining:
                self.reply(503, {"status": "draining"})
            elif FUNCTION.fn is not None:
                self.reply(200, {"status": "ready", "handler": HANDLER})
            elif FUNCTION.failure is not None:
                self.reply(503, dict(FUNCTION.failure, status="failed"))
            else:
                self.reply(503, {"status": "loading"})
        else:
            self.reply(404, {"error": "no such path %s" % path})

    def do_POST(self):
        path = self.path.split("?", 1)[0]
        if path != "/invoke":
            body = self.read_body()
            if body is not None:
                self.reply(404, {"error": "no such path %s" % path})
            return
        raw = self.read_body()
        if raw is None:
            return
        try:
            event = json.loads(raw) if raw.strip() else {}
        except ValueError as exc:  # JSONDecodeError and bad UTF-8 alike
            self.reply(400, {"error": "the body is not JSON: %s" % exc})
            return
        FUNCTION.loaded.wait()
        if FUNCTION.fn is None:
            self.reply(503, FUNCTION.failure)
            return
        try:
            result = FUNCTION.fn(event)
        except Exception as exc:  # the handler's failure is the caller's answer
            err = error_body(exc)
            log("%s raised %s" % (HANDLER, err["error"]))
            self.reply(500, err)
            return
        try:
            body = json.dumps(result).encode()
        except (TypeError, ValueError) as exc:
            err = {"error": "%s: the result of %s is not JSON: %s" % (type(exc).__name__, HANDLER, exc)}
            log(err["error"])
            self.reply(500, err)
            return
        self.reply(200, body=body)

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        # One line per call would dominate a busy function's log; errors are logged where
        # they are answered.
        pass


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
    log("listening on :%d" % srv.server_port)
    # Liveness answers while the module imports; readiness waits for it.
    threading.Thread(target=FUNCTION.load, daemon=True).start()
    srv.serve_forever(poll_interval=0.2)
    srv.drain()
    srv.server_close()
    log("stopped")


if __name__ == "__main__":
    main()
