package contract

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// fixture is the workspace the spec's tool examples assume: README.md with
// "hello" exactly once (edit_file's example replaces it) and "specloop"
// (search's example), Go files at the root and below (list_files' and
// search's glob examples, search's regex example), and no notes/ directory
// (write_file's example creates notes/todo.txt).
var fixture = map[string]string{
	"README.md":           "# specloop\n\nhello\nspecloop runs code agents from one spec.\n",
	"main.go":             "package main\n\nfunc main() {\n\tprintln(\"specloop\")\n}\n",
	"internal/util/id.go": "package util\n\n// ID returns its argument.\nfunc ID(s string) string { return s }\n",
	"docs/guide.md":       "# Guide\n\nRun `specloop run`.\n",
}

// WriteFixture writes the fixture workspace, the files the spec's tool
// examples refer to, into dir, which must exist.
func WriteFixture(dir string) error {
	for name, content := range fixture {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("fixture: %w", err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return fmt.Errorf("fixture: %w", err)
		}
	}
	return nil
}

// resetFixture makes dir hold exactly the fixture again, rewriting it only
// when a tool call changed something.
func resetFixture(dir string) error {
	if intact(dir) {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("fixture: %w", err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("fixture: %w", err)
		}
	}
	return WriteFixture(dir)
}

// intact reports whether dir holds the fixture's files, with their
// content, its directories and nothing else.
func intact(dir string) bool {
	seen := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case rel == ".":
			return nil
		case d.IsDir():
			if !fixtureDir(rel) {
				return fs.ErrExist
			}
			return nil
		case !d.Type().IsRegular():
			return fs.ErrExist
		}
		want, ok := fixture[rel]
		if !ok {
			return fs.ErrExist
		}
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, []byte(want)) {
			return fs.ErrExist
		}
		seen++
		return nil
	})
	return err == nil && seen == len(fixture)
}

// fixtureDir reports whether rel is a directory of the fixture.
func fixtureDir(rel string) bool {
	for name := range fixture {
		for d := filepath.ToSlash(filepath.Dir(name)); d != "."; d = filepath.ToSlash(filepath.Dir(d)) {
			if d == rel {
				return true
			}
		}
	}
	return false
}
