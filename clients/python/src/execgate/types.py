"""The shapes the server answers (docs/api.md): ExecutionResult and the events as dataclasses, the fabric's records as
TypedDicts (their keys as the server spells them, camelCase)."""
from dataclasses import dataclass, field
from typing import Any, Dict, List, Literal, Optional, TypedDict, Union

Status = Literal[
    "ok", "error", "timeout", "memory_limit", "output_limit", "policy_violation", "invalid_request",
    "unavailable", "not_implemented", "cancelled", "internal_error",
]
Language = Literal["python", "javascript", "typescript", "bash"]


@dataclass
class ExecutionError:
    type: str
    message: str
    code: Optional[str] = None
    line: Optional[int] = None


@dataclass
class ExecutionResult:
    """Every outcome of a run: `status` says what happened, `message` says it in words for every status but ok."""

    status: Status
    adapter: str
    trace_id: str
    duration_ms: float
    stdout: str
    stderr: str
    truncated: bool = False
    value: Any = None
    error: Optional[ExecutionError] = None
    message: Optional[str] = None
    run_id: Optional[str] = None
    retry_after_ms: Optional[float] = None
    outputs: List[Dict[str, Any]] = field(default_factory=list)
    usage: Dict[str, Any] = field(default_factory=dict)
    #: The result as the server sent it (every field, camelCase).
    raw: Dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "ExecutionResult":
        error = data.get("error")
        return cls(
            status=data["status"],
            adapter=data.get("adapter", ""),
            trace_id=data.get("traceId", ""),
            duration_ms=data.get("durationMs", 0),
            stdout=data.get("stdout", ""),
            stderr=data.get("stderr", ""),
            truncated=data.get("truncated", False),
            value=data.get("value"),
            error=ExecutionError(
                type=error.get("type", ""), message=error.get("message", ""), code=error.get("code"), line=error.get("line"),
            ) if error else None,
            message=data.get("message"),
            run_id=data.get("runId"),
            retry_after_ms=data.get("retryAfterMs"),
            outputs=list(data.get("outputs") or []),
            usage=dict(data.get("usage") or {}),
            raw=data,
        )


@dataclass
class OutputEvent:
    """stdout or stderr as the run produced it."""

    type: Literal["stdout", "stderr"]
    chunk: str


@dataclass
class ResultEvent:
    """The run's result: always the last event of a stream."""

    result: ExecutionResult
    type: Literal["result"] = "result"


@dataclass
class RichOutputEvent:
    """One rich output (an image, a table, a display() item) when the code made it: the result's outputs[index].
    On a task's stream, `attempt` is the run that made it."""

    index: int
    output: Dict[str, Any]
    attempt: Optional[int] = None
    type: Literal["output"] = "output"


ExecutionEvent = Union[OutputEvent, RichOutputEvent, ResultEvent]


class TaskEvent(TypedDict):
    seq: int
    taskId: str
    at: str
    to: str
    reason: str
    attempt: int


@dataclass
class TransitionEvent:
    """A transition of a task's action log."""

    event: TaskEvent
    type: Literal["transition"] = "transition"


TaskStreamEvent = Union[TransitionEvent, OutputEvent, RichOutputEvent]


class Task(TypedDict, total=False):
    id: str
    tenant: str
    state: str
    request: Dict[str, Any]
    attempts: int
    reason: str
    result: Dict[str, Any]
    createdAt: str
    updatedAt: str


class PlanStep(TypedDict, total=False):
    id: str
    language: str
    code: str
    dependsOn: List[str]
    state: str
    result: Dict[str, Any]


class Plan(TypedDict, total=False):
    id: str
    state: str
    version: int
    steps: List[PlanStep]
    versions: List[Dict[str, Any]]
    revisions: List[Dict[str, Any]]


class PlanEvent(TypedDict, total=False):
    """An entry of the plan's log, or (type "output", no seq) a step's rich output as it was made."""

    seq: int
    planId: str
    type: Literal["plan", "step", "revision", "output"]
    to: str
    stepId: str
    taskId: str
    reason: str
    attempt: int
    index: int
    output: Dict[str, Any]


class SandboxInfo(TypedDict, total=False):
    id: str
    tenant: str
    adapter: str
    languages: List[str]
    createdAt: str
    expiresAt: str
    execs: int


class SavedArtifact(TypedDict):
    path: str
    sha256: str
    size: int
    mediaType: str


class _SandboxSnapshotFields(TypedDict):
    id: str
    sandboxId: str
    adapter: str
    files: int
    bytes: int
    createdAt: str
    reason: str


class SandboxSnapshot(_SandboxSnapshotFields, total=False):
    """A sandbox's files archived in the ledger; ``sandboxes.start(**{"from": snapshot["id"]})`` restores it.

    ``skipped`` lists paths the backend could not read and left out (docker: another exec user's private file in /tmp).
    """

    skipped: List[str]


class UploadedFile(TypedDict, total=False):
    """An upload (PUT /v1/files): its digest, size and when it was stored; `reused` when `put` found it already held."""

    sha256: str
    bytes: int
    createdAt: str
    reused: bool
