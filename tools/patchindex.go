package tools

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/specloop/specloop/internal/gitshape"
)

// maxIndexBytes caps the workspace's index a snapshot is seeded from
// (about 80 bytes a file: some 800,000 files).
const maxIndexBytes = 64 << 20

// indexEntry is an entry of a git index: the file's stat data as git
// records it (ctime, mtime, dev, ino, mode, uid, gid, size: ten 32-bit
// fields), its blob's id and its path.
type indexEntry struct {
	stat [40]byte
	id   [20]byte
	path string
}

// seed writes the private index file index from the workspace
// repository's own index, so that the first snapshot hashes only the files
// whose stat data differ from what that index records (and the untracked
// ones) instead of every file: what `git status` reads, and no more.
//
// That index is the workspace's to write, so it is data, parsed here (see
// parseIndex) and never given to git: the private index holds only plain
// entries (no extension, flag or cached tree) of clean paths under the
// workspace whose blob the repository's object directory holds with the
// size the stat data records (a file a clean filter or an end-of-line
// conversion changed on its way in has another size, and is hashed).
// Its modification time is the source's, so git treats an entry as racily
// clean, and reads its file, exactly when the workspace's git would. What
// a lying index can change is the old side of a file the run then
// changes, which is read from the workspace's objects anyway; the new
// side is always hashed from the file (see snapshot).
func (g *shadowGit) seed(ctx context.Context, index string) error {
	gd := gitshape.GitDir(g.top)
	if gd == "" || g.objects == "" {
		return errors.New("no repository index")
	}
	data, fi, err := readSmall(filepath.Join(gd, "index"), maxIndexBytes)
	if err != nil {
		return err
	}
	entries, err := parseIndex(data)
	if err != nil {
		return err
	}
	var ids bytes.Buffer
	var kept []indexEntry
	for _, e := range entries {
		if g.rel == "." || strings.HasPrefix(e.path, g.rel+"/") {
			kept = append(kept, e)
			fmt.Fprintf(&ids, "%x\n", e.id)
		}
	}
	var sizes bytes.Buffer
	if err := g.git(ctx, &ids, &sizes, true, true, g.top, index, "cat-file", "--batch-check", "--buffer"); err != nil {
		return err
	}
	lines := strings.Split(sizes.String(), "\n")
	if len(lines) != len(kept)+1 {
		return errors.New("cat-file: short answer")
	}
	out := binary.BigEndian.AppendUint32([]byte("DIRC\x00\x00\x00\x02"), 0)
	n := uint32(0)
	for i, e := range kept {
		// "<id> blob <size>", or "<id> missing"
		f := strings.Fields(lines[i])
		if size, err := strconv.ParseUint(f[len(f)-1], 10, 64); err != nil || len(f) != 3 || f[1] != "blob" || uint32(size) != binary.BigEndian.Uint32(e.stat[36:]) {
			continue
		}
		n++
		out = append(append(out, e.stat[:]...), e.id[:]...)
		out = binary.BigEndian.AppendUint16(out, uint16(min(len(e.path), 0xfff)))
		// NUL-padded to a multiple of 8 bytes, at least one NUL.
		out = append(append(out, e.path...), make([]byte, 8-(62+len(e.path))%8)...)
	}
	binary.BigEndian.PutUint32(out[8:], n)
	sum := sha1.Sum(out)
	if err := os.WriteFile(index, append(out, sum[:]...), 0o600); err != nil {
		return err
	}
	return os.Chtimes(index, fi.ModTime(), fi.ModTime())
}

// parseIndex returns the entries of the git index data (versions 2, 3 and
// 4, SHA-1 ids) that a snapshot may take as they are: stage 0, no flag
// (assume-unchanged, skip-worktree, intent-to-add), a regular file or a
// symbolic link; the others are left out, so their files are hashed.
// Extensions are not read. Anything it does not understand (a bad
// checksum, as a SHA-256 repository's would be; an entry past the end, a
// name whose length is not the one recorded, an unclean or .git path,
// entries out of order) is an error.
func parseIndex(data []byte) ([]indexEntry, error) {
	if len(data) < 32 || string(data[:4]) != "DIRC" {
		return nil, errors.New("index: bad header")
	}
	end := len(data) - sha1.Size
	if sum := sha1.Sum(data[:end]); !bytes.Equal(sum[:], data[end:]) && !bytes.Equal(data[end:], make([]byte, sha1.Size)) {
		return nil, errors.New("index: bad checksum")
	}
	version := binary.BigEndian.Uint32(data[4:])
	if version < 2 || version > 4 {
		return nil, fmt.Errorf("index: version %d", version)
	}
	var entries []indexEntry
	prev, off := "", 12
	for range binary.BigEndian.Uint32(data[8:]) {
		head := 62
		if end-off < head {
			return nil, errors.New("index: entry past the end")
		}
		var e indexEntry
		copy(e.stat[:], data[off:])
		copy(e.id[:], data[off+40:])
		flags := binary.BigEndian.Uint16(data[off+60:])
		extended := uint16(0)
		if flags&0x4000 != 0 {
			if version < 3 || end-off < 64 {
				return nil, errors.New("index: bad extended flags")
			}
			extended, head = binary.BigEndian.Uint16(data[off+62:]), 64
		}
		rest, strip := data[off+head:end], 0
		if version == 4 {
			// The number of bytes to drop from the end of the previous
			// path (git's varint), then the rest of this one.
			n := uint64(0)
			for ; ; strip++ {
				if strip == len(rest) || strip > 8 {
					return nil, errors.New("index: bad path prefix")
				}
				n = n<<7 | uint64(rest[strip]&0x7f)
				if rest[strip] < 0x80 {
					break
				}
				n++
			}
			if n > uint64(len(prev)) {
				return nil, errors.New("index: bad path prefix")
			}
			e.path, rest = prev[:len(prev)-int(n)], rest[strip+1:]
		}
		nul := bytes.IndexByte(rest, 0)
		if nul < 0 {
			return nil, errors.New("index: entry past the end")
		}
		e.path += string(rest[:nul])
		if version == 4 {
			off += head + strip + 1 + nul + 1
		} else {
			off += (head + nul + 8) &^ 7
		}
		stage := flags >> 12 & 3
		if int(flags&0xfff) != min(len(e.path), 0xfff) || off > end || !cleanIndexPath(e.path) || e.path < prev || e.path == prev && stage == 0 {
			return nil, fmt.Errorf("index: bad entry %q", e.path)
		}
		prev = e.path
		switch binary.BigEndian.Uint32(e.stat[24:]) {
		case 0o100644, 0o100755, 0o120000:
			if flags&0xf000 == 0 && extended == 0 {
				entries = append(entries, e)
			}
		}
	}
	return entries, nil
}

// cleanIndexPath reports whether p is a path git itself could have put in
// an index: relative, clean, and with no .git component.
func cleanIndexPath(p string) bool {
	for c := range strings.SplitSeq(p, "/") {
		if c == "" || c == "." || c == ".." || gitshape.IsGitName(c) || strings.ContainsRune(c, '\\') && filepath.Separator == '\\' {
			return false
		}
	}
	return true
}
