package main

import (
	"strings"
	"testing"
)

// TestPrintTableRatios: each run's ratios are to the first instance count
// of the same repetition, and the kiggy CPU per record sums every kiggy
// process (not iggy-server or the clients).
func TestPrintTableRatios(t *testing.T) {
	cfg := config{instances: []int{1, 2}, recordSize: 1024, partitions: 12, producers: 3, consumers: 3}
	results := []result{
		{Instances: 2, Rep: 1, ProduceRecordsPerSec: 300, ProduceWindowSec: 10, ConsumeRecordsPerSec: 50, Consumed: 1000,
			ProduceCPU: map[string]float64{"kiggy-1": 0.002, "kiggy-2": 0.001, "iggy-server": 5, "clients": 5},
			ConsumeCPU: map[string]float64{"kiggy-1": 0.001, "kiggy-2": 0.001}},
		{Instances: 1, Rep: 1, ProduceRecordsPerSec: 200, ProduceWindowSec: 10, ConsumeRecordsPerSec: 100, Consumed: 1000,
			ProduceCPU: map[string]float64{"kiggy-1": 0.004}, ConsumeCPU: map[string]float64{"kiggy-1": 0.002}},
	}
	var b strings.Builder
	printTable(&b, cfg, results)
	out := b.String()
	for _, want := range []string{
		"| 1 | 1 | 200 | 1.00× | 100 | 1.00× | 0.0; 0.0; 0.0 | 2.0 |",
		"| 2 | 1 | 300 | 1.50× | 50 | 0.50× | 0.0 / 0.0; 5.0; 5.0 | 1.0 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if i, j := strings.Index(out, "| 1 | 1 |"), strings.Index(out, "| 2 | 1 |"); i < 0 || j < i {
		t.Errorf("rows not in instance order:\n%s", out)
	}
}
