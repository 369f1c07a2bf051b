package bench

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// finishLoad aggregates the rows of one load, orders them, and computes the
// ratios and goals.
func (r *runner) finishLoad(lr *LoadReport, rows map[rowKey]*Row) {
	lr.Rows = lr.Rows[:0]
	for _, row := range rows {
		aggregate(row)
		lr.Rows = append(lr.Rows, row)
	}
	group := func(row *Row) int {
		switch {
		case row.Client == ClientFranz && row.Mode == ModeMax:
			return 0
		case row.Client == ClientFranz && row.Mode == ModeTxn:
			return 1
		case row.Client == ClientFranz:
			return 2
		}
		return 3
	}
	slices.SortFunc(lr.Rows, func(a, b *Row) int {
		if d := group(a) - group(b); d != 0 {
			return d
		}
		return slices.Index(AllTargets, a.Target) - slices.Index(AllTargets, b.Target)
	})
	lr.Ratios = append(ratios(lr), txnRatios(lr)...)
	lr.Goals = append(goals(lr, r.cfg.LatencyFraction, r.cfg.Rate), txnGoals(lr)...)
}

// aggregate fills a row's summary figures from its runs.
func aggregate(row *Row) {
	n := float64(len(row.Runs))
	if n == 0 {
		return
	}
	var prodRate, prodMB, consRate, consMB float64
	var p50, p99, p999 float64
	var srvCPU, consCPU, cliCPU, gwCPU, consGwCPU float64
	var cpuBytes, consBytes, prodBytes int64
	cpuOK, consumeNA := true, false
	var peak int64
	var other float64
	nOther := 0
	for _, run := range row.Runs {
		prodRate += run.ProduceRecordsPerSec
		prodMB += run.ProduceMBPerSec
		consRate += run.ConsumeRecordsPerSec
		consMB += run.ConsumeMBPerSec
		p50 += run.P50Ms
		p99 += run.P99Ms
		p999 += run.P999Ms
		srvCPU += run.ServerCPUSeconds
		consCPU += run.ConsumeServerCPUSeconds
		gwCPU += run.GatewayCPUSeconds
		consGwCPU += run.ConsumeGatewayCPUSeconds
		cliCPU += run.ClientCPUSeconds
		b := run.Bytes
		if run.cpuBytes > 0 {
			b = run.cpuBytes
		}
		cpuBytes += b
		prodBytes += run.Bytes
		consBytes += run.consumeBytes
		cpuOK = cpuOK && run.CPUMeasured
		consumeNA = consumeNA || run.consumeNA
		var sum int64
		for _, v := range run.PeakRSS {
			sum += v
		}
		peak = max(peak, sum)
		row.Acked += run.Acked
		row.Consumed += run.Consumed
		if run.OtherCPUShare != nil {
			other += *run.OtherCPUShare
			nOther++
		}
	}
	if nOther > 0 {
		row.OtherCPUPercent = ptr(100 * other / float64(nOther))
	}
	row.ProduceRecordsPerSec = prodRate / n
	row.ProduceMBPerSec = prodMB / n
	if row.Client == ClientFranz && row.hist != nil && row.hist.Count() > 0 {
		row.P50Ms = ms(row.hist.Quantile(0.50))
		row.P99Ms = ms(row.hist.Quantile(0.99))
		row.P999Ms = ms(row.hist.Quantile(0.999))
	} else {
		row.P50Ms, row.P99Ms, row.P999Ms = p50/n, p99/n, p999/n
	}
	if !consumeNA {
		row.ConsumeRecordsPerSec = ptr(consRate / n)
		row.ConsumeMBPerSec = ptr(consMB / n)
		if cpuOK {
			row.ConsumeCPUPerGB = ptr(consCPU / (float64(consBytes) / gb))
			row.ConsumeGatewayCPUPerGB = ptr(consGwCPU / (float64(consBytes) / gb))
		}
	}
	if cpuOK {
		row.ServerCPUPerGB = ptr(srvCPU / (float64(cpuBytes) / gb))
		row.GatewayCPUPerGB = ptr(gwCPU / (float64(cpuBytes) / gb))
	}
	if row.Client == ClientFranz {
		row.ClientCPUPerGB = ptr(cliCPU / (float64(prodBytes) / gb))
	}
	if peak > 0 {
		row.PeakRSSMiB = ptr(float64(peak) / (1 << 20))
	}
	aggregateTxn(row, cpuOK)
}

func findRow(lr *LoadReport, target, client, mode string) *Row {
	for _, row := range lr.Rows {
		if row.Target == target && row.Client == client && row.Mode == mode && len(row.Runs) > 0 {
			return row
		}
	}
	return nil
}

