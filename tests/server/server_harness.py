"""Starts `lazyllm serve` on a free loopback port for the integration tests, and the venv with
the official `openai` package (and selenium for the browser test) they use.

Only 127.0.0.1 is ever contacted (pip aside, which installs from PyPI once per build folder)."""
import http.client
import json
import os
import re
import subprocess
import sys
import time

VENV_PACKAGES = ["openai>=1.40", "selenium>=4.10"]


def ensure_venv(venv):
    """Re-runs this script inside `venv` (made and filled on first use)."""
    py = os.path.join(venv, "bin", "python")
    if os.path.realpath(sys.prefix) == os.path.realpath(venv):
        return
    stamp = os.path.join(venv, ".lazyllm-ok")
    if not os.path.exists(stamp):
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        subprocess.run([py, "-m", "pip", "install", "-q", *VENV_PACKAGES], check=True)
        open(stamp, "w").close()
    os.execv(py, [py, *sys.argv])


class Server:
    """A `lazyllm serve` process; stops it on exit. Its stderr goes to a log file."""

    def __init__(self, lazyllm, *flags, log_name="serve"):
        self.log_path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"lazyllm-{log_name}-{os.getpid()}.log")
        self.log = open(self.log_path, "w+")
        env = dict(os.environ, OMP_WAIT_POLICY="passive")
        self.proc = subprocess.Popen([lazyllm, "serve", "--host", "127.0.0.1", "--port", "0", *flags],
                                     stdout=self.log, stderr=subprocess.STDOUT, env=env)
        self.port = self._wait_for(r"listening on http://127\.0\.0\.1:(\d+)", 30)
        self.base = f"http://127.0.0.1:{self.port}"
        self._wait_ready(90)

    def _wait_for(self, pattern, timeout_s):
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            self.log.seek(0)
            m = re.search(pattern, self.log.read())
            if m:
                return int(m.group(1))
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError(f"lazyllm serve did not start: {self.read_log()}")

    def _wait_ready(self, timeout_s):
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            status, body, _ = self.request("GET", "/health")
            if status == 200 and json.loads(body)["status"] == "ok":
                return
            assert status == 503 and json.loads(body)["status"] == "loading", (status, body)
            time.sleep(0.1)
        raise RuntimeError("lazyllm serve never became ready")

    def read_log(self):
        self.log.seek(0)
        return self.log.read()

    def request(self, method, path, body=None, headers=None, timeout=60):
        """Raw HTTP: (status, body text, headers dict)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            data = body if isinstance(body, (bytes, str)) or body is None else json.dumps(body)
            conn.request(method, path, body=data, headers=headers or {})
            r = conn.getresponse()
            return r.status, r.read().decode("utf-8", "replace"), {k.lower(): v for k, v in r.getheaders()}
        finally:
            conn.close()

    def rss_kib(self, field="VmRSS"):
        """Resident memory in KiB (field VmHWM: the peak so far)."""
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
        return 0

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


class Checks:
    """Collects named checks; prints each, fails the run at the end if any failed."""

    def __init__(self):
        self.failed = []

    def run(self, name, fn, *args):
        t0 = time.time()
        try:
            fn(*args)
            print(f"  ok    {name} ({time.time() - t0:.1f} s)", flush=True)
        except Exception as e:  # noqa: BLE001 - report every failure, keep going
            self.failed.append(name)
            print(f"  FAIL  {name}: {type(e).__name__}: {e}", flush=True)

    def exit_code(self):
        if self.failed:
            print(f"{len(self.failed)} failed: {', '.join(self.failed)}")
            return 1
        print("all passed")
        return 0


def expect_error(status, body, want_status, param=None, code=None):
    """An OpenAI error object with the given status, param and code."""
    assert status == want_status, f"status {status}, want {want_status}: {body}"
    err = json.loads(body)["error"]
    assert set(err) >= {"message", "type", "param", "code"}, err
    assert err["message"], err
    if param is not None:
        assert err["param"] == param, f"param {err['param']!r}, want {param!r}: {err['message']}"
        assert param in err["message"] or err["code"] in ("context_length_exceeded", "unsupported"), err
    if code is not None:
        assert err["code"] == code, f"code {err['code']!r}, want {code!r}"
    return err
