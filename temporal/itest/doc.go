// Package itest tests `specloop-temporal serve` and `specloop-temporal
// worker` against a real Temporal server (go.temporal.io/server's
// temporaltest, on SQLite in memory), with real processes of the built
// specloop-temporal binary. It is a module of its own so that the server's
// weight stays out of specloop's default build and test run:
//
//	cd temporal/itest && go test ./...
//
// It talks to specloop over HTTP only, as a client would, so it does not
// import the specloop module (whose Temporal SDK version differs from the
// one the test server needs).
package itest
