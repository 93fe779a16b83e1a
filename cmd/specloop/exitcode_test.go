package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/specloop/specloop/gen"
)

// TestEveryExitReasonHasItsOwnStatus: every exit reason of the spec maps
// to a status no other reason has (only internal_error is 1, the status of
// a command that failed), and the help's Notes, docs/runs.md and the
// README's table give each the status it has.
func TestEveryExitReasonHasItsOwnStatus(t *testing.T) {
	_, help, _ := specloop(t, "help")
	runs, err := os.ReadFile(filepath.Join(repoRoot, "docs", "runs.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	help = strings.Join(strings.Fields(help), " ")
	seen := map[int]gen.ExitReason{exitUsage: "(usage error)"}
	for _, reason := range gen.ExitReasonValues() {
		code := exitCodeFor(reason)
		if other, ok := seen[code]; ok {
			t.Errorf("%s exits %d, as %s does", reason, code, other)
		}
		seen[code] = reason
		if code == exitInternal && reason != gen.ExitReasonInternalError {
			t.Errorf("%s falls to %d, the internal error's status", reason, code)
		}
		name := string(reason)
		if reason == gen.ExitReasonInternalError {
			name = "internal error" // as the Notes say it, beside "usage error"
		}
		if !strings.Contains(help, fmt.Sprintf(" %d %s", code, name)) {
			t.Errorf("the help's Notes do not say %s exits %d", reason, code)
		}
		if !regexp.MustCompile(fmt.Sprintf("(?m)^\\| `%s` \\|.*\\| %d \\|$", reason, code)).Match(runs) {
			t.Errorf("docs/runs.md's table does not give %s the status %d", reason, code)
		}
		if !strings.Contains(string(readme), fmt.Sprintf("| %d | `%s` |", code, reason)) {
			t.Errorf("the README's table does not give %s the status %d", reason, code)
		}
	}
}
