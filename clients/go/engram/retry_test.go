package engram

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	protov1 "github.com/golang/protobuf/proto"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	ingestionv1 "engram.local/go/gen/engram/ingestion/v1"
)

// refusal builds the status error an Engram server answers: a code, an ErrorInfo with reason
// (unless reason is empty) and a RetryInfo (unless delay is negative).
func refusal(t *testing.T, code codes.Code, reason string, delay time.Duration) error {
	t.Helper()
	var details []protov1.Message // grpc-go 1.33's WithDetails takes APIv1 messages
	st := status.New(code, "refused")
	if reason != "" {
		details = append(details, &errdetails.ErrorInfo{Reason: reason, Domain: "engram.ingestion"})
	}
	if delay >= 0 {
		details = append(details, &errdetails.RetryInfo{RetryDelay: durationpb.New(delay)})
	}
	for _, detail := range details {
		var err error
		if st, err = st.WithDetails(detail); err != nil {
			t.Fatalf("WithDetails: %v", err)
		}
	}
	return st.Err()
}

func noJitter() float64  { return 0 }
func maxJitter() float64 { return 0.999 }

func TestRetryDelay(t *testing.T) {
	policy := DefaultRetryPolicy
	cases := []struct {
		name      string
		err       error
		attempt   int
		remaining time.Duration
		random    func() float64
		want      time.Duration
		retry     bool
	}{
		{"OVERLOADED waits the RetryInfo delay", refusal(t, codes.ResourceExhausted, "OVERLOADED", 250*time.Millisecond), 1, NoDeadline, noJitter, 250 * time.Millisecond, true},
		{"jitter adds at most 20 %", refusal(t, codes.ResourceExhausted, "RATE_LIMITED", time.Second), 1, NoDeadline, maxJitter, 1199800 * time.Microsecond, true},
		{"RESOURCE_EXHAUSTED without RetryInfo is final", refusal(t, codes.ResourceExhausted, "QUOTA_EXCEEDED", -1), 1, NoDeadline, noJitter, 0, false},
		{"answered UNAVAILABLE backs off 100 ms doubled", refusal(t, codes.Unavailable, "SHUTTING_DOWN", -1), 3, NoDeadline, noJitter, 400 * time.Millisecond, true},
		{"answered UNAVAILABLE honours its RetryInfo", refusal(t, codes.Unavailable, "DEPENDENCY_UNAVAILABLE", 2*time.Second), 1, NoDeadline, noJitter, 2 * time.Second, true},
		{"UNAVAILABLE without ErrorInfo (transport) is final", refusal(t, codes.Unavailable, "", -1), 1, NoDeadline, noJitter, 0, false},
		{"no fifth attempt", refusal(t, codes.ResourceExhausted, "OVERLOADED", time.Millisecond), 4, NoDeadline, noJitter, 0, false},
		{"a delay over 10 s is not waited", refusal(t, codes.ResourceExhausted, "OVERLOADED", 11*time.Second), 1, NoDeadline, noJitter, 0, false},
		{"never past the deadline", refusal(t, codes.ResourceExhausted, "OVERLOADED", time.Second), 1, 900 * time.Millisecond, noJitter, 0, false},
		{"other codes are final", refusal(t, codes.NotFound, "RESOURCE_NOT_FOUND", time.Millisecond), 1, NoDeadline, noJitter, 0, false},
	}
	for _, c := range cases {
		got, retry := RetryDelay(c.err, c.attempt, c.remaining, policy, c.random)
		if retry != c.retry || got != c.want {
			t.Errorf("%s: got (%v, %v), want (%v, %v)", c.name, got, retry, c.want, c.retry)
		}
	}
}

func TestReasonAndRetryInfoDelay(t *testing.T) {
	err := refusal(t, codes.ResourceExhausted, "OVERLOADED", 1500*time.Millisecond)
	if got := Reason(err); got != "OVERLOADED" {
		t.Errorf("Reason = %q, want OVERLOADED", got)
	}
	if delay, ok := RetryInfoDelay(err); !ok || delay != 1500*time.Millisecond {
		t.Errorf("RetryInfoDelay = (%v, %v), want (1.5s, true)", delay, ok)
	}
	if got := Reason(context.Canceled); got != "" {
		t.Errorf("Reason of a non-status error = %q, want empty", got)
	}
}

