// Package model holds the models specloop ships, the adapter that turns a
// model's raw text into an Action, and FromConfig, the one constructor of a
// run's model from the spec's ModelConfig.
//
// ParseAction is the JSON adapter: it validates text against the spec's
// Action schema, so anything a model writes is either a valid action or one
// short invalid-output error. Script replays a list of raw responses through
// it, for tests, demos and remote runs; Replay re-runs a recorded trace.
// Real providers live in model/openai and model/anthropic.
package model

import (
	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/model/internal/adapt"
)

// ParseAction turns a model's raw text into an Action. The text must be one
// JSON object in the spec's Action form, optionally inside a single Markdown
// code fence. Anything else is an *agent.InvalidOutputError whose message
// says what is wrong and where (a JSON pointer), without repeating the text.
func ParseAction(text string) (agent.Action, error) { return adapt.ParseAction(text) }

// ParseTurn turns a model's raw text into a Turn: either one JSON object in
// the spec's Action form (a one-action turn, exactly as ParseAction reads
// it) or one in the spec's Turn form, {"actions": [...]}, optionally inside
// a single Markdown code fence. Each action of a Turn gets its own wire
// form as Raw. Anything else — a finish that is not the turn's last
// action included — is an *agent.InvalidOutputError whose message says
// what is wrong and where (a JSON pointer), without repeating the text.
func ParseTurn(text string) (agent.Turn, error) { return adapt.ParseTurn(text) }

// ProviderError is a model provider failing for a reason that is not the
// model's output: an HTTP error status (after the retries for 429 and 5xx),
// a request timeout or a network failure. The loop ends the run with exit
// reason model_error and this error's text, which names the provider, e.g.
// "openai: request failed after 3 retries: 500 Internal Server Error
// (server_error)". The text never includes the provider's error message or
// anything sent to it. Its fields: Provider ("openai", "anthropic"),
// Retries, StatusCode (0 without a response), Code (the provider's error
// type or code, when it is a plain identifier), Timeout (set when an
// attempt ran out of time) and Err (what failed, which Unwrap returns).
type ProviderError = adapt.ProviderError
