"""Library builds and large searches spread over a Dask distributed cluster (``docs/distributed.md``).

    python -m prism library build --local-cluster [--workers N] [--gpus 0,1]
    python -m prism library build --scheduler tcp://host:8786     # workers: dask worker ... --resources GPU=1

A build is a list of :class:`Job` s, one per library entry, run as two stages of Dask tasks:

* ``search``: one CPU task per distinct program structure (the search cache is keyed by it, so the
  shapes of a program share it); inside it, mapping instantiation spreads over the cluster's workers;
* ``tune``: one task per entry on a worker holding the ``GPU`` resource, after its structure's search.

Tasks are pure functions of their job (keys are content keys), retried when they raise
(``retries``) and rescheduled by Dask when their worker dies. Results come back to the client as they
finish (``as_completed``), where the caller stores them; a failed task fails its entry, never the
build. Workers share results through the caches on a shared ``PRISM_CACHE_DIR`` (atomic writes).

Dask is an optional extra (``pip install prism[distributed]``): this module imports it only inside
:func:`connect`, :func:`local_cluster` and the task wrappers, and without a scheduler nothing here runs.
"""

from __future__ import annotations

import argparse
import contextlib
import enum
import functools
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from prism.errors import OptionError
from prism.progress import StageBar

if TYPE_CHECKING:
    from prism.search.parallel import ChunkMap, Mapped
    from prism.search.sgraph import SGraph

log = logging.getLogger(__name__)

GPU = "GPU"  # the worker resource a tuning task holds: `dask worker ... --resources GPU=1`
RETRIES = 2  # a task that raises is run again this often before its entry fails
POLL_S = 0.25  # how often the progress bars look at the scheduler while waiting
BATCHES_PER_THREAD = 4  # a spread search's mapping: tasks per worker thread (balance vs round trips)


class Stage(enum.Enum):
    SEARCH = "search"  # CPU: search + mapping + verification of one program structure
    TUNE = "tune"  # GPU: tuning (and the source check) of one entry


@dataclass(frozen=True)
class Job[T]:
    """One unit of a distributed build (a library entry)."""

    name: str  # reported per job: 'built' or why it failed
    group: str  # jobs of one group share one search task (the program's size-free structure key)
    key: str  # content key of the tuning task: equal keys are equal work
    search: Callable[[], object]  # the group's CPU task (run once per group); its result is only waited for
    tune: Callable[[], T]  # the job's GPU task; its result goes to the caller


@dataclass(frozen=True)
class ClusterOptions:
    """Where a build runs: an existing scheduler, or a local cluster started for it."""

    scheduler: str | None = None  # address of a running `dask scheduler`
    workers: int = 2  # local cluster: worker processes (one thread each)
    gpus: tuple[str | None, ...] = (None,)  # local cluster: CUDA_VISIBLE_DEVICES of each GPU worker
    # (None: leave it); the first len(gpus) workers hold the GPU resource, the others search only


# ------------------------------------------------------------------------------ cluster


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("distributed (Dask; pip install 'prism[distributed]')")
    where = g.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="ADDRESS", default=None,
                       help="run the tasks on this Dask scheduler's workers (GPU workers: --resources GPU=1)")
    where.add_argument("--local-cluster", action="store_true", help="start a Dask cluster of worker processes here")
    g.add_argument("--workers", type=_positive, default=2, help="local cluster: worker processes (default 2)")
    g.add_argument("--gpus", type=_devices, default=None,
                   help="local cluster: one GPU worker per listed device, e.g. 0,1 (default: one worker, this GPU)")


def options(args: argparse.Namespace) -> ClusterOptions | None:
    """The cluster the command line asks for, or None (build in this process, no Dask)."""
    if args.scheduler:
        return ClusterOptions(scheduler=args.scheduler)
    if not args.local_cluster:
        return None
    gpus: tuple[str | None, ...] = args.gpus if args.gpus is not None else (None,)
    if len(gpus) > args.workers:
        raise OptionError(f"--gpus {','.join(g or '' for g in gpus)}: {len(gpus)} GPU workers but --workers {args.workers}")
    return ClusterOptions(workers=args.workers, gpus=gpus)


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return int(text)


