package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/textclip"
	"github.com/specloop/specloop/transcript"
)

// A conversation is the chain of runs that continue each other: runs
// stay as they ended, and Continue creates the next one, which starts
// from the history the last one ended with (rebuilt from the transcripts,
// History) and a person's message. Its id is its first run's; a run that
// nobody continued is a conversation of one run. Only a conversation's
// last run is continued, so the chain never branches, and only once it
// ended and when it kept its transcript and its request (its Spec, kept
// beside the transcript when the run was accepted: resume.go).

// reserved marks a run that Continue is continuing, before the new run
// has its id.
const reserved = "\x00"

// Continue creates the run that continues run id with the person's
// message body.Message: the same spec (model, tools, check, approvals,
// workspace, MCP servers, caps, transcript) but for the budgets and the
// model the body gives, a fresh step budget, and the history run id ended
// with. A run not ended, already continued, or that kept no transcript is
// a Conflict.
func (s *Runner) Continue(ctx context.Context, id string, body gen.ContinueRunRequest) (gen.Run, error) {
	if s.closing.Load() {
		return gen.Run{}, errUnavailable
	}
	if strings.TrimSpace(body.Message) == "" {
		return gen.Run{}, badField("/message", "the message is empty")
	}
	if err := s.known(id); err != nil {
		return gen.Run{}, err
	}
	s.runs.mu.Lock()
	r := s.runs.byID[id]
	var err error
	switch {
	case r == nil:
		err = errNoRun
	case r.job != nil:
		err = &Error{Kind: Conflict, Detail: "the run has not ended; continue it once it has"}
	case r.next == reserved:
		err = &Error{Kind: Conflict, Detail: "the run is being continued by another request"}
	case r.next != "":
		err = &Error{Kind: Conflict, Detail: fmt.Sprintf("run %s continues this run already; continue the conversation's last run", r.next)}
	default:
		r.next = reserved
	}
	s.runs.mu.Unlock()
	if err != nil {
		return gen.Run{}, err
	}
	v, err := s.continueRun(ctx, r, body)
	if err != nil {
		s.runs.mu.Lock()
		r.next = ""
		s.runs.mu.Unlock()
	}
	return v, err
}

func (s *Runner) continueRun(ctx context.Context, r *run, body gen.ContinueRunRequest) (gen.Run, error) {
	s.runs.mu.RLock()
	chain := chainOf(r, s.runs.byID)
	s.runs.mu.RUnlock()
	turns, err := s.turns(chain)
	if err != nil {
		return gen.Run{}, err
	}
	next := turns[len(turns)-1].Spec
	if next.Isolated() {
		return gen.Run{}, errContinueIsolated
	}
	next.ID, next.FollowUp, next.Conversation = "", &agent.FollowUp{Message: body.Message}, turns
	next.Setup = nil // it ran before the conversation's first run
	if body.MaxSteps != nil {
		next.MaxSteps = body.MaxSteps
	}
	if body.TokenBudget != nil {
		next.TokenBudget = body.TokenBudget
	}
	if body.Model != nil {
		next.Model = *body.Model
	}
	return s.create(ctx, next, r)
}

// chainOf returns the ids of run last and of the runs it continues, one
// after the other, oldest first, as byID holds them.
func chainOf(last *run, byID map[string]*run) []string {
	var chain []string
	for r := last; r != nil && len(chain) <= len(byID); r = byID[r.continues] {
		chain = append(chain, r.id)
		if r.continues == "" {
			break
		}
	}
	slices.Reverse(chain)
	return chain
}

// turns returns the runs of chain (chainOf) to rebuild a conversation's
// history from: each must have kept its transcript and its request.
func (s *Runner) turns(chain []string) ([]Turn, error) {
	turns := make([]Turn, len(chain))
	for i, id := range chain {
		t := &turns[i]
		sp, err := s.store.readRequest(id)
		if err == nil {
			// An engine's runs keep their transcripts where it does.
			if t.Transcript, err = s.transcriptPath(id); err == nil {
				_, err = os.Stat(t.Transcript)
			}
		}
		if errors.Is(err, fs.ErrNotExist) {
			// Its request said transcript false, or it never started, or
			// its engine keeps no transcripts here.
			return nil, &Error{Kind: Conflict, Detail: fmt.Sprintf("run %s kept no transcript (or no request), so the conversation cannot be continued", id)}
		}
		if err != nil {
			s.log.Error("read a run's request", "run", id, "err", err)
			return nil, &Error{Kind: Internal, Detail: "a run's request could not be read"}
		}
		t.Spec = sp
		// The model of a recorded run is asked nothing: only its context
		// window counts, to compact where the run did.
		if t.Model, err = s.cfg.Models(sp.Model); err != nil {
			return nil, &Error{Kind: Conflict, Detail: fmt.Sprintf("run %s's model is no longer available: %s", id, textclip.Clip(err.Error(), 300))}
		}
	}
	return turns, nil
}

