// Package itest tests `specloop serve --engine temporal` and `specloop
// worker` against a real Temporal server (go.temporal.io/server's
// temporaltest, on SQLite in memory), with real worker processes of the
// built specloop binary. It is a module of its own so that the server's
// weight stays out of specloop's default build and test run:
//
//	cd temporal/itest && go test ./...
//
// It talks to specloop over HTTP only, as a client would, so it does not
// import the specloop module (whose Temporal SDK version differs from the
// one the test server needs).
package itest
