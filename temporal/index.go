package temporal

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/runstore"
)

// The search attributes of a run's workflow, by which every API server
// finds and lists the runs (runner.EngineIndex): the run's status as the
// API shows it, its exit reason once finished, its workspace, and when it
// was accepted and ended. The engine sets the first ones when it starts
// the workflow, the workflow keeps them current.
var (
	attrStatus     = temporal.NewSearchAttributeKeyKeyword("SpecloopStatus")
	attrExitReason = temporal.NewSearchAttributeKeyKeyword("SpecloopExitReason")
	attrWorkspace  = temporal.NewSearchAttributeKeyKeyword("SpecloopWorkspace")
	attrCreated    = temporal.NewSearchAttributeKeyTime("SpecloopCreated")
	attrEnded      = temporal.NewSearchAttributeKeyTime("SpecloopEnded")
)

// searchAttributes is what RegisterSearchAttributes registers.
var searchAttributes = map[string]enumspb.IndexedValueType{
	attrStatus.GetName():     enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	attrExitReason.GetName(): enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	attrWorkspace.GetName():  enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	attrCreated.GetName():    enumspb.INDEXED_VALUE_TYPE_DATETIME,
	attrEnded.GetName():      enumspb.INDEXED_VALUE_TYPE_DATETIME,
}

// listedMemo is the memo field that holds the run as its API server
// accepted it (a gen.Run: creation time, workspace, task line,
// conversation).
const listedMemo = "specloop.run"

// ErrNoOperatorPermission is RegisterSearchAttributes's error (wrapped)
// when the Temporal cluster refuses its operator API to this process: it
// cannot check the search attributes, which an operator then registers
// (docs/temporal.md).
var ErrNoOperatorPermission = errors.New("the Temporal cluster refuses this process its operator API")

// RegisterSearchAttributes registers the runs' search attributes in
// namespace ns, unless they are already there: `specloop-temporal serve`
// does it when it starts. It needs the operator API's permission; without
// it (ErrNoOperatorPermission), an operator registers them once with
// `temporal operator search-attribute create` (docs/temporal.md).
func RegisterSearchAttributes(ctx context.Context, c client.Client, ns string) error {
	have, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: ns})
	var denied *serviceerror.PermissionDenied
	if errors.As(err, &denied) {
		return fmt.Errorf("list the namespace's search attributes: %w: %w", ErrNoOperatorPermission, err)
	}
	if err != nil {
		return fmt.Errorf("list the namespace's search attributes: %w", err)
	}
	missing := map[string]enumspb.IndexedValueType{}
	for name, typ := range searchAttributes {
		got, ok := have.GetCustomAttributes()[name]
		switch {
		case !ok:
			missing[name] = typ
		case got != typ:
			return fmt.Errorf("search attribute %s is registered as %s, not %s", name, got, typ)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{Namespace: ns, SearchAttributes: missing})
	if errors.As(err, &denied) {
		return fmt.Errorf("register the runs' search attributes: %w: %w", ErrNoOperatorPermission, err)
	}
	var exists *serviceerror.AlreadyExists
	if err != nil && !errors.As(err, &exists) { // another process registered them meanwhile
		return fmt.Errorf("register the runs' search attributes: %w", err)
	}
	return nil
}

var _ runner.EngineIndex = (*Engine)(nil)

// startOptions are the options the engine starts run sp's workflow with:
// its search attributes and the run as accepted in its memo.
func (e *Engine) startOptions(sp *runner.Spec) client.StartWorkflowOptions {
	o := client.StartWorkflowOptions{ID: workflowID(sp.ID), TaskQueue: e.TaskQueue}
	if sp.Listed == nil {
		return o
	}
	v := *sp.Listed
	v.Status, v.Result, v.StartedAt, v.FinishedAt = gen.RunStatusRunning, nil, nil, nil
	o.Memo = map[string]any{listedMemo: v}
	o.TypedSearchAttributes = temporal.NewSearchAttributes(
		attrStatus.ValueSet(string(gen.RunStatusRunning)),
		attrWorkspace.ValueSet(workspaceOf(&v)),
		attrCreated.ValueSet(v.CreatedAt.UTC()))
	return o
}

