"""Indexes on S3-compatible object storage: ``s3://bucket/prefix`` addresses, the storage options
LanceDB gets, ``index.json`` beside the tables, one writer per index across machines, and
errors that name the fix.

**Addressing.** ``--db s3://bucket/prefix`` (or ``MEMSEARCH_DB``) puts the tables and
``index.json`` under that prefix. ``s3+ddb://bucket/prefix?ddbTableName=T`` is handed to
LanceDB as it is (its DynamoDB commit store, for stores without conditional puts).

**Credentials** come from the standard variables through :mod:`memsearch.settings`
(``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``,
``AWS_DEFAULT_REGION``, ``AWS_ALLOW_HTTP``); unset ones are left to the AWS credential chain.

**The writer rule.** LanceDB commits a version with a conditional put (``If-None-Match``), so
two commits never overwrite each other; but it *rebases* a losing ``merge_insert`` onto the
winner instead of failing it, and two writers upserting the same keys at once leave duplicated
rows (measured on SeaweedFS: 2 processes x 30 upserts of the same two keys, 8 duplicated rows).
So memsearch keeps one writer per index itself, with the same primitive: a lease object
(:data:`LEASE_FILE`) created with ``If-None-Match: *``, renewed and released with
``If-Match: <etag>``, that expires :data:`LEASE_TTL_S` after its holder stops renewing it.
A second writer gets :class:`~memsearch.errors.IndexLocked` naming the holder's host and pid.
A flock in this machine's state directory (keyed by a hash of the URI) still orders the
writers of one machine, and holds the daemon's state files.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import logging
import os
import re
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from urllib.parse import urlsplit

from ... import settings
from ...errors import (
    BucketNotFound,
    Hint,
    IndexLocked,
    IndexMismatch,
    RemoteStoreError,
    StoreAccessDenied,
    StoreUnreachable,
)
from ...location import LEASE_FILE, META_FILE, SCHEMES, is_remote, parse_remote
from .lock import WriterLock, holder_text

__all__ = ["RemoteDB", "RemoteWriterLock", "WriterLease", "is_remote", "SCHEMES", "LEASE_TTL_S", "FENCE_FRACTION"]

#: The default of the ``lease_ttl`` setting: a lease not renewed for this long is free, so a writer
#: killed without releasing it blocks the next one at most this long. Renewed every third of it.
LEASE_TTL_S = settings.SETTINGS["lease_ttl"].default
#: A holder commits only while more than this fraction of the lease is left by its own clock
#: (:meth:`WriterLease.fresh`): one late renewal still leaves a third; a writer paused or cut off
#: past it stops before anyone may take the lease over. The margin (5 s of 30) covers one commit
#: (a 512-chunk batch commits in about a second on SeaweedFS) and the clocks' skew.
FENCE_FRACTION = 1 / 6
logger = logging.getLogger("memsearch.lease")
#: Connection and request limits, so that a wrong endpoint fails in seconds, not minutes.
CONNECT_TIMEOUT = "5s"
REQUEST_TIMEOUT = "60s"
MAX_RETRIES = 2


@dataclass(frozen=True)
class RemoteDB:
    """One index on an object store: its URI, bucket, prefix and storage options."""

    uri: str
    scheme: str
    bucket: str
    prefix: str
    options: tuple[tuple[str, str], ...]

    @classmethod
    def parse(cls, uri: str) -> "RemoteDB":
        address = parse_remote(uri)
        return cls(address.uri, address.scheme, address.bucket, address.prefix,
                   tuple(sorted(_storage_options().items())))

    @property
    def storage_options(self) -> dict[str, str]:
        """What LanceDB (and the object_store crate under it) gets as ``storage_options``."""
        return dict(self.options)

    def probe(self) -> None:
        """Read ``index.json`` once: a missing bucket, bad credentials or a dead endpoint fail here, clearly."""
        self.read(META_FILE)

    # --- objects beside the tables --------------------------------------------------------
    def read(self, name: str) -> bytes | None:
        import obstore

        try:
            return bytes(obstore.get(_object_store(self), name).bytes())
        except FileNotFoundError as exc:
            if "NoSuchBucket" in str(exc):
                raise translate(exc, self) from exc
            return None
        except Exception as exc:  # obstore's errors: classified, never swallowed
            raise translate(exc, self) from exc

    def write(self, name: str, data: bytes) -> None:
        import obstore

        try:
            obstore.put(_object_store(self), name, data)
        except Exception as exc:
            raise translate(exc, self) from exc

    def delete(self, name: str) -> None:
        import obstore

        try:
            obstore.delete(_object_store(self), name)
        except FileNotFoundError:
            pass
        except Exception as exc:
            raise translate(exc, self) from exc

    def read_meta(self) -> dict | None:
        data = self.read(META_FILE)
        if data is None:
            return None
        try:
            return json.loads(data)
        except ValueError as err:
            raise IndexMismatch(f"the index parameters at {self.uri}/{META_FILE} are unreadable ({err})",
                                hint=Hint("rebuild_db")) from err

    def write_meta(self, meta: dict) -> None:
        self.write(META_FILE, json.dumps(meta, indent=2, sort_keys=True).encode())  # one PUT: atomic

    def stamp(self, name: str = META_FILE) -> tuple | None:
        """What changes whenever object ``name`` is replaced (its etag), or None when absent."""
        import obstore

        try:
            meta = obstore.head(_object_store(self), name)
        except FileNotFoundError:
            return None
        except Exception as exc:
            raise translate(exc, self) from exc
        return (meta["e_tag"], meta["size"])

    def holds(self, prefix: str) -> bool:
        """Whether any object's key under this index starts with ``prefix`` (one listing request)."""
        import obstore

        try:
            return any(batch for batch in obstore.list(_object_store(self), prefix=prefix, chunk_size=1))
        except Exception as exc:
            raise translate(exc, self) from exc

    def size(self) -> int:
        """Bytes stored under the prefix (tables, parameters, lease)."""
        import obstore

        try:
            return sum(m["size"] for batch in obstore.list(_object_store(self)) for m in batch)
        except Exception as exc:
            raise translate(exc, self) from exc


