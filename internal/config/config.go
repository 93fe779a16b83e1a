// Package config reads the settings a person sets once, in TOML: the
// user's file and the repository's, whose keys are the command's own flags
// in snake_case, applied beneath the flags of the command line.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// File is one configuration file as read.
type File struct {
	Path string
	// Values are the top-level keys; Profiles the tables of [profiles.NAME].
	Values   map[string]any
	Profiles map[string]map[string]any
	// Trusted are the repositories (absolute paths) whose files may set
	// every key; only the user's file is asked.
	Trusted []string
}

// UserDir is the user's specloop directory, which holds config.toml and
// AGENTS.md: specloop in $XDG_CONFIG_HOME, else in the system's
// configuration directory (~/.config on Linux).
func UserDir() (string, error) {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		var err error
		if dir, err = os.UserConfigDir(); err != nil {
			return "", fmt.Errorf("config: %w", err)
		}
	}
	return filepath.Join(dir, "specloop"), nil
}

// UserPath is the user's file: config.toml in UserDir.
func UserPath() (string, error) {
	dir, err := UserDir()
	return filepath.Join(dir, "config.toml"), err
}

// RepoFile is where a repository keeps its file, from its root.
const RepoFile = ".specloop/config.toml"

// maxFileBytes bounds a configuration file (a repository's is untrusted).
const maxFileBytes = 1 << 20

// Read reads the file at path; a file that does not exist is nil, no
// error. Errors name the file, and the line for a TOML syntax error.
func Read(path string) (*File, error) {
	data, err := readFile(os.Open(path))
	if err != nil || data == nil {
		return nil, err
	}
	return parse(path, data)
}

// ReadRepo reads the file of the repository at root (RepoFile), through
// an os.Root of the repository: a symbolic link cannot bring in a file
// from outside it. A repository without one is nil, no error.
func ReadRepo(root string) (*File, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	defer r.Close()
	data, err := readFile(r.Open(filepath.FromSlash(RepoFile)))
	if err != nil || data == nil {
		return nil, err
	}
	return parse(filepath.Join(root, filepath.FromSlash(RepoFile)), data)
}

// readFile reads what open opened, at most maxFileBytes; nil when there is
// no such file.
func readFile(f *os.File, err error) ([]byte, error) {
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("config: %s: not a regular file", f.Name())
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("config: %s: larger than %d bytes", f.Name(), maxFileBytes)
	}
	return data, nil
}

func parse(path string, data []byte) (*File, error) {
	var raw map[string]any
	if _, err := toml.Decode(string(data), &raw); err != nil {
		return nil, fmt.Errorf("config: %s: %w", path, err)
	}
	f := &File{Path: path, Values: raw, Profiles: map[string]map[string]any{}}
	if p, ok := raw["profiles"]; ok {
		delete(raw, "profiles")
		tables, ok := p.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("config: %s: profiles: want tables [profiles.NAME]", path)
		}
		for name, t := range tables {
			table, ok := t.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("config: %s: profiles.%s: want a table", path, name)
			}
			f.Profiles[name] = table
		}
	}
	if t, ok := raw["trusted_projects"]; ok {
		delete(raw, "trusted_projects")
		list, ok := t.([]any)
		for _, v := range list {
			s, isString := v.(string)
			if !isString || !filepath.IsAbs(s) {
				ok = false
				break
			}
			f.Trusted = append(f.Trusted, filepath.Clean(s))
		}
		if !ok {
			return nil, fmt.Errorf("config: %s: trusted_projects: want a list of absolute paths", path)
		}
	}
	return f, nil
}

// Setting is one flag a file set.
type Setting struct {
	Flag, Value string
	// From is the file and, for a profile's key, the profile.
	From string
}

// RepoSafe are the keys a repository's file may set without the user's
// trust: what changes the run's budget, its check (a sandboxed command)
// and how much of its own AGENTS.md it reads, never where it sends the user's key, what it reads or writes
// outside the workspace, or how it is confined. Approval may only grow
// stricter and the sandbox only not be turned off (repoValueRefused).
var RepoSafe = []string{"model", "context_window", "check", "max_steps", "token_budget",
	"max_observation_bytes", "max_observation_lines", "approval", "sandbox", "mcp_timeout",
	"no_project_docs", "project_docs_limit"}

// approvalOrder ranks the approval policies, laxest first.
var approvalOrder = []string{"never", "commands", "writes", "always"}

