package agent_test

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/specloop/specloop/agent"
)

// numbered returns n lines `i<TAB>line i`, as read_file renders them.
func numbered(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%d\tline %d\n", i, i)
	}
	return b.String()
}

var markerRE = regexp.MustCompile(`\[… (\d+) lines, (\d+) bytes omitted(; ([^\n]*))? …\]\n`)

// checkTruncated checks the invariants of a truncated output: within the
// caps, the marker's numbers add up, head and tail are s's own.
func checkTruncated(t *testing.T, s, got string, tr agent.Truncation, maxBytes, maxLines int) {
	t.Helper()
	if n := strings.Count(got, "\n") + btoi(!strings.HasSuffix(got, "\n")); len(got) > maxBytes || n > maxLines {
		t.Fatalf("%d bytes and %d lines, over the caps of %d and %d", len(got), n, maxBytes, maxLines)
	}
	if utf8.ValidString(s) && !utf8.ValidString(got) {
		t.Fatal("the truncation split a UTF-8 sequence")
	}
	// The output is head, a line break when the head does not end with
	// one, the marker, and tail. Output that looks like a marker may come
	// first: find the one that adds up.
	for _, loc := range markerRE.FindAllStringSubmatchIndex(got, -1) {
		lines, _ := strconv.Atoi(got[loc[2]:loc[3]])
		bytes, _ := strconv.Atoi(got[loc[4]:loc[5]])
		if lines != tr.OmittedLines || bytes != tr.OmittedBytes {
			continue
		}
		prefix, tail := got[:loc[0]], got[loc[1]:]
		for _, head := range []string{prefix, strings.TrimSuffix(prefix, "\n")} {
			if strings.HasPrefix(s, head) && strings.HasSuffix(s, tail) && len(head)+bytes+len(tail) == len(s) &&
				lineCount(s[len(head):len(s)-len(tail)]) == lines {
				return
			}
		}
	}
	t.Fatalf("no marker for %+v between a head and a tail of the output in %q", tr, clip(got))
}

func lineCount(s string) int {
	return strings.Count(s, "\n") + btoi(s != "" && !strings.HasSuffix(s, "\n"))
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:100] + "…" + s[len(s)-100:]
	}
	return s
}

func TestTruncateOutput(t *testing.T) {
	long := strings.Repeat("é", 30000) // one line of 60000 bytes
	tests := []struct {
		name               string
		s                  string
		maxBytes, maxLines int
		omittedLines       int // -1: do not check
	}{
		{"many short lines: the line cap", numbered(1000), 10 << 10, 256, 1000 - 255},
		{"few long lines: the byte cap", strings.Repeat(strings.Repeat("x", 999)+"\n", 100), 10 << 10, 256, -1},
		{"one huge line of two-byte runes", long, 10 << 10, 256, 1},
		{"no trailing newline", strings.TrimSuffix(numbered(300), "\n"), 10 << 10, 256, 300 - 255},
		{"caps below the minimum are raised", numbered(200), 1, 1, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, tr := agent.TruncateOutput(tt.s, tt.maxBytes, tt.maxLines, func(string) string { return "see the rest elsewhere" })
			checkTruncated(t, tt.s, got, tr, max(tt.maxBytes, 512), max(tt.maxLines, 4))
			if tt.omittedLines >= 0 && tr.OmittedLines != tt.omittedLines {
				t.Errorf("omitted %d lines, want %d", tr.OmittedLines, tt.omittedLines)
			}
			if !strings.Contains(got, "; see the rest elsewhere …]") {
				t.Errorf("the marker lacks the hint: %q", clip(got))
			}
		})
	}
	t.Run("within the caps it is unchanged", func(t *testing.T) {
		s := numbered(256)
		got, tr := agent.TruncateOutput(s, len(s), 256, nil)
		if got != s || tr != (agent.Truncation{}) {
			t.Fatalf("changed an output within the caps: %+v", tr)
		}
	})
	t.Run("the hint gets the omitted lines", func(t *testing.T) {
		var omitted string
		agent.TruncateOutput(numbered(1000), 10<<10, 256, func(o string) string { omitted = o; return "" })
		if !strings.HasPrefix(omitted, "128\tline 128\n") || !strings.HasSuffix(omitted, "872\tline 872\n") {
			t.Fatalf("the hint got %q", clip(omitted))
		}
	})
}

func FuzzTruncateOutput(f *testing.F) {
	f.Add("héllo\nwörld\n", 600, 4)
	f.Add(strings.Repeat("日本語\n", 500), 512, 10)
	f.Add(strings.Repeat("€", 1000), 700, 300)
	f.Add(strings.Repeat("a\xffb\n", 400), 512, 8)
	f.Add(numbered(400), 1024, 16)
	f.Fuzz(func(t *testing.T, s string, maxBytes, maxLines int) {
		maxBytes = 512 + abs(maxBytes)%(16<<10)
		maxLines = 4 + abs(maxLines)%1000
		got, tr := agent.TruncateOutput(s, maxBytes, maxLines, func(o string) string {
			return "hint " + strings.ToValidUTF8(o[:min(len(o), 40)], "?") // may hold a newline
		})
		if tr == (agent.Truncation{}) {
			if got != s {
				t.Fatal("changed the output without saying so")
			}
			return
		}
		checkTruncated(t, s, got, tr, maxBytes, maxLines)
	})
}

func abs(n int) int {
	if n < 0 {
		return -(n + 1)
	}
	return n
}
