// The values of spec/agent.yaml's enums that the page's behaviour depends
// on. Every other label, option and meaning comes from spec.json, which the
// server derives from the spec; webui's tests check that each value here is
// in the spec.

export const RunStatus = { queued: 'queued', running: 'running', finished: 'finished' };

export const EventType = {
  runStarted: 'run_started',
  modelAction: 'model_action',
  observation: 'observation',
  modelFeedback: 'model_feedback',
  finishRejected: 'finish_rejected',
  historyCompacted: 'history_compacted',
  runFinished: 'run_finished',
};

// ContentEvent names the transcript's entries in an event stream with
// content (getRunEvents' content=true).
export const ContentEvent = 'transcript';

// DeltaEvent names a piece of the model's text as it streams in (a
// TextDelta), in an event stream with content.
export const DeltaEvent = 'delta';

export const ActionType = { toolCall: 'tool_call', finish: 'finish' };

export const ExitReason = { finished: 'finished' };

export const Provider = { script: 'script' };

export const Approvals = {
  status: 'waiting_for_approval',
  event: 'approval_requested',
  decided: 'approval_decided',
  approve: 'approve',
  approveForRun: 'approve_for_run',
  deny: 'deny',
};