def _check_endpoint(options: dict[str, str]) -> None:
    """Refuse an endpoint the object store would refuse with a panic or a "builder error", naming the fix."""
    endpoint = options.get("aws_endpoint")
    if endpoint is None:
        return
    name = settings.env_name("s3_endpoint")
    try:
        parts = urlsplit(endpoint)
        usable = parts.scheme in ("http", "https") and bool(parts.hostname) and (parts.port or 0) >= 0
    except ValueError:  # a port that is not a number
        usable = False
    if not usable:
        raise StoreUnreachable(f"{name}={endpoint!r} is not the URL of an object store: set it to one such as "
                               f"http://127.0.0.1:8333 (or unset it for AWS S3)")
    if parts.scheme == "http" and options.get("allow_http") != "true":
        raise StoreUnreachable(f"{name}={endpoint!r} is plain http, which the S3 client refuses unless told: set "
                               f"{settings.env_name('s3_allow_http')}=true (or use an https endpoint)")


def _storage_options() -> dict[str, str]:
    options = {"connect_timeout": CONNECT_TIMEOUT, "timeout": REQUEST_TIMEOUT}
    for setting, key in (("s3_endpoint", "aws_endpoint"), ("s3_access_key", "aws_access_key_id"),
                         ("s3_secret_key", "aws_secret_access_key"), ("s3_session_token", "aws_session_token"),
                         ("s3_region", "aws_region"), ("ddb_endpoint", "dynamodb_endpoint")):
        value = settings.get(setting)
        if value:
            options[key] = value
    if settings.get("s3_allow_http"):
        options["allow_http"] = "true"
    _check_endpoint(options)
    return options


@functools.lru_cache(maxsize=64)
def _object_store(remote: RemoteDB):
    """An obstore S3 client for the prefix (keyed by the whole RemoteDB: URI and options)."""
    from obstore.store import S3Store

    opts = remote.storage_options
    client = {k: opts[k] for k in ("connect_timeout", "timeout") if k in opts}
    if opts.get("allow_http") == "true":
        client["allow_http"] = True
    config = {k: v for k, v in opts.items() if k.startswith("aws_")}
    retry = {"max_retries": MAX_RETRIES, "retry_timeout": dt.timedelta(seconds=10),
             "backoff": {"init_backoff": dt.timedelta(milliseconds=100), "max_backoff": dt.timedelta(seconds=2),
                         "base": 2}}
    return S3Store(remote.bucket, prefix=remote.prefix or None, config=config, client_options=client,
                   retry_config=retry)


