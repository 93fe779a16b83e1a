package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/specloop/specloop/internal/schema"
	"github.com/specloop/specloop/internal/textclip"
)

// strictJSON decodes every JSON request body with the decoder the model
// path uses (internal/schema.Decode), before request validation sees it:
// duplicate keys, invalid UTF-8, data after the value and excessive nesting
// are a 400 naming the field, where encoding/json would take the last key
// and replace bad bytes. The body is then written again in a canonical form
// (integral numbers as integers, so 1.0 and 1e2 bind to integer fields as
// JSON Schema counts them), and the decoded value is left in the request's
// context for callTool, which hands it to the tool runtime as a model's
// arguments would be (and is not written again).
//
// It also turns a body that validated but does not fit the Go type it binds
// to (an integer past the type's range) into a 400 naming the field. It
// runs after readBody, which read the body whole.
func (s *Server) strictJSON(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if !operations()[route(c)].JSONBody || req.Body == nil || req.Body == http.NoBody || !isJSON(req.Header.Get(echo.HeaderContentType)) {
			return next(c)
		}
		data, _ := io.ReadAll(req.Body) // readBody's bytes
		if len(bytes.TrimSpace(data)) == 0 {
			// Empty: request validation says the body is required.
			req.Body = io.NopCloser(bytes.NewReader(data))
			return next(c)
		}
		value, err := schema.Decode(data)
		if err != nil {
			var se *schema.SyntaxError
			if errors.As(err, &se) {
				return &problemError{status: http.StatusBadRequest, field: textclip.Clip(se.Pointer, schema.MaxPointer), detail: "the request body is not valid JSON: " + se.Error()}
			}
			return problemf(http.StatusBadRequest, "the request body is not valid JSON")
		}
		if c.Path() == toolRoute {
			// callTool hands the value to the tool runtime; nothing
			// reads the body again.
			c.SetRequest(req.WithContext(context.WithValue(req.Context(), bodyKey{}, value)))
			return next(c)
		}
		canonical, err := encodeCanonical(value)
		if err != nil {
			return problemf(http.StatusBadRequest, "the request body is not valid JSON")
		}
		req.Body = io.NopCloser(bytes.NewReader(canonical))
		req.ContentLength = int64(len(canonical))
		c.SetRequest(req.WithContext(context.WithValue(req.Context(), bodyKey{}, value)))
		return bindProblem(next(c))
	}
}

// bodyKey is the context key of the strictly decoded request body.
type bodyKey struct{}

// encodeCanonical writes a decoded value as JSON: numbers in their shortest
// form (an integral float64 has no fraction or exponent below 1e21), HTML
// characters as they are.
func encodeCanonical(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// bindProblem names the field when the generated handler could not bind a
// validated body into its Go type; its own error says only "malformed".
func bindProblem(err error) error {
	var he *echo.HTTPError
	if err == nil || !errors.As(err, &he) || he.Code != http.StatusBadRequest {
		return err
	}
	var te *json.UnmarshalTypeError
	if !errors.As(he.Internal, &te) || te.Field == "" {
		return err
	}
	ptr := "/" + strings.ReplaceAll(te.Field, ".", "/")
	return badField(textclip.Clip(ptr, 512), "field %q: does not fit its type (a number out of range?)", textclip.Clip(ptr, 512))
}
