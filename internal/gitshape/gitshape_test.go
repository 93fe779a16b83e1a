package gitshape

import (
	"io/fs"
	"testing"
)

func TestLooks(t *testing.T) {
	tests := []struct {
		e    Entries
		want bool
	}{
		{0, false},
		{Head, false},
		{Objects | Refs, false},
		{Config | Hooks, false},
		{Head | Objects | Refs, true},
		{Head | CommonDir, true},
		{Config | Refs, true},
		{Hooks | Objects, true},
		{CommonDir | Refs, true},
		{Head | Objects, false},
	}
	for _, tt := range tests {
		if got := tt.e.Looks(); got != tt.want {
			t.Errorf("%06b.Looks() = %v, want %v", tt.e, got, tt.want)
		}
	}
}

func TestMarker(t *testing.T) {
	tests := []struct {
		name string
		typ  fs.FileMode
		want Entries
	}{
		{"HEAD", 0, Head},
		{"head", 0, Head},
		{"HEAD", fs.ModeSymlink, Head},
		{"HEAD", fs.ModeDir, 0},
		{"objects", fs.ModeDir, Objects},
		{"objects", 0, 0},
		{"Refs", fs.ModeDir, Refs},
		{"config", 0, Config},
		{"config", fs.ModeDir, 0},
		{"hooks", fs.ModeDir, Hooks},
		{"hooks", fs.ModeSymlink, Hooks},
		{"commondir", 0, CommonDir},
		{"config", fs.ModeNamedPipe, 0},
		{"README", 0, 0},
	}
	for _, tt := range tests {
		if got := Marker(tt.name, tt.typ); got != tt.want {
			t.Errorf("Marker(%q, %v) = %v, want %v", tt.name, tt.typ, got, tt.want)
		}
	}
}

func TestIsGitName(t *testing.T) {
	for _, n := range []string{".git", ".GIT", ".Git", ".git.", ".git ", ".g\u200cit",
		"git~1", "GIT~1", "git~1. ", ".git::$INDEX_ALLOCATION", ".git:$I30:$INDEX_ALLOCATION", ".git::$DATA"} {
		if !IsGitName(n) {
			t.Errorf("IsGitName(%q) = false", n)
		}
	}
	for _, n := range []string{"git", ".gitignore", ".git2", "x.git", "", "git~2", "xgit~1", ":.git"} {
		if IsGitName(n) {
			t.Errorf("IsGitName(%q) = true", n)
		}
	}
}
