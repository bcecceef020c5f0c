"""execgate's Python client (docs/clients.md): `ExecgateClient` (sync) and `AsyncExecgateClient` (asyncio), standard
library only. The same surface as the TypeScript `execgate/client`: execute and stream, tasks, plans, sandboxes,
ledger, files, uploads; errors by the server's codes; 429 and 503 retried after Retry-After within a budget."""
from ._http import Cancel, RetryPolicy
from .aio import AsyncExecgateClient, AsyncSandbox
from .client import ExecgateClient, Sandbox
from .errors import ExecgateError
from .types import ExecutionError, ExecutionEvent, ExecutionResult, OutputEvent, ResultEvent, RichOutputEvent, TransitionEvent

__all__ = [
    "AsyncExecgateClient", "AsyncSandbox", "Cancel", "ExecgateClient", "ExecgateError", "ExecutionError", "ExecutionEvent",
    "ExecutionResult", "OutputEvent", "ResultEvent", "RetryPolicy", "RichOutputEvent", "Sandbox", "TransitionEvent",
]
__version__ = "0.1.0"