// Lookup returns run id as its workflow's latest execution has it, with
// its trace so far from the store.
func (e *Engine) Lookup(ctx context.Context, id string) (runner.EngineRun, error) {
	if err := runstore.CheckRunID(id); err != nil {
		return runner.EngineRun{}, fmt.Errorf("%w: %w", runner.ErrNoEngineRun, err)
	}
	d, err := e.Client.DescribeWorkflow(ctx, workflowID(id), "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return runner.EngineRun{}, fmt.Errorf("run %s: %w", id, runner.ErrNoEngineRun)
	}
	if err != nil {
		return runner.EngineRun{}, fmt.Errorf("describe the workflow: %w", err)
	}
	info := d.RawResponse.GetWorkflowExecutionInfo()
	// The run's workflow, on the engine's task queue, as List lists: not
	// another deployment's in the namespace, nor another workflow under a
	// run's workflow id, which the runner would follow, decide and cancel.
	if info.GetType().GetName() != WorkflowName || info.GetTaskQueue() != e.TaskQueue {
		return runner.EngineRun{}, fmt.Errorf("run %s: the workflow is not a run of task queue %s: %w", id, e.TaskQueue, runner.ErrNoEngineRun)
	}
	v, err := e.runOf(info)
	if err != nil {
		return runner.EngineRun{}, err
	}
	lines, err := e.Store.events(ctx, id, 0)
	if err != nil {
		return runner.EngineRun{}, fmt.Errorf("read the run's trace: %w", err)
	}
	return runner.EngineRun{Run: v, Trace: lines}, nil
}

// List lists the runs of the engine's task queue from Temporal's
// visibility store, in its order (with SQL visibility: the runs in flight
// first, newest first, then the ended ones, the last ended first).
func (e *Engine) List(ctx context.Context, status *gen.RunStatus, limit int, cursor string) ([]gen.Run, string, error) {
	token, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return nil, "", &runner.Error{Kind: runner.Invalid, Field: "cursor", Detail: `query parameter "cursor": is not a cursor this server issued`}
	}
	q, err := e.listQuery(status)
	if err != nil {
		return nil, "", err
	}
	resp, err := e.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: q, PageSize: int32(limit), NextPageToken: token})
	var bad *serviceerror.InvalidArgument
	if errors.As(err, &bad) && len(token) > 0 {
		return nil, "", &runner.Error{Kind: runner.Invalid, Field: "cursor", Detail: `query parameter "cursor": is not a cursor this server issued`}
	}
	if err != nil {
		return nil, "", fmt.Errorf("list the workflows: %w", err)
	}
	runs := make([]gen.Run, 0, len(resp.GetExecutions()))
	for _, info := range resp.GetExecutions() {
		v, err := e.runOf(info)
		if err != nil {
			continue // not a run's workflow after all
		}
		runs = append(runs, v)
	}
	next := ""
	if t := resp.GetNextPageToken(); len(t) > 0 {
		next = base64.RawURLEncoding.EncodeToString(t)
	}
	return runs, next, nil
}