// ratios compares each kiggy target with Kafka and with the null broker,
// after the durability levels, Iggy's own ceiling and a cluster beside a
// single server.
func ratios(lr *LoadReport) []Ratio {
	var rl ratioList
	rl.durability(lr)
	rl.iggyBench(lr)
	rl.cluster(lr)
	for _, k := range []string{TargetKiggy, TargetKiggyIggy, TargetKiggyIggyFsync, TargetKiggyIggyBuffered, TargetKiggyIggyCluster} {
		for _, cm := range []struct{ client, mode, label string }{
			{ClientFranz, ModeMax, ""},
			{ClientFranz, ModeRate, " (rate-limited)"},
			{ClientJava, ModeMax, " (java-perf)"},
		} {
			if kr := findRow(lr, k, cm.client, cm.mode); kr != nil {
				rl.versusKafkaAndNull(lr, k, kr, cm.client, cm.mode, cm.label)
			}
		}
	}
	return rl
}

// ratioList collects ratios, leaving out those without a denominator.
type ratioList []Ratio

func (rl *ratioList) add(name string, a, b float64) {
	if b > 0 && !math.IsNaN(a) && !math.IsNaN(b) {
		*rl = append(*rl, Ratio{Name: name, Value: a / b})
	}
}

func (rl *ratioList) addp(name string, a, b *float64) {
	if a != nil && b != nil {
		rl.add(name, *a, *b)
	}
}

// durability compares the durability levels with Iggy's buffered defaults
// (docs/IGGY.md, "Durability"): the cost of acknowledging only what a
// crash keeps.
func (rl *ratioList) durability(lr *LoadReport) {
	for _, k := range []string{TargetKiggyIggy, TargetKiggyIggyFsync} {
		for _, mode := range []string{ModeMax, ModeRate} {
			kr, br := findRow(lr, k, ClientFranz, mode), findRow(lr, TargetKiggyIggyBuffered, ClientFranz, mode)
			if kr == nil || br == nil {
				continue
			}
			label := ""
			if mode == ModeRate {
				label = " (rate-limited)"
			}
			p := k + "/" + TargetKiggyIggyBuffered + " "
			if mode == ModeMax {
				rl.add(p+"produce records/s", kr.ProduceRecordsPerSec, br.ProduceRecordsPerSec)
			}
			rl.add(p+"produce p99"+label, kr.P99Ms, br.P99Ms)
		}
	}
}

// iggyBench compares kiggy→Iggy with iggy-bench: Iggy's own ceiling on this
// machine.
func (rl *ratioList) iggyBench(lr *LoadReport) {
	ib := findRow(lr, TargetIggyBench, TargetIggyBench, ModeMax)
	if ib == nil || len(ib.Runs) == 0 {
		return
	}
	for _, k := range []string{TargetKiggyIggy, TargetKiggyIggyBuffered} {
		if kr := findRow(lr, k, ClientFranz, ModeMax); kr != nil {
			rl.add(k+"/iggy-bench produce records/s", kr.ProduceRecordsPerSec, ib.ProduceRecordsPerSec)
			rl.addp(k+"/iggy-bench consume records/s", kr.ConsumeRecordsPerSec, ib.ConsumeRecordsPerSec)
			// kiggy + iggy-server against iggy-server alone under
			// iggy-bench (its server's CPU is measured when kbench
			// started it).
			rl.addp(k+"/iggy-bench server CPU s/GB produced", kr.ServerCPUPerGB, ib.ServerCPUPerGB)
		}
	}
}

// cluster compares a cluster with a single server, same load (docs/IGGY.md,
// "Iggy clusters").
func (rl *ratioList) cluster(lr *LoadReport) {
	cr, sr := findRow(lr, TargetKiggyIggyCluster, ClientFranz, ModeMax), findRow(lr, TargetKiggyIggy, ClientFranz, ModeMax)
	if cr == nil || sr == nil {
		return
	}
	p := TargetKiggyIggyCluster + "/" + TargetKiggyIggy + " "
	rl.add(p+"produce records/s", cr.ProduceRecordsPerSec, sr.ProduceRecordsPerSec)
	rl.addp(p+"consume records/s", cr.ConsumeRecordsPerSec, sr.ConsumeRecordsPerSec)
	rl.add(p+"produce p99", cr.P99Ms, sr.P99Ms)
}