def _devices(text: str) -> tuple[str | None, ...]:
    devices = tuple(d.strip() for d in text.split(","))
    if not all(d.isdigit() for d in devices):
        raise argparse.ArgumentTypeError(f"{text!r} must list CUDA device numbers, e.g. 0,1")
    return devices


@contextlib.contextmanager
def connect(opts: ClusterOptions | None) -> Iterator[Any]:
    """A ``dask.distributed.Client`` for ``opts`` (closed, with any local cluster, on exit), or None."""
    if opts is None:
        yield None
        return
    try:  # the optional dependency boundary: Dask is needed only here and in the tasks
        import dask
        from distributed import Client
    except ImportError as e:
        raise OptionError(f"a distributed build needs Dask: pip install 'prism[distributed]' ({e})") from e
    with dask.config.set({"distributed.worker.daemon": False}):  # the tuner forks workers of its own
        cluster = local_cluster(opts.workers, opts.gpus) if opts.scheduler is None else None
        try:
            with Client(opts.scheduler if cluster is None else cluster) as client:
                if (link := dashboard(client)) is not None:
                    log.info("Dask dashboard: %s", link)
                yield client
        finally:
            if cluster is not None:
                cluster.close()


def local_cluster(workers: int, gpus: Sequence[str | None] = (None,)) -> Any:
    """A Dask cluster of ``workers`` processes on this machine (one thread each); worker i < len(gpus)
    holds the ``GPU`` resource, with ``CUDA_VISIBLE_DEVICES=gpus[i]`` unless that is None."""
    from distributed import Nanny, Scheduler, SpecCluster  # optional dependency (see connect)

    def worker(i: int) -> dict[str, Any]:
        gpu = i < len(gpus)
        env = {"CUDA_VISIBLE_DEVICES": gpus[i]} if gpu and gpus[i] is not None else {}
        return {"cls": Nanny, "options": {"nthreads": 1, "resources": {GPU: 1} if gpu else {}, "env": env}}

    return SpecCluster(scheduler={"cls": Scheduler, "options": {"dashboard_address": ":0"}},
                       workers={f"prism-{i}": worker(i) for i in range(workers)}, silence_logs=logging.WARNING,
                       name="prism")


def dashboard(client: Any) -> str | None:
    """The Dask dashboard's address, when the scheduler serves one (its plots need bokeh)."""
    return str(client.dashboard_link) if "dashboard" in client.scheduler_info().get("services", {}) else None


# ------------------------------------------------------------------------------ build


def run_jobs[T](client: Any, jobs: Sequence[Job[T]], on_result: Callable[[Job[T], T], None], *,
             progress: bool = True, retries: int = RETRIES, resource: str = GPU) -> dict[str, str]:
    """Run ``jobs`` on ``client``'s workers; call ``on_result(job, result)`` here as each tuning task
    finishes. Return {job name: why it failed} for the jobs that failed (a search failure fails the
    jobs of its group); every other job has been passed to ``on_result``."""
    searches: dict[str, Any] = {}
    for job in jobs:
        if job.group not in searches:
            searches[job.group] = client.submit(_search_task, job.search, key=f"prism-search-{job.group}",
                                                retries=retries)
    tunes = {f"prism-tune-{job.key}": job for job in jobs}
    futures = [client.submit(_tune_task, job.tune, searches[job.group], key=key, retries=retries,
                             resources={resource: 1}) for key, job in tunes.items()]
    if jobs and not any(resource in w.get("resources", {}) for w in client.scheduler_info()["workers"].values()):
        log.warning("no worker holds the %r resource yet: tuning waits for one (dask worker --resources %s=1)",
                    resource, resource)
    failed: dict[str, str] = {}
    with _Bars(client, searches, tunes, enabled=progress) as bars:
        for fut in _completed([*searches.values(), *futures], bars):
            why = _failure(fut)
            if (done := tunes.get(fut.key)) is None:
                bars.finished(Stage.SEARCH, why)
                continue
            if why is None:
                try:
                    on_result(done, fut.result())
                except Exception as e:  # storing one result must not stop the others
                    why = f"{type(e).__name__}: {e}"
            if why is not None:
                log.error("library entry %s failed: %s", done.name, why)
                failed[done.name] = why
            bars.finished(Stage.TUNE, why)
            fut.release()
    return failed