// refusingIngestion is a real gRPC IngestionService whose CreateSession answers the queued
// errors first and then succeeds, recording the request_id of every attempt.
type refusingIngestion struct {
	ingestionv1.UnimplementedIngestionServiceServer
	mu         sync.Mutex
	refusals   []error
	requestIDs []string
}

func (s *refusingIngestion) CreateSession(_ context.Context, req *ingestionv1.CreateSessionRequest) (*ingestionv1.CreateSessionResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requestIDs = append(s.requestIDs, req.GetRequestId())
	if len(s.refusals) > 0 {
		err := s.refusals[0]
		s.refusals = s.refusals[1:]
		return nil, err
	}
	return &ingestionv1.CreateSessionResponse{Session: &ingestionv1.Session{Name: "sessions/01J0000000000000000000TEST"}}, nil
}

// serve starts the service on a loopback port and returns a Client dialled to it.
func serve(t *testing.T, service *refusingIngestion) *Client {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	server := grpc.NewServer()
	ingestionv1.RegisterIngestionServiceServer(server, service)
	go func() { _ = server.Serve(listener) }()
	t.Cleanup(server.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	client, err := Dial(ctx, listener.Addr().String(), "test-token")
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return client
}

func TestRetriesOverloadedWithTheSameGeneratedRequestID(t *testing.T) {
	service := &refusingIngestion{refusals: []error{
		refusal(t, codes.ResourceExhausted, "OVERLOADED", 20*time.Millisecond),
		refusal(t, codes.Unavailable, "SHUTTING_DOWN", -1),
	}}
	client := serve(t, service)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	request := &ingestionv1.CreateSessionRequest{}
	if _, err := client.Ingestion.CreateSession(ctx, request); err != nil {
		t.Fatalf("CreateSession after two refusals: %v", Describe(err))
	}
	if len(service.requestIDs) != 3 {
		t.Fatalf("attempts = %d, want 3", len(service.requestIDs))
	}
	first := service.requestIDs[0]
	if len(first) < 1 || len(first) > 64 {
		t.Fatalf("generated request_id %q is not 1-64 characters", first)
	}
	for i, id := range service.requestIDs {
		if id != first {
			t.Errorf("attempt %d sent request_id %q, attempt 1 sent %q", i+1, id, first)
		}
	}
	if request.GetRequestId() != "" {
		t.Errorf("the caller's request was modified: request_id %q", request.GetRequestId())
	}
}

func TestKeepsTheCallersRequestIDAndStopsOnAFinalRefusal(t *testing.T) {
	service := &refusingIngestion{refusals: []error{refusal(t, codes.ResourceExhausted, "QUOTA_EXCEEDED", -1)}}
	client := serve(t, service)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := client.Ingestion.CreateSession(ctx, &ingestionv1.CreateSessionRequest{RequestId: "caller-chosen"})
	if status.Code(err) != codes.ResourceExhausted || Reason(err) != "QUOTA_EXCEEDED" {
		t.Fatalf("got %v, want RESOURCE_EXHAUSTED QUOTA_EXCEEDED", Describe(err))
	}
	if len(service.requestIDs) != 1 || service.requestIDs[0] != "caller-chosen" {
		t.Fatalf("request_ids = %v, want one attempt with caller-chosen", service.requestIDs)
	}
}

func TestDoesNotRetryPastTheDeadline(t *testing.T) {
	service := &refusingIngestion{refusals: []error{refusal(t, codes.ResourceExhausted, "OVERLOADED", 2*time.Second)}}
	client := serve(t, service)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err := client.Ingestion.CreateSession(ctx, &ingestionv1.CreateSessionRequest{})
	if Reason(err) != "OVERLOADED" || len(service.requestIDs) != 1 {
		t.Fatalf("got %v after %d attempts, want OVERLOADED after 1", Describe(err), len(service.requestIDs))
	}
}
