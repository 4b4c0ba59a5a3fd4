package engram

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"math"
	mathrand "math/rand"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// RetryPolicy is how refused calls are retried; the same rule as the engram CLI
// (apps/cli/src/retry.ts) and the Python smoke client (docs/decisions/0033-process-admission.md).
type RetryPolicy struct {
	// MaxAttempts counts attempts in all, the first included.
	MaxAttempts int
	// BaseDelay is the backoff of an UNAVAILABLE answer without a RetryInfo, doubled per attempt.
	BaseDelay time.Duration
	// MaxDelay is the longest wait before a retry: a server asking for more is not retried.
	MaxDelay time.Duration
	// Jitter is the extra random wait as a share of the delay (0.2: up to 20 % more).
	Jitter float64
}

// DefaultRetryPolicy: at most 4 attempts, 100 ms doubled, nothing over 10 s, up to +20 % jitter.
var DefaultRetryPolicy = RetryPolicy{MaxAttempts: 4, BaseDelay: 100 * time.Millisecond, MaxDelay: 10 * time.Second, Jitter: 0.2}

// NoDeadline passed as the remaining time to RetryDelay means the call has no deadline.
const NoDeadline = time.Duration(math.MaxInt64)

// RetryDelay returns the wait before attempt attempt+1 after err ended attempt attempt (1-based),
// and false when the call must not be retried:
//   - RESOURCE_EXHAUSTED only with a RetryInfo (OVERLOADED, RATE_LIMITED: the call never
//     started); without one (MESSAGE_TOO_LARGE, QUOTA_EXCEEDED) retrying cannot help;
//   - UNAVAILABLE only when the server answered it (an ErrorInfo: SHUTTING_DOWN,
//     DEPENDENCY_UNAVAILABLE), after its RetryInfo or else exponential backoff; a transport
//     failure (nobody listening) is reported at once;
//   - never past MaxAttempts, a delay over MaxDelay, or the remaining deadline.
//
// The server's delay is a minimum: jitter (random() in [0, 1)) only adds to it.
func RetryDelay(err error, attempt int, remaining time.Duration, policy RetryPolicy, random func() float64) (time.Duration, bool) {
	if attempt >= policy.MaxAttempts {
		return 0, false
	}
	hinted, hasHint := RetryInfoDelay(err)
	var delay time.Duration
	switch status.Code(err) {
	case codes.ResourceExhausted:
		if !hasHint {
			return 0, false
		}
		delay = hinted
	case codes.Unavailable:
		if ErrorInfo(err) == nil {
			return 0, false
		}
		delay = hinted
		if !hasHint {
			delay = policy.BaseDelay << uint(attempt-1)
		}
	default:
		return 0, false
	}
	if delay > policy.MaxDelay {
		return 0, false
	}
	delay += time.Duration(float64(delay) * policy.Jitter * random())
	if remaining != NoDeadline && delay >= remaining {
		return 0, false
	}
	return delay, true
}

// UnaryRetryInterceptor retries unary calls per RetryDelay within the call's own deadline (the
// context's deadline covers all attempts). A request with an empty `request_id` field gets a
// generated one first, on a copy, so that every attempt sends the same id and a retried write is
// idempotent. Streaming calls are not intercepted: their messages may already be consumed.
func UnaryRetryInterceptor(policy RetryPolicy) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply interface{}, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		req = withRequestID(req)
		for attempt := 1; ; attempt++ {
			err := invoker(ctx, method, req, reply, cc, opts...)
			if err == nil {
				return nil
			}
			remaining := NoDeadline
			if deadline, ok := ctx.Deadline(); ok {
				remaining = time.Until(deadline)
			}
			delay, retry := RetryDelay(err, attempt, remaining, policy, jitter)
			if !retry {
				return err
			}
			timer := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				timer.Stop()
				return err
			case <-timer.C:
			}
		}
	}
}

// withRequestID returns req, or a copy of it with a generated request_id when it has an empty
// string field of that name (every Engram write that is safe to retry takes one).
func withRequestID(req interface{}) interface{} {
	message, ok := req.(proto.Message)
	if !ok {
		return req
	}
	field := message.ProtoReflect().Descriptor().Fields().ByName("request_id")
	if field == nil || field.Kind() != protoreflect.StringKind || field.IsList() || message.ProtoReflect().Get(field).String() != "" {
		return req
	}
	copied := proto.Clone(message)
	copied.ProtoReflect().Set(field, protoreflect.ValueOfString(NewRequestID()))
	return copied
}

// NewRequestID returns a fresh idempotency key: "go-" and 32 random hex digits, within the
// servers' 1–64 characters of [A-Za-z0-9_-].
func NewRequestID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("engram: no randomness for a request_id: " + err.Error())
	}
	return "go-" + hex.EncodeToString(b[:])
}

// jitterRandom is seeded per process (Go 1.19's global math/rand source is not), so that refused
// clients do not all come back at the same instant.
var (
	jitterMu     sync.Mutex
	jitterRandom = mathrand.New(mathrand.NewSource(time.Now().UnixNano()))
)

func jitter() float64 {
	jitterMu.Lock()
	defer jitterMu.Unlock()
	return jitterRandom.Float64()
}
