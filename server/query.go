package server

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"
)

// checkQuery refuses a query string that does not parse (a malformed
// escape such as %ZZ, or ';' as a separator) with a 400 naming the
// parameter when the operation declares it (any other name in a query is
// the client's text). Without it, echo drops such a parameter and the
// operation runs as if it had not been given.
func (s *Server) checkQuery(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if p := queryProblem(c.Request().URL.RawQuery, operations()[route(c)].Query); p != nil {
			return p
		}
		return next(c)
	}
}

func queryProblem(raw string, declared []string) *problemError {
	for part := range strings.SplitSeq(raw, "&") {
		if part == "" {
			continue
		}
		key, value, _ := strings.Cut(part, "=")
		name, err := url.QueryUnescape(key)
		if err != nil || strings.Contains(key, ";") {
			return problemf(http.StatusBadRequest, "a query parameter's name is malformed (an invalid %%-escape or a ';')")
		}
		if _, err := url.QueryUnescape(value); err != nil || strings.Contains(value, ";") {
			if slices.Contains(declared, name) {
				return badField(name, "the query parameter is malformed (an invalid %%-escape or a ';')")
			}
			return problemf(http.StatusBadRequest, "a query parameter is malformed (an invalid %%-escape or a ';')")
		}
	}
	return nil
}
