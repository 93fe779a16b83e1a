package temporal

import (
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// Register registers the run workflow and a's activities with w.
func Register(w worker.Registry, a *Activities) {
	w.RegisterWorkflowWithOptions(RunWorkflow, workflow.RegisterOptions{Name: WorkflowName})
	RegisterActivities(w, a)
}

// RegisterActivities registers a's activities with w under their names.
func RegisterActivities(w interface {
	RegisterActivityWithOptions(a any, options activity.RegisterOptions)
}, a *Activities) {
	w.RegisterActivityWithOptions(a, activity.RegisterOptions{Name: ActivityPrefix})
}

// NewWorkers returns the two workers of a host: one on the shared task
// queue (workflows, and the activities any worker can run: opening a run,
// model calls) and one on a.HostQueue (the run's tool calls, checks and
// patches, which need its workspace). Start both.
func NewWorkers(c client.Client, queue string, a *Activities, opts worker.Options) (shared, host worker.Worker) {
	shared = worker.New(c, queue, opts)
	Register(shared, a)
	host = worker.New(c, a.HostQueue, opts)
	RegisterActivities(host, a)
	return shared, host
}