def translate(exc: BaseException, remote: RemoteDB) -> RemoteStoreError:
    """A typed error with a one-line message naming the fix, from an obstore or LanceDB error."""
    text = str(exc)
    endpoint = remote.storage_options.get("aws_endpoint", "AWS S3")
    if "NoSuchBucket" in text or "bucket does not exist" in text.lower():
        return BucketNotFound(f"the bucket {remote.bucket!r} of {remote.uri} does not exist at {endpoint}",
                              hint=Hint("bucket", remote.bucket))
    if any(word in text for word in ("SignatureDoesNotMatch", "InvalidAccessKeyId", "AccessDenied", "403 Forbidden",
                                     "PermissionDenied", "Unauthenticated", "lacked the necessary privileges")):
        return StoreAccessDenied(f"{endpoint} refused the credentials for {remote.uri}: set AWS_ACCESS_KEY_ID and "
                                 f"AWS_SECRET_ACCESS_KEY to a key allowed to read and write the bucket")
    if any(word in text for word in ("error sending request", "Connect", "connection refused", "dns error",
                                     "timed out", "tcp connect")):
        plain = endpoint.startswith("http://") and not remote.storage_options.get("allow_http")
        hint = " (add AWS_ALLOW_HTTP=true for a plain-http endpoint)" if plain else ""
        return StoreUnreachable(f"cannot reach the object store at {endpoint} for {remote.uri}: check "
                                f"AWS_ENDPOINT_URL and that the store is running{hint}")
    failing = re.search(r"status code: (5\d\d)[^:<]*|\b(SlowDown|ServiceUnavailable|InternalError)\b", text)
    if failing:  # the endpoint answered, but its backend failed: transient, like an unreachable store
        status = failing.group(0).split("code: ")[-1].strip()
        return StoreUnreachable(f"the object store at {endpoint} is failing ({status}) for {remote.uri}: check that "
                                "the store is running and healthy, then run the command again")
    first = text.strip().splitlines()[0][:300] if text.strip() else type(exc).__name__
    return RemoteStoreError(f"the object store failed for {remote.uri}: {first}; check AWS_ENDPOINT_URL and the "
                            "credentials")


