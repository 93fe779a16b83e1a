package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Package init budgets of specloop's own packages, in allocations (what
// GODEBUG=inittrace=1 counts; exact, unlike a duration). Parsing the
// embedded spec costs some 40,000, compiling a validator or a regular
// expression such as [a-z]{1,64} hundreds to thousands; today's inits
// allocate a few dozen each. The dependencies' inits (OpenTelemetry, the
// provider SDKs, a JSON Schema library's meta-schemas) are outside these
// budgets; Temporal's is not in this command at all (see
// TestNoTemporalInSpecloop).
const (
	initAllocsPerPackage = 200
	initAllocsOfModule   = 1000
)

// modulePath is the import path prefix of specloop's packages.
const modulePath = "github.com/specloop/specloop"

// initTrace parses a line of GODEBUG=inittrace=1's report, "init PACKAGE
// @0.12 ms, 0.034 ms clock, 1234 bytes, 56 allocs", into the package and its
// init's allocations. (Not with a regular expression: this test's own
// package-level variables count in the init of the package it checks.)
func initTrace(line string) (pkg string, size, allocs int, ok bool) {
	f := strings.Fields(line)
	if len(f) != 11 || f[0] != "init" || f[8] != "bytes," || f[10] != "allocs" {
		return "", 0, 0, false
	}
	b, err1 := strconv.Atoi(f[7])
	a, err2 := strconv.Atoi(f[9])
	if err1 != nil || err2 != nil {
		return "", 0, 0, false
	}
	return f[1], b, a, true
}

// TestInitParsesNothing: no package of specloop parses the embedded spec,
// compiles a validator or does other real work at package init, so a
// program that imports them pays for the spec only when it uses it. The
// test binary (which links every package the specloop command does) runs
// as `specloop help` with GODEBUG=inittrace=1, and each package's init
// allocations must stay within initAllocsPerPackage, all of them within
// initAllocsOfModule.
func TestInitParsesNothing(t *testing.T) {
	cmd := exec.Command(os.Args[0], "help")
	cmd.Env = append(os.Environ(), selfServerEnv+"=1", "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("specloop help: %v\n%s", err, stderr.Bytes())
	}
	ours, total := 0, 0
	for line := range strings.Lines(stderr.String()) {
		pkg, size, allocs, ok := initTrace(line)
		if !ok || !(pkg == modulePath || strings.HasPrefix(pkg, modulePath+"/")) {
			continue
		}
		ours++
		total += allocs
		if allocs > initAllocsPerPackage {
			t.Errorf("the init of %s allocates %d objects (%d bytes), more than %d: a package-level variable does work on load (parses the spec? compiles a schema or a regular expression?); make it a sync.OnceValue", pkg, allocs, size, initAllocsPerPackage)
		}
	}
	// A trace that names too few of the packages the command links means
	// the runtime's format changed and the test would check nothing.
	if ours < 10 {
		t.Fatalf("GODEBUG=inittrace=1 reported the init of %d specloop packages; the trace format changed?\n%s", ours, stderr.Bytes())
	}
	if total > initAllocsOfModule {
		t.Errorf("the inits of specloop's packages allocate %d objects in all, more than %d", total, initAllocsOfModule)
	}
	t.Logf("%d specloop packages allocate %d objects at init", ours, total)
}

// goListDeps is `go list -deps .`: the packages the specloop command links,
// listed once for the tests that check them.
var goListDeps = sync.OnceValues(func() ([]byte, error) {
	return exec.Command("go", "list", "-deps", ".").Output()
})

// specloopDeps returns goListDeps' lines; it skips without a go command.
func specloopDeps(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	out, err := goListDeps()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	return string(out)
}

// TestNoTemporalInSpecloop: the Temporal SDK (some 6,000 allocations at
// init, 10 MB of memory and 30 MB of binary) is specloop-temporal's, and
// nothing the specloop command links brings it back.
func TestNoTemporalInSpecloop(t *testing.T) {
	t.Parallel()
	for pkg := range strings.Lines(specloopDeps(t)) {
		if strings.HasPrefix(pkg, "go.temporal.io/") || pkg == modulePath+"/temporal\n" {
			t.Errorf("specloop links %s", strings.TrimSpace(pkg))
		}
	}
}

// TestNoClientGolangInSpecloop: the metrics are VictoriaMetrics/metrics
// (some 160 allocations at init), not Prometheus' client_golang, whose
// init and procfs' cost some 1,500 allocations in every command; nothing
// the specloop command links brings them back. (Tests parse a scrape with
// prometheus/common's expfmt: that is theirs only.)
func TestNoClientGolangInSpecloop(t *testing.T) {
	t.Parallel()
	for pkg := range strings.Lines(specloopDeps(t)) {
		if strings.HasPrefix(pkg, "github.com/prometheus/") {
			t.Errorf("specloop links %s", strings.TrimSpace(pkg))
		}
	}
}
