package llm_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/orca-agent/orca/llm"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		header http.Header
		want   time.Duration
	}{
		{http.Header{}, 0},
		{http.Header{"Retry-After": {"7"}}, 7 * time.Second},
		{http.Header{"Retry-After": {"0.5"}}, 500 * time.Millisecond},
		{http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"9"}}, 250 * time.Millisecond},
		{http.Header{"Retry-After-Ms": {"soon"}, "Retry-After": {"9"}}, 9 * time.Second},
		{http.Header{"Retry-After": {now.Add(42 * time.Second).Format(http.TimeFormat)}}, 42 * time.Second},
		{http.Header{"Retry-After": {now.Add(-time.Minute).Format(http.TimeFormat)}}, 0},
		{http.Header{"Retry-After": {"-3"}}, 0},
		{http.Header{"Retry-After": {"NaN"}}, 0},
		{http.Header{"Retry-After": {"1e300"}}, llm.MaxRetryAfter},
		{http.Header{"Retry-After": {"whenever"}}, 0},
	} {
		if got := llm.RetryAfter(tc.header, now); got != tc.want {
			t.Errorf("RetryAfter(%v) = %v, want %v", tc.header, got, tc.want)
		}
	}
}
