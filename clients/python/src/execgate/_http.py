"""One HTTP exchange with an execgate server, on the standard library's http.client: auth, retries of 429 and 503
after Retry-After within a budget, errors by code, Server-Sent Events, and cancellation from another thread."""
import email.utils
import http.client
import json as jsonlib
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from typing import Any, BinaryIO, Dict, Iterator, Optional, Tuple, Union
from urllib.parse import quote, urlencode, urlsplit

from .errors import ExecgateError


@dataclass(frozen=True)
class RetryPolicy:
    """How a 429 or a 503 is retried: after the server's Retry-After, while the attempts and the budget last."""

    #: Requests in all, the first included; 1 turns retrying off.
    max_attempts: int = 4
    #: No retry starts later than this many seconds after the call began; a longer Retry-After ends the call at once.
    budget: float = 30.0
    #: The wait when the server gives no Retry-After, doubled at each retry (seconds).
    fallback_delay: float = 0.5


class Cancel:
    """A cancellation token: pass it as `cancel=` and call `cancel()` from any thread (or a signal handler's thread) to
    end the call at once; the server sees the connection close and cancels the run."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._connection: Optional[http.client.HTTPConnection] = None
        self.reason = "cancelled"

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self, reason: str = "cancelled") -> None:
        with self._lock:
            self.reason = reason
            self._event.set()
            connection = self._connection
        if connection is not None and connection.sock is not None:
            try:
                connection.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def wait(self, seconds: float) -> bool:
        """Sleeps up to `seconds`; True when cancelled meanwhile."""
        return self._event.wait(seconds)

    def _attach(self, connection: Optional[http.client.HTTPConnection]) -> None:
        with self._lock:
            self._connection = connection
        if connection is not None and self.cancelled:
            self.cancel(self.reason)


def parse_retry_after(header: Optional[str]) -> Optional[float]:
    """Retry-After as seconds: delta-seconds or an HTTP date; None when absent or unreadable."""
    if not header:
        return None
    header = header.strip()
    try:
        return max(0.0, float(header))
    except ValueError:
        pass
    try:
        return max(0.0, email.utils.parsedate_to_datetime(header).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


class Response:
    """A 2xx answer, open: read it with json(), content() or events(); close() when done."""

    def __init__(self, connection: http.client.HTTPConnection, response: http.client.HTTPResponse, cancel: Optional[Cancel]):
        self.connection = connection
        self.response = response
        self.status = response.status
        self.cancel = cancel

    def content(self) -> bytes:
        try:
            return self.response.read()
        finally:
            self.close()

    def json(self) -> Any:
        data = self.content()
        if self.status == 204 or not data:
            return None
        try:
            return jsonlib.loads(data)
        except ValueError as error:
            raise ExecgateError(
                "EXECGATE_RESPONSE_INVALID",
                f"the server answered HTTP {self.status} with a body that is not JSON: {data[:120]!r}", self.status) from error

    def events(self) -> Iterator[Tuple[str, str, Optional[str]]]:
        """The body's Server-Sent Events as (event, data, id); closing the generator closes the connection."""
        event, data, last_id = "", [], None
        try:
            while True:
                raw = self.response.readline()
                if not raw:
                    break
                line = raw.decode("utf-8").rstrip("\r\n")
                if line == "":
                    if data:
                        yield event or "message", "\n".join(data), last_id
                    event, data = "", []
                    continue
                if line.startswith(":"):
                    continue
                name, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if name == "event":
                    event = value
                elif name == "data":
                    data.append(value)
                elif name == "id":
                    last_id = value
        except (OSError, http.client.HTTPException) as error:
            if self.cancel is not None and self.cancel.cancelled:
                raise ExecgateError("EXECGATE_REQUEST_CANCELLED", f"the request was cancelled: {self.cancel.reason}") from error
            raise ExecgateError("EXECGATE_SERVER_UNREACHABLE", f"the connection to the server broke: {error}") from error
        finally:
            self.close()

    def close(self) -> None:
        if self.cancel is not None:
            self.cancel._attach(None)
        self.connection.close()