// listQuery is the visibility query of the runs with status (any when
// nil) on the engine's task queue: one execution a run, its latest.
func (e *Engine) listQuery(status *gen.RunStatus) (string, error) {
	if strings.ContainsAny(e.TaskQueue, `'"\`) {
		return "", fmt.Errorf("the task queue %q cannot be named in a visibility query", e.TaskQueue)
	}
	q := fmt.Sprintf("WorkflowType = '%s' AND TaskQueue = '%s' AND ExecutionStatus != 'ContinuedAsNew'", WorkflowName, e.TaskQueue)
	if status == nil {
		return q, nil
	}
	switch *status {
	case gen.RunStatusRunning, gen.RunStatusWaitingForApproval:
		return q + fmt.Sprintf(" AND ExecutionStatus = 'Running' AND %s = '%s'", attrStatus.GetName(), *status), nil
	case gen.RunStatusFinished:
		return q + " AND ExecutionStatus != 'Running'", nil
	}
	return "", &runner.Error{Kind: runner.Invalid, Field: "status", Detail: fmt.Sprintf("the engine's index has no %s runs", *status)}
}

// runOf is the run that workflow execution info is, as the API shows it.
// A closed execution is a finished run whatever its search attributes say
// (a workflow that failed or was terminated never said so).
func (e *Engine) runOf(info *workflowpb.WorkflowExecutionInfo) (gen.Run, error) {
	wid := info.GetExecution().GetWorkflowId()
	id, ok := strings.CutPrefix(wid, workflowID(""))
	if !ok || runstore.CheckRunID(id) != nil {
		return gen.Run{}, fmt.Errorf("workflow %q is not a run's", wid)
	}
	var v gen.Run
	if p := info.GetMemo().GetFields()[listedMemo]; p != nil {
		if err := e.Store.DataConverter(0).FromPayload(p, &v); err != nil {
			return gen.Run{}, fmt.Errorf("run %s: its memo: %w", id, err)
		}
	}
	attrs := info.GetSearchAttributes().GetIndexedFields()
	v.Id, v.ConversationId = id, cmp.Or(v.ConversationId, id)
	if v.CreatedAt.IsZero() {
		v.CreatedAt = info.GetStartTime().AsTime().UTC()
	}
	if t := info.GetStartTime(); t != nil {
		v.StartedAt = new(t.AsTime().UTC())
	}
	v.Status = gen.RunStatus(keyword(attrs, attrStatus.GetName()))
	if info.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		v.Status = gen.RunStatusFinished
	} else if v.Status != gen.RunStatusWaitingForApproval {
		v.Status = gen.RunStatusRunning
	}
	if v.Status == gen.RunStatusFinished {
		ended := datetime(attrs, attrEnded.GetName())
		if ended.IsZero() && info.GetCloseTime() != nil {
			ended = info.GetCloseTime().AsTime().UTC()
		}
		v.FinishedAt = &ended
		reason := gen.ExitReason(keyword(attrs, attrExitReason.GetName()))
		if reason == "" || info.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
			reason = gen.ExitReasonInternalError
		}
		if info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED {
			reason = gen.ExitReasonCancelled
		}
		v.Result = &gen.RunResult{RunId: &id, ExitReason: reason}
	}
	return v, nil
}

// keyword is the keyword search attribute name of attrs, "" when unset.
func keyword(attrs map[string]*commonpb.Payload, name string) string {
	var s string
	if p := attrs[name]; p != nil {
		_ = converter.GetDefaultDataConverter().FromPayload(p, &s)
	}
	return s
}

// datetime is the datetime search attribute name of attrs, zero when
// unset.
func datetime(attrs map[string]*commonpb.Payload, name string) time.Time {
	var t time.Time
	if p := attrs[name]; p != nil {
		_ = converter.GetDefaultDataConverter().FromPayload(p, &t)
	}
	return t.UTC()
}

// indexed says whether the workflow keeps its search attributes: one the
// engine started with them (a cluster where they are registered), in a
// version of the workflow that knows them.
func indexed(ctx workflow.Context) bool {
	if _, ok := workflow.GetTypedSearchAttributes(ctx).GetKeyword(attrStatus); !ok {
		return false
	}
	return workflow.GetVersion(ctx, "search-attributes", workflow.DefaultVersion, 1) == 1
}

// setStatus upserts the run's status attribute, when the workflow keeps
// them.
func (r *wfRun) setStatus(status gen.RunStatus) {
	if r.indexed {
		_ = workflow.UpsertTypedSearchAttributes(r.wctx, attrStatus.ValueSet(string(status)))
	}
}

// ended upserts the attributes of the run's end.
func (r *wfRun) ended(res *gen.RunResult) {
	if r.indexed {
		_ = workflow.UpsertTypedSearchAttributes(r.wctx, attrStatus.ValueSet(string(gen.RunStatusFinished)),
			attrExitReason.ValueSet(string(res.ExitReason)), attrEnded.ValueSet(workflow.Now(r.wctx).UTC()))
	}
}

// workspaceOf is the run's workspace as its attribute holds it: "" for
// the root.
func workspaceOf(v *gen.Run) string {
	if v.Workspace == nil {
		return ""
	}
	return *v.Workspace
}
