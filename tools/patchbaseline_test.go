package tools_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/tools"
)

// memKeeper is a BaselineKeeper in memory: the first saved record stays.
type memKeeper struct {
	mu    sync.Mutex
	data  []byte
	saves int
}

func (k *memKeeper) LoadBaseline(context.Context) ([]byte, bool, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return bytes.Clone(k.data), k.data != nil, nil
}

func (k *memKeeper) SaveBaseline(_ context.Context, data []byte) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.saves++
	if k.data == nil {
		k.data = bytes.Clone(data)
	}
	return nil
}

// keptRuntime is a runtime on a new Workspace on dir whose baseline k
// keeps (nil: none, as the embedded engine has).
func keptRuntime(t *testing.T, dir string, k tools.BaselineKeeper) (*tools.Runtime, *tools.Workspace) {
	t.Helper()
	ws, err := tools.OpenWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	if k != nil {
		ws.KeepBaseline(k)
	}
	t.Cleanup(func() { ws.Close() })
	rt, err := tools.New(tools.Config{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	return rt, ws
}

// baselineRepo makes a repository with committed files, then changes made
// before the run (which no patch holds): a tracked file changed, an
// untracked file, and a large untracked file.
func baselineRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	git(t, dir, "init", "-q")
	writeFiles(t, dir, map[string]string{
		"a.txt":      "one\ntwo\nthree\n",
		"del.txt":    "to be deleted\n",
		"bin.dat":    "\x00\x01binary\x00",
		"sub/c.txt":  "c\n",
		".gitignore": "ignored/\n",
	})
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "base")
	writeFiles(t, dir, map[string]string{
		"a.txt":         "one\ntwo\nthree\nchanged before the run\n",
		"pre.txt":       "untracked before the run\n",
		"big.txt":       strings.Repeat("big line\n", 4000),
		"ignored/x.txt": "ignored\n",
	})
	return dir
}

// step is a tool call of the script the baseline tests run.
type step struct {
	tool string
	args map[string]any
}

var baselineScript = []step{
	{"edit_file", map[string]any{"path": "a.txt", "old_text": "two", "new_text": "2"}},
	{"edit_file", map[string]any{"path": "pre.txt", "old_text": "untracked", "new_text": "edited"}},
	{"run_command", map[string]any{"command": "rm del.txt && printf 'x\\000\\002y' > bin.dat && echo new > new.txt"}},
	{"run_command", map[string]any{"command": "echo more >> big.txt && echo i > ignored/y.txt"}},
	{"write_file", map[string]any{"path": "sub/c.txt", "content": "c2\n"}},
	{"run_command", map[string]any{"command": "echo three >> pre.txt"}},
}

// runSteps runs steps on rt.
func runSteps(t *testing.T, rt *tools.Runtime, steps []step) {
	t.Helper()
	for _, s := range steps {
		mustSucceed(t, callTool(t, rt, s.tool, s.args))
	}
}

