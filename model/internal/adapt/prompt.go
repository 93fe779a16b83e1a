package adapt

import (
	_ "embed"
	"strings"

	"github.com/specloop/specloop/gen"
)

// defaultSystemPrompt is the system prompt for code tasks. It names no
// tool but the finish tool, through the placeholder finishPlaceholder, so
// it holds whatever tools a run offers.
//
//go:embed system_prompt.md
var defaultSystemPrompt string

// finishPlaceholder stands for the finish tool's name in a system prompt.
const finishPlaceholder = "{{finish}}"

// SystemPrompt is the system prompt a provider gets: text (the default
// prompt when empty) with every {{finish}} replaced by the finish tool's
// name. The result depends on nothing but text, so it is the same for
// every step of a run, as provider prompt caching needs.
func SystemPrompt(text string) string {
	if text == "" {
		text = defaultSystemPrompt
	}
	return strings.ReplaceAll(strings.TrimSpace(text), finishPlaceholder, string(gen.ActionTypeFinish))
}
