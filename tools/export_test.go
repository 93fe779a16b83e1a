package tools

// SetWalkMaxEntries lowers the walks' entry cap for a test and returns the
// function that restores it.
func SetWalkMaxEntries(n int) (restore func()) {
	old := walkMaxEntries
	walkMaxEntries = n
	return func() { walkMaxEntries = old }
}
