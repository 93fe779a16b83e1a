package adapt

import (
	"errors"
	"strings"
)

// BytesPerToken is the ratio RequestTokens estimates with: a request of n
// bytes counts as n/BytesPerToken tokens, rounded up. OpenAI's rule of thumb
// is about 4 characters of English text per token; JSON, code and
// identifiers split into more tokens, so 3 is the conservative choice: the
// estimate is larger than the provider's count for the requests an agent
// sends, and the loop compacts before the provider refuses.
const BytesPerToken = 3

// EstimateTokens is the token estimate of a serialized request body.
func EstimateTokens(body []byte) int { return (len(body) + BytesPerToken - 1) / BytesPerToken }

// DefaultContextWindow is the context window of a model no family below
// matches and whose server does not say (Provider.Window): small enough
// for most local models served behind an OpenAI-compatible API; a smaller
// one is learned from the server's first refusal, or set context_window.
const DefaultContextWindow = 32_768

// contextWindows are the context windows (the most input tokens a request
// may hold) of the model families the providers document, by name prefix,
// the most specific first. Sources: platform.openai.com/docs/models and
// docs.anthropic.com's models overview.
var contextWindows = []struct {
	prefix string
	tokens int
}{
	{"gpt-4.1", 1_047_576},
	{"gpt-4o", 128_000},
	// GPT-5 models take 400k tokens in all, of which at most 272k input.
	{"gpt-5", 272_000},
	{"o1", 200_000},
	{"o3", 200_000},
	{"o4", 200_000},
	// Every Claude model has a 200k window (1M only behind a beta header).
	{"claude-", 200_000},
}

// familyWindow returns the context window of the model named name's
// family, 0 when no family matches. A provider prefix ("openai/gpt-4o", as
// routers name models) is ignored.
func familyWindow(name string) int {
	name = strings.ToLower(name)
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	for _, w := range contextWindows {
		if strings.HasPrefix(name, w.prefix) {
			return w.tokens
		}
	}
	return 0
}

// SummaryInstruction asks a model for the summary that replaces the older
// part of a run's history. It goes after the history as a user message, so
// the request keeps the run's prefix (system prompt and tools) and its
// cache.
const SummaryInstruction = "The conversation so far is about to be shortened to fit the context window. " +
	"Do not call any tool now. Write a summary that lets you continue the task without the earlier messages: " +
	"what the task is and what is done, the files you read or changed (with paths and the relevant line ranges), " +
	"the commands you ran and their outcome, the facts and errors you learned, and what you were about to do next. " +
	"Be specific and brief; reply with the summary only."

// ErrNoSummary is the error of a summarization call (agent.Request.Summarize)
// whose reply has no text (a model that called a tool anyway, or refused).
var ErrNoSummary = errors.New("the summarization reply has no text")
