package skill

import (
	"context"
	"fmt"
	"path"
)

// Decision is what an InvocationPolicy says about loading a skill. The zero
// value is Deny, so a policy that forgets to decide refuses.
type Decision uint8

// The decisions. Any value other than Allow is a denial.
const (
	Deny Decision = iota
	Allow
)

func (d Decision) String() string {
	switch d {
	case Deny:
		return "deny"
	case Allow:
		return "allow"
	}
	return fmt.Sprintf("Decision(%d)", uint8(d))
}

// Request is what an InvocationPolicy decides on.
type Request struct {
	// SessionID is the session whose model called the Skill tool.
	SessionID string
	// Skill is the skill the model asked for.
	Skill Skill
	// Args is the call's optional argument string.
	Args string
}

// InvocationPolicy decides whether the Skill tool may load a skill.
// Implementations must be safe for concurrent use: one policy may serve
// every runtime built with it. The reason is shown to the model with a
// denial.
type InvocationPolicy interface {
	Decide(ctx context.Context, req Request) (Decision, string)
}

// PolicyFunc makes a function an InvocationPolicy.
type PolicyFunc func(ctx context.Context, req Request) (Decision, string)

// Decide calls f.
func (f PolicyFunc) Decide(ctx context.Context, req Request) (Decision, string) { return f(ctx, req) }

// AlwaysAllow lets every skill be loaded. It is Provider's default.
type AlwaysAllow struct{}

// Decide allows.
func (AlwaysAllow) Decide(context.Context, Request) (Decision, string) {
	return Allow, "skills are always allowed"
}

// RuleBased decides by the skill's name. Its zero value denies every skill.
//
// Rules are skill names or path.Match globs ("git-*", "*"). A skill named by
// a Deny rule is denied, even if an Allow rule names it too; else a skill
// named by an Allow rule is allowed; else, when SafeByDefault is set, a
// skill whose front matter says "safe: true" is allowed; else Default
// decides.
type RuleBased struct {
	Allow []string
	Deny  []string
	// SafeByDefault trusts the front matter's "safe: true" for skills no
	// rule names. Off (false) ignores it.
	SafeByDefault bool
	// Default is the decision for skills no rule names and SafeByDefault
	// does not allow. The zero value is Deny.
	Default Decision
}

// Validate reports the first rule that is not a valid glob. Provider calls
// it, so that a runtime is not built with a policy that cannot decide.
func (r RuleBased) Validate() error {
	for _, rules := range [][]string{r.Deny, r.Allow} {
		for _, p := range rules {
			if _, err := path.Match(p, ""); err != nil {
				return fmt.Errorf("skill policy rule %q: %w", p, err)
			}
		}
	}
	return nil
}

// Decide implements InvocationPolicy. A Deny rule that is not a valid glob
// denies every skill (it cannot tell which it was meant to name); an Allow
// rule that is not valid names none.
func (r RuleBased) Decide(_ context.Context, req Request) (Decision, string) {
	name := req.Skill.Name
	for _, p := range r.Deny {
		ok, err := path.Match(p, name)
		if err != nil {
			return Deny, fmt.Sprintf("the deny rule %q is not a valid pattern: %v", p, err)
		}
		if ok {
			return Deny, fmt.Sprintf("the deny rule %q names skill %q", p, name)
		}
	}
	for _, p := range r.Allow {
		if ok, _ := path.Match(p, name); ok {
			return Allow, fmt.Sprintf("the allow rule %q names skill %q", p, name)
		}
	}
	if r.SafeByDefault && req.Skill.Safe {
		return Allow, fmt.Sprintf("skill %q is marked safe: true and safe skills are allowed by default", name)
	}
	if r.Default == Allow {
		return Allow, fmt.Sprintf("no rule names skill %q and the default is to allow", name)
	}
	return Deny, fmt.Sprintf("no allow rule names skill %q and the default is to deny", name)
}
