package sandbox

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The build cache of sandboxed commands reads through to the user's own:
// the go command in a sandbox runs this package's binary as its
// GOCACHEPROG (cacheProgArg, marked by cacheProgEnv like the helper),
// which answers a lookup from specloop's own cache, else from the user's
// GOCACHE, and stores every new entry in specloop's own cache only. The
// user's cache is bound (bwrap) or allowed (Landlock) read-only, so no
// command, this program included, can change what the user's builds link.
const (
	cacheProgArg = "sandbox-gocache"
	cacheProgEnv = "SPECLOOP_SANDBOX_GOCACHE"
)

func init() {
	if len(os.Args) == 4 && os.Args[1] == cacheProgArg && os.Getenv(cacheProgEnv) == "1" {
		if err := serveCache(os.Stdin, os.Stdout, os.Args[2], os.Args[3]); err != nil {
			fmt.Fprintln(os.Stderr, "specloop build cache:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// cacheProgEnviron is the environment that makes a sandboxed go command use
// exe (the helper executable as the command sees it) as its cache
// program, over own and then the user's cache; nil when the toolchain has
// no user cache to read through or a path cannot be quoted for the go
// command.
func cacheProgEnviron(exe string, tc toolchain) []string {
	if exe == "" || tc.userCache == "" || tc.cache == "" {
		return nil
	}
	prog := []string{}
	for _, s := range []string{exe, cacheProgArg, tc.cache, tc.userCache} {
		// The go command splits GOCACHEPROG with cmd/internal/quoted:
		// quotes without escapes.
		switch {
		case !strings.ContainsAny(s, "' \t\n\r\""):
		case !strings.Contains(s, "'"):
			s = "'" + s + "'"
		case !strings.Contains(s, `"`):
			s = `"` + s + `"`
		default:
			return nil
		}
		prog = append(prog, s)
	}
	return []string{"GOCACHEPROG=" + strings.Join(prog, " "), cacheProgEnv + "=1"}
}

// cacheRequest and cacheResponse are the GOCACHEPROG protocol's messages
// (cmd/go/internal/cacheprog): one JSON request a line, a put's body
// following as a base64 JSON string; responses in any order.
type cacheRequest struct {
	ID       int64
	Command  string
	ActionID []byte `json:",omitempty"`
	OutputID []byte `json:",omitempty"`
	BodySize int64  `json:",omitempty"`
}

type cacheResponse struct {
	ID            int64
	Err           string     `json:",omitempty"`
	KnownCommands []string   `json:",omitempty"`
	Miss          bool       `json:",omitempty"`
	OutputID      []byte     `json:",omitempty"`
	Size          int64      `json:",omitempty"`
	Time          *time.Time `json:",omitempty"`
	DiskPath      string     `json:",omitempty"`
}

// serveCache answers the go command's requests from in on out until it
// closes: get from own, then from user; put into own.
func serveCache(in io.Reader, out io.Writer, own, user string) error {
	bw := bufio.NewWriter(out)
	enc := json.NewEncoder(bw)
	var mu sync.Mutex
	reply := func(r cacheResponse) {
		mu.Lock()
		defer mu.Unlock()
		_ = enc.Encode(r)
		_ = bw.Flush()
	}
	reply(cacheResponse{KnownCommands: []string{"get", "put", "close"}})
	dec := json.NewDecoder(bufio.NewReader(in))
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		var req cacheRequest
		if err := dec.Decode(&req); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("read a request: %w", err)
		}
		var body []byte
		if req.Command == "put" && req.BodySize > 0 {
			if err := dec.Decode(&body); err != nil {
				return fmt.Errorf("read the body of request %d: %w", req.ID, err)
			}
		}
		switch req.Command {
		case "close":
			wg.Wait()
			trimCache(own)
			reply(cacheResponse{ID: req.ID})
			return nil
		case "get":
			wg.Go(func() {
				r, ok := cacheEntry(own, req.ActionID)
				if ok {
					used(cacheFile(own, req.ActionID, "a"), r.DiskPath)
				} else {
					r, ok = cacheEntry(user, req.ActionID)
				}
				r.ID, r.Miss = req.ID, !ok
				reply(r)
			})
		case "put":
			wg.Go(func() {
				r, err := putEntry(own, req.ActionID, req.OutputID, body)
				r.ID = req.ID
				if err != nil {
					r.Err = err.Error()
				}
				reply(r)
			})
		default:
			reply(cacheResponse{ID: req.ID, Err: fmt.Sprintf("unknown command %q", req.Command)})
		}
	}
}

// The go command's on-disk cache (cmd/go/internal/cache): an action entry
// DIR/xx/<action ID hex>-a is one line "v1 <action ID hex> <output ID
// hex> <size, %20d> <time in Unix ns, %20d>\n", its output
// DIR/xx/<output ID hex>-d.
const (
	entryFormat = "v1 %x %x %20d %20d\n"
	hashSize    = sha256.Size
	entrySize   = len("v1 ") + 2*hashSize + 1 + 2*hashSize + 1 + 20 + 1 + 20 + 1
)

func cacheFile(dir string, id []byte, kind string) string {
	h := hex.EncodeToString(id)
	return filepath.Join(dir, h[:2], h+"-"+kind)
}

// cacheEntry looks action ID id up in the cache in dir. The files may
// have been written by anyone who can write dir: an entry that is not
// exactly of the format, names another action, or whose output is not a
// regular file of its size is a miss.
func cacheEntry(dir string, id []byte) (cacheResponse, bool) {
	if dir == "" || len(id) != hashSize {
		return cacheResponse{}, false
	}
	f, err := os.Open(cacheFile(dir, id, "a"))
	if err != nil {
		return cacheResponse{}, false
	}
	defer f.Close()
	b := make([]byte, entrySize+1)
	if n, _ := io.ReadFull(f, b); n != entrySize {
		return cacheResponse{}, false
	}
	// Read loosely, then held to be exactly the go command's own writing
	// of what was read.
	var aid, out []byte
	var v [2]int64
	if _, err := fmt.Sscanf(string(b[:entrySize]), entryFormat, &aid, &out, &v[0], &v[1]); err != nil ||
		v[0] < 0 || v[1] < 0 || fmt.Sprintf(entryFormat, id, out, v[0], v[1]) != string(b[:entrySize]) {
		return cacheResponse{}, false
	}
	path := cacheFile(dir, out, "d")
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != v[0] {
		return cacheResponse{}, false
	}
	t := time.Unix(0, v[1])
	return cacheResponse{OutputID: out, Size: v[0], Time: &t, DiskPath: path}, true
}

// putEntry stores body as the output of action id in dir, in the go
// command's format, each file written whole and then renamed into place.
func putEntry(dir string, id, out, body []byte) (cacheResponse, error) {
	if len(id) != hashSize || len(out) != hashSize {
		return cacheResponse{}, errors.New("put: action and output IDs must be SHA-256 hashes")
	}
	if sum := sha256.Sum256(body); !bytes.Equal(sum[:], out) {
		return cacheResponse{}, errors.New("put: the output ID is not the hash of the body")
	}
	path := cacheFile(dir, out, "d")
	if err := writeAtomic(path, body); err != nil {
		return cacheResponse{}, err
	}
	now := time.Now()
	entry := fmt.Sprintf(entryFormat, id, out, len(body), now.UnixNano())
	if err := writeAtomic(cacheFile(dir, id, "a"), []byte(entry)); err != nil {
		return cacheResponse{}, err
	}
	return cacheResponse{OutputID: out, Size: int64(len(body)), Time: &now, DiskPath: path}, nil
}

func writeAtomic(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("put: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-")
	if err != nil {
		return fmt.Errorf("put: %w", err)
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("put: %w", err)
	}
	return nil
}

// used marks the files of an entry of the sandbox's cache as used, once
// an hour at most, as the go command does, for trimCache.
func used(paths ...string) {
	now := time.Now()
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil && now.Sub(fi.ModTime()) > time.Hour {
			_ = os.Chtimes(p, now, now)
		}
	}
}

// trimCache removes, at most once a day, the files of the cache in dir
// that were not used for five days, as the go command trims its own
// cache; it does not trim a cache behind GOCACHEPROG. Like the go
// command, it notes the last trim in dir/trim.txt.
func trimCache(dir string) {
	mark := filepath.Join(dir, "trim.txt")
	now := time.Now()
	if fi, err := os.Stat(mark); err == nil && now.Sub(fi.ModTime()) < 24*time.Hour {
		return
	}
	if os.WriteFile(mark, []byte(strconv.FormatInt(now.Unix(), 10)), 0o600) != nil {
		return
	}
	cutoff := now.Add(-5 * 24 * time.Hour)
	for i := range 256 {
		sub := filepath.Join(dir, fmt.Sprintf("%02x", i))
		entries, _ := os.ReadDir(sub)
		for _, e := range entries {
			if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() && fi.ModTime().Before(cutoff) {
				_ = os.Remove(filepath.Join(sub, e.Name()))
			}
		}
	}
}
