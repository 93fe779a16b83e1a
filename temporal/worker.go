package temporal

import (
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// Register registers the run workflow and a's activities with w.
func Register(w worker.Registry, a *Activities) {
	w.RegisterWorkflowWithOptions(runWorkflow, workflow.RegisterOptions{Name: WorkflowName})
	registerActivities(w, a)
}

// registerActivities registers a's activities with w under their names.
func registerActivities(w interface {
	RegisterActivityWithOptions(a any, options activity.RegisterOptions)
}, a *Activities) {
	for name, fn := range map[string]any{
		openActivity: a.open, modelActivity: a.model, toolActivity: a.tool, checkActivity: a.check,
		patchActivity: a.patch, eventsActivity: a.events, closeActivity: a.close,
	} {
		w.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
}

// NewWorkers returns the two workers of a host: one on the shared task
// queue (workflows, and the activities any worker can run: opening a run,
// model calls) and one on a.HostQueue (the run's tool calls, checks and
// patches, which need its workspace). Start both.
func NewWorkers(c client.Client, queue string, a *Activities, opts worker.Options) (shared, host worker.Worker) {
	shared = worker.New(c, queue, opts)
	Register(shared, a)
	host = worker.New(c, a.HostQueue, opts)
	registerActivities(host, a)
	return shared, host
}
