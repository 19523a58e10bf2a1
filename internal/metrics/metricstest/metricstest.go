// Package metricstest parses a Prometheus text exposition for tests and
// reads single values out of it.
package metricstest

import (
	"fmt"
	"io"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Families is a parsed exposition, by metric family name.
type Families map[string]*dto.MetricFamily

// Parse parses the Prometheus text format strictly: a malformed line, a
// duplicate family or a sample without its family's type is an error.
func Parse(r io.Reader) (Families, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parse metrics: %w", err)
	}
	return Families(fams), nil
}

// Value returns the value of the counter or gauge sample of family name
// whose labels are exactly labels ("k", "v" pairs), and whether it exists.
// For a histogram it returns the sample count.
func (f Families) Value(name string, labels ...string) (float64, bool) {
	m := f.find(name, labels)
	if m == nil {
		return 0, false
	}
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue(), true
	case m.Gauge != nil:
		return m.Gauge.GetValue(), true
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount()), true
	case m.Untyped != nil:
		return m.Untyped.GetValue(), true
	}
	return 0, false
}

// Sum returns the sum of a histogram sample (labels as for Value).
func (f Families) Sum(name string, labels ...string) (float64, bool) {
	m := f.find(name, labels)
	if m == nil || m.Histogram == nil {
		return 0, false
	}
	return m.Histogram.GetSampleSum(), true
}

// Labels lists the label sets of a family's samples, each as "k=v,k=v".
func (f Families) Labels(name string) []string {
	fam := f[name]
	if fam == nil {
		return nil
	}
	var out []string
	for _, m := range fam.Metric {
		var kv []string
		for _, l := range m.Label {
			kv = append(kv, l.GetName()+"="+l.GetValue())
		}
		out = append(out, strings.Join(kv, ","))
	}
	sort.Strings(out)
	return out
}

func (f Families) find(name string, labels []string) *dto.Metric {
	fam := f[name]
	if fam == nil || len(labels)%2 != 0 {
		return nil
	}
	want := map[string]string{}
	for i := 0; i < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
	for _, m := range fam.Metric {
		if len(m.Label) != len(want) {
			continue
		}
		match := true
		for _, l := range m.Label {
			if v, ok := want[l.GetName()]; !ok || v != l.GetValue() {
				match = false
				break
			}
		}
		if match {
			return m
		}
	}
	return nil
}
