package tools_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/tools"
	"golang.org/x/sys/unix"
)

// hugeFileSize is the attack's file: a 2 GB sparse file (no disk used).
const hugeFileSize = 2 << 30

// writeHugeFile creates name under dir: 16 KiB of text lines, so that the
// file looks like text, then holes up to hugeFileSize (read as NUL bytes,
// one gigantic line).
func writeHugeFile(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	head := strings.Repeat("hello world, a line of text\n", 16<<10/28+1)
	if err := os.WriteFile(p, []byte(head), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, hugeFileSize); err != nil {
		t.Fatal(err)
	}
	return p
}

// allocated returns the bytes the process allocated while f ran. Tests that
// use it do not run in parallel.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestHugeFileBoundedMemory is the attack of a 2 GB file: every file tool
// either refuses it (file_too_large) or passes it over, without reading it
// into memory and without changing it.
func TestHugeFileBoundedMemory(t *testing.T) {
	const maxAlloc = 64 << 20
	dir := t.TempDir()
	p := writeHugeFile(t, dir, "big.txt")
	writeFiles(t, dir, map[string]string{"small.txt": "hello world\n"})
	rt := wsRuntime(t, dir)
	for _, tc := range []struct {
		name string
		tool string
		args map[string]any
		code string // "" when the call succeeds
		data func(t *testing.T, d map[string]any)
	}{
		{name: "read", tool: "read_file", args: map[string]any{"path": "big.txt"}, code: "file_too_large"},
		{name: "read range", tool: "read_file", args: map[string]any{"path": "big.txt", "start_line": 1, "end_line": 2}, code: "file_too_large"},
		{name: "search the file", tool: "search", args: map[string]any{"pattern": "hello", "path": "big.txt"}, code: "file_too_large"},
		{name: "search the workspace", tool: "search", args: map[string]any{"pattern": "hello"}, data: func(t *testing.T, d map[string]any) {
			if ms := d["matches"].([]any); len(ms) != 1 || ms[0].(map[string]any)["path"] != "small.txt" {
				t.Errorf("matches = %v, want small.txt only", ms)
			}
			if !strings.Contains(fmt.Sprint(d["notes"]), "big.txt") {
				t.Errorf("notes = %v, want one naming the skipped big.txt", d["notes"])
			}
		}},
		{name: "edit", tool: "edit_file", args: map[string]any{"path": "big.txt", "old_text": "hello world, a line of text\nhello", "new_text": "bye"}, code: "file_too_large"},
		{name: "write over", tool: "write_file", args: map[string]any{"path": "big.txt", "content": "small now\n"}, code: "file_too_large"},
		{name: "list", tool: "list_files", args: map[string]any{}, data: func(t *testing.T, d map[string]any) {
			if got := fmt.Sprint(d["files"]); got != "[big.txt small.txt]" {
				t.Errorf("files = %s", got)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var obs gen.Observation
			n := allocated(func() { obs = callTool(t, rt, tc.tool, tc.args) })
			if n > maxAlloc {
				t.Errorf("%s allocated %d MiB for a 2 GB file, want at most %d MiB", tc.tool, n>>20, maxAlloc>>20)
			}
			if tc.code != "" {
				if !obs.IsError || code(obs) != tc.code {
					t.Fatalf("got %s (%s), want the error %s", clipped(obs.Content), code(obs), tc.code)
				}
				if !strings.Contains(obs.Content, "big.txt") || !strings.Contains(obs.Content, "MiB") {
					t.Errorf("the message %q should name the file and the cap", obs.Content)
				}
			} else {
				mustSucceed(t, obs)
				tc.data(t, data(obs))
			}
			if fi, err := os.Stat(p); err != nil || fi.Size() != hugeFileSize {
				t.Fatalf("the file changed: %v %v", fi.Size(), err)
			}
		})
	}
}

// TestWriteFileContentCap: content over the cap is refused before anything
// is written.
func TestWriteFileContentCap(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rt := wsRuntime(t, dir)
	obs := callTool(t, rt, "write_file", map[string]any{"path": "big.txt", "content": strings.Repeat("x", 1<<20+1)})
	if code(obs) != "file_too_large" {
		t.Fatalf("got %s (%s), want file_too_large", clipped(obs.Content), code(obs))
	}
	if _, err := os.Stat(filepath.Join(dir, "big.txt")); !os.IsNotExist(err) {
		t.Fatalf("the file was written: %v", err)
	}
	// Exactly at the cap is fine.
	mustSucceed(t, callTool(t, rt, "write_file", map[string]any{"path": "big.txt", "content": strings.Repeat("x", 1<<20)}))
	// edit_file's cap is 16 MiB: grow the file to it.
	writeFiles(t, dir, map[string]string{"big.txt": strings.Repeat("x", 16<<20-3) + "end"})
	// An edit that would grow the file past the cap is refused too.
	obs = callTool(t, rt, "edit_file", map[string]any{"path": "big.txt", "old_text": "end", "new_text": "the end"})
	if code(obs) != "file_too_large" {
		t.Fatalf("edit past the cap: got %s (%s), want file_too_large", clipped(obs.Content), code(obs))
	}
}

func clipped(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// searchAsync starts a search and returns a channel with its observation.
func searchAsync(ctx context.Context, t *testing.T, rt *tools.Runtime, args map[string]any) <-chan gen.Observation {
	done := make(chan gen.Observation, 1)
	go func() {
		obs, err := rt.Call(ctx, &gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: "search", Arguments: args})
		if err != nil && ctx.Err() == nil {
			t.Errorf("search: %v", err)
		}
		done <- obs
	}()
	return done
}

// pathological compiles to about a thousand instructions and has no literal
// to look for first: Go's regexp then does a thousand steps a byte, about a
// minute over 2 MB.
const pathological = `[a-z]{1000}[0-9]`

// TestSearchRegexCancelled is the attack of a costly expression over 2 MB
// of text, cancelled by the client: the search returns soon after the
// cancellation, with every worker stopped (search returns only once its
// workers are done), instead of matching on for minutes.
func TestSearchRegexCancelled(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, content string
		short         bool // skipped with -short
	}{
		{"one 2 MB line", strings.Repeat("abcdefgh", 2<<20/8) + "\n", true},
		{"2 MB of 8 KiB lines", strings.Repeat(strings.Repeat("abcdefgh", 1<<10)+"\n", 256), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if testing.Short() && tc.short {
				t.Skip("the other case covers cancellation (slow under -race)")
			}
			dir := t.TempDir()
			writeFiles(t, dir, map[string]string{"a.txt": tc.content, "sub/b.txt": tc.content})
			rt := wsRuntime(t, dir)
			for _, path := range []string{"a.txt", "."} {
				ctx, cancel := context.WithCancel(context.Background())
				done := searchAsync(ctx, t, rt, map[string]any{"pattern": pathological, "regex": true, "path": path})
				time.Sleep(100 * time.Millisecond)
				cancel()
				// A correctness deadline, far above the bounded cost of
				// one regexp call, far below the minute of the whole.
				select {
				case obs := <-done:
					if !obs.IsError {
						t.Logf("path %s: finished before the cancellation: %s", path, clipped(obs.Content))
					}
				case <-time.After(15 * time.Second):
					t.Fatalf("path %s: the search still runs 15 s after its cancellation", path)
				}
			}
		})
	}
}

