package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// printTable writes one Markdown table of every run, the ratios to the
// first instance count of the same repetition, and the CPU of each process.
func printTable(w io.Writer, cfg config, results []result) {
	fmt.Fprintf(w, "\n%d B records, %d partitions, %d idempotent producers (acks=all, linger %v), %d consumers; %v warm-up + %v window\n\n",
		cfg.recordSize, cfg.partitions, cfg.producers, cfg.linger, cfg.consumers, cfg.warmup, cfg.duration)
	fmt.Fprintln(w, "| instances | rep | produce records/s | vs 1 | consume records/s | vs 1 | produce CPU s (kiggy each; iggy-server; clients) | kiggy CPU µs/record produced | consume CPU s (kiggy each; iggy-server; clients) | kiggy CPU µs/record consumed | other % | load avg start → end |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|")
	base := map[int]*result{}
	for i := range results {
		r := &results[i]
		if r.Instances == cfg.instances[0] {
			base[r.Rep] = r
		}
	}
	sorted := slices.Clone(results)
	slices.SortStableFunc(sorted, func(a, b result) int {
		if a.Rep != b.Rep {
			return a.Rep - b.Rep
		}
		return a.Instances - b.Instances
	})
	for _, r := range sorted {
		pr, cr := "–", "–"
		if b := base[r.Rep]; b != nil && b.ProduceRecordsPerSec > 0 && b.ConsumeRecordsPerSec > 0 {
			pr = fmt.Sprintf("%.2f×", r.ProduceRecordsPerSec/b.ProduceRecordsPerSec)
			cr = fmt.Sprintf("%.2f×", r.ConsumeRecordsPerSec/b.ConsumeRecordsPerSec)
		}
		fmt.Fprintf(w, "| %d | %d | %.0f | %s | %.0f | %s | %s | %s | %s | %s | %.0f | %s → %s |\n",
			r.Instances, r.Rep, r.ProduceRecordsPerSec, pr, r.ConsumeRecordsPerSec, cr,
			cpuCell(r.ProduceCPU, r.Instances), perRecord(r.ProduceCPU, r.ProduceRecordsPerSec*r.ProduceWindowSec),
			cpuCell(r.ConsumeCPU, r.Instances), perRecord(r.ConsumeCPU, float64(r.Consumed)),
			r.OtherShare*100, r.LoadStart, r.LoadEnd)
	}
}

// cpuCell is "a / b / c; iggy; clients" for n kiggy processes.
func cpuCell(m map[string]float64, n int) string {
	var ks []string
	for i := 1; i <= n; i++ {
		ks = append(ks, fmt.Sprintf("%.1f", m[fmt.Sprintf("kiggy-%d", i)]))
	}
	return fmt.Sprintf("%s; %.1f; %.1f", strings.Join(ks, " / "), m["iggy-server"], m["clients"])
}

// perRecord is the kiggy processes' CPU in µs per record, for n records.
func perRecord(m map[string]float64, n float64) string {
	if n <= 0 {
		return "–"
	}
	kiggy := 0.0
	for k, v := range m {
		if strings.HasPrefix(k, "kiggy-") {
			kiggy += v
		}
	}
	return fmt.Sprintf("%.1f", kiggy/n*1e6)
}
