"""How the SDK retries a call the server refused for now (docs/decisions/0033-process-admission.md).

The same rule as the engram CLI (apps/cli/src/retry.ts) and the TypeScript SDK: RESOURCE_EXHAUSTED
only with a google.rpc.RetryInfo (OVERLOADED: the process is at its limit; RATE_LIMITED: the
caller is), UNAVAILABLE only when the server answered it itself (an ErrorInfo: SHUTTING_DOWN,
DEPENDENCY_UNAVAILABLE), after the RetryInfo delay (else 0.1 s doubled per attempt) plus up to
20 % jitter, at most 4 attempts in all, never waiting past the call's deadline.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Callable, Optional, TypeVar

import grpc

from ._errors import error_info, retry_info_delay

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """How refused calls are retried.

    Attributes:
        max_attempts: attempts in all, the first included (1: never retry).
        base_delay: backoff of an UNAVAILABLE answer without a RetryInfo, seconds, doubled per attempt.
        max_delay: the longest wait before a retry, seconds; a server asking for more is not retried.
        jitter: extra random wait as a share of the delay (0.2: up to 20 % more), so that refused
            callers spread out; the server's delay is a minimum, jitter only adds to it.
    """

    max_attempts: int = 4
    base_delay: float = 0.1
    max_delay: float = 10.0
    jitter: float = 0.2


DEFAULT_RETRY = RetryPolicy()
NO_RETRY = RetryPolicy(max_attempts=1)


def retry_delay(
    error: grpc.RpcError,
    attempt: int,
    remaining: Optional[float],
    policy: RetryPolicy = DEFAULT_RETRY,
    rand: Callable[[], float] = random.random,
) -> Optional[float]:
    """Seconds to wait before attempt `attempt + 1` after `error` ended attempt `attempt`, or None.

    RESOURCE_EXHAUSTED is retried only with a RetryInfo (without one, e.g. MESSAGE_TOO_LARGE or
    QUOTA_EXCEEDED, retrying cannot help); UNAVAILABLE only when the server answered it (an
    ErrorInfo), after its RetryInfo or exponential backoff: a transport failure is reported at
    once. The server's delay is a minimum (jitter only adds), and no retry outlasts `remaining`
    (seconds left before the call's deadline; None: no deadline).
    """
    if attempt >= policy.max_attempts:
        return None
    hinted = retry_info_delay(error)
    delay = None
    if error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED:
        delay = hinted
    elif error.code() == grpc.StatusCode.UNAVAILABLE and error_info(error) is not None:
        delay = hinted if hinted is not None else policy.base_delay * 2 ** (attempt - 1)
    if delay is None or delay > policy.max_delay:
        return None
    delay += delay * policy.jitter * rand()
    if remaining is not None and delay >= remaining:
        return None
    return delay


def run_with_retry(
    attempt: Callable[[Optional[float]], T],
    *,
    timeout: Optional[float],
    policy: RetryPolicy = DEFAULT_RETRY,
    retryable: Callable[[], bool] = lambda: True,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    rand: Callable[[], float] = random.random,
) -> T:
    """Runs `attempt(seconds_left)` until it succeeds or `retry_delay` says stop; raises the last error.

    `timeout` is the whole call's budget in seconds (None: no deadline); each attempt gets what is
    left of it. `retryable()` is asked after a failure: a stream that has already delivered
    messages says False, since a retry would repeat them.
    """
    started = clock()
    number = 0
    while True:
        number += 1
        remaining = None if timeout is None else timeout - (clock() - started)
        try:
            return attempt(None if remaining is None else max(remaining, 0.001))
        except grpc.RpcError as error:
            left = None if timeout is None else timeout - (clock() - started)
            delay = retry_delay(error, number, left, policy, rand) if retryable() else None
            if delay is None:
                raise
            sleep(delay)
