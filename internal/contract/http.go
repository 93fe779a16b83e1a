package contract

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/specloop/specloop/internal/textclip"
)

// HTTP validates exchanges with a server against the spec with
// kin-openapi's openapi3filter: the request with ValidateRequest, the
// response with ValidateResponse (undeclared statuses included).
type HTTP struct {
	doc    *openapi3.T
	router routers.Router
}

// NewHTTP prepares the validation of exchanges against doc, which must be a
// private copy (specdoc.Parse(spec.YAML())): its Servers are cleared so that
// any host matches.
func NewHTTP(doc *openapi3.T) (*HTTP, error) {
	RegisterBodyDecoders()
	doc.Servers = nil
	r, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("contract: router: %w", err)
	}
	return &HTTP{doc: doc, router: r}, nil
}

// Exchange is one request and its response, with both bodies read.
type Exchange struct {
	// Request is the request sent; its Body is ignored (see RequestBody).
	Request     *http.Request
	RequestBody []byte
	Status      int
	Header      http.Header
	Body        []byte
}

// Verdict is what the spec says about an exchange.
type Verdict struct {
	// OperationID is the operation the request was routed to.
	OperationID string
	// Request is nil when the request is valid for the operation.
	Request error
	// Response is nil when the status is declared for the operation and
	// the body matches its schema.
	Response error
}

// Check validates an exchange. It fails only when the request matches no
// operation of the spec.
func (h *HTTP) Check(ctx context.Context, ex Exchange) (Verdict, error) {
	req := ex.Request.Clone(ctx)
	req.Body = io.NopCloser(bytes.NewReader(ex.RequestBody))
	req.ContentLength = int64(len(ex.RequestBody))
	route, params, err := h.router.FindRoute(req)
	if err != nil {
		return Verdict{}, fmt.Errorf("%s %s matches no operation of the spec", ex.Request.Method, ex.Request.URL.Path)
	}
	v := Verdict{OperationID: route.Operation.OperationID}
	in := &openapi3filter.RequestValidationInput{
		Request:    req,
		PathParams: params,
		Route:      route,
		Options:    &openapi3filter.Options{AuthenticationFunc: bearerPresent},
	}
	if err := openapi3filter.ValidateRequest(ctx, in); err != nil {
		v.Request = concise(err)
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 ex.Status,
		Header:                 ex.Header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true},
	}
	out.SetBodyBytes(ex.Body)
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		v.Response = concise(err)
	}
	return v, nil
}

// bearerPresent is the spec's bearerAuth as a client must meet it: an
// Authorization header with the Bearer scheme and a token. Whether the
// token is right is the server's business.
func bearerPresent(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	scheme := in.SecurityScheme
	if scheme == nil || scheme.Type != "http" || !strings.EqualFold(scheme.Scheme, "bearer") {
		return fmt.Errorf("security scheme %s is not http bearer", in.SecuritySchemeName)
	}
	h := in.RequestValidationInput.Request.Header.Get("Authorization")
	const prefix = "bearer "
	if len(h) <= len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return errors.New("no bearer token")
	}
	return nil
}

// concise shortens kin-openapi's errors, which dump schemas and values, to
// their reason and the field's JSON pointer.
func concise(err error) error {
	var se *openapi3.SchemaError
	prefix := ""
	var re *openapi3filter.ResponseError
	var qe *openapi3filter.RequestError
	var sre *openapi3filter.SecurityRequirementsError
	switch {
	case errors.As(err, &re):
		prefix = re.Reason
	case errors.As(err, &sre):
		return errors.New("security requirements failed: no acceptable credentials")
	case errors.As(err, &qe):
		prefix = qe.Reason
		if qe.Parameter != nil {
			prefix = fmt.Sprintf("parameter %s (%s): %s", qe.Parameter.Name, qe.Parameter.In, qe.Reason)
		}
	}
	if errors.As(err, &se) {
		fe := fromSchemaError(se)
		msg := fe.Pointer + ": " + fe.Reason
		if prefix != "" {
			msg = prefix + ": " + msg
		}
		return errors.New(msg)
	}
	if prefix != "" {
		var inner error
		if re != nil {
			inner = re.Err
		} else if qe != nil {
			inner = qe.Err
		}
		if inner != nil {
			return fmt.Errorf("%s: %s", prefix, textclip.Clip(inner.Error(), 300))
		}
		return errors.New(prefix)
	}
	return errors.New(textclip.Clip(err.Error(), 300))
}

var registerOnce sync.Once