// Conversation returns the runs of conversation id, oldest first: run id
// and the runs that continue it, one after the other.
func (s *Runner) Conversation(id string) (gen.Conversation, error) {
	if err := s.known(id); err != nil && !errors.Is(err, errNoRun) {
		return gen.Conversation{}, err
	}
	s.runs.mu.RLock()
	defer s.runs.mu.RUnlock()
	r := s.runs.byID[id]
	if r == nil || r.continues != "" {
		return gen.Conversation{}, &Error{Kind: NotFound, Detail: "no conversation has this id (a conversation's id is its first run's)"}
	}
	c := gen.Conversation{Id: id}
	for ; r != nil; r = s.runs.byID[r.next] {
		c.Runs = append(c.Runs, r.view())
		if r.next == "" || r.next == reserved {
			break
		}
	}
	return c, nil
}

// Turn is one run of a conversation to rebuild: its transcript, its spec
// (the options it ran with) and its model (for its context window; nil
// for none). Encoded, it is its spec alone: the transcript and the model
// are where it is rebuilt.
type Turn struct {
	Transcript string `json:"-"`
	Spec       Spec
	Model      agent.Model `json:"-"`
}

// History rebuilds a conversation from its runs, oldest first: its task
// (what its first run was asked, as its transcript holds it) and the
// history its last run ended with — the first run's rebuilt from its
// transcript (transcript.State), each next one's from its transcript
// replayed after the history before it and the person's message (which
// its transcript starts with). base
// holds what the runs share: the tools, the check, compaction and stuck
// detection (a new run's setup.Options); each run's spec gives its
// budgets, caps and approval policy. Both Continue and `specloop run
// --continue` use it. The history is as redacted as the transcripts: a
// secret the runs saw is [REDACTED] in it.
func History(ctx context.Context, turns []Turn, base agent.Options) (gen.Task, []agent.Item, error) {
	var task gen.Task
	var h []agent.Item
	for i, t := range turns {
		f, err := os.Open(t.Transcript)
		if err != nil {
			return task, nil, err
		}
		log, err := transcript.Read(f)
		f.Close()
		if err != nil {
			return task, nil, fmt.Errorf("%s: %w", t.Transcript, err)
		}
		opts := t.Spec.Options()
		opts.Tools, opts.Compaction, opts.Stuck = base.Tools, base.Compaction, base.Stuck
		if t.Spec.CheckCommand() != "" {
			opts.Check = cmp.Or[agent.Checker](base.Check, recordedCheck{})
		}
		// A transcript starts with what its run was asked: the task, or
		// the person's message for a follow-up.
		asked := ""
		if j := slices.IndexFunc(log.Entries, func(e gen.TranscriptEntry) bool { return e.EventType == gen.TraceEventTypeRunStarted }); j >= 0 {
			asked = deref(log.Entries[j].Task)
		}
		if i == 0 {
			task.Prompt = asked
		} else {
			opts.FollowUp = &agent.FollowUp{History: h, Message: asked}
		}
		// A run that ended before the model answered (stopped during its
		// first model call) adds only what it was asked: the person's
		// message stays in the conversation.
		if !slices.ContainsFunc(log.Entries, modelTurn) {
			if i > 0 {
				h = append(slices.Clip(h), agent.Item{UserMessage: &gen.UserMessage{Type: gen.UserMessageTypeUserMessage, Text: asked}})
			}
			continue
		}
		st, err := transcript.State(ctx, log, task, t.Model, opts)
		if err != nil {
			return task, nil, fmt.Errorf("%s: %w", t.Transcript, err)
		}
		h = st.History
	}
	return task, h, nil
}

// modelTurn says whether e is of a model turn: an action, or output the
// loop fed back as invalid.
func modelTurn(e gen.TranscriptEntry) bool {
	return e.EventType == gen.TraceEventTypeModelAction || e.EventType == gen.TraceEventTypeModelFeedback
}

// recordedCheck stands for the check of a run being rebuilt, which the
// replay answers from its transcript.
type recordedCheck struct{}

func (recordedCheck) Check(context.Context) (gen.CheckResult, error) {
	return gen.CheckResult{}, errors.New("a recorded check is not run")
}
