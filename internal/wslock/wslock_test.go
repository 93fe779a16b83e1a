package wslock_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/specloop/specloop/internal/wslock"
)

// TestMain lets the test binary be the other process: with WSLOCK_HOLD set
// it takes that lock, says so, and holds it until its standard input closes.
func TestMain(m *testing.M) {
	if dir := os.Getenv("WSLOCK_HOLD"); dir != "" {
		l, err := wslock.Acquire(context.Background(), dir, "ws", nil)
		if err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString("locked\n")
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		l.Release()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestASecondProcessWaitsUntilTheFirstLetsGo(t *testing.T) {
	dir := t.TempDir()
	other := exec.Command(os.Args[0], "-test.run=^$")
	other.Env = append(os.Environ(), "WSLOCK_HOLD="+dir)
	stdin, err := other.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := other.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer other.Wait()
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "locked\n" {
		t.Fatalf("the other process did not take the lock: %q, %v", line, err)
	}

	holder := make(chan string, 1)
	got := make(chan error, 1)
	go func() {
		l, err := wslock.Acquire(context.Background(), dir, "ws", func(h string) { holder <- h })
		if err == nil {
			err = l.Release()
		}
		got <- err
	}()
	h := <-holder // it waits, and knows for whom
	if !strings.Contains(h, "pid ") {
		t.Errorf("the holder is given as %q, want its pid", h)
	}
	select {
	case err := <-got:
		t.Fatalf("took the lock while the other process held it (%v)", err)
	default:
	}
	stdin.Close() // the other process lets go
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute): // a hang guard, not a timing
		t.Fatal("never took the lock after the other process released it")
	}
}

func TestAcquireGivesUpWithItsContext(t *testing.T) {
	dir := t.TempDir()
	first, err := wslock.Acquire(context.Background(), dir, "ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Release()
	ctx, cancel := context.WithCancel(context.Background())
	_, err = wslock.Acquire(ctx, dir, "ws", func(string) { cancel() })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	other, err := wslock.Acquire(context.Background(), dir, "another workspace", nil)
	if err != nil {
		t.Fatalf("another workspace's lock: %v", err)
	}
	other.Release()
}

func TestTheLockDirIsTheOwnersOnly(t *testing.T) {
	dir := t.TempDir() + "/locks"
	l, err := wslock.Acquire(context.Background(), dir, "ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("mode %v, want 0700", fi.Mode().Perm())
	}
}