// versusKafkaAndNull compares kiggy target k's row kr with Kafka's and the
// null broker's rows of the same client and mode.
func (rl *ratioList) versusKafkaAndNull(lr *LoadReport, k string, kr *Row, client, mode, label string) {
	if kf := findRow(lr, TargetKafka, client, mode); kf != nil {
		p := k + "/kafka "
		if mode == ModeMax {
			rl.add(p+"produce records/s"+label, kr.ProduceRecordsPerSec, kf.ProduceRecordsPerSec)
			rl.addp(p+"consume records/s"+label, kr.ConsumeRecordsPerSec, kf.ConsumeRecordsPerSec)
			rl.addp(p+"server CPU s/GB produced"+label, kr.ServerCPUPerGB, kf.ServerCPUPerGB)
			rl.addp(p+"server CPU s/GB consumed"+label, kr.ConsumeCPUPerGB, kf.ConsumeCPUPerGB)
			if len(kr.Runs) > 0 && kr.ServerCPUPerGB != nil && kr.GatewayCPUPerGB != nil && *kr.GatewayCPUPerGB != *kr.ServerCPUPerGB {
				// kiggy alone, without the Iggy server behind it.
				rl.addp(p+"gateway-only CPU s/GB produced"+label, kr.GatewayCPUPerGB, kf.ServerCPUPerGB)
				rl.addp(p+"gateway-only CPU s/GB consumed"+label, kr.ConsumeGatewayCPUPerGB, kf.ConsumeCPUPerGB)
			}
		}
		rl.add(p+"produce p50"+label, kr.P50Ms, kf.P50Ms)
		rl.add(p+"produce p99"+label, kr.P99Ms, kf.P99Ms)
		if client == ClientFranz && mode == ModeMax {
			rl.addp(p+"peak RSS", kr.PeakRSSMiB, kf.PeakRSSMiB)
		}
	}
	if nb := findRow(lr, TargetNull, client, mode); nb != nil && mode == ModeMax {
		rl.add(k+"/null produce records/s"+label, kr.ProduceRecordsPerSec, nb.ProduceRecordsPerSec)
	}
}

// isGoalLoad reports whether l is the load the goals are stated for: 1 KiB
// records, 16 partitions, acks=all, no compression.
func isGoalLoad(l Load) bool {
	return l.RecordSize == 1024 && l.Partitions == 16 && l.Acks == -1 && (l.Compression == "none" || l.Compression == "")
}

// goals checks the project's benchmark goals for kiggy on memlog.
func goals(lr *LoadReport, fraction, fixedRate float64) []Goal {
	if !isGoalLoad(lr.Load) {
		return nil
	}
	var out []Goal
	kg := findRow(lr, TargetKiggy, ClientFranz, ModeMax)
	kf := findRow(lr, TargetKafka, ClientFranz, ModeMax)
	nb := findRow(lr, TargetNull, ClientFranz, ModeMax)
	if kg != nil && kf != nil && kf.ProduceRecordsPerSec > 0 {
		v := kg.ProduceRecordsPerSec / kf.ProduceRecordsPerSec
		out = append(out, Goal{Name: "produce throughput vs Kafka", Want: "≥ 2× Kafka", Value: v, Met: v >= 2,
			Detail: fmt.Sprintf("%.2f× (%.0f vs %.0f records/s)", v, kg.ProduceRecordsPerSec, kf.ProduceRecordsPerSec)})
		if kg.ServerCPUPerGB != nil && kf.ServerCPUPerGB != nil && *kf.ServerCPUPerGB > 0 {
			v := *kg.ServerCPUPerGB / *kf.ServerCPUPerGB
			out = append(out, Goal{Name: "server CPU per GB vs Kafka", Want: "≤ 0.5× Kafka", Value: v, Met: v <= 0.5,
				Detail: fmt.Sprintf("%.2f× (%.2f vs %.2f CPU s/GB)", v, *kg.ServerCPUPerGB, *kf.ServerCPUPerGB)})
		}
	}
	if kg != nil && nb != nil && nb.ProduceRecordsPerSec > 0 {
		v := kg.ProduceRecordsPerSec / nb.ProduceRecordsPerSec
		out = append(out, Goal{Name: "produce throughput vs null broker", Want: "≥ 0.8× null", Value: v, Met: v >= 0.8,
			Detail: fmt.Sprintf("%.2f× (%.0f vs %.0f records/s)", v, kg.ProduceRecordsPerSec, nb.ProduceRecordsPerSec)})
	}
	kgr := findRow(lr, TargetKiggy, ClientFranz, ModeRate)
	kfr := findRow(lr, TargetKafka, ClientFranz, ModeRate)
	if kgr != nil && kfr != nil && kfr.P99Ms > 0 {
		v := kgr.P99Ms / kfr.P99Ms
		g := Goal{Name: "produce p99 at 50% of Kafka's max vs Kafka", Want: "≤ Kafka's p99", Value: v, Met: v <= 1,
			Detail: fmt.Sprintf("%.2f× (%.2f vs %.2f ms at %.0f records/s)", v, kgr.P99Ms, kfr.P99Ms, lr.Rate)}
		if fixedRate > 0 || fraction != 0.5 {
			g.Detail += "; note: the rate was not 50% of Kafka's max (" + lr.RateSource + ")"
		}
		out = append(out, g)
	}
	return out
}

// statusLines lists the rows that did not run cleanly, for under the table.
func statusLines(lr *LoadReport) []string {
	var out []string
	for _, row := range lr.Rows {
		if row.Status != StatusOK && row.Error != "" {
			out = append(out, fmt.Sprintf("%s %s %s: %s: %s", row.Target, row.Client, row.Mode, row.Status, firstLine(strings.TrimPrefix(row.Error, "bench: "))))
		}
	}
	return out
}
