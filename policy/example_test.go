package policy_test

import (
	"encoding/json"
	"fmt"

	"github.com/orca-agent/orca/policy"
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
	bash := func(cmd string) policy.Request {
		in, _ := json.Marshal(map[string]string{"command": cmd})
		return policy.Request{ToolName: "Bash", Input: in}
	}
	for _, req := range []policy.Request{
		bash("git status && go test ./..."),
		bash("git status; rm -rf build"),
		bash("go test ./... && go vet ./..."),
		bash("echo 'a && rm -rf x'"),
		{ToolName: "Edit", Input: json.RawMessage(`{"file_path": "src/main.go"}`)},
		{ToolName: "Write", Input: json.RawMessage(`{"file_path": ".orca/settings.json"}`)},
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
