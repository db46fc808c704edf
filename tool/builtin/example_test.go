package builtin_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/orca-agent/orca/scope"
	"github.com/orca-agent/orca/tool"
	"github.com/orca-agent/orca/tool/builtin"
	"github.com/orca-agent/orca/workspace"
)

func ExampleFilesProvider() {
	dir, _ := os.MkdirTemp("", "orca-example")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello\nworld\n"), 0o644)
	fsys, _ := workspace.OpenLocal(dir)
	defer fsys.Close()

	// One registry per runtime; the providers build that runtime's tools.
	reg := tool.NewRegistry()
	env := tool.Env{RuntimeID: "rt-1", FS: fsys, Logger: slog.Default()}
	for _, p := range []tool.Provider{builtin.FilesProvider(), builtin.ShellProvider(), builtin.TodoProvider()} {
		tools, err := p.Tools(env)
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, t := range tools {
			reg.Add(t)
		}
	}
	fmt.Println(reg.Names())

	res := reg.Call(context.Background(), &tool.Call{
		Name:  "Read",
		Input: []byte(`{"file_path": "hello.txt", "offset": 2}`), Scope: scope.Scope{SessionID: "session-1"},
	})
	fmt.Print(res.Content)
	// Output:
	// [Read Write Edit Glob Grep Bash TodoWrite]
	//      2	world
	//
	// [showing lines 2-2 of 2]
}
