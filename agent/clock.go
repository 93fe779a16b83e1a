package agent

import "time"

// now reads the run's clock: Options.Clock, else the wall clock. Every time
// the loop records (event times, durations) comes from here, so that a
// workflow engine that replays the loop gets the same events each time.
func (l *loop) now() time.Time {
	if l.opts.Clock != nil {
		return l.opts.Clock()
	}
	return time.Now()
}