// Apply sets the flags of fs that the user's file and then the
// repository's give (either may be nil), each file's profile table (when
// profile is not "") over its top-level keys; the caller parses the
// command line afterwards, so its flags win. A key that names no flag of
// fs, or a value the flag refuses, is an error naming the file and the
// key. Unless the user's file trusts repoRoot, the repository's keys
// outside RepoSafe, and values that weaken confinement, are not applied:
// each gets a warning, which the caller prints.
func Apply(fs *flag.FlagSet, user, repo *File, repoRoot, profile string) (set []Setting, warnings []string, err error) {
	if profile != "" && !hasProfile(user, profile) && !hasProfile(repo, profile) {
		return nil, nil, fmt.Errorf("config: no profile %q in %s", profile, describe(user, repo))
	}
	trusted := user != nil && slices.Contains(user.Trusted, filepath.Clean(repoRoot))
	approval := "never"
	for _, f := range []*File{user, repo} {
		if f == nil {
			continue
		}
		type layer struct {
			values map[string]any
			from   string
		}
		layers := []layer{{f.Values, f.Path}}
		if t, ok := f.Profiles[profile]; ok && profile != "" {
			layers = append(layers, layer{t, f.Path + " [profiles." + profile + "]"})
		}
		for _, layer := range layers {
			for _, key := range slices.Sorted(maps.Keys(layer.values)) {
				v := layer.values[key]
				if f == repo && !trusted {
					if reason := repoRefused(key, v, approval); reason != "" {
						warnings = append(warnings, fmt.Sprintf("%s: %s is not applied: %s; trust the repository in %s (trusted_projects) to allow it", layer.from, key, reason, userName(user)))
						continue
					}
				}
				values, err := setFlag(fs, key, v)
				if err != nil {
					return nil, nil, fmt.Errorf("config: %s: %s: %w", layer.from, key, err)
				}
				for _, s := range values {
					set = append(set, Setting{Flag: flagName(key), Value: s, From: layer.from})
				}
				if key == "approval" {
					approval = values[0]
				}
			}
		}
	}
	return set, warnings, nil
}

// repoRefused says why an untrusted repository may not set key to v, or "".
func repoRefused(key string, v any, approval string) string {
	switch {
	case !slices.Contains(RepoSafe, key):
		return "a repository may not set it"
	case key == "model" && !isProviderModel(v):
		return "a repository may name only a provider's model (openai:NAME or anthropic:NAME), not a file to replay"
	case key == "sandbox" && v == "none":
		return "a repository may not turn the sandbox off"
	case key == "approval":
		s, _ := v.(string)
		if slices.Index(approvalOrder, s) < slices.Index(approvalOrder, approval) {
			return "a repository may not make approvals laxer than " + approval
		}
	}
	return ""
}

// setFlag sets the flag key names to v: each element of a list in turn
// (for flags that repeat), anything else as its TOML text.
func setFlag(fs *flag.FlagSet, key string, v any) ([]string, error) {
	if strings.Contains(key, "-") {
		return nil, fmt.Errorf("keys are the flags in snake_case: %s", strings.ReplaceAll(key, "-", "_"))
	}
	f := fs.Lookup(flagName(key))
	if f == nil {
		return nil, fmt.Errorf("no such setting (the keys are the flags of specloop %s, in snake_case)", fs.Name())
	}
	list, isList := v.([]any)
	if !isList {
		list = []any{v}
	}
	var out []string
	for _, item := range list {
		var s string
		switch item := item.(type) {
		case string:
			s = item
		case int64, float64, bool:
			s = fmt.Sprint(item)
		default:
			return nil, fmt.Errorf("want a string, a number, a boolean or a list of them, not %T", item)
		}
		if err := fs.Set(f.Name, s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func flagName(key string) string { return strings.ReplaceAll(key, "_", "-") }

func hasProfile(f *File, name string) bool {
	if f == nil {
		return false
	}
	_, ok := f.Profiles[name]
	return ok
}

func describe(files ...*File) string {
	var parts []string
	for _, f := range files {
		if f != nil {
			parts = append(parts, f.Path+" (profiles: "+strings.Join(slices.Sorted(maps.Keys(f.Profiles)), ", ")+")")
		}
	}
	if len(parts) == 0 {
		return "any configuration file (there is none)"
	}
	return strings.Join(parts, " or ")
}

func userName(user *File) string {
	if user == nil {
		return "your configuration file"
	}
	return user.Path
}

// isProviderModel reports whether v is a provider's model, which reads
// no file (replay: and verify: name files of the user's).
func isProviderModel(v any) bool {
	s, _ := v.(string)
	return strings.HasPrefix(s, "openai:") || strings.HasPrefix(s, "anthropic:")
}