func patchOf(t *testing.T, rt *tools.Runtime) string {
	t.Helper()
	p, err := rt.Patch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The patch of a run whose Workspace is replaced mid-run by a new one on
// the same directory (a worker killed, another taking the run over), the
// baseline rebuilt from the keeper's record, is the patch of the run on
// one Workspace, at every point of the move; changes made before the run
// are in neither.
func TestKeptBaselineGivesThePatchOfAnUndisturbedRun(t *testing.T) {
	t.Parallel()
	needGit(t)
	calmDir := baselineRepo(t)
	calm, _ := keptRuntime(t, calmDir, nil)
	runSteps(t, calm, baselineScript)
	want := patchOf(t, calm)
	for _, part := range []string{"-two\n+2\n", "-untracked before the run\n+edited before the run\n+three\n", "deleted file mode 100644", "Binary files a/bin.dat and b/bin.dat differ",
		"+new\n", "+more\n", "-c\n+c2\n"} {
		if !strings.Contains(want, part) {
			t.Fatalf("the undisturbed patch has no %q:\n%s", part, want)
		}
	}
	for _, before := range []string{"+changed before the run", "ignored/"} {
		if strings.Contains(want, before) {
			t.Fatalf("the patch holds %q, from before the run:\n%s", before, want)
		}
	}

	for at := range len(baselineScript) + 1 {
		t.Run(fmt.Sprintf("moved after %d steps", at), func(t *testing.T) {
			t.Parallel() // each move has a repository of its own
			dir := baselineRepo(t)
			k := &memKeeper{}
			first, _ := keptRuntime(t, dir, k)
			runSteps(t, first, baselineScript[:at])
			// The first Workspace is gone without a word (kill -9): its
			// private repository is left, and the new one does not read it.
			second, _ := keptRuntime(t, dir, k)
			runSteps(t, second, baselineScript[at:])
			if diff := cmp.Diff(want, patchOf(t, second)); diff != "" {
				t.Errorf("moved after %d steps: the patch (-undisturbed +moved):\n%s", at, diff)
			}
			if k.saves > 1 {
				t.Errorf("moved after %d steps: the baseline was saved %d times", at, k.saves)
			}
		})
	}
}

// A run that changed nothing before the move takes its baseline on the
// new Workspace; one that changed nothing at all has an empty patch.
func TestKeptBaselineOfARunThatChangedNothing(t *testing.T) {
	t.Parallel()
	needGit(t)
	dir := baselineRepo(t)
	k := &memKeeper{}
	rt, _ := keptRuntime(t, dir, k)
	mustSucceed(t, callTool(t, rt, "read_file", map[string]any{"path": "a.txt"}))
	if p := patchOf(t, rt); p != "" || k.data != nil {
		t.Fatalf("a run that changed nothing: patch %q, record %v", p, k.data != nil)
	}
}

// An attempt that finds another's baseline kept uses that one, not its
// own snapshot: the first writer's baseline is every attempt's.
func TestKeptBaselineFirstWriterWins(t *testing.T) {
	t.Parallel()
	needGit(t)
	dir := baselineRepo(t)
	k := &memKeeper{}
	first, _ := keptRuntime(t, dir, k)
	runSteps(t, first, baselineScript[:1])
	// A second attempt that starts while the first one's record is there.
	second, _ := keptRuntime(t, dir, k)
	runSteps(t, second, baselineScript[1:])
	if p := patchOf(t, second); !strings.Contains(p, "-two\n+2\n") {
		t.Fatalf("the second attempt's patch misses the first one's edit:\n%s", p)
	}
	// A keeper that said "none" and then keeps another's record (a race
	// with a retried attempt): the record read back is the one used.
	dir2 := baselineRepo(t)
	kept := &memKeeper{}
	a, _ := keptRuntime(t, dir2, kept)
	runSteps(t, a, baselineScript[:1])
	racy := &racyKeeper{memKeeper: kept}
	b, _ := keptRuntime(t, dir2, racy)
	runSteps(t, b, baselineScript[1:])
	if p := patchOf(t, b); !strings.Contains(p, "-two\n+2\n") {
		t.Fatalf("the racing attempt's patch misses the first one's edit:\n%s", p)
	}
}

// racyKeeper says no baseline is kept the first time it is asked.
type racyKeeper struct {
	*memKeeper
	asked bool
}

func (k *racyKeeper) LoadBaseline(ctx context.Context) ([]byte, bool, error) {
	if !k.asked {
		k.asked = true
		return nil, false, nil
	}
	return k.memKeeper.LoadBaseline(ctx)
}

// A damaged record is the patch's error, never a patch against another
// baseline; the run's calls go on (no other baseline may be taken).
func TestDamagedBaselineRecordIsAnError(t *testing.T) {
	t.Parallel()
	needGit(t)
	dir := baselineRepo(t)
	k := &memKeeper{}
	rt, _ := keptRuntime(t, dir, k)
	runSteps(t, rt, baselineScript[:3])
	var rec map[string]any
	if err := json.Unmarshal(k.data, &rec); err != nil {
		t.Fatal(err)
	}
	with := func(key string, v any) []byte {
		r := map[string]any{}
		for k, v := range rec {
			r[k] = v
		}
		r[key] = v
		b, _ := json.Marshal(r)
		return b
	}
	pack, _ := rec["pack"].(string)
	if pack == "" || rec["index"] == nil {
		t.Fatal("the record carries no objects (the untracked files' content should be in it) or no index")
	}
	damaged := map[string][]byte{
		"not JSON":       []byte("{"),
		"trailing data":  append(bytes.Clone(k.data), " {}"...),
		"unknown field":  with("extra", 1),
		"version":        with("version", 2),
		"tree not an id": with("tree", "../../x"),
		"unknown tree":   with("tree", strings.Repeat("ab", 20)),
		"truncated pack": with("pack", pack[:len(pack)/2]),
		"no pack":        with("pack", nil),
		"other place":    with("rel", "elsewhere"),
		"damaged index":  with("index", "AAAA"),
	}
	for name, data := range damaged {
		bad := &memKeeper{data: data}
		rt, _ := keptRuntime(t, dir, bad)
		if p, err := rt.Patch(context.Background()); !errors.Is(err, tools.ErrBaseline) {
			t.Errorf("%s: the patch is %q, %v; want an error wrapping ErrBaseline", name, p, err)
		}
		mustSucceed(t, callTool(t, rt, "write_file", map[string]any{"path": "z.txt", "content": "z\n"}))
		if p, err := rt.Patch(context.Background()); !errors.Is(err, tools.ErrBaseline) {
			t.Errorf("%s: after a change, the patch is %q, %v; want an error wrapping ErrBaseline", name, p, err)
		}
		if bad.saves != 0 {
			t.Errorf("%s: another baseline was saved", name)
		}
	}
}

// Over the record's bound, the files whose baseline content is not kept
// are left out of a moved run's patch, which says it may be partial; the
// undisturbed run's patch is whole. Not parallel: it lowers the
// package's bound, which the parallel tests (run after it) see unchanged.
func TestBaselineOverItsBound(t *testing.T) {
	needGit(t)
	defer tools.SetMaxBaselineBytes(4 << 10)() // big.txt (36 KB) is over it
	calm, _ := keptRuntime(t, baselineRepo(t), &memKeeper{})
	runSteps(t, calm, baselineScript)
	whole := patchOf(t, calm)
	if !strings.Contains(whole, "+more\n") || strings.Contains(whole, "partial") {
		t.Fatalf("the undisturbed patch:\n%s", whole)
	}

	dir := baselineRepo(t)
	k := &memKeeper{}
	first, _ := keptRuntime(t, dir, k)
	runSteps(t, first, baselineScript[:2])
	second, _ := keptRuntime(t, dir, k)
	runSteps(t, second, baselineScript[2:])
	got := patchOf(t, second)
	if strings.Contains(got, "big.txt") {
		t.Errorf("the moved patch has big.txt, whose baseline was not kept:\n%s", got)
	}
	if !strings.HasSuffix(got, "[patch may be partial: the run moved to another worker, and its baseline holds no content for 1 file (over the record's bound of 4096 bytes, or no longer in the repository): their changes are not in it]\n") {
		t.Errorf("the moved patch does not say it may be partial:\n%s", got)
	}
	// The rest is the undisturbed patch without big.txt.
	var rest []string
	for _, f := range strings.SplitAfter(whole, "diff --git ") {
		if !strings.HasPrefix(f, "a/big.txt ") {
			rest = append(rest, f)
		}
	}
	if diff := cmp.Diff(strings.TrimSuffix(strings.Join(rest, ""), "diff --git "), got[:strings.LastIndex(got, "[patch may")]); diff != "" {
		t.Errorf("the moved patch (-undisturbed without big.txt +moved):\n%s", diff)
	}
}

// Outside git the patch is the file tools' record, which a new Workspace
// does not have: a moved run's patch says so.
func TestKeptBaselineOutsideGit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a.txt": "one\n"})
	k := &memKeeper{}
	first, _ := keptRuntime(t, dir, k)
	mustSucceed(t, callTool(t, first, "write_file", map[string]any{"path": "a.txt", "content": "two\n"}))
	if p := patchOf(t, first); !strings.Contains(p, "-one\n+two\n") || strings.Contains(p, "partial") {
		t.Fatalf("the patch on the first Workspace:\n%s", p)
	}
	second, _ := keptRuntime(t, dir, k)
	mustSucceed(t, callTool(t, second, "write_file", map[string]any{"path": "b.txt", "content": "bee\n"}))
	p := patchOf(t, second)
	if !strings.Contains(p, "+bee\n") || !strings.HasSuffix(p, "[patch may be partial: the run moved to another worker, and its baseline was not kept (not a git work tree): changes the file tools made before the move are not in it]\n") {
		t.Fatalf("the moved patch outside git:\n%s", p)
	}
}

