package policy_test

import (
	"fmt"

	"github.com/orca-agent/orca/policy"
	"github.com/orca-agent/orca/tool"
)

func ExamplePolicy_Decide() {
	rules, err := policy.ParseRules(
		[]string{"Bash(git status:*)", "Bash(go test:*)", "Edit(src/**)"}, // allow
		[]string{"Bash(rm:*)"},       // deny
		[]string{"Bash(git push:*)"}, // ask
	)
	if err != nil {
		panic(err)
	}
	p, err := policy.New(policy.ModeDefault, rules)
	if err != nil {
		panic(err)
	}
	// The requests carry what the tools declare about each call
	// (policy.RequestFor reads it from the tool): the command a call runs,
	// the paths it writes.
	bash := func(cmd string) policy.Request {
		return policy.Request{ToolName: "Bash", Access: tool.Access{Command: cmd}}
	}
	for _, req := range []policy.Request{
		bash("git status && go test ./..."),
		bash("git status; rm -rf build"),
		bash("go test ./... && go vet ./..."),
		bash("echo 'a && rm -rf x'"),
		{ToolName: "Edit", Access: tool.Access{Writes: []string{"src/main.go"}}},
		{ToolName: "Write", Access: tool.Access{Writes: []string{".orca/settings.json"}}},
	} {
		v := p.Decide(req)
		fmt.Printf("%-5s by %-20s suggest %q\n", v.Decision, v.Rule, v.Suggest)
	}
	// Output:
	// allow by Bash(git status:*), Bash(go test:*) suggest ""
	// deny  by Bash(rm:*)           suggest ""
	// ask   by mode:default         suggest "Bash(go vet:*)"
	// ask   by mode:default         suggest "Bash(echo:*)"
	// allow by Edit(src/**)         suggest ""
	// deny  by protected            suggest ""
}
