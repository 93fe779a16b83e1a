package tools

// SetWalkMaxEntries lowers the entry cap of the walks in w, for a test.
func (w *Workspace) SetWalkMaxEntries(n int) { w.walkMaxEntries = n }

// SetMaxBaselineBytes sets the bound of a baseline record's content, for
// a test; it returns the function that restores it.
func SetMaxBaselineBytes(n int64) (restore func()) {
	old := maxBaselineBytes
	maxBaselineBytes = n
	return func() { maxBaselineBytes = old }
}
