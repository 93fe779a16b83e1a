package server

import (
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"
	"github.com/specloop/specloop/gen"
)

// queryParams is every query parameter name the spec declares, the names a
// problem may repeat (any other name in a query is the client's text).
var queryParams = sync.OnceValue(func() map[string]bool {
	names := map[string]bool{}
	for _, op := range gen.Operations() {
		for _, q := range op.Query {
			names[q] = true
		}
	}
	return names
})

// checkQuery refuses a query string that does not parse (a malformed
// escape such as %ZZ, or ';' as a separator) with a 400 naming the
// parameter when the spec declares it. Without it, echo drops such a
// parameter and the operation runs as if it had not been given.
func (s *Server) checkQuery(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if raw := c.Request().URL.RawQuery; raw != "" {
			if err := queryProblem(raw); err != nil {
				return err
			}
		}
		return next(c)
	}
}

func queryProblem(raw string) *problemError {
	for _, part := range strings.Split(raw, "&") {
		if part == "" {
			continue
		}
		key, value, _ := strings.Cut(part, "=")
		name, err := url.QueryUnescape(key)
		if err != nil || strings.Contains(key, ";") {
			return problemf(http.StatusBadRequest, "a query parameter's name is malformed (an invalid %%-escape or a ';')")
		}
		if _, err := url.QueryUnescape(value); err != nil || strings.Contains(value, ";") {
			if queryParams()[name] {
				return badField(name, "the query parameter is malformed (an invalid %%-escape or a ';')")
			}
			return problemf(http.StatusBadRequest, "a query parameter is malformed (an invalid %%-escape or a ';')")
		}
	}
	return nil
}
