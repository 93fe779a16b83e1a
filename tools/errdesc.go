package tools

import (
	"regexp"
	"strings"
)

// errorCodeRe finds the `code: ` that starts each sentence of a tool's error
// description (the description of its operation's 422 response), such as
// "division_by_zero: the operation is divide and right is 0. non_finite_result: ...".
var errorCodeRe = regexp.MustCompile(`(?:^|[.!)]\s+)([a-z][a-z0-9_]*):\s`)

// ErrorMeaning returns what the error description of a tool (its
// ToolSpec.ErrorDescription) says the error code means, without the code
// and the final period, or "" when the description does not name the code.
// The text is the spec's, so it never holds anything a caller sent: it is
// what a client is told about a tool failure, while the model gets the
// tool's own message, which may quote the path or pattern it gave.
func ErrorMeaning(description, code string) string {
	locs := errorCodeRe.FindAllStringSubmatchIndex(description, -1)
	for i, l := range locs {
		if description[l[2]:l[3]] != code {
			continue
		}
		end := len(description)
		if i+1 < len(locs) {
			// The next code's match starts at the period ending this sentence.
			end = locs[i+1][0] + 1
		}
		return strings.TrimSuffix(strings.TrimSpace(description[l[1]:end]), ".")
	}
	return ""
}
