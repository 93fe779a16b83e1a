// Package transcript keeps the record of a run that a person reads: the
// task, the model's own words, every action with its arguments, every
// observation and the tool's full output, feedback, compactions, approvals,
// the check and the result, one gen.TranscriptEntry per JSON line.
//
// The trace (package trace) is the other record of a run: summaries only,
// for logs and telemetry. A transcript has the content, so it is held to
// three rules: every line is redacted before it is written (Redactor: the
// values of the environment variables that hold secrets, and text shaped
// like a credential, become [REDACTED]); it is never written inside a
// workspace (the caller chooses a directory outside it, such as Dir's);
// and its directory and file are its owner's only (0700 and 0600).
//
// A transcript is append-only, like a trace: Writer writes complete lines,
// a step's actions together with the observations that answer them and
// every other entry at once, so a finished step is on disk before the next
// model call and a crash loses at most the step in flight; Read skips a
// torn last line.
package transcript
