package agent_test

import (
	"fmt"
	"strings"

	"github.com/specloop/specloop/agent"
)

// TruncateOutput keeps the head and the tail of a long output around a
// marker that says what was cut and how to see it.
func ExampleTruncateOutput() {
	var b strings.Builder
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	out, cut := agent.TruncateOutput(b.String(), 10<<10, 8, func(string) string { return "ask for fewer lines" })
	fmt.Print(out)
	fmt.Println(cut.OmittedLines, "lines cut")
	// Output:
	// line 1
	// line 2
	// line 3
	// [… 33 lines, 258 bytes omitted; ask for fewer lines …]
	// line 37
	// line 38
	// line 39
	// line 40
	// 33 lines cut
}
