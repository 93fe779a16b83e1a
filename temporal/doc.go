// Package temporal runs specloop runs as Temporal workflows: durable runs
// that survive worker crashes and redeploys and spread over many machines.
//
// There is one loop. The workflow calls agent.Run itself, with
// implementations of the loop's interfaces that execute activities: the
// model call, each tool call, the completion check and the patch are
// activities, and the trace is appended to a Store shared by workers and
// API servers, batched with the next activity. agent.Run is deterministic
// under these implementations: its clock is workflow.Now, its run id is
// given, and its context is the workflow's (see wfContext).
//
// Routing: the run's first activity (Open) runs on the shared task queue,
// opens the run's workspace on the worker that picks it up and returns that
// worker's host queue; the run's tool, check and patch activities go
// there. Workers that share a workspace root (one host) share a host queue,
// so a second worker on the host takes over from one that died.
//
// Tool calls are idempotent by their position in the run: the Tool
// activity records each observation in the Store keyed by run id and call
// sequence, and a retried activity (after a worker crash) returns the
// recorded observation instead of calling the tool again.
//
// Large payloads (histories, tool output) stay out of workflow history: the
// DataConverter returned by Store.DataConverter moves every payload over a
// threshold into the Store and leaves a content-addressed reference.
package temporal
