package llm

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// MaxRetryAfter bounds a retry hint, so that a bogus header cannot
// overflow a duration.
const MaxRetryAfter = 24 * time.Hour

// RetryAfter reads the server's retry hint: retry-after-ms (milliseconds),
// else retry-after (seconds or an HTTP date); zero if there is none.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	clamp := func(d float64) time.Duration {
		if math.IsNaN(d) || d <= 0 {
			return 0
		}
		if d >= float64(MaxRetryAfter) {
			return MaxRetryAfter
		}
		return time.Duration(d)
	}
	if v := strings.TrimSpace(h.Get("retry-after-ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil {
			return clamp(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("retry-after"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		return clamp(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return clamp(float64(t.Sub(now)))
	}
	return 0
}
