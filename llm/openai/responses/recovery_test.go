package responses_test

import (
	"testing"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/orcatest"
)

// The API's own "input exceeds the context window", against the real
// runtime.
func TestPromptTooLongRecovery(t *testing.T) {
	orcatest.TestPromptTooLong(t, func(t *testing.T, answers ...orcatest.Answer) (llm.Client, func() []*llm.Request) {
		var as []answer
		for _, a := range answers {
			as = append(as, answer{resp: a.Resp, err: a.Err})
		}
		api := newFakeAPI(t, as...)
		return newClient(t, api.v1()), api.seen
	})
}
