package tools

// SetWalkMaxEntries lowers the entry cap of the walks in w, for a test.
func (w *Workspace) SetWalkMaxEntries(n int) { w.walkMaxEntries = n }
