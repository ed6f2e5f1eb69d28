package metricstext

import (
	"math"
	"testing"
)

func TestParseMetrics(t *testing.T) {
	ms, err := Parse(`# HELP x y
controller_runtime_reconcile_total{controller="conversation",result="success"} 12
controller_runtime_reconcile_total{controller="conversation",result="error"} 3
controller_runtime_reconcile_total{controller="checkpoint",result="success"} 5
odd{msg="a \"quoted\", comma"} 1.5e+00
parley_expiry_lateness_seconds_bucket{le="0.01"} 10
parley_expiry_lateness_seconds_bucket{le="0.05"} 90
parley_expiry_lateness_seconds_bucket{le="0.1"} 100
parley_expiry_lateness_seconds_bucket{le="+Inf"} 100
plain 7
`)
	if err != nil {
		t.Fatal(err)
	}
	if got := ms.Sum("controller_runtime_reconcile_total", "controller", "conversation"); got != 15 {
		t.Errorf("sum = %v, want 15", got)
	}
	if got := ms.Sum("odd", "msg", `a "quoted", comma`); got != 1.5 {
		t.Errorf("escaped label: %v", got)
	}
	if got := ms.Sum("plain"); got != 7 {
		t.Errorf("plain = %v", got)
	}
	bs := ms.Histogram("parley_expiry_lateness_seconds")
	if b, e := Quantile(bs, 0.5); b != 0.05 || math.Abs(e-0.03) > 1e-9 {
		t.Errorf("p50 = %v, %v; want 0.05, 0.03", b, e)
	}
	if b, _ := Quantile(bs, 0.99); b != 0.1 {
		t.Errorf("p99 bound = %v, want 0.1", b)
	}
}
