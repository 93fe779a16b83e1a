package runner

import (
	"errors"
	"io/fs"
	"os"
	"time"
)

// maxSweepInterval is the longest time between two sweeps of the
// transcripts past Config.TranscriptRetention.
const maxSweepInterval = time.Hour

// transcriptPath is where run id's transcript is: in the data directory,
// or where the Engine keeps it.
func (s *Runner) transcriptPath(id string) (string, error) {
	if et, ok := s.cfg.Engine.(EngineTranscripts); ok {
		return et.TranscriptPath(id)
	}
	return s.store.transcriptPath(id), nil
}

// sweepTranscripts removes the transcripts of the runs that finished more
// than Config.TranscriptRetention before now. Their run records and traces
// stay.
func (s *Runner) sweepTranscripts(now time.Time) {
	cut := now.Add(-s.cfg.TranscriptRetention)
	var old []string
	s.runs.mu.RLock()
	for _, r := range s.runs.sorted {
		if r.job == nil && !r.finished.IsZero() && r.finished.Before(cut) {
			old = append(old, r.id)
		}
	}
	s.runs.mu.RUnlock()
	et, _ := s.cfg.Engine.(EngineTranscripts)
	for _, id := range old {
		var err error
		if et != nil {
			err = et.RemoveTranscript(id)
		} else {
			err = os.Remove(s.store.transcriptPath(id))
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.log.Warn("remove a transcript past its retention", "run", id, "err", err)
		}
	}
}

// keepSweeping sweeps the transcripts a few times per retention period
// (at most maxSweepInterval apart) until the runner shuts down.
func (s *Runner) keepSweeping() {
	t := time.NewTicker(min(max(s.cfg.TranscriptRetention/4, time.Minute), maxSweepInterval))
	defer t.Stop()
	for {
		select {
		case now := <-t.C:
			s.sweepTranscripts(now)
		case <-s.stopSweeping:
			return
		}
	}
}
