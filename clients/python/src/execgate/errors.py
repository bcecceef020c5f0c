"""Errors by the server's error codes (docs/errors.md): decide from `code`, never from the message."""
from typing import Optional

# Codes worth retrying, as the registry (src/core/errors.ts) marks them.
RETRYABLE_CODES = frozenset(
    {
        "EXECGATE_RATE_LIMITED",
        "EXECGATE_QUEUE_FULL",
        "EXECGATE_QUEUE_TIMEOUT",
        "EXECGATE_QUOTA_EXCEEDED",
        "EXECGATE_SHUTTING_DOWN",
        "EXECGATE_ADAPTER_UNAVAILABLE",
        "EXECGATE_BACKEND_FAILED",
        "EXECGATE_LEDGER_UNAVAILABLE",
        "EXECGATE_SANDBOX_LIMIT",
        "EXECGATE_SESSION_LIMIT",
        "EXECGATE_SERVER_UNREACHABLE",
    }
)


class ExecgateError(Exception):
    """What a client call raises: the server's error code, the HTTP status and whether trying again can help.

    `status` is 0 when no answer came (EXECGATE_SERVER_UNREACHABLE, EXECGATE_REQUEST_CANCELLED).
    """

    def __init__(self, code: str, message: str, status: int = 0, retry_after: Optional[float] = None, attempts: int = 1):
        if not message.startswith("[execgate]"):
            message = f"[execgate] [client] {message}"
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status
        self.retry_after = retry_after
        self.attempts = attempts
        self.retryable = code in RETRYABLE_CODES or status in (429, 503)

    def __repr__(self) -> str:
        return f"ExecgateError(code={self.code!r}, status={self.status}, attempts={self.attempts}, message={self.message!r})"
