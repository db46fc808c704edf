package workspace_test

import (
	"errors"
	"fmt"
	"os"

	"github.com/orca-agent/orca/workspace"
)

// A Local workspace reads and writes inside its folder only: a path that
// leads out is refused, with the path named.
func ExampleOpenLocal() {
	dir, _ := os.MkdirTemp("", "orca-workspace")
	defer os.RemoveAll(dir)
	ws, err := workspace.OpenLocal(dir)
	if err != nil {
		panic(err)
	}
	defer ws.Close()

	ws.WriteFile("src/hello.txt", []byte("hello\n"), 0o644) // creates src/
	b, _ := ws.ReadFile("src/../src/hello.txt")
	fmt.Printf("%q\n", b)
	rel, _ := ws.Resolve("./src//hello.txt")
	fmt.Println(rel)

	_, err = ws.ReadFile("../../etc/passwd")
	fmt.Println(errors.Is(err, workspace.ErrOutside))
	// Output:
	// "hello\n"
	// src/hello.txt
	// true
}