// TestSearchLongLines: lines longer than the cap are searched in their
// first part, and the result says how many were cut.
func TestSearchLongLines(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	long := "needle " + strings.Repeat("x", 3<<20) + " needle-late\n"
	writeFiles(t, dir, map[string]string{"a.txt": "short needle\n" + long + "needle again\n"})
	rt := wsRuntime(t, dir)
	obs := mustSucceed(t, callTool(t, rt, "search", map[string]any{"pattern": "needle"}))
	d := data(obs)
	var got []string
	for _, m := range d["matches"].([]any) {
		m := m.(map[string]any)
		got = append(got, fmt.Sprintf("%v:%v", m["line"], len(m["text"].(string)) < 400))
	}
	if strings.Join(got, " ") != "1:true 2:true 3:true" {
		t.Errorf("matches (line:clipped) = %v, want lines 1, 2 and 3, clipped", got)
	}
	if !strings.Contains(fmt.Sprint(d["notes"]), "1 line") {
		t.Errorf("notes = %v, want one saying 1 line was searched in part", d["notes"])
	}
	if strings.Contains(fmt.Sprint(d["matches"]), "needle-late") {
		t.Error("a match past the line cap was reported")
	}
}

// TestRegexTooComplex: an expression over the instruction cap is refused.
func TestRegexTooComplex(t *testing.T) {
	t.Parallel()
	rt := wsRuntime(t, t.TempDir())
	obs := callTool(t, rt, "search", map[string]any{"pattern": `[a-z]{1000}[0-9]{1000}[a-z]{1000}[0-9]{1000}[a-z]{1000}`, "regex": true})
	if code(obs) != "invalid_regex" || !strings.Contains(obs.Content, "instructions") {
		t.Fatalf("got %s (%s), want invalid_regex naming the instruction cap", clipped(obs.Content), code(obs))
	}
}

