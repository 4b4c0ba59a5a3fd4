"""Calls with auth, deadlines, retries, request ids and EngramError: what every namespace uses."""

from __future__ import annotations

import random
import time
import uuid
from typing import Any, Callable, Generator, Generic, Iterator, Optional, Tuple, TypeVar

import grpc
from google.protobuf.message import Message

from ._errors import EngramError
from .retry import RetryPolicy, run_with_retry

R = TypeVar("R", bound=Message)
T = TypeVar("T")

Metadata = Tuple[Tuple[str, str], ...]


def ensure_request_id(request: Message) -> Optional[str]:
    """Gives `request` a fresh uuid4 `request_id` when it has the field and the caller left it empty.

    Generated once per call, before the first attempt, and sent on every retry: the server then
    answers a retry of a call that did happen with the original result instead of writing twice.
    Returns the id, or None for requests without the field.
    """
    if "request_id" not in request.DESCRIPTOR.fields_by_name:
        return None
    if not request.request_id:  # type: ignore[attr-defined]
        request.request_id = str(uuid.uuid4())  # type: ignore[attr-defined]
    return request.request_id  # type: ignore[attr-defined]


class Calls:
    """Runs RPCs for the namespaces: bearer metadata per attempt, the deadline, the retry policy.

    `sleep`, `clock` and `rand` are the retry loop's time and randomness, replaceable in tests.
    """

    def __init__(
        self,
        *,
        token: Optional[str],
        token_provider: Optional[Callable[[], str]],
        timeout: Optional[float],
        retry: RetryPolicy,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self._token = token
        self._token_provider = token_provider
        self.timeout = timeout
        self.retry = retry
        self._sleep = sleep
        self._clock = clock
        self._rand = rand

    def metadata(self) -> Metadata:
        """The `authorization` header, asking the token provider anew (short-lived tokens refresh)."""
        if self._token_provider is None:
            token = self._token
        else:
            try:
                token = self._token_provider()
            except Exception as error:  # the provider is the caller's code: report it as auth
                raise EngramError(
                    grpc.StatusCode.UNAUTHENTICATED, f"token_provider failed: {error!r}"
                ) from error
        return () if not token else (("authorization", f"Bearer {token}"),)

    def _deadline(self, timeout: Optional[float]) -> Optional[float]:
        return self.timeout if timeout is None else timeout

    def _retrying(
        self,
        attempt: Callable[[Optional[float]], T],
        timeout: Optional[float],
        request_id: Optional[str],
        retryable: Callable[[], bool] = lambda: True,
    ) -> T:
        try:
            return run_with_retry(
                attempt,
                timeout=self._deadline(timeout),
                policy=self.retry,
                retryable=retryable,
                sleep=self._sleep,
                clock=self._clock,
                rand=self._rand,
            )
        except grpc.RpcError as error:
            raise EngramError.from_rpc_error(error, request_id) from error

    def unary(self, method: Callable[..., R], request: Message, timeout: Optional[float] = None) -> R:
        """Calls a unary `method` within `timeout` seconds (default: the client's), retrying per policy."""
        request_id = ensure_request_id(request)
        return self._retrying(
            lambda left: method(request, metadata=self.metadata(), timeout=left), timeout, request_id
        )

    def client_stream(
        self, method: Callable[..., R], requests: Callable[[], Any], timeout: Optional[float] = None
    ) -> R:
        """Calls a client-streaming `method` with the request iterator `requests()` makes anew for
        each attempt, retrying per policy: only for methods where a repeated call is harmless
        (ImportUser is idempotent)."""
        return self._retrying(
            lambda left: method(requests(), metadata=self.metadata(), timeout=left), timeout, None
        )

    def stream(
        self,
        method: Callable[..., Any],
        requests: Callable[[], Any],
        timeout: Optional[float],
        request_id: Optional[str],
        *,
        replayable: bool,
    ) -> Generator[Any, None, None]:
        """The responses of a streaming call whose request (or request iterator) `requests()` makes.

        A refusal before the first response (RATE_LIMITED, OVERLOADED: the call never started) is
        retried per policy when the request can be sent again (`replayable`), with the same request
        id; once a response has arrived nothing is retried, since it would be delivered twice.
        Nothing is sent until the iterator is first advanced; leaving the loop early cancels the call.
        """

        def attempt(left: Optional[float]) -> Tuple[Any, Optional[Any]]:
            call = method(requests(), metadata=self.metadata(), timeout=left)
            return call, next(call, None)

        call, first = self._retrying(attempt, timeout, request_id, retryable=lambda: replayable)
        if first is None:
            return
        try:
            yield first
            yield from call
        except grpc.RpcError as error:
            raise EngramError.from_rpc_error(error, request_id) from error
        finally:
            call.cancel()  # a no-op once the call has ended


class Pages(Generic[T]):
    """The items of a paginated List, fetched page by page as the iteration needs them.

    Iterating yields the items of every page, following `next_page_token` until it is empty;
    `pages()` yields the responses themselves (items plus `next_page_token`), and `first_page()`
    fetches one response only. Nothing is called before one of them is used.
    """

    def __init__(self, fetch: Callable[[str], Any], items_field: str) -> None:
        self._fetch = fetch
        self._items_field = items_field

    def pages(self, page_token: str = "") -> Iterator[Any]:
        """Each response in turn, starting at `page_token` ("" for the first page)."""
        token = page_token
        while True:
            response = self._fetch(token)
            yield response
            token = response.next_page_token
            if not token:
                return

    def first_page(self) -> Any:
        """The first response alone: its items and the `next_page_token` to continue from."""
        return self._fetch("")

    def __iter__(self) -> Iterator[T]:
        for response in self.pages():
            yield from getattr(response, self._items_field)


def listing(
    calls: Calls,
    method: Callable[..., Any],
    build_request: Callable[[str], Message],
    items_field: str,
    timeout: Optional[float],
) -> Pages[Any]:
    """Pages of `method`, each page a unary call (own deadline and retries) of `build_request(token)`."""
    return Pages(lambda token: calls.unary(method, build_request(token), timeout), items_field)
