package trace_test

import (
	"testing"

	"github.com/specloop/specloop/trace"
)

func TestNames(t *testing.T) {
	for _, tt := range []struct {
		recorded, name string
		want           bool
	}{
		{"calculator", "calculator", true},
		{trace.Summary("shell"), "shell", true},
		{trace.Summary("shell"), "bash", false},
		{"shell", "bash", false},
		{trace.Summary("shell"), trace.Summary("shell"), true},
	} {
		if got := trace.Names(tt.recorded, tt.name); got != tt.want {
			t.Errorf("Names(%q, %q) = %v, want %v", tt.recorded, tt.name, got, tt.want)
		}
	}
}
