"""The synchronous client: `ExecgateClient(url, api_key)` with execute and stream, and the fabric (tasks, plans,
sandboxes, ledger, files, uploads), the same surface as the TypeScript `execgate/client` (docs/clients.md)."""
import hashlib
import json as jsonlib
import os
from typing import Any, Dict, Iterator, List, Optional, Union

from ._http import Cancel, Response, RetryPolicy, Transport
from ._routes import ROUTES
from .errors import ExecgateError
from .types import (
    ExecutionEvent, ExecutionResult, OutputEvent, Plan, PlanEvent, ResultEvent, RichOutputEvent, SandboxInfo, SandboxSnapshot,
    SavedArtifact, Task, TaskStreamEvent, TransitionEvent, UploadedFile,
)

FINAL_TASK_STATES = ("COMPLETED", "FAILED", "TERMINATED", "SUSPENDED")


def result_from_error(error: ExecgateError, trace_id: Optional[str] = None, adapter: str = "remote") -> ExecutionResult:
    """A call that got no result, as a result: execute and exec never raise, so an agent handles one shape."""
    if error.code == "EXECGATE_REQUEST_CANCELLED":
        status = "cancelled"
    elif error.status in (429, 503) or error.code == "EXECGATE_SERVER_UNREACHABLE":
        status = "unavailable"
    elif 400 <= error.status < 500:
        status = "invalid_request"
    else:
        status = "internal_error"
    raw: Dict[str, Any] = {
        "status": status, "adapter": adapter, "traceId": trace_id or "", "durationMs": 0, "stdout": "", "stderr": "", "truncated": False,
        "stdoutBytes": 0, "stderrBytes": 0, "usage": {}, "message": error.message,
        "error": {"type": "ExecgateError", "code": error.code, "message": error.message},
    }
    if error.retry_after is not None:
        raw["retryAfterMs"] = error.retry_after * 1000
    return ExecutionResult.from_json(raw)


class _Api:
    def __init__(self, transport: Transport):
        self._http = transport

    def _call(self, route: str, *, params: Optional[Dict[str, str]] = None, **options: Any) -> Response:
        method, template = ROUTES[route]
        return self._http.request(method, self._http.path(template, **(params or {})), **options)

    def _json(self, route: str, **options: Any) -> Any:
        return self._call(route, **options).json()


def _execution_events(response: Response) -> Iterator[ExecutionEvent]:
    for event, data, _id in response.events():
        parsed = jsonlib.loads(data)
        if event == "result":
            yield ResultEvent(ExecutionResult.from_json(parsed))
            return
        if event in ("stdout", "stderr"):
            yield OutputEvent(event, parsed.get("chunk", ""))
        elif event == "output" and parsed.get("output") is not None:
            yield RichOutputEvent(int(parsed.get("index", 0)), parsed["output"])
    raise ExecgateError("EXECGATE_RESPONSE_INVALID", "the event stream ended before its result event", 200)


def _follow(events: Iterator[ExecutionEvent], on_output: Any) -> ExecutionResult:
    for event in events:
        if isinstance(event, ResultEvent):
            return event.result
        if isinstance(event, OutputEvent):
            on_output(event.type, event.chunk)
    raise ExecgateError("EXECGATE_RESPONSE_INVALID", "the event stream ended before its result event", 200)


class Tasks(_Api):
    """Durable tasks (docs/tasks.md)."""

    def submit(self, spec: Dict[str, Any], idempotency_key: Optional[str] = None, cancel: Optional[Cancel] = None) -> Task:
        return self._json(
            "submit_task", json=spec, headers={"idempotency-key": idempotency_key} if idempotency_key else None, cancel=cancel)

    def get(self, task_id: str) -> Optional[Task]:
        try:
            return self._json("get_task", params={"id": task_id})
        except ExecgateError as error:
            if error.code == "EXECGATE_NOT_FOUND":
                return None
            raise

    def list(
            self, state: Optional[str] = None, intent_id: Optional[str] = None, limit: Optional[int] = None,
            cursor: Optional[str] = None, order: Optional[str] = None) -> Dict[str, Any]:
        return self._json("list_tasks", query={"state": state, "intentId": intent_id, "limit": limit, "cursor": cursor, "order": order})

    def cancel(self, task_id: str) -> Task:
        return self._json("cancel_task", params={"id": task_id})

    def suspend(self, task_id: str) -> Task:
        return self._json("suspend_task", params={"id": task_id})

    def resume(self, task_id: str, changes: Optional[Dict[str, Any]] = None) -> Task:
        return self._json("resume_task", params={"id": task_id}, json=changes or {})

    def events(self, task_id: str, after_seq: Optional[int] = None, cancel: Optional[Cancel] = None) -> Iterator[TaskStreamEvent]:
        """The task's action log, then its transitions and output live, until it ends."""
        headers = {"last-event-id": str(after_seq)} if after_seq else None
        for event, data, _id in self._call(
            "task_events", params={"id": task_id}, accept="text/event-stream", headers=headers, cancel=cancel).events():
            parsed = jsonlib.loads(data)
            if event == "transition":
                yield TransitionEvent(parsed)
            elif event in ("stdout", "stderr"):
                yield OutputEvent(event, parsed.get("chunk", ""))
            elif event == "output" and parsed.get("output") is not None:
                yield RichOutputEvent(int(parsed.get("index", 0)), parsed["output"], parsed.get("attempt"))

    def wait(self, task_id: str, cancel: Optional[Cancel] = None) -> Task:
        """Follows the task's events until it ends (or is suspended); answers it as it then is."""
        for event in self.events(task_id, cancel=cancel):
            if isinstance(event, TransitionEvent) and event.event["to"] in FINAL_TASK_STATES:
                break
        task = self.get(task_id)
        if task is None:
            raise ExecgateError("EXECGATE_NOT_FOUND", f"task {task_id} disappeared while waiting", 404)
        return task


