"""The asyncio client: the same surface as ExecgateClient, every call awaitable and every stream an async iterator.

Each call runs the synchronous client in a worker thread (asyncio.to_thread), so it needs nothing beyond the standard
library. Cancelling the awaiting task closes the call's connection at once (the server then cancels the run) and
raises CancelledError, as asyncio code expects; a `Cancel` token passed as `cancel=` gives the synchronous client's
behaviour instead (a `cancelled` result, or ExecgateError EXECGATE_REQUEST_CANCELLED).
"""
import asyncio
import threading
from typing import Any, AsyncIterator, Callable, Dict, Iterator, List, Optional, TypeVar

from ._http import Cancel, RetryPolicy
from .client import ExecgateClient, Files, Ledger, Plans, Sandbox, Sandboxes, Tasks, Uploads
from .types import ExecutionEvent, ExecutionResult, Plan, PlanEvent, SandboxInfo, SandboxSnapshot, SavedArtifact, Task, TaskStreamEvent

T = TypeVar("T")


async def _run(call: Callable[..., T], *args: Any, cancel: Optional[Cancel] = None, **kwargs: Any) -> T:
    token = cancel or Cancel()
    try:
        return await asyncio.to_thread(call, *args, cancel=token, **kwargs)
    except asyncio.CancelledError:
        token.cancel("the asyncio task was cancelled")
        raise


async def _plain(call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    return await asyncio.to_thread(call, *args, **kwargs)


async def _iterate(produce: Callable[[Cancel], Iterator[T]], cancel: Optional[Cancel]) -> AsyncIterator[T]:
    """A synchronous generator, pumped by a thread into the event loop; leaving the loop early closes its connection."""
    token = cancel or Cancel()
    loop = asyncio.get_running_loop()
    queue: "asyncio.Queue[tuple]" = asyncio.Queue()

    def put(item: tuple) -> None:
        try:
            loop.call_soon_threadsafe(queue.put_nowait, item)
        except RuntimeError:
            pass  # the loop closed: nobody is listening any more

    def pump() -> None:
        try:
            for item in produce(token):
                put(("item", item))
            put(("end", None))
        except BaseException as error:  # noqa: BLE001 - handed to the consumer, which raises it
            put(("error", error))

    thread = threading.Thread(target=pump, name="execgate-stream", daemon=True)
    thread.start()
    finished = False
    try:
        while True:
            kind, value = await queue.get()
            if kind == "item":
                yield value
            elif kind == "end":
                finished = True
                return
            else:
                finished = True
                raise value
    finally:
        if not finished:
            token.cancel("the consumer stopped reading")


class AsyncTasks:
    def __init__(self, tasks: Tasks):
        self._tasks = tasks

    async def submit(self, spec: Dict[str, Any], idempotency_key: Optional[str] = None, cancel: Optional[Cancel] = None) -> Task:
        return await _run(self._tasks.submit, spec, idempotency_key, cancel=cancel)

    async def get(self, task_id: str) -> Optional[Task]:
        return await _plain(self._tasks.get, task_id)

    async def list(self, **filters: Any) -> Dict[str, Any]:
        return await _plain(self._tasks.list, **filters)

    async def cancel(self, task_id: str) -> Task:
        return await _plain(self._tasks.cancel, task_id)

    async def suspend(self, task_id: str) -> Task:
        return await _plain(self._tasks.suspend, task_id)

    async def resume(self, task_id: str, changes: Optional[Dict[str, Any]] = None) -> Task:
        return await _plain(self._tasks.resume, task_id, changes)

    def events(self, task_id: str, after_seq: Optional[int] = None, cancel: Optional[Cancel] = None) -> AsyncIterator[TaskStreamEvent]:
        return _iterate(lambda token: self._tasks.events(task_id, after_seq, cancel=token), cancel)

    async def wait(self, task_id: str, cancel: Optional[Cancel] = None) -> Task:
        return await _run(self._tasks.wait, task_id, cancel=cancel)


class AsyncPlans:
    def __init__(self, plans: Plans):
        self._plans = plans

    async def run(self, spec: Dict[str, Any]) -> Plan:
        return await _plain(self._plans.run, spec)

    async def get(self, plan_id: str) -> Optional[Plan]:
        return await _plain(self._plans.get, plan_id)

    async def list(self, **filters: Any) -> Dict[str, Any]:
        return await _plain(self._plans.list, **filters)

    async def cancel(self, plan_id: str) -> Plan:
        return await _plain(self._plans.cancel, plan_id)

    async def suspend(self, plan_id: str) -> Plan:
        return await _plain(self._plans.suspend, plan_id)

    async def resume(self, plan_id: str, changes: Optional[Dict[str, Any]] = None) -> Plan:
        return await _plain(self._plans.resume, plan_id, changes)

    def events(self, plan_id: str, after_seq: Optional[int] = None, cancel: Optional[Cancel] = None) -> AsyncIterator[PlanEvent]:
        return _iterate(lambda token: self._plans.events(plan_id, after_seq, cancel=token), cancel)

    async def wait(self, plan_id: str, cancel: Optional[Cancel] = None) -> Plan:
        return await _run(self._plans.wait, plan_id, cancel=cancel)


class AsyncSandbox:
    def __init__(self, sandbox: Sandbox):
        self._sandbox = sandbox
        self.id = sandbox.id
        self.info: SandboxInfo = sandbox.info

    async def exec(self, command: Any, on_output: Any = None, cancel: Optional[Cancel] = None) -> ExecutionResult:
        return await _run(self._sandbox.exec, command, on_output, cancel=cancel)

    async def write_file(self, path: str, content: Any = None, sha256: Optional[str] = None) -> None:
        await _plain(self._sandbox.write_file, path, content, sha256)

    async def read_file(self, path: str) -> bytes:
        return await _plain(self._sandbox.read_file, path)

    async def read_text(self, path: str) -> str:
        return await _plain(self._sandbox.read_text, path)

    async def list_files(self) -> List[Dict[str, Any]]:
        return await _plain(self._sandbox.list_files)

    async def delete_file(self, path: str) -> bool:
        return await _plain(self._sandbox.delete_file, path)

    async def save_artifact(self, path: str) -> SavedArtifact:
        return await _plain(self._sandbox.save_artifact, path)

    async def snapshot(self) -> SandboxSnapshot:
        return await _plain(self._sandbox.snapshot)

    async def stop(self) -> None:
        await _plain(self._sandbox.stop)

    async def __aenter__(self) -> "AsyncSandbox":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await _plain(self._sandbox.__exit__, *exc)


class AsyncSandboxes:
    def __init__(self, sandboxes: Sandboxes):
        self._sandboxes = sandboxes

    async def start(self, **options: Any) -> AsyncSandbox:
        return AsyncSandbox(await _plain(self._sandboxes.start, **options))

    async def get(self, sandbox_id: str) -> Optional[AsyncSandbox]:
        sandbox = await _plain(self._sandboxes.get, sandbox_id)
        return AsyncSandbox(sandbox) if sandbox else None

    async def list(self) -> List[SandboxInfo]:
        return await _plain(self._sandboxes.list)

    async def stop(self, sandbox_id: str) -> bool:
        return await _plain(self._sandboxes.stop, sandbox_id)


class _AsyncProxy:
    """Every method of the wrapped synchronous object, awaitable."""

    def __init__(self, target: Any):
        self._target = target

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._target, name)

        async def call(*args: Any, **kwargs: Any) -> Any:
            return await _plain(method, *args, **kwargs)

        return call