class WriterLease:
    """One writer per remote index across machines: a lease object put only if absent (or if its
    etag is still the one read), renewed by a thread while held. See the module docstring."""

    def __init__(self, remote: RemoteDB, purpose: str = "index", ttl: float | None = None, busy: Hint | None = None):
        self.remote = remote
        self.purpose = purpose
        self.busy = busy or Hint("busy")  # what an IndexLocked suggests (naming the root, where known)
        self.ttl = settings.get("lease_ttl", ttl)
        self._etag: str | None = None
        self._record: dict | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._told: str | None = None  # the lease version a standby last said it waits for
        self.lost = False

    @property
    def held(self) -> bool:
        return self._etag is not None

    def fresh(self) -> bool:
        """Held, not taken over, and more than :data:`FENCE_FRACTION` of the lease left by this clock: safe to commit."""
        record = self._record
        return (self.held and not self.lost and record is not None
                and float(record["expires"]) - time.time() > self.ttl * FENCE_FRACTION)

    def holder(self) -> dict | None:
        """The live lease's record (host, pid, purpose, since, expires), or None when free."""
        found = self._read()
        return found[0] if found and _live(found[0]) else None

    def _read(self) -> tuple[dict, str] | None:
        import obstore

        try:
            result = obstore.get(_object_store(self.remote), LEASE_FILE)
            data, etag = bytes(result.bytes()), result.meta["e_tag"]
        except FileNotFoundError as exc:
            if "NoSuchBucket" in str(exc):
                raise translate(exc, self.remote) from exc
            return None
        except Exception as exc:
            raise translate(exc, self.remote) from exc
        try:
            return json.loads(data), etag
        except ValueError:
            return {}, etag  # garbage: free, and taken over conditionally

    def _put(self, record: dict, etag: str | None) -> str | None:
        """Conditional put: create when ``etag`` is None, else replace only that version. None: lost the race."""
        import obstore
        from obstore.exceptions import AlreadyExistsError, PreconditionError

        mode = "create" if etag is None else {"e_tag": etag}
        try:
            return obstore.put(_object_store(self.remote), LEASE_FILE, json.dumps(record).encode(), mode=mode)["e_tag"]
        except (AlreadyExistsError, PreconditionError):
            return None
        except Exception as exc:
            raise translate(exc, self.remote) from exc

    def acquire(self, timeout: float | None = 0.0) -> "WriterLease":
        if self.held:
            return self
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            record = {"host": socket.gethostname(), "pid": os.getpid(), "purpose": self.purpose,
                      "since": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "expires": time.time() + self.ttl,
                      "token": uuid.uuid4().hex}
            current = self._read()
            if current is None or not _live(current[0]):
                etag = self._put(record, None if current is None else current[1])
                if etag is not None:
                    self._etag, self._record, self.lost = etag, record, False
                    self._start_renewal()
                    return self
                continue  # another writer won this round: read its lease
            if deadline is not None and time.monotonic() >= deadline:
                raise IndexLocked(self._busy_message(current[0]), hint=self.busy)
            if current[1] != self._told:  # a standby: say once per lease version whom it waits for
                self._told = current[1]
                logger.info("standing by: %s", self._busy_message(current[0]))
            time.sleep(min(0.5, max(0.05, (deadline or time.monotonic() + 1) - time.monotonic())))

    def _busy_message(self, info: dict) -> str:
        left = max(0.0, float(info.get("expires", 0)) - time.time())
        return (f"the index at {self.remote.uri} is being written by {holder_text(info)}: one writer per index; if it "
                f"died, its lease expires in {left:.0f} s")

    def _start_renewal(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._renew, args=(self._stop,), name="memsearch-lease", daemon=True)
        self._thread.start()

    def _renew(self, stop: threading.Event) -> None:
        while not stop.wait(self.ttl / 3):
            record = dict(self._record or {}, expires=time.time() + self.ttl)
            try:
                etag = self._put(record, self._etag)
            except RemoteStoreError:
                continue  # a transient store error: try again; the lease lasts two more periods
            if stop.is_set():
                return
            if etag is None:  # someone took it over (we were paused past the TTL)
                self.lost = True
                return
            self._etag, self._record = etag, record

    def release(self) -> None:
        if not self.held:
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        etag, self._etag = self._etag, None
        if not self.lost:
            try:
                self._put({"released": True, "expires": 0}, etag)  # only if still ours
            except RemoteStoreError:
                pass  # it expires by itself


def _live(record: dict) -> bool:
    if not record or record.get("released"):
        return False
    if float(record.get("expires", 0)) <= time.time():
        return False
    if record.get("host") == socket.gethostname() and isinstance(record.get("pid"), int):
        try:
            os.kill(record["pid"], 0)
        except ProcessLookupError:
            return False  # its holder died on this machine: free now, not at expiry
        except PermissionError:
            pass
    return True


class RemoteWriterLock(WriterLock):
    """The writer lock of a remote index: this machine's flock (in the state directory), then the lease."""

    def __init__(self, state_dir: str | os.PathLike[str], remote: RemoteDB, purpose: str = "index",
                 root: str | os.PathLike[str] | None = None):
        super().__init__(state_dir, purpose)  # no root: the state directory shares no read bits with it
        self.remote = remote
        self.busy = Hint("busy", root=root, db=remote.uri)
        self.lease = WriterLease(remote, purpose, busy=self.busy)

    def acquire(self, timeout: float | None = 0.0, purpose: str | None = None) -> "RemoteWriterLock":
        """A hold on this machine's flock; the first hold also takes the lease (counted like the flock)."""
        started = time.monotonic()
        super().acquire(timeout, purpose)
        if not self.lease.held:
            try:
                self.lease.purpose = self.purpose
                self.lease.acquire(None if timeout is None else max(0.0, timeout - (time.monotonic() - started)))
            except BaseException:
                super().release()
                raise
        return self

    def release(self) -> None:
        try:
            if self.held and self._holds <= 1:  # the last hold: give the lease back first
                self.lease.release()
        finally:
            super().release()

    def check(self) -> None:
        """Before a commit: :class:`IndexLocked` unless the lease is :meth:`~WriterLease.fresh` (it may have
        been taken over while this process was paused or cut off from the store: then it must not commit)."""
        if self.lease.held and not self.lease.fresh():
            raise IndexLocked(f"this writer no longer holds the lease of {self.remote.uri} (not renewed in time, or "
                              "taken over by a standby): it stops committing; restart it to stand by", hint=self.busy)