// RegisterBodyDecoders registers, once per process, the openapi3filter body
// decoders the spec's responses need: text/event-stream (each event's data
// is validated as a TraceEvent; see ValidateEventStream) and application/yaml
// for a `type: string` schema (the document as text, which must parse as
// YAML). Other content types keep kin-openapi's decoders.
func RegisterBodyDecoders() {
	registerOnce.Do(func() {
		openapi3filter.RegisterBodyDecoder("text/event-stream", func(r io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
			data, err := io.ReadAll(r)
			if err != nil {
				return nil, err
			}
			if _, err := ValidateEventStream(data); err != nil {
				return nil, err
			}
			return string(data), nil
		})
		yaml := openapi3filter.RegisteredBodyDecoder("application/yaml")
		openapi3filter.RegisterBodyDecoder("application/yaml", func(r io.Reader, h http.Header, s *openapi3.SchemaRef, enc openapi3filter.EncodingFn) (any, error) {
			if yaml == nil || s == nil || s.Value == nil || !s.Value.Type.Is(openapi3.TypeString) {
				if yaml == nil {
					return nil, errors.New("no YAML decoder")
				}
				return yaml(r, h, s, enc)
			}
			data, err := io.ReadAll(r)
			if err != nil {
				return nil, err
			}
			if _, err := yaml(bytes.NewReader(data), h, nil, enc); err != nil {
				return nil, fmt.Errorf("not YAML: %w", err)
			}
			return string(data), nil
		})
	})
}

// Route is one route a server serves, in echo's form (/v1/runs/:run_id).
type Route struct {
	Method, Path string
}

// CheckRoutes compares the routes a server serves with the operations of
// doc: a served route the spec lacks, and an operation no route serves, are
// problems. A route with a parameter serves the spec's concrete paths it
// matches (POST /v1/tools/:name serves POST /v1/tools/calculator). HEAD
// and OPTIONS routes the spec does not declare are ignored (routers add
// them).
func CheckRoutes(doc *openapi3.T, served []Route) []Problem {
	declared := map[Route]string{}
	for _, o := range operations(doc) {
		declared[Route{Method: o.method, Path: echoPath(o.path)}] = o.subject()
	}
	have := map[Route]bool{}
	var ps []Problem
	for _, r := range served {
		have[r] = true
		if _, ok := declared[r]; ok {
			continue
		}
		if r.Method == http.MethodHead || r.Method == http.MethodOptions {
			continue
		}
		ps = append(ps, Problem{Subject: r.Method + " " + r.Path, Message: "the server serves this route but the spec declares no such operation"})
	}
	for _, r := range slices.SortedFunc(maps.Keys(declared), func(a, b Route) int {
		return strings.Compare(a.Path+" "+a.Method, b.Path+" "+b.Method)
	}) {
		if !have[r] && !slices.ContainsFunc(served, func(s Route) bool { return s.Method == r.Method && routeMatches(s.Path, r.Path) }) {
			ps = append(ps, Problem{Subject: declared[r], Message: fmt.Sprintf("the spec declares %s %s but the server does not serve it", r.Method, r.Path)})
		}
	}
	slices.SortFunc(ps, func(a, b Problem) int { return strings.Compare(a.Subject, b.Subject) })
	return ps
}

// routeMatches reports whether the echo route pattern (with :params)
// matches the concrete path, segment by segment.
func routeMatches(pattern, path string) bool {
	ps, xs := strings.Split(pattern, "/"), strings.Split(path, "/")
	if len(ps) != len(xs) {
		return false
	}
	for i, p := range ps {
		if p != xs[i] && (!strings.HasPrefix(p, ":") || xs[i] == "" || strings.HasPrefix(xs[i], ":")) {
			return false
		}
	}
	return true
}

// echoPath turns an OpenAPI path template into echo's form: {id} → :id.
func echoPath(p string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(p, '{')
		j := strings.IndexByte(p, '}')
		if i < 0 || j < i {
			b.WriteString(p)
			return b.String()
		}
		b.WriteString(p[:i])
		b.WriteByte(':')
		b.WriteString(p[i+1 : j])
		p = p[j+1:]
	}
}

// Response is one status an operation declares.
type Response struct {
	OperationID  string
	Method, Path string
	Status       int
}

// String is "operationId status (METHOD path)".
func (r Response) String() string {
	return fmt.Sprintf("%s %d (%s %s)", r.OperationID, r.Status, r.Method, r.Path)
}

// Responses lists every (operation, status) doc declares, sorted.
func Responses(doc *openapi3.T) []Response {
	var out []Response
	for _, o := range operations(doc) {
		for key := range o.op.Responses.Map() {
			status, err := strconv.Atoi(key)
			if err != nil {
				continue
			}
			out = append(out, Response{OperationID: o.subject(), Method: o.method, Path: o.path, Status: status})
		}
	}
	slices.SortFunc(out, func(a, b Response) int {
		if c := strings.Compare(a.OperationID, b.OperationID); c != 0 {
			return c
		}
		return a.Status - b.Status
	})
	return out
}
