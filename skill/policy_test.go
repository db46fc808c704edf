package skill_test

import (
	"context"
	"strings"
	"testing"

	"github.com/orca-agent/orca/skill"
)

func TestPolicies(t *testing.T) {
	plain := skill.Skill{Name: "deploy-prod"}
	safe := skill.Skill{Name: "format-docs", Safe: true}
	gitLog := skill.Skill{Name: "git-log", Safe: true}
	for _, tc := range []struct {
		name   string
		policy skill.InvocationPolicy
		skill  skill.Skill
		want   skill.Decision
		reason string
	}{
		{"always allow", skill.AlwaysAllow{}, plain, skill.Allow, "always allowed"},

		{"zero rule-based denies", skill.RuleBased{}, plain, skill.Deny, "default is to deny"},
		{"zero rule-based ignores safe: true", skill.RuleBased{}, safe, skill.Deny, "default is to deny"},
		{"allow by name", skill.RuleBased{Allow: []string{"deploy-prod"}}, plain, skill.Allow, `allow rule "deploy-prod"`},
		{"allow by glob", skill.RuleBased{Allow: []string{"git-*"}}, gitLog, skill.Allow, `allow rule "git-*"`},
		{"glob names no other", skill.RuleBased{Allow: []string{"git-*"}}, plain, skill.Deny, "default is to deny"},
		{"deny by glob with default allow", skill.RuleBased{Deny: []string{"deploy-*"}, Default: skill.Allow}, plain, skill.Deny, `deny rule "deploy-*"`},
		{"deny wins over allow", skill.RuleBased{Allow: []string{"*"}, Deny: []string{"deploy-prod"}}, plain, skill.Deny, `deny rule "deploy-prod"`},
		{"deny wins over safe", skill.RuleBased{Deny: []string{"git-*"}, SafeByDefault: true, Default: skill.Allow}, gitLog, skill.Deny, `deny rule "git-*"`},
		{"default allow", skill.RuleBased{Default: skill.Allow}, plain, skill.Allow, "default is to allow"},

		{"safe by default on, safe skill", skill.RuleBased{SafeByDefault: true}, safe, skill.Allow, "safe: true"},
		{"safe by default on, unsafe skill, default deny", skill.RuleBased{SafeByDefault: true, Default: skill.Deny}, plain, skill.Deny, "default is to deny"},
		{"safe by default off, safe skill, default deny", skill.RuleBased{SafeByDefault: false, Default: skill.Deny}, safe, skill.Deny, "default is to deny"},
		{"safe by default off, safe skill, default allow", skill.RuleBased{SafeByDefault: false, Default: skill.Allow}, safe, skill.Allow, "default is to allow"},

		{"bad deny pattern denies", skill.RuleBased{Deny: []string{"[x"}, Default: skill.Allow}, plain, skill.Deny, `deny rule "[x" is not a valid pattern`},
		{"bad allow pattern names none", skill.RuleBased{Allow: []string{"[x"}}, plain, skill.Deny, "default is to deny"},

		{"a function", skill.PolicyFunc(func(_ context.Context, r skill.Request) (skill.Decision, string) {
			return skill.Deny, "asked " + r.Skill.Name
		}), plain, skill.Deny, "asked deploy-prod"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, reason := tc.policy.Decide(t.Context(), skill.Request{SessionID: "s1", Skill: tc.skill})
			if got != tc.want || !strings.Contains(reason, tc.reason) {
				t.Errorf("Decide(%s) = %v, %q; want %v, saying %q", tc.skill.Name, got, reason, tc.want, tc.reason)
			}
		})
	}
}

func TestRuleBasedValidate(t *testing.T) {
	if err := (skill.RuleBased{Allow: []string{"git-*", "pdf"}, Deny: []string{"?x"}}).Validate(); err != nil {
		t.Errorf("valid rules refused: %v", err)
	}
	if err := (skill.RuleBased{Allow: []string{"ok", "bad["}}).Validate(); err == nil || !strings.Contains(err.Error(), `"bad["`) {
		t.Errorf("Validate = %v, want it to name the rule bad[", err)
	}
}

func TestDecisionString(t *testing.T) {
	if skill.Allow.String() != "allow" || skill.Deny.String() != "deny" || skill.Decision(9).String() != "Decision(9)" {
		t.Errorf("decisions print as %s, %s, %s", skill.Allow, skill.Deny, skill.Decision(9))
	}
	var zero skill.Decision
	if zero != skill.Deny {
		t.Error("the zero Decision is not Deny")
	}
}
