package runner

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/ident"
	"github.com/specloop/specloop/internal/textclip"
	"github.com/specloop/specloop/trace"
)

// EngineIndex is an optional ability of an Engine whose runs are indexed
// where every runner sees them (Temporal's visibility store): GET
// /v1/runs lists the index, and a runner asked for a run it does not know
// (another runner accepted it) adopts it: it records the run as the index
// has it, with its trace so far, and follows it as it follows the runs it
// reattaches after a restart, so that its events, approvals,
// cancellation and follow-up messages work on every runner.
type EngineIndex interface {
	// Lookup returns run id as the index has it, and its trace so far
	// (its lines, JSON without newlines). An index that has no such run
	// returns an error that wraps ErrNoEngineRun.
	Lookup(ctx context.Context, id string) (EngineRun, error)
	// List returns up to limit runs of the index, in its order, from
	// cursor ("" for the first page), only those with status when it is
	// set (never queued: a queued run is still its runner's alone); next
	// is the cursor of the next page, "" after the last. A cursor it did
	// not issue is an *Error of kind Invalid.
	List(ctx context.Context, status *gen.RunStatus, limit int, cursor string) (runs []gen.Run, next string, err error)
}

// EngineRun is a run as an EngineIndex has it.
type EngineRun struct {
	// Run holds what the runner that accepted it recorded (its id,
	// creation time, workspace, task line and conversation) and its
	// status; a finished run's Result has at least its exit reason.
	Run   gen.Run
	Trace [][]byte
}

// indexTimeout bounds a request to the engine's index.
const indexTimeout = 10 * time.Second

// maxAdoptChain bounds the runs a conversation adopted at once holds: the
// runs an adopted run continues are adopted with it.
const maxAdoptChain = 100

// index returns the engine's index, nil when it has none.
func (s *Runner) index() EngineIndex {
	ei, _ := s.cfg.Engine.(EngineIndex)
	return ei
}

// known makes sure the runner knows run id, adopting it from the engine's
// index when another runner accepted it (and the runs it continues). It
// returns errNoRun when neither knows it. A run it continues that cannot
// be adopted (gone from the index, or the index down) leaves run id known
// all the same: only a follow-up's history lacks it.
func (s *Runner) known(id string) error {
	for i := range maxAdoptChain {
		s.runs.mu.RLock()
		r := s.runs.byID[id]
		s.runs.mu.RUnlock()
		if r != nil {
			return nil
		}
		ei := s.index()
		if ei == nil || !ident.Plain(id) {
			if i > 0 {
				return nil
			}
			return errNoRun
		}
		prev, err := s.adopt(ei, id)
		if err != nil && i > 0 {
			s.log.Warn("adopt a run an adopted run continues", "run", id, "err", err)
			return nil
		}
		if err != nil || prev == "" {
			return err
		}
		id = prev // adopt what it continues too, for a follow-up's history
	}
	return nil
}

// adopt records run id of the engine's index as one of this runner's and
// follows it; it returns the run it continues, "" for none. One adoption
// of a run happens at a time; a second caller gets the first one's
// outcome.
func (s *Runner) adopt(ei EngineIndex, id string) (continues string, err error) {
	v, err, _ := s.adopting.Do(id, func() (any, error) { return s.adoptOnce(ei, id) })
	continues, _ = v.(string)
	return continues, err
}

func (s *Runner) adoptOnce(ei EngineIndex, id string) (string, error) {
	s.runs.mu.RLock()
	r := s.runs.byID[id]
	s.runs.mu.RUnlock()
	if r != nil {
		return "", nil // adopted meanwhile
	}
	if s.closing.Load() {
		return "", errUnavailable
	}
	// Shutdown waits for the adoption, which writes to the data directory
	// and makes a run in flight that Shutdown must stop following.
	if err := s.sched.hold(); err != nil {
		return "", err
	}
	held := true
	unhold := func() {
		if held {
			held = false
			s.sched.unhold()
		}
	}
	defer unhold()
	ctx, cancel := context.WithTimeout(s.stop, indexTimeout)
	defer cancel()
	er, err := ei.Lookup(ctx, id)
	if errors.Is(err, ErrNoEngineRun) {
		return "", errNoRun
	}
	if err != nil {
		s.log.Error("look a run up in the engine's index", "run", id, "err", err)
		return "", &Error{Kind: Unavailable, Detail: "the engine's run index could not be reached to look the run up; try again"}
	}
	v := er.Run
	r = &run{id: id, created: v.CreatedAt.UTC(), workspace: deref(v.Workspace), taskLine: deref(v.TaskLine),
		continues: deref(v.Continues), status: gen.RunStatusQueued}
	if v.ConversationId != "" && v.ConversationId != id {
		r.conversation = v.ConversationId
	}
	if !ident.Plain(r.continues) {
		r.continues = ""
	}
	// The workspace is the index's word, not a name this runner checked:
	// it becomes a path under the workspace root (a follow-up's workspace,
	// the isolated work tree the run's end removes), so it must be one a
	// request could have named.
	ws, err := adoptedWorkspace(r.workspace)
	if err != nil {
		s.log.Error("adopt a run", "run", id, "workspace", textclip.Clip(r.workspace, 200), "err", err)
		return "", &Error{Kind: Internal, Detail: "the engine's index holds a workspace for the run that is not a workspace name"}
	}
	r.workspace = ws
	if !ident.Plain(r.conversation) {
		r.conversation = ""
	}
	t, err := s.adoptTrace(id, er.Trace)
	if err != nil {
		s.log.Error("copy an adopted run's trace", "run", id, "err", err)
		return "", &Error{Kind: Internal, Detail: "the run's trace could not be copied from the engine"}
	}
	e := &entry{Op: opCreated, ID: id, Time: r.created, Workspace: r.workspace, TaskLine: r.taskLine, Continues: r.continues, Conversation: r.conversation}
	line, err := jsonLine(e)
	if err == nil {
		err = s.store.append(line, true)
	}
	if err != nil {
		s.log.Error("record an adopted run", "run", id, "err", err)
		return "", &Error{Kind: Internal, Detail: "the run could not be recorded"}
	}
	// Unlisted until reattach made it a run in flight (an approval it
	// waits for included).
	s.reattach(r, t)
	r.job.adopted = true
	s.runs.mu.Lock()
	s.runs.add(r)
	s.runs.mu.Unlock()
	if v.Status != gen.RunStatusFinished {
		s.followAttached([]*run{r})
		return r.continues, nil
	}
	// Its result, with what only the engine's result holds (its patch,
	// its check), before the adoption returns: it has ended. It is
	// followed as the others are, for Shutdown to stop.
	done := make(chan struct{})
	s.sched.workers.Add(1)
	go func() {
		defer s.sched.workers.Done()
		defer close(done)
		s.execute(r)
	}()
	unhold()
	<-done
	return r.continues, nil
}

