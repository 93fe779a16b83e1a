package server

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// deadlineRecorder records the write deadlines set through
// http.ResponseController before each write.
type deadlineRecorder struct {
	*httptest.ResponseRecorder
	deadlines []time.Time
	writes    int
	bad       bool // a write came without a fresh deadline
}

func (d *deadlineRecorder) SetWriteDeadline(t time.Time) error {
	d.deadlines = append(d.deadlines, t)
	return nil
}

func (d *deadlineRecorder) Write(p []byte) (int, error) {
	d.writes++
	if len(d.deadlines) < d.writes {
		d.bad = true
	}
	return d.ResponseRecorder.Write(p)
}

// TestDeadlineWriter: every write and flush of a response is preceded by
// a write deadline timeout ahead, so a stalled client fails its own
// writes and nothing else.
func TestDeadlineWriter(t *testing.T) {
	t.Parallel()
	rec := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
	w := &deadlineWriter{ResponseWriter: rec, rc: http.NewResponseController(rec), timeout: time.Minute}
	before := time.Now()
	for range 3 {
		if _, err := w.Write([]byte("data: x\n\n")); err != nil {
			t.Fatal(err)
		}
		w.Flush()
	}
	if rec.bad || rec.writes != 3 || len(rec.deadlines) != 6 {
		t.Fatalf("writes %d, deadlines %d, a write without a deadline: %v", rec.writes, len(rec.deadlines), rec.bad)
	}
	for _, d := range rec.deadlines {
		if d.Before(before.Add(time.Minute)) {
			t.Fatalf("deadline %v is not a minute ahead of %v", d, before)
		}
	}
	if !rec.Flushed {
		t.Error("Flush did not reach the writer")
	}
}