// downKeeper is a keeper whose store fails.
type downKeeper struct{}

func (downKeeper) LoadBaseline(context.Context) ([]byte, bool, error) {
	return nil, false, errors.New("the store is down")
}
func (downKeeper) SaveBaseline(context.Context, []byte) error { return errors.New("the store is down") }

// A keeper that fails fails the call that would change files, before it
// changes anything (the engine retries it), and the patch.
func TestBaselineKeeperDown(t *testing.T) {
	t.Parallel()
	needGit(t)
	dir := baselineRepo(t)
	rt, _ := keptRuntime(t, dir, downKeeper{})
	for _, s := range baselineScript[2:5] {
		obs, err := rt.Call(context.Background(), &gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: s.tool, Arguments: s.args})
		if !errors.Is(err, tools.ErrBaseline) {
			t.Errorf("%s: %+v, %v; want an error wrapping ErrBaseline", s.tool, obs, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "new.txt")); err == nil {
		t.Error("the command ran")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "sub", "c.txt")); string(b) != "c\n" {
		t.Errorf("write_file wrote %q", b)
	}
	if p, err := rt.Patch(context.Background()); !errors.Is(err, tools.ErrBaseline) {
		t.Errorf("the patch is %q, %v; want an error wrapping ErrBaseline", p, err)
	}
}