class Plans(_Api):
    """Plans of steps (docs/plans.md)."""

    def run(self, spec: Dict[str, Any]) -> Plan:
        return self._json("run_plan", json=spec)

    def get(self, plan_id: str) -> Optional[Plan]:
        try:
            return self._json("get_plan", params={"id": plan_id})
        except ExecgateError as error:
            if error.code == "EXECGATE_NOT_FOUND":
                return None
            raise

    def list(
            self, state: Optional[str] = None, limit: Optional[int] = None, cursor: Optional[str] = None,
            order: Optional[str] = None) -> Dict[str, Any]:
        return self._json("list_plans", query={"state": state, "limit": limit, "cursor": cursor, "order": order})

    def cancel(self, plan_id: str) -> Plan:
        return self._json("cancel_plan", params={"id": plan_id})

    def suspend(self, plan_id: str) -> Plan:
        return self._json("suspend_plan", params={"id": plan_id})

    def resume(self, plan_id: str, changes: Optional[Dict[str, Any]] = None) -> Plan:
        """The changes go to the steps the plan held, each within the tenant's profile (else EXECGATE_RESUME_REFUSED)."""
        return self._json("resume_plan", params={"id": plan_id}, json=changes or {})

    def events(self, plan_id: str, after_seq: Optional[int] = None, cancel: Optional[Cancel] = None) -> Iterator[PlanEvent]:
        headers = {"last-event-id": str(after_seq)} if after_seq else None
        for _event, data, _id in self._call(
            "plan_events", params={"id": plan_id}, accept="text/event-stream", headers=headers, cancel=cancel).events():
            yield jsonlib.loads(data)

    def wait(self, plan_id: str, cancel: Optional[Cancel] = None) -> Plan:
        for event in self.events(plan_id, cancel=cancel):
            if event.get("type") == "plan" and event.get("to") in ("COMPLETED", "FAILED", "TERMINATED", "SUSPENDED"):
                break
        plan = self.get(plan_id)
        if plan is None:
            raise ExecgateError("EXECGATE_NOT_FOUND", f"plan {plan_id} disappeared while waiting", 404)
        return plan


