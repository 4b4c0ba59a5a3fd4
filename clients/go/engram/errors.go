package engram

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/status"
)

// ErrorInfo returns the google.rpc.ErrorInfo the server put in a failed call's status details, or
// nil (a transport failure, or an error that is not a gRPC status). Branch on its Reason, the
// engram.common.v1.ErrorReason name without the ERROR_REASON_ prefix, never on the message.
func ErrorInfo(err error) *errdetails.ErrorInfo {
	for _, detail := range details(err) {
		if info, ok := detail.(*errdetails.ErrorInfo); ok {
			return info
		}
	}
	return nil
}

// Reason is ErrorInfo(err).Reason, or "" when the error carries no ErrorInfo.
func Reason(err error) string {
	if info := ErrorInfo(err); info != nil {
		return info.Reason
	}
	return ""
}

// RetryInfoDelay returns the wait a google.rpc.RetryInfo detail asks for (OVERLOADED,
// RATE_LIMITED, sometimes UNAVAILABLE), and whether there was one.
func RetryInfoDelay(err error) (time.Duration, bool) {
	for _, detail := range details(err) {
		if info, ok := detail.(*errdetails.RetryInfo); ok && info.RetryDelay != nil {
			return info.RetryDelay.AsDuration(), true
		}
	}
	return 0, false
}

// Describe renders a failed call for logs: code, message and the ErrorInfo (reason, domain and
// metadata, which hold identifiers only, never content).
func Describe(err error) string {
	st, ok := status.FromError(err)
	if !ok {
		return err.Error()
	}
	text := fmt.Sprintf("%s: %s", st.Code(), st.Message())
	if info := ErrorInfo(err); info != nil {
		keys := make([]string, 0, len(info.Metadata))
		for key := range info.Metadata {
			keys = append(keys, key)
		}
		sort.Strings(keys)
		pairs := make([]string, len(keys))
		for i, key := range keys {
			pairs[i] = key + "=" + info.Metadata[key]
		}
		text += fmt.Sprintf(" reason=%s domain=%s metadata={%s}", info.Reason, info.Domain, strings.Join(pairs, ","))
	}
	return text
}

// details decodes the status details of err; undecodable ones are skipped.
func details(err error) []interface{} {
	st, ok := status.FromError(err)
	if !ok || st == nil {
		return nil
	}
	return st.Details()
}
