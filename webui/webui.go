// Package webui is the web page for runs that `specloop serve` serves at
// /ui: a list of runs, a page that follows one run live, a form that
// starts a run, and the cancel and approval buttons. It is plain HTML, CSS
// and JavaScript modules embedded in the binary (no build step, nothing
// fetched from another origin), talking to the server's JSON API and its
// event stream with the bearer token the user enters once (kept in the
// tab's sessionStorage, never in a URL).
//
// Handler serves the assets and spec.json: the enums, error meanings and
// model providers of spec/agent.yaml, so that the page's filters, form and
// labels come from the one spec rather than from copies in JavaScript.
// Every response carries a Content-Security-Policy that allows the
// server's own origin only.
package webui

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"slices"
	"sync"

	"github.com/specloop/specloop/internal/specdoc"
)

//go:embed assets
var assets embed.FS

// CSP is the Content-Security-Policy of every response of Handler: the
// page may load scripts, styles and images, and connect, to its own origin
// only; no inline script or style, no plugin, no framing, and forms post
// nowhere.
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// SpecPath is the path, under the handler's root, of the spec's enums as
// JSON.
const SpecPath = "/spec.json"

// Handler returns the handler of the page's files, rooted at "/": mount
// it under /ui with http.StripPrefix. It serves GET and HEAD only.
func Handler() http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(fmt.Sprintf("webui: embedded assets: %v", err))
	}
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", CSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		// The page changes with the binary: revalidate every time (the
		// file server answers 304 when nothing changed).
		h.Set("Cache-Control", "no-cache")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		if r.URL.Path == SpecPath {
			data, err := specJSON()
			if err != nil {
				http.Error(w, "the spec could not be read", http.StatusInternalServerError)
				return
			}
			h.Set("Content-Type", "application/json")
			_, _ = w.Write(data)
			return
		}
		files.ServeHTTP(w, r)
	})
}

// Spec is what the page learns from spec/agent.yaml.
type Spec struct {
	// Enums holds every string enum among the spec's component schemas,
	// by schema name, in the spec's order.
	Enums map[string][]string `json:"enums"`
	// Meanings holds the x-meanings of the enums that have them (what each
	// error code means).
	Meanings map[string]map[string]string `json:"meanings"`
	// Providers are the model providers a run may name (ModelConfig's
	// discriminator), sorted.
	Providers []string `json:"providers"`
	// MaxSteps is CreateRunRequest.max_steps: its default and bounds.
	MaxSteps struct {
		Default float64 `json:"default"`
		Min     float64 `json:"min"`
		Max     float64 `json:"max"`
	} `json:"max_steps"`
}

// LoadSpec reads the page's Spec from the embedded spec.
func LoadSpec() (*Spec, error) {
	doc, err := specdoc.Load()
	if err != nil {
		return nil, fmt.Errorf("webui: %w", err)
	}
	out := &Spec{Enums: map[string][]string{}, Meanings: map[string]map[string]string{}}
	for name, ref := range doc.Components.Schemas {
		s := ref.Value
		if s == nil || !s.Type.Is("string") || len(s.Enum) == 0 {
			continue
		}
		for _, v := range s.Enum {
			if str, ok := v.(string); ok {
				out.Enums[name] = append(out.Enums[name], str)
			}
		}
		if m, ok := s.Extensions["x-meanings"].(map[string]any); ok {
			out.Meanings[name] = map[string]string{}
			for k, v := range m {
				if str, ok := v.(string); ok {
					out.Meanings[name][k] = str
				}
			}
		}
	}
	mc := doc.Components.Schemas["ModelConfig"]
	if mc == nil || mc.Value == nil || mc.Value.Discriminator == nil {
		return nil, fmt.Errorf("webui: the spec's ModelConfig has no discriminator")
	}
	for p := range mc.Value.Discriminator.Mapping {
		out.Providers = append(out.Providers, p)
	}
	slices.Sort(out.Providers)
	req := doc.Components.Schemas["CreateRunRequest"]
	if req == nil || req.Value == nil || req.Value.Properties["max_steps"] == nil || req.Value.Properties["max_steps"].Value == nil {
		return nil, fmt.Errorf("webui: the spec's CreateRunRequest has no max_steps")
	}
	ms := req.Value.Properties["max_steps"].Value
	if d, ok := ms.Default.(float64); ok {
		out.MaxSteps.Default = d
	}
	if ms.Min != nil {
		out.MaxSteps.Min = *ms.Min
	}
	if ms.Max != nil {
		out.MaxSteps.Max = *ms.Max
	}
	return out, nil
}

var specJSON = sync.OnceValues(func() ([]byte, error) {
	s, err := LoadSpec()
	if err != nil {
		return nil, err
	}
	return json.Marshal(s)
})
