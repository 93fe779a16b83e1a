// Package telemetrytest reads Prometheus text exposition for tests of
// specloop's metrics.
package telemetrytest

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/specloop/specloop/telemetry"
)

// Samples are the counter, gauge and histogram-count values of a scrape,
// keyed by `name{label="value",...}` with the labels sorted (a histogram
// contributes name_count and name_sum).
type Samples map[string]float64

// Parse parses the Prometheus text format.
func Parse(r io.Reader) (Samples, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("telemetrytest: parse the exposition: %w", err)
	}
	out := Samples{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			key := labels(m)
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[name+key] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[name+key] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[name+"_count"+key] = float64(m.GetHistogram().GetSampleCount())
				out[name+"_sum"+key] = m.GetHistogram().GetSampleSum()
			case dto.MetricType_UNTYPED:
				out[name+key] = m.GetUntyped().GetValue()
			}
		}
	}
	return out, nil
}

func labels(m *dto.Metric) string {
	if len(m.GetLabel()) == 0 {
		return ""
	}
	var ls []string
	for _, l := range m.GetLabel() {
		ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
	}
	slices.Sort(ls)
	return "{" + strings.Join(ls, ",") + "}"
}

// LabelValues returns the values label takes in the series of metric name.
func (s Samples) LabelValues(name, label string) []string {
	var out []string
	for key := range s {
		rest, ok := strings.CutPrefix(key, name+"{")
		if !ok {
			continue
		}
		for _, kv := range strings.Split(strings.TrimSuffix(rest, "}"), ",") {
			k, v, _ := strings.Cut(kv, "=")
			if k == label && !slices.Contains(out, strings.Trim(v, `"`)) {
				out = append(out, strings.Trim(v, `"`))
			}
		}
	}
	slices.Sort(out)
	return out
}

// Gather returns the samples of m, through its text exposition.
func Gather(m *telemetry.Metrics) (Samples, error) {
	var buf bytes.Buffer
	if err := m.WriteText(&buf); err != nil {
		return nil, err
	}
	return Parse(&buf)
}