class Sandbox(_Api):
    """A live sandbox on the server: exec never raises (every outcome is a result); file calls raise when refused."""

    def __init__(self, transport: Transport, info: SandboxInfo):
        super().__init__(transport)
        self.id = info["id"]
        self.info = info

    def exec(self, command: Union[str, Dict[str, Any]], on_output: Any = None, cancel: Optional[Cancel] = None) -> ExecutionResult:
        body = {"command": command} if isinstance(command, str) else command
        try:
            if on_output is None:
                return ExecutionResult.from_json(self._json("exec_sandbox", params={"id": self.id}, json=body, cancel=cancel))
            return _follow(
                _execution_events(self._call("exec_sandbox", params={"id": self.id}, json=body, accept="text/event-stream", cancel=cancel)),
                on_output)
        except ExecgateError as error:
            return result_from_error(error, body.get("traceId"), self.info.get("adapter", "remote"))

    def write_file(self, path: str, content: Union[str, bytes, None] = None, sha256: Optional[str] = None) -> None:
        data = content.encode() if isinstance(content, str) else content
        self._call(
            "write_sandbox_file", params={"id": self.id, "path": path}, body=data if sha256 is None else None,
            query={"sha256": sha256}).content()

    def read_file(self, path: str) -> bytes:
        return self._call("read_sandbox_file", params={"id": self.id, "path": path}, accept="*/*").content()

    def read_text(self, path: str) -> str:
        return self.read_file(path).decode("utf-8")

    def list_files(self) -> List[Dict[str, Any]]:
        return self._json("list_sandbox_files", params={"id": self.id})["files"]

    def delete_file(self, path: str) -> bool:
        try:
            self._call("delete_sandbox_file", params={"id": self.id, "path": path}).content()
            return True
        except ExecgateError as error:
            if error.code == "EXECGATE_NOT_FOUND":
                return False
            raise

    def save_artifact(self, path: str) -> SavedArtifact:
        return self._json("save_sandbox_artifact", params={"id": self.id}, json={"path": path})

    def snapshot(self) -> SandboxSnapshot:
        """Archives the workspace into the ledger; ``sandboxes.start(**{"from": snapshot["id"]})`` restores it on any node."""
        return self._json("snapshot_sandbox", params={"id": self.id})

    def stop(self) -> None:
        self._call("stop_sandbox", params={"id": self.id}).content()

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *_exc: Any) -> None:
        try:
            self.stop()
        except ExecgateError as error:
            if error.code != "EXECGATE_NOT_FOUND":
                raise


class Sandboxes(_Api):
    """Persistent sandboxes (docs/sandboxes.md). `with client.sandboxes.start() as sandbox:` stops it at the end."""

    def start(self, **options: Any) -> Sandbox:
        return Sandbox(self._http, self._json("start_sandbox", json=options))

    def get(self, sandbox_id: str) -> Optional[Sandbox]:
        try:
            return Sandbox(self._http, self._json("get_sandbox", params={"id": sandbox_id}))
        except ExecgateError as error:
            if error.code == "EXECGATE_NOT_FOUND":
                return None
            raise

    def list(self) -> List[SandboxInfo]:
        return self._json("list_sandboxes")["sandboxes"]

    def stop(self, sandbox_id: str) -> bool:
        try:
            self._call("stop_sandbox", params={"id": sandbox_id}).content()
            return True
        except ExecgateError as error:
            if error.code == "EXECGATE_NOT_FOUND":
                return False
            raise


class Ledger(_Api):
    """Provenance, lineage, exports and signed receipts of the tenant's runs (docs/ledger.md)."""

    def provenance(self, run_id: str) -> Dict[str, Any]:
        return self._json("provenance", params={"id": run_id})

    def record(self, run_id: str) -> Dict[str, Any]:
        return self._json("record", params={"id": run_id})

    def receipt(self, run_id: str) -> Dict[str, Any]:
        return self._json("receipt", params={"id": run_id})

    def plan_receipt(self, plan_id: str) -> Dict[str, Any]:
        return self._json("plan_receipt", params={"id": plan_id})

    def public_key(self) -> Dict[str, Any]:
        return self._json("public_key")

    def lineage(self, sha256: str, max_depth: Optional[int] = None, max_activities: Optional[int] = None) -> Dict[str, Any]:
        return self._json("lineage", params={"sha256": sha256}, query={"maxDepth": max_depth, "maxActivities": max_activities})

    def export(self, format: str = "prov-json", after_seq: Optional[int] = None, limit: Optional[int] = None) -> Any:
        return self._json("export_ledger", query={"format": format, "afterSeq": after_seq, "limit": limit})

    def verify(self) -> Dict[str, Any]:
        return self._json("verify_ledger")


class Files(_Api):
    """Artifacts by digest: the bytes runs and sandboxes stored in the ledger."""

    def get(self, sha256: str) -> bytes:
        return self._call("artifact", params={"sha256": sha256[7:] if sha256.startswith("sha256:") else sha256}, accept="*/*").content()

    def text(self, sha256: str) -> str:
        return self.get(sha256).decode("utf-8")


def _digest(sha256: str) -> str:
    return sha256[7:] if sha256.startswith("sha256:") else sha256