class AsyncExecgateClient:
    """execgate over HTTP for asyncio code: `await client.execute(...)`, `async for event in client.stream(...)`."""

    def __init__(
            self, url: str, api_key: Optional[str] = None, retry: Optional[RetryPolicy] = None, timeout: float = 300.0,
            headers: Optional[Dict[str, str]] = None):
        self.sync = ExecgateClient(url, api_key, retry, timeout, headers)
        self.tasks = AsyncTasks(self.sync.tasks)
        self.plans = AsyncPlans(self.sync.plans)
        self.sandboxes = AsyncSandboxes(self.sync.sandboxes)
        self.ledger: Ledger = _AsyncProxy(self.sync.ledger)  # type: ignore[assignment]
        self.files: Files = _AsyncProxy(self.sync.files)  # type: ignore[assignment]
        self.uploads: Uploads = _AsyncProxy(self.sync.uploads)  # type: ignore[assignment]

    async def execute(
            self, request: Dict[str, Any], on_output: Any = None, profile: Optional[str] = None, cancel: Optional[Cancel] = None,
            retry: Optional[RetryPolicy] = None) -> ExecutionResult:
        return await _run(self.sync.execute, request, on_output, profile, cancel=cancel, retry=retry)

    def stream(
            self, request: Dict[str, Any], profile: Optional[str] = None, cancel: Optional[Cancel] = None,
            retry: Optional[RetryPolicy] = None) -> AsyncIterator[ExecutionEvent]:
        return _iterate(lambda token: self.sync.stream(request, profile=profile, cancel=token, retry=retry), cancel)

    async def validate(self, code: str, language: str, adapter: Optional[str] = None) -> Dict[str, Any]:
        return await _plain(self.sync.validate, code, language, adapter)

    async def languages(self, retry: Optional[RetryPolicy] = None) -> List[str]:
        return await _plain(self.sync.languages, retry)

    async def close_session(self, session_id: str) -> bool:
        return await _plain(self.sync.close_session, session_id)
