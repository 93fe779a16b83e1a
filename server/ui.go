package server

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/specloop/specloop/webui"
)

// UIPath is where the server serves its web page for runs (package
// webui); uiRoot, without the slash, redirects there.
const (
	UIPath = uiRoot + "/"
	uiRoot = "/ui"
)

// registerUI serves the web page at /ui/ (and redirects /ui there). The
// page's files are public, like /healthz: they hold no data, and the page
// asks for the token before it calls the API. The Host check and the
// other edges apply as to any request; request validation does not (the
// page is not in the spec).
func (s *Server) registerUI(e *echo.Echo) {
	files := echo.WrapHandler(http.StripPrefix(uiRoot, webui.Handler()))
	redirect := func(c echo.Context) error { return c.Redirect(http.StatusMovedPermanently, UIPath) }
	for _, m := range []string{http.MethodGet, http.MethodHead} {
		e.Add(m, uiRoot, redirect)
		e.Add(m, UIPath+"*", files)
		s.public[m+" "+uiRoot] = true
		s.public[m+" "+UIPath+"*"] = true
	}
}
