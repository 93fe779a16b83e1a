package tools

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/specloop/specloop/gen"
)

func TestClean(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
		code     gen.ErrorCode
	}{
		{"", ".", ""},
		{".", ".", ""},
		{"a/b/../c", "a/c", ""},
		{"./a//b/", "a/b", ""},
		{"..", "", gen.ErrorCodeOutsideWorkspace},
		{"a/../..", "", gen.ErrorCodeOutsideWorkspace},
		{"../a", "", gen.ErrorCodeOutsideWorkspace},
		{"/etc/passwd", "", gen.ErrorCodeOutsideWorkspace},
		{"a\x00b", "", gen.ErrorCodeOutsideWorkspace},
		{"..foo", "..foo", ""},
	}
	for _, tt := range tests {
		got, err := clean(tt.in)
		var te *Error
		switch {
		case tt.code != "" && (!errors.As(err, &te) || te.Code != tt.code):
			t.Errorf("clean(%q) error %v, want code %s", tt.in, err, tt.code)
		case tt.code == "" && (err != nil || got != tt.want):
			t.Errorf("clean(%q) = %q, %v, want %q", tt.in, got, err, tt.want)
		}
	}
}

// FuzzClean: a path either is refused as outside the workspace or becomes a
// local path (no "..", not absolute, no NUL), without panicking.
func FuzzClean(f *testing.F) {
	for _, s := range []string{"", ".", "..", "a/../../b", "/x", "a\x00", "./a/./b/..", "..a/..", "a/b/c/../../.."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got, err := clean(p)
		if err != nil {
			var te *Error
			if !errors.As(err, &te) || te.Code != gen.ErrorCodeOutsideWorkspace {
				t.Fatalf("clean(%q): unexpected error %v", p, err)
			}
			return
		}
		if got != "." && !filepath.IsLocal(got) {
			t.Fatalf("clean(%q) = %q, which is not local", p, got)
		}
	})
}
