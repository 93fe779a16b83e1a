// Package webui is the web page for runs that `specloop serve` serves at
// /ui: a list of runs (each with its task's first line), a page that
// follows one run live (its steps, and its transcript from the event
// stream's content: the task, the model's text, each call's arguments,
// outputs and errors, shown as text only), a form that starts a run, the
// cancel and approval buttons, and on a run that ended a reply box that
// continues its conversation (the next run, followed live) with links to
// the runs before and after it. It is plain HTML, CSS
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
	"sync"

	"github.com/specloop/specloop/gen"
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
			data := specJSON()
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

// LoadSpec returns the page's Spec, from the spec's generated tables.
func LoadSpec() *Spec {
	out := &Spec{Enums: gen.Enums(), Meanings: gen.EnumMeanings(), Providers: gen.ModelProviders()}
	out.MaxSteps.Default = gen.DefaultCreateRunRequestMaxSteps
	out.MaxSteps.Min = gen.MinCreateRunRequestMaxSteps
	out.MaxSteps.Max = gen.MaxCreateRunRequestMaxSteps
	return out
}

var specJSON = sync.OnceValue(func() []byte {
	data, err := json.Marshal(LoadSpec())
	if err != nil {
		panic(err) // maps of strings and numbers always encode
	}
	return data
})
