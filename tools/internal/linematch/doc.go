// Package linematch finds the lines of a text that match a literal string
// or a Go regular expression, quickly and within a bounded amount of work
// per call.
package linematch

// The bounds of a match (the README's "Code tools" section lists them).
const (
	// MaxLine: the search tool reads files in chunks of this size, so a
	// line longer than it is searched in its first MaxLine bytes; a
	// matcher never runs over more of a line at once.
	MaxLine = 1 << 20
	// regexBudget bounds the work of one call of Go's regexp, which does up
	// to one step per instruction of the expression per byte and cannot be
	// interrupted: a regular expression runs over at most
	// regexBudget/instructions bytes of a line (between minRegexLine and
	// MaxLine), so every call ends within a fraction of a second and
	// a cancelled search stops between calls.
	regexBudget  = 8 << 20
	minRegexLine = 4 << 10
	// maxRegexInsts: larger expressions are refused (invalid_regex).
	maxRegexInsts = 4096
)
