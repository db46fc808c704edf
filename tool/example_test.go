package tool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/orca-agent/orca/tool"
)

type weatherIn struct {
	City string `json:"city" jsonschema:"the city to report on"`
	Days int    `json:"days,omitempty" jsonschema:"how many days ahead (default 1)"`
}

type weatherOut struct {
	City     string `json:"city"`
	Forecast string `json:"forecast"`
}

// A typed tool: the schema comes from the input type, and every call is
// validated against it before the function runs.
func ExampleNew() {
	weather := tool.New("Weather", "Reports the weather for a city.",
		func(ctx context.Context, in weatherIn) (weatherOut, error) {
			return weatherOut{City: in.City, Forecast: "sunny"}, nil
		})

	reg := tool.NewRegistry()
	if err := reg.Add(weather); err != nil {
		fmt.Println(err)
		return
	}
	ok := reg.Call(context.Background(), &tool.Call{Name: "Weather", Input: json.RawMessage(`{"city":"Oslo"}`)})
	bad := reg.Call(context.Background(), &tool.Call{Name: "Weather", Input: json.RawMessage(`{"days":2}`)})
	fmt.Println(ok.Content)
	fmt.Println(bad.IsError, strings.Contains(bad.Content, "city"))
	// Output:
	// {"city":"Oslo","forecast":"sunny"}
	// true true
}

// A Summary is one line, whatever the model sent: a custom tool's Display
// keeps a path with a line break on one with OneLine.
func ExampleOneLine() {
	fmt.Println(tool.OneLine("notes\nfinal.txt"))
	// Output:
	// notes\nfinal.txt
}

// A tool says how far it has come with Report (and declares it:
// tool.Reports(), Traits.Reports); the runtime makes each report a
// tool_progress event of the call (here a function stands in for it).
// Without anyone watching, Report does nothing.
func ExampleReport() {
	ctx := tool.WithProgress(context.Background(), func(p tool.Progress) {
		fmt.Printf("%v of %v: %s\n", p.Progress, p.Total, p.Message)
	})
	copyFiles := func(ctx context.Context, files []string) {
		for i, f := range files {
			tool.Report(ctx, tool.Progress{Progress: float64(i + 1), Total: float64(len(files)), Message: "copied " + f})
		}
	}
	copyFiles(ctx, []string{"a.txt", "b.txt"})
	copyFiles(context.Background(), []string{"unheard.txt"})
	// Output:
	// 1 of 2: copied a.txt
	// 2 of 2: copied b.txt
}
