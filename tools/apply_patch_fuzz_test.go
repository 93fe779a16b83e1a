package tools_test

import (
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// FuzzApplyPatch: whatever patch a model sends, apply_patch does not
// panic, writes nothing outside the workspace and never leaks outside
// content.
func FuzzApplyPatch(f *testing.F) {
	for _, seed := range []string{
		"*** Begin Patch\n*** Update File: ok.txt\n@@\n-fine\n+x\n*** End Patch",
		"*** Begin Patch\n*** Add File: ../outside/x\n+x\n*** End Patch",
		"*** Begin Patch\n*** Add File: link-dir/x\n+x\n*** End Patch",
		"*** Begin Patch\n*** Update File: link-file\n@@\n-TOP-SECRET-OUTSIDE-CONTENT\n+x\n*** End Patch",
		"*** Begin Patch\n*** Update File: sub/keep.txt\n*** Move to: sub/up/moved\n@@\n-keep\n+x\n*** End Patch",
		"*** Begin Patch\n*** Delete File: sub/up/secret.txt\n*** End Patch",
		"*** Begin Patch\n*** Add File: .git/config\n+x\n*** End Patch",
	} {
		f.Add(seed)
	}
	base, ws, outside := escapeFixture(f)
	rt := wsRuntime(f, ws)
	outsideBefore := snapshot(f, outside)
	f.Fuzz(func(t *testing.T, patch string) {
		if !utf8.ValidString(patch) {
			t.Skip("arguments come from JSON, which is UTF-8")
		}
		obs := callTool(t, rt, "apply_patch", map[string]any{"patch": patch})
		// The errors may quote the patch itself, never a file outside.
		if strings.Contains(obs.Content, outsideSecret) && !strings.Contains(patch, outsideSecret) {
			t.Fatalf("outside content leaked: %q", obs.Content)
		}
		if diff := cmp.Diff(outsideBefore, snapshot(t, outside)); diff != "" {
			t.Fatalf("the patch changed the outside (-before +after):\n%s", diff)
		}
		for p := range snapshot(t, base) {
			if p != "." && !strings.HasPrefix(p, "ws") && !strings.HasPrefix(p, "outside") {
				t.Fatalf("the patch created %s next to the workspace", filepath.Join(base, p))
			}
		}
	})
}
