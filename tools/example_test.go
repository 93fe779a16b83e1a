package tools_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/tools"
)

// A runtime over a workspace offers the code tools; every call is checked
// against the spec and answered with an Observation.
func Example_workspace() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	_ = os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello\nworld\n"), 0o644)

	ws, err := tools.OpenWorkspace(dir)
	if err != nil {
		panic(err)
	}
	defer ws.Close()
	rt, err := tools.New(tools.Config{Workspace: ws, DisableCommands: true})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for _, call := range []*gen.ToolCall{
		{ToolName: "edit_file", Arguments: map[string]any{"path": "hello.txt", "old_text": "world", "new_text": "gophers"}},
		{ToolName: "read_file", Arguments: map[string]any{"path": "../etc/passwd"}},
	} {
		obs, err := rt.Call(ctx, call)
		if err != nil {
			panic(err)
		}
		fmt.Print(obs.Content)
	}
	fmt.Println()
	patch, _ := rt.Patch(ctx)
	fmt.Print(patch)
	// Output:
	// edited hello.txt (+1 -1 lines):
	// --- a/hello.txt
	// +++ b/hello.txt
	// @@ -1,2 +1,2 @@
	//  hello
	// -world
	// +gophers
	// error: the path "../etc/passwd" is outside the workspace
	// --- a/hello.txt
	// +++ b/hello.txt
	// @@ -1,2 +1,2 @@
	//  hello
	// -world
	// +gophers
}
