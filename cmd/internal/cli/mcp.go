package cli

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/specloop/specloop/mcpserver"
	"github.com/specloop/specloop/wiring"
)

// mcpHandler serves the tools of a runtime on root over streamable HTTP,
// for /mcp of `specloop serve`. The SDK's DNS-rebinding protection stays
// on: a request that reached a loopback address naming another Host is
// refused. Call stop when the HTTP server shuts down: it ends the
// requests in flight (an idle session's event stream would otherwise hold
// the shutdown up); then close the setup.
func mcpHandler(cfg wiring.Config, logger *slog.Logger) (h http.Handler, stop func(), setup *wiring.Setup, err error) {
	setup, err = wiring.Open(cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	srv, err := mcpserver.New(setup.Runtime, mcpserver.Config{Logger: logger})
	if err != nil {
		setup.Close()
		return nil, nil, nil, err
	}
	// Sessions are capped in all and per client address, and an idle one
	// is closed (mcpserver's defaults).
	sh := mcpserver.NewHTTPHandler(srv, mcpserver.HTTPOptions{Logger: logger})
	down, stop := context.WithCancel(context.Background())
	h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		defer context.AfterFunc(down, cancel)()
		sh.ServeHTTP(w, r.WithContext(ctx))
	})
	return h, stop, setup, nil
}