// mkDeepTree creates a chain of depth nested directories "d" under dir,
// with a file holding "needle" every 50 levels, without ever holding more
// than two descriptors (paths that deep are too long for the kernel).
func mkDeepTree(t *testing.T, dir string, depth int) {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range depth {
		if i%50 == 0 {
			f, err := unix.Openat(fd, "f.txt", unix.O_WRONLY|unix.O_CREAT|unix.O_CLOEXEC, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			unix.Write(f, []byte("needle\n"))
			unix.Close(f)
		}
		if err := unix.Mkdirat(fd, "d", 0o755); err != nil {
			t.Fatal(err)
		}
		sub, err := unix.Openat(fd, "d", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		fd = sub
	}
	unix.Close(fd)
	t.Cleanup(func() { rmDeepTree(t, dir) })
}

// rmDeepTree removes a tree made by mkDeepTree by pulling the chain up one
// level at a time (os.RemoveAll holds a descriptor per level).
func rmDeepTree(t *testing.T, dir string) {
	top, tmp := filepath.Join(dir, "d"), filepath.Join(dir, "tmp")
	os.Remove(filepath.Join(dir, "f.txt"))
	for {
		if err := os.Rename(top, tmp); err != nil {
			if !os.IsNotExist(err) {
				t.Error(err)
			}
			return
		}
		os.Remove(filepath.Join(tmp, "f.txt"))
		if err := os.Rename(filepath.Join(tmp, "d"), top); err != nil && !os.IsNotExist(err) {
			t.Error(err)
			return
		}
		if err := os.Remove(tmp); err != nil {
			t.Error(err)
			return
		}
	}
}

// memTempDir is a temporary directory in memory (/dev/shm) when there is
// one, for tests that create tens of thousands of directories: on a disk
// file system that alone takes a minute.
func memTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "specloop-test-")
	if err != nil {
		return t.TempDir()
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Error(err)
		}
	})
	return dir
}

// fdPeak samples the number of open descriptors of the process while f runs
// and returns the highest count seen.
func fdPeak(t *testing.T, f func()) int {
	t.Helper()
	count := func() int {
		es, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip("no /proc/self/fd")
		}
		return len(es)
	}
	var peak atomic.Int64
	peak.Store(int64(count()))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if n := int64(count()); n > peak.Load() {
				peak.Store(n)
			}
			time.Sleep(time.Millisecond)
		}
	}()
	f()
	close(stop)
	wg.Wait()
	return int(peak.Load())
}

// TestWalkDeepTree is the attack of a 20,000-directory tree: a chain 20,000
// levels deep. The walks do not enter directories deeper than the cap, say
// so, and hold few descriptors; before, they held two per level and ran the
// server out of descriptors.
func TestWalkDeepTree(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 20,000 directories")
	}
	dir := memTempDir(t)
	mkDeepTree(t, dir, 20000)
	rt := wsRuntime(t, dir)
	for _, tc := range []struct{ tool, key string }{{"list_files", "files"}, {"search", "matches"}} {
		t.Run(tc.tool, func(t *testing.T) {
			args := map[string]any{}
			if tc.tool == "search" {
				args["pattern"] = "needle"
			}
			var obs gen.Observation
			base := fdPeak(t, func() {})
			peak := fdPeak(t, func() {
				obs = mustSucceed(t, callTool(t, rt, tc.tool, args))
			})
			if peak-base > 400 {
				t.Errorf("%s held %d descriptors at once, want at most 400", tc.tool, peak-base)
			}
			d := data(obs)
			if n := len(d[tc.key].([]any)); n != 3 { // f.txt at levels 0, 50 and 100
				t.Errorf("%s found %d files, want the 3 within 128 levels", tc.tool, n)
			}
			if !strings.Contains(fmt.Sprint(d["notes"]), "128 levels") {
				t.Errorf("notes = %v, want one saying deeper directories were skipped", d["notes"])
			}
			if !strings.Contains(obs.Content, "128 levels") {
				t.Errorf("the model is not told: %s", clipped(obs.Content))
			}
		})
	}
}

