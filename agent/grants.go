package agent

import (
	"sync"

	"github.com/orca-agent/orca/policy"
)

// grantList are permission rules granted for the rest of the turn (a
// skill's allowed-tools): they answer asks, as approvals do. Calls of one
// response grant at once.
type grantList struct {
	mu    sync.Mutex
	rules []string
}

// appendTo returns dst with the granted rules appended.
func (g *grantList) appendTo(dst []string) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append(dst, g.rules...)
}

// Grant implements tool.Granter: rules that answer, for the rest of the
// turn, what the policy asks about (a skill's allowed-tools).
func (t *turn) Grant(rules []string) error {
	if _, err := policy.ParseRules(rules, nil, nil); err != nil {
		return err
	}
	t.grants.mu.Lock()
	t.grants.rules = append(t.grants.rules, rules...)
	t.grants.mu.Unlock()
	return nil
}