class Uploads(_Api):
    """Files uploaded once and named by digest after (PUT /v1/files, docs/data.md#uploads-by-digest). `put` hashes the
    bytes first and asks whether the tenant holds that digest; only when it does not are they sent (a file streamed
    from disk, never read whole). A request, task, plan step or sandbox then names it as {"path": ..., "sha256": ...}."""

    def put(self, source: Union[bytes, bytearray, str, "os.PathLike[str]"], sha256: Optional[str] = None) -> UploadedFile:
        """Uploads bytes, or the file at a path (a str is a path; pass text as bytes). Answers the upload with
        `reused: True` when the server already held those bytes for this tenant."""
        if isinstance(source, (bytes, bytearray)):
            data = bytes(source)
            digest = _digest(sha256) if sha256 else hashlib.sha256(data).hexdigest()
            held = self.get(digest)
            if held is not None:
                return {**held, "reused": True}
            return self._json("upload_file", body=data, query={"sha256": digest})
        with open(source, "rb") as file:
            if sha256:
                digest = _digest(sha256)
            else:
                hashed = hashlib.sha256()
                for block in iter(lambda: file.read(1 << 20), b""):
                    hashed.update(block)
                digest = hashed.hexdigest()
            held = self.get(digest)
            if held is not None:
                return {**held, "reused": True}
            size = os.fstat(file.fileno()).st_size
            return self._json("upload_file", body=file, query={"sha256": digest}, headers={"content-length": str(size)})

    def get(self, sha256: str) -> Optional[UploadedFile]:
        """The tenant's upload with this digest, or None (another tenant's digest answers alike)."""
        try:
            return self._json("get_upload", params={"sha256": _digest(sha256)})
        except ExecgateError as error:
            if error.code == "EXECGATE_FILE_NOT_FOUND":
                return None
            raise

    def list(self) -> Dict[str, Any]:
        """{"files": [...], "usedBytes": n, "quotaBytes": n}"""
        return self._json("list_uploads")

    def delete(self, sha256: str) -> bool:
        try:
            self._call("delete_upload", params={"sha256": _digest(sha256)}).content()
            return True
        except ExecgateError as error:
            if error.code == "EXECGATE_FILE_NOT_FOUND":
                return False
            raise

    @staticmethod
    def reference(path: str, uploaded: Dict[str, Any]) -> Dict[str, str]:
        """How a request names an upload: `"files": [client.uploads.reference("sales.csv", uploaded)]`."""
        return {"path": path, "sha256": uploaded["sha256"]}


class ExecgateClient(_Api):
    """execgate over HTTP. `execute` never raises: a refusal or a failed request is an ExecutionResult too (status
    `unavailable` with retry_after_ms, `invalid_request`, `cancelled`…) whose `error.code` is the registry's. The other
    calls raise ExecgateError with that code. A 429 or 503 is retried after its Retry-After within the retry budget."""

    def __init__(
            self, url: str, api_key: Optional[str] = None, retry: Optional[RetryPolicy] = None, timeout: float = 300.0,
            headers: Optional[Dict[str, str]] = None):
        super().__init__(Transport(url, api_key, retry, timeout, headers))
        self.tasks = Tasks(self._http)
        self.plans = Plans(self._http)
        self.sandboxes = Sandboxes(self._http)
        self.ledger = Ledger(self._http)
        self.files = Files(self._http)
        self.uploads = Uploads(self._http)

    def execute(
            self, request: Dict[str, Any], on_output: Any = None, profile: Optional[str] = None, cancel: Optional[Cancel] = None,
            retry: Optional[RetryPolicy] = None) -> ExecutionResult:
        headers = {"x-execgate-profile": profile} if profile else None
        try:
            if on_output is None:
                return ExecutionResult.from_json(self._json("execute", json=request, headers=headers, cancel=cancel, retry=retry))
            return _follow(self.stream(request, profile=profile, cancel=cancel, retry=retry, _raise=True), on_output)
        except ExecgateError as error:
            return result_from_error(error, request.get("traceId"), request.get("adapter") or "remote")

    def stream(
            self, request: Dict[str, Any], profile: Optional[str] = None, cancel: Optional[Cancel] = None,
            retry: Optional[RetryPolicy] = None, _raise: bool = False) -> Iterator[ExecutionEvent]:
        """Output as the run produces it, then a ResultEvent (a failed request too, as a result) last."""
        headers = {"x-execgate-profile": profile} if profile else None
        try:
            yield from _execution_events(self._call(
                "execute", json=request, headers=headers, accept="text/event-stream", cancel=cancel, retry=retry))
        except ExecgateError as error:
            if _raise:
                raise
            yield ResultEvent(result_from_error(error, request.get("traceId"), request.get("adapter") or "remote"))

    def validate(self, code: str, language: str, adapter: Optional[str] = None) -> Dict[str, Any]:
        return self._json("validate", json={"code": code, "language": language, **({"adapter": adapter} if adapter else {})})

    def languages(self, retry: Optional[RetryPolicy] = None) -> List[str]:
        return self._json("languages", retry=retry)["languages"]

    def close_session(self, session_id: str) -> bool:
        try:
            self._call("close_session", params={"id": session_id}).content()
            return True
        except ExecgateError as error:
            if error.code == "EXECGATE_NOT_FOUND":
                return False
            raise
