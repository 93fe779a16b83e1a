// Package redirect holds the redirect policy of specloop's HTTP clients
// that send data a server must not pass on: a declared tool endpoint, an
// MCP server over streamable HTTP.
package redirect

import (
	"errors"
	"net/http"
	"strings"
)

// ErrOtherOrigin refuses a redirect away from the first request's origin.
var ErrOtherOrigin = errors.New("a redirect to another origin")

// SameOrigin is an http.Client CheckRedirect that follows at most 10
// redirects, each within the first request's scheme and host: a 307 or 308
// re-sends the body, which must not reach a host nobody configured.
func SameOrigin(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if u, first := req.URL, via[0].URL; u.Scheme != first.Scheme || !strings.EqualFold(u.Host, first.Host) {
		return ErrOtherOrigin
	}
	return nil
}