// adoptedWorkspace is the workspace name an index holds for a run, as a
// run records it ("" for the root), or an error when no request could
// have named it: not a clean relative path inside the root, or in the
// isolated runs' directory.
func adoptedWorkspace(name string) (string, error) {
	if name == "" {
		return "", nil
	}
	clean, err := cleanWorkspace(&name, "workspace")
	switch {
	case err != nil:
		return "", err
	case clean != name && clean != ".":
		return "", errors.New("the workspace is not a clean path")
	case inIsolated(clean):
		return "", errors.New("the workspace names the work trees of isolated runs")
	case clean == ".":
		return "", nil
	}
	return clean, nil
}

// adoptTrace writes an adopted run's trace lines to its trace file (which
// an earlier, failed adoption may have left) and reads them back as a
// reattached run's trace. A last run_finished is left out: following the
// run hands it over again (it is the first event after those the trace
// holds), with the engine's result, and it is written then, once.
func (s *Runner) adoptTrace(id string, lines [][]byte) (traceLog, error) {
	var data []byte
	for i, l := range lines {
		ev, err := trace.ParseEvent(l)
		if err == nil && bytes.ContainsAny(l, "\r\n") {
			err = errors.New("the line holds a line break")
		}
		if err != nil {
			return traceLog{}, fmt.Errorf("line %d: %w", i+1, err)
		}
		if ev.EventType == gen.TraceEventTypeRunFinished && i == len(lines)-1 {
			break
		}
		data = append(append(data, l...), '\n')
	}
	s.store.createMu.Lock()
	err := os.WriteFile(s.store.tracePath(id), data, 0o600)
	s.store.createMu.Unlock()
	if err != nil {
		return traceLog{}, err
	}
	return s.recoverTrace(id)
}

// listIndex is List on a runner whose engine has an index: first this
// runner's queued runs, which only it knows (when no status is asked
// for), then the index's runs (as this runner knows them when it does:
// their results whole). Its cursors are its own: "q." and the run list's
// for the queued runs, "i." and the index's.
func (s *Runner) listIndex(ei EngineIndex, status *gen.RunStatus, limit int, cursor string) (runs []gen.Run, next string, err error) {
	if status != nil && *status == gen.RunStatusQueued {
		return s.runs.list(status, limit, cursor)
	}
	from, queuedFrom, inQueue := "", "", status == nil && cursor == ""
	if cursor != "" {
		b, err := base64.RawURLEncoding.DecodeString(cursor)
		c := string(b)
		switch {
		case err != nil:
		case strings.HasPrefix(c, "i."):
			from = c[2:]
		case strings.HasPrefix(c, "q.") && status == nil:
			queuedFrom, inQueue = c[2:], true
		default:
			err = errors.New("no cursor of this server")
		}
		if err != nil {
			return nil, "", badField("cursor", `query parameter "cursor": is not a cursor this server issued`)
		}
	}
	if inQueue {
		queued := gen.RunStatusQueued
		runs, next, err = s.runs.list(&queued, limit, queuedFrom)
		switch {
		case err != nil:
			return nil, "", err
		case next != "":
			return runs, wrapCursor("q.", next), nil
		case len(runs) == limit:
			return runs, wrapCursor("i.", ""), nil
		}
	}
	ctx, cancel := context.WithTimeout(s.stop, indexTimeout)
	defer cancel()
	listed, next, err := ei.List(ctx, status, limit-len(runs), from)
	if err != nil {
		var re *Error
		if errors.As(err, &re) {
			return nil, "", re
		}
		s.log.Error("list the engine's index", "err", err)
		return nil, "", &Error{Kind: Unavailable, Detail: "the engine's run index could not be reached to list the runs; try again"}
	}
	for _, v := range listed {
		if slices.ContainsFunc(runs, func(q gen.Run) bool { return q.Id == v.Id }) {
			continue
		}
		if mine, ok := s.runs.get(v.Id); ok && (status == nil || mine.Status == *status) {
			v = mine
		}
		runs = append(runs, v)
	}
	if next != "" {
		next = wrapCursor("i.", next)
	}
	return runs, next, nil
}

// wrapCursor is listIndex's cursor for cursor c of the run list (kind
// "q.") or the index ("i.").
func wrapCursor(kind, c string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(kind + c))
}
