// Package engram is a small ergonomic layer over the Go code generated from Engram's protos
// (clients/go/generate.sh): one connection for the four services, the bearer token sent on every
// call, the retry rule of the other Engram clients (retry.go) and the google.rpc.ErrorInfo of a
// failed call (errors.go). The generated clients stay fully usable; this package only wires them.
package engram

import (
	"context"
	"fmt"

	"google.golang.org/grpc"

	contextv1 "engram.local/go/gen/engram/context/v1"
	governancev1 "engram.local/go/gen/engram/governance/v1"
	ingestionv1 "engram.local/go/gen/engram/ingestion/v1"
	retrievalv1 "engram.local/go/gen/engram/retrieval/v1"
)

// Client holds one gRPC connection and a generated client per Engram service on it; the
// all-in-one process serves all four on one port.
type Client struct {
	conn       *grpc.ClientConn
	Ingestion  ingestionv1.IngestionServiceClient
	Retrieval  retrievalv1.RetrievalServiceClient
	Context    contextv1.ContextServiceClient
	Governance governancev1.GovernanceServiceClient
}

// Dial connects to an Engram server at addr (host:port) over plaintext HTTP/2, the way the
// server listens by default, and waits until the connection is up or ctx ends. A non-empty token
// is sent as `authorization: Bearer <token>` on every call; an empty one sends none (only health
// checks and reflection accept that). Unary calls are retried per DefaultRetryPolicy. For TLS,
// dial yourself with grpc.WithTransportCredentials plus CallOptions(token, policy) and use New.
func Dial(ctx context.Context, addr, token string, extra ...grpc.DialOption) (*Client, error) {
	options := append([]grpc.DialOption{grpc.WithInsecure(), grpc.WithBlock()}, CallOptions(token, DefaultRetryPolicy)...)
	conn, err := grpc.DialContext(ctx, addr, append(options, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("engram: cannot connect to %s: %w", addr, err)
	}
	return New(conn), nil
}

// CallOptions are the dial options Dial adds to the transport: the bearer token (when not empty)
// and the retry interceptor with policy.
func CallOptions(token string, policy RetryPolicy) []grpc.DialOption {
	options := []grpc.DialOption{grpc.WithUnaryInterceptor(UnaryRetryInterceptor(policy))}
	if token != "" {
		options = append(options, grpc.WithPerRPCCredentials(bearer{token: token}))
	}
	return options
}

// New wraps a connection the caller dialled (for TLS, a proxy or custom options).
func New(conn *grpc.ClientConn) *Client {
	return &Client{
		conn:       conn,
		Ingestion:  ingestionv1.NewIngestionServiceClient(conn),
		Retrieval:  retrievalv1.NewRetrievalServiceClient(conn),
		Context:    contextv1.NewContextServiceClient(conn),
		Governance: governancev1.NewGovernanceServiceClient(conn),
	}
}

// Close closes the connection; calls in flight fail with CANCELED.
func (c *Client) Close() error { return c.conn.Close() }

// bearer sends the token as per-RPC credentials. RequireTransportSecurity is false because the
// server's default listener is plaintext (loopback or a trusted network, docs/clients.md); over
// an untrusted network put TLS in front and dial with transport credentials.
type bearer struct{ token string }

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.token}, nil
}

func (bearer) RequireTransportSecurity() bool { return false }
