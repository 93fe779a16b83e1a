// Package gitshape is the one rule of what looks like a git directory, shared by the file tools' write rules and the sandbox's guard of commands.
package gitshape

import (
	"io/fs"
	"slices"
	"strings"
)

// Entries is the set of marker entries a directory has: the names whose
// presence makes git, or this rule, take it for a git directory.
type Entries uint8

// The marker entries.
const (
	Head      Entries = 1 << iota // HEAD: a file or a symbolic link
	Objects                       // objects/: a directory or a symbolic link
	Refs                          // refs/: a directory or a symbolic link
	Config                        // config: a file or a symbolic link
	Hooks                         // hooks/: a directory or a symbolic link
	CommonDir                     // commondir: a file or a symbolic link
)

// Names are the marker entries' names as git spells them, in the order
// of their bits.
var Names = [...]string{"HEAD", "objects", "refs", "config", "hooks", "commondir"}

// String names the marker entries in e, directories with a slash, for a
// message: "HEAD, objects/, refs/".
func (e Entries) String() string {
	var names []string
	for i, n := range Names {
		if e&(1<<i) != 0 {
			if m := Entries(1 << i); m == Objects || m == Refs || m == Hooks {
				n += "/"
			}
			names = append(names, n)
		}
	}
	return strings.Join(names, ", ")
}

// Marker returns the marker an entry called name of type typ (a
// fs.FileMode's type bits) is, or 0. Only the type git would use counts
// (a config directory is no configuration), and a symbolic link always
// counts, since its target may be either.
func Marker(name string, typ fs.FileMode) Entries {
	// Without regard to case, as file systems that fold case see names.
	i := slices.IndexFunc(Names[:], func(n string) bool { return strings.EqualFold(n, name) })
	if i < 0 {
		return 0
	}
	m := Entries(1 << i)
	isDir := m == Objects || m == Refs || m == Hooks
	if typ&fs.ModeSymlink != 0 || isDir && typ.IsDir() || !isDir && typ&fs.ModeType == 0 {
		return m
	}
	return 0
}

// Looks reports whether a directory with these entries looks like a git
// directory: git's own test (HEAD with objects/ and refs/ beside it, or
// HEAD with a commondir file), or a config, hooks/ or commondir beside any
// of HEAD, objects/ and refs/, so that a half-built git directory cannot be
// completed one entry at a time either.
func (e Entries) Looks() bool {
	switch {
	case e&(Head|Objects|Refs) == Head|Objects|Refs, e&(Head|CommonDir) == Head|CommonDir:
		return true
	}
	return e&(Config|Hooks|CommonDir) != 0 && e&(Head|Objects|Refs) != 0
}

// IsGitName reports whether name is ".git" as a file system that folds
// case, ignores some Unicode characters (HFS+), drops trailing dots and
// spaces, opens a name with an alternate data stream suffix (":$DATA")
// as the name itself or knows the 8.3 short name GIT~1 (NTFS) sees it: a directory of that name is a repository's
// git directory, and a file of that name is a pointer ("gitdir: ...") git
// follows.
func IsGitName(name string) bool {
	if len(name) < len(".git") {
		return false
	}
	name = strings.Map(func(r rune) rune {
		switch {
		case r == 0x200c, r == 0x200d, r == 0x200e, r == 0x200f,
			r >= 0x202a && r <= 0x202e, r >= 0x206a && r <= 0x206f, r == 0xfeff:
			return -1
		}
		return r
	}, name)
	// NTFS: "name:stream" and "name::$INDEX_ALLOCATION" open name itself.
	if i := strings.IndexByte(name, ':'); i >= 0 {
		name = name[:i]
	}
	name = strings.TrimRight(name, ". ")
	// NTFS: GIT~1 is the 8.3 short name of .git.
	return strings.EqualFold(name, ".git") || strings.EqualFold(name, "git~1")
}

// Guarded reports whether the entry name of a git directory is one whose
// content decides what git runs or where it looks: config,
// config.worktree, commondir, gitdir and HEAD (everything under hooks/ is
// guarded too; see Marker).
func Guarded(name string) bool {
	switch strings.ToLower(name) {
	case "config", "config.worktree", "commondir", "gitdir", "head":
		return true
	}
	return false
}
