package main

import (
	"os"
	"regexp"
	"slices"
	"testing"
)

// The flags docs/deploy.md may name that are not specloop-temporal's, and
// whose they are; each must still be on the page, so the list cannot
// outlive its reason.
var foreignFlags = map[string]string{
	"--engine": "specloop serve",                            // the flag specloop-temporal serve lacks
	"--remote": "specloop run",                              // how a client reaches the API servers
	"--name":   "temporal operator search-attribute create", // registering the search attributes
	"--type":   "temporal operator search-attribute create",
}

// helpFlags returns the flags `specloop-temporal help CMD` lists.
func helpFlags(t *testing.T, cmd string) []string {
	t.Helper()
	code, stdout, stderr := specloopTemporal(t, "help", cmd)
	if code != 0 {
		t.Fatalf("help %s: exit %d: %s", cmd, code, stderr)
	}
	var flags []string
	for _, m := range regexp.MustCompile(`(?m)^  (--[a-z0-9-]+)`).FindAllStringSubmatch(stdout, -1) {
		flags = append(flags, m[1])
	}
	if len(flags) < 10 {
		t.Fatalf("help %s lists %d flags: did its form change?\n%s", cmd, len(flags), stdout)
	}
	return flags
}

// TestDeployDocNamesRealFlags: every flag docs/deploy.md names is a flag
// of specloop-temporal serve or worker (or one of foreignFlags), and the
// page names every flag of both, but serve's -v.
func TestDeployDocNamesRealFlags(t *testing.T) {
	data, err := os.ReadFile("../../docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)
	serve, worker := helpFlags(t, "serve"), helpFlags(t, "worker")
	named := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?:^|[^A-Za-z0-9_-])(--[a-z][a-z0-9-]*)`).FindAllStringSubmatch(page, -1) {
		named[m[1]] = true
	}
	for flag := range named {
		if !slices.Contains(serve, flag) && !slices.Contains(worker, flag) && foreignFlags[flag] == "" && flag != "--help" {
			t.Errorf("docs/deploy.md names %s, a flag of neither specloop-temporal serve nor worker", flag)
		}
	}
	for flag, whose := range foreignFlags {
		if !named[flag] {
			t.Errorf("docs/deploy.md no longer names %s (of %s): drop it from foreignFlags", flag, whose)
		}
		if slices.Contains(serve, flag) || slices.Contains(worker, flag) {
			t.Errorf("%s is specloop-temporal's own now: drop it from foreignFlags", flag)
		}
	}
	for _, flag := range append(serve, worker...) {
		if !named[flag] && flag != "--v" {
			t.Errorf("docs/deploy.md does not say what %s does", flag)
		}
	}
}