// TestWalkEntryCap: a walk over more entries than its cap (lowered here
// from 200,000 to 5000: the entries read, directories included) stops at
// the cap, says so and marks the result truncated; it holds few
// descriptors meanwhile, although search queues files (each holding its
// directory open) ahead of its workers.
func TestWalkEntryCap(t *testing.T) {
	dir := memTempDir(t)
	// 200 directories, the first 30 of 100 directories with a file in
	// each: the cap is reached in the 25th (the root's 200 entries, then
	// 200 a directory), before the walk could tell the rest are empty.
	files := map[string]string{}
	for i := range 200 {
		if i >= 30 {
			files[fmt.Sprintf("d%03d/.keep", i)] = ""
			continue
		}
		for j := range 100 {
			files[fmt.Sprintf("d%03d/e%02d/f.txt", i, j)] = "needle\n"
		}
	}
	writeFiles(t, dir, files)
	rt := wsRuntime(t, dir)
	rt.Workspace().SetWalkMaxEntries(5000)
	for _, tc := range []struct{ tool, key string }{{"list_files", "files"}, {"search", "matches"}} {
		t.Run(tc.tool, func(t *testing.T) {
			args := map[string]any{"limit": 10000}
			if tc.tool == "search" {
				args["pattern"] = "needle"
			}
			var obs gen.Observation
			base := fdPeak(t, func() {})
			peak := fdPeak(t, func() { obs = mustSucceed(t, callTool(t, rt, tc.tool, args)) })
			if peak-base > 400 {
				t.Errorf("%s held %d descriptors at once, want at most 400", tc.tool, peak-base)
			}
			d := data(obs)
			n := len(d[tc.key].([]any))
			if n < 2000 || n > 2500 || d["truncated"] != true {
				t.Errorf("%s: %d results, truncated %v; want 2000-2500 (5000 entries: the root's 200, then 101 a directory of 100), truncated", tc.tool, n, d["truncated"])
			}
			if !strings.Contains(fmt.Sprint(d["notes"]), "5000 entries") || !strings.Contains(obs.Content, "5000 entries") {
				t.Errorf("notes = %v; want one naming the 5000-entry cap, shown to the model", d["notes"])
			}
		})
	}
}

// TestWalkIgnoreCap: each .gitignore pattern is a regular expression tried
// on every path, so a huge .gitignore would make a walk crawl. One that
// would put more than 2000 patterns in effect is not applied, and the
// result says so; smaller ones still apply.
func TestWalkIgnoreCap(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var huge strings.Builder
	huge.WriteString("# many patterns\nhidden.txt\n")
	for i := range 2000 {
		fmt.Fprintf(&huge, "build%d/**/*.o\n", i)
	}
	writeFiles(t, dir, map[string]string{
		".gitignore":       huge.String(),
		"hidden.txt":       "needle\n",
		"sub/.gitignore":   "# few\nlocal.txt\n",
		"sub/local.txt":    "needle\n",
		"sub/kept.txt":     "needle\n",
		"other/hidden.txt": "needle\n",
	})
	rt := wsRuntime(t, dir)
	obs := mustSucceed(t, callTool(t, rt, "list_files", map[string]any{}))
	d := data(obs)
	if got := fmt.Sprint(d["files"]); got != "[.gitignore hidden.txt other/hidden.txt sub/.gitignore sub/kept.txt]" {
		t.Errorf("files = %s; want the huge .gitignore unapplied, the small one applied", got)
	}
	if !strings.Contains(fmt.Sprint(d["notes"]), `".gitignore"`) || !strings.Contains(obs.Content, "2000") {
		t.Errorf("notes = %v; want one naming the unapplied .gitignore and the cap", d["notes"])
	}
}

// TestReadFileCancelled: read_file stops reading a large file (here 200 MiB,
// under the cap: 16 KiB of text, then one line of 200 MiB of NUL bytes)
// when its context is done.
func TestReadFileCancelled(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "big.txt")
	if err := os.WriteFile(p, []byte(strings.Repeat("some text\n", 2000)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, 200<<20); err != nil {
		t.Fatal(err)
	}
	rt := wsRuntime(t, dir)
	for _, args := range []map[string]any{{"path": "big.txt"}, {"path": "big.txt", "start_line": 3000}} {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		obs, err := rt.Call(ctx, &gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: "read_file", Arguments: args})
		if err != nil || code(obs) != string(gen.ErrorCodeCancelled) {
			t.Errorf("%v: got %s (%s, %v), want %s", args, clipped(obs.Content), code(obs), err, gen.ErrorCodeCancelled)
		}
	}
}