// A record over the bound is refused on read as on write, whoever wrote
// it: one whose objects hold more content than the bound (a worker with
// a lower bound, or a forged record, a pack that inflates past it), and
// one longer than a record within the bound can be. Not parallel: it
// lowers the package's bound, as TestBaselineOverItsBound does.
func TestBaselineRecordOverItsBoundIsRefusedOnRead(t *testing.T) {
	needGit(t)
	dir := baselineRepo(t)
	k := &memKeeper{}
	rt, _ := keptRuntime(t, dir, k)
	runSteps(t, rt, baselineScript[:1])
	if !bytes.Contains(k.data, []byte(`"pack"`)) {
		t.Fatal("the record carries no objects (big.txt's content should be in it)")
	}
	// Whitespace after the record is JSON still: only its length is wrong.
	long := append(bytes.Clone(k.data), bytes.Repeat([]byte(" "), 3<<20)...)
	for name, c := range map[string]struct {
		data  []byte
		bound int64
		why   string
	}{
		"content over the bound": {k.data, 4 << 10, "content is over the bound of 4096 bytes"}, // big.txt is 36 KB
		"record too long":        {long, 1 << 20, "record is over the bound"},
	} {
		restore := tools.SetMaxBaselineBytes(c.bound)
		bad := &memKeeper{data: c.data}
		rt, _ := keptRuntime(t, dir, bad)
		if p, err := rt.Patch(context.Background()); !errors.Is(err, tools.ErrBaseline) || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s: the patch is %q, %v; want an error wrapping ErrBaseline saying %q", name, p, err, c.why)
		}
		restore()
	}
	// Within the bound, the same record is used.
	rt, _ = keptRuntime(t, dir, &memKeeper{data: k.data})
	patchOf(t, rt)
}
