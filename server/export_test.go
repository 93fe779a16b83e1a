package server

// SetWorkspaceHook makes the server call f(name) right after it resolved
// a workspace for a tool call, before the tool uses it: a test swaps the
// directory there.
func SetWorkspaceHook(s *Server, f func(name string)) { s.wsHook = f }

// Conns reports how many of the server's connections are busy with a
// request (or hijacked), and how many are open.
func Conns(s *Server) (busy, open int) {
	l := s.conns
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.conns {
		if c.idleSince.IsZero() {
			busy++
		}
	}
	return busy, len(l.conns)
}