def _completed(futures: Sequence[Any], bars: _Bars) -> Iterator[Any]:
    """``futures`` as they finish (with the bars' running counts refreshed while waiting)."""
    from distributed import as_completed  # optional dependency (see connect)

    pending = as_completed(futures)
    while not pending.is_empty():
        batch = pending.next_batch(block=False)
        yield from batch
        if not batch:
            bars.refresh()
            time.sleep(POLL_S)


def _failure(fut: Any) -> str | None:
    if fut.status == "finished":
        return None
    if fut.status == "cancelled":
        return "cancelled"
    err = fut.exception()
    return f"{type(err).__name__}: {err}"


def _search_task(search: Callable[[], object]) -> None:
    """A group's search on a worker, its mapping instantiation spread over the cluster."""
    with _spread(_from_task):
        search()


def _tune_task[T](tune: Callable[[], T], searched: None) -> T:
    """A job's tuning on a GPU worker (``searched``: its group's search task, done: the cache is warm)."""
    return tune()


class _Bars:
    """Per stage: a bar of finished tasks, with running and failed counts beside it."""

    def __init__(self, client: Any, searches: dict[str, Any], tunes: dict[str, Any], enabled: bool) -> None:
        self.client = client
        self.keys = {Stage.SEARCH: {f.key for f in searches.values()}, Stage.TUNE: set(tunes)}
        self.failed = dict.fromkeys(Stage, 0)
        self.bars = {s: StageBar(s.value, total=len(self.keys[s]), unit=" tasks" if s is Stage.SEARCH else " entries",
                                 enabled=enabled and bool(self.keys[s]), every=0.0) for s in Stage}
        self.enabled = enabled

    def finished(self, stage: Stage, why: str | None) -> None:
        self.failed[stage] += why is not None
        self.bars[stage].advance(1)
        self.refresh()

    def refresh(self) -> None:
        """Running: the stage's tasks the scheduler has handed to workers (executing or queued there)."""
        if not self.enabled:
            return
        running = {k for keys in self.client.processing().values() for k in keys}
        for stage, bar in self.bars.items():
            bar.advance(0, running=len(running & self.keys[stage]), failed=self.failed[stage])

    def __enter__(self) -> _Bars:
        return self

    def __exit__(self, *exc: object) -> None:
        for bar in self.bars.values():
            bar.close()


# ------------------------------------------------------------------------------ one large search


@contextlib.contextmanager
def spread_search(client: Any) -> Iterator[None]:
    """Searches run in this block instantiate their candidates' mappings on ``client``'s workers
    (chunks in candidate order: the outcome is the one of a single process)::

        with Client("tcp://host:8786") as client, spread_search(client):
            prism.search_and_verify(graph)
    """
    with _spread(functools.partial(_map_chunks, client)):
        yield


@contextlib.contextmanager
def _spread(chunk_map: ChunkMap) -> Iterator[None]:
    from prism.search import parallel  # the search needs z3: a GPU-only worker never gets here

    with parallel.mapping_on(chunk_map):
        yield


def _map_chunks(client: Any, chunks: list[list[SGraph]], deadline: float) -> Iterator[Mapped]:
    """The chunks in a few runs per worker thread: fewer round trips through the scheduler than a task
    per chunk (on a loaded machine each cost about 0.1 s; docs/distributed.md)."""
    threads = max(1, sum(client.nthreads().values()))
    size = -(-len(chunks) // (BATCHES_PER_THREAD * threads))
    runs = [chunks[i:i + size] for i in range(0, len(chunks), size)]
    futures = client.map(_run_chunks, runs, deadline=deadline, pure=False, retries=RETRIES)
    for fut in futures:
        yield from fut.result()


def _run_chunks(chunks: list[list[SGraph]], deadline: float) -> list[Mapped]:
    from prism.search.parallel import run_chunk  # the search needs z3 (see _spread)

    return [run_chunk(chunk, deadline) for chunk in chunks]


def _from_task(chunks: list[list[SGraph]], deadline: float) -> Iterator[Mapped]:
    """Mapping chunks submitted from inside a task: ``worker_client`` leaves the worker's thread slot
    free while this one waits, so a one-worker cluster does not deadlock."""
    from distributed import worker_client  # optional dependency (see connect)

    with worker_client() as client:
        yield from _map_chunks(client, chunks, deadline)