class Transport:
    def __init__(
            self, url: str, api_key: Optional[str] = None, retry: Optional[RetryPolicy] = None, timeout: float = 300.0,
            headers: Optional[Dict[str, str]] = None):
        if not url:
            raise ValueError("[execgate] [client] url is required, e.g. http://127.0.0.1:8080")
        parts = urlsplit(url.rstrip("/"))
        self.base = url.rstrip("/")
        self.scheme = parts.scheme
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.prefix = parts.path
        self.api_key = api_key
        self.retry = retry or RetryPolicy()
        self.timeout = timeout
        self.headers = dict(headers or {})

    def path(self, template: str, **params: str) -> str:
        for key, value in params.items():
            encoded = "/".join(quote(part, safe="") for part in value.split("/") if part) if key == "path" else quote(value, safe="")
            template = template.replace("{" + key + "}", encoded)
        return template

    def _connection(self) -> http.client.HTTPConnection:
        if self.scheme == "https":
            return http.client.HTTPSConnection(self.host, self.port, timeout=self.timeout, context=ssl.create_default_context())
        return http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)

    def request(self, method: str, path: str, *, query: Optional[Dict[str, Any]] = None, json: Any = None,
                body: Optional[Union[bytes, BinaryIO]] = None,
                headers: Optional[Dict[str, str]] = None, accept: str = "application/json", cancel: Optional[Cancel] = None,
                retry: Optional[RetryPolicy] = None) -> Response:
        retry = retry or self.retry
        target = self.prefix + path
        query = {key: value for key, value in (query or {}).items() if value is not None}
        if query:
            target += "?" + urlencode({key: str(value) for key, value in query.items()})
        payload = jsonlib.dumps(json).encode() if json is not None else body
        all_headers = {"accept": accept, **self.headers, **(headers or {})}
        if self.api_key:
            all_headers["authorization"] = f"Bearer {self.api_key}"
        if json is not None:
            all_headers["content-type"] = "application/json"
        elif body is not None:
            all_headers["content-type"] = "application/octet-stream"
        started = time.monotonic()
        attempt = 0
        while True:
            attempt += 1
            if cancel is not None and cancel.cancelled:
                raise ExecgateError("EXECGATE_REQUEST_CANCELLED", f"the request was cancelled: {cancel.reason}", attempts=attempt - 1 or 1)
            if hasattr(payload, "seek"):
                payload.seek(0)  # a file body is read again from its start when a 429 or 503 is retried
            connection = self._connection()
            try:
                if cancel is not None:
                    connection.connect()
                    cancel._attach(connection)
                connection.request(method, target, body=payload, headers=all_headers)
                response = connection.getresponse()
            except (OSError, http.client.HTTPException) as error:
                connection.close()
                if cancel is not None:
                    cancel._attach(None)
                    if cancel.cancelled:
                        raise ExecgateError(
                            "EXECGATE_REQUEST_CANCELLED", f"the request was cancelled: {cancel.reason}", attempts=attempt) from error
                raise ExecgateError(
                    "EXECGATE_SERVER_UNREACHABLE", f"cannot reach the execgate server at {self.base}: {error}", attempts=attempt) from error
            if 200 <= response.status < 300:
                return Response(connection, response, cancel)
            retry_after = parse_retry_after(response.getheader("retry-after"))
            error = self._error(response, attempt, retry_after)
            connection.close()
            if cancel is not None:
                cancel._attach(None)
            if response.status not in (429, 503) or attempt >= retry.max_attempts:
                raise error
            delay = retry_after if retry_after is not None else retry.fallback_delay * 2 ** (attempt - 1)
            if time.monotonic() + delay - started > retry.budget:
                raise error
            if cancel is not None:
                if cancel.wait(delay):
                    raise ExecgateError("EXECGATE_REQUEST_CANCELLED", f"the request was cancelled: {cancel.reason}", attempts=attempt)
            else:
                time.sleep(delay)

    @staticmethod
    def _error(response: http.client.HTTPResponse, attempts: int, retry_after: Optional[float]) -> ExecgateError:
        text = response.read().decode("utf-8", "replace")
        try:
            body = jsonlib.loads(text)
        except ValueError:
            body = None
        if retry_after is None and isinstance(body, dict) and isinstance(body.get("retryAfterMs"), (int, float)):
            retry_after = body["retryAfterMs"] / 1000
        problem = body.get("error") if isinstance(body, dict) else None
        if isinstance(problem, dict) and isinstance(problem.get("code"), str) and isinstance(problem.get("message"), str):
            return ExecgateError(problem["code"], problem["message"], response.status, retry_after, attempts)
        return ExecgateError(
            "EXECGATE_RESPONSE_INVALID",
            f"the server answered HTTP {response.status} with a body that is not execgate JSON: {text[:120] or '(empty)'}",
            response.status, retry_after, attempts)
