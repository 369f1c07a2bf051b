package engine

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// benchHandler answers every request inline with a 50-byte response:
// correlation id plus padding, like a small ApiVersions/Produce response.
var benchHandler = HandlerFunc(func(r *Request) {
	f := r.Frame()
	b := append(r.ResponseBuffer(), f[4:8]...)
	r.Respond(append(b, benchPad[:46]...))
})

var benchPad [64]byte

// BenchmarkEngines compares the engines side by side on loopback round trips:
// ApiVersions-sized (50 B) and Produce-sized (64 KiB) requests, each answered
// with 50 B, over 1, 64 and 1024 connections, one request at a time per
// connection or 5 pipelined. One op is one request/response.
func BenchmarkEngines(b *testing.B) {
	for _, kind := range kinds {
		b.Run("engine="+kind, func(b *testing.B) {
			ts := startServer(b, kind, Config{}, benchHandler)
			for _, conns := range []int{1, 64, 1024} {
				cs := make([]net.Conn, conns)
				for i := range cs {
					cs[i] = ts.dial(b)
				}
				for _, size := range []int{50, 64 << 10} {
					for _, depth := range []int{1, 5} {
						name := fmt.Sprintf("conns=%d/size=%s/depth=%d", conns, sizeName(size), depth)
						b.Run(name, func(b *testing.B) { benchRoundTrips(b, cs, size, depth) })
					}
				}
				for _, c := range cs {
					c.Close()
				}
			}
		})
	}
}

func sizeName(n int) string {
	if n >= 1<<10 {
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

func benchRoundTrips(b *testing.B, cs []net.Conn, size, depth int) {
	var req []byte
	for i := range depth {
		f := frame(apiEcho, int32(i), make([]byte, size-12)...)
		req = append(req, f...)
	}
	b.SetBytes(int64(len(req)/depth + 54))
	b.ReportAllocs()
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	b.ResetTimer()
	cpu0, _ := testtools.SelfCPU()
	for _, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp := make([]byte, 54*depth)
			for next.Add(int64(depth)) <= int64(b.N)+int64(depth)-1 {
				if _, err := c.Write(req); err != nil {
					failed.Store(err)
					return
				}
				if _, err := io.ReadFull(c, resp); err != nil {
					failed.Store(err)
					return
				}
				if binary.BigEndian.Uint32(resp) != 50 {
					failed.Store(fmt.Errorf("response size %d", binary.BigEndian.Uint32(resp)))
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	// Process CPU (server and client together; the client is the same for
	// both engines) is steadier than wall time on a shared machine.
	cpu1, _ := testtools.SelfCPU()
	b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
	if err := failed.Load(); err != nil {
		b.Fatal(err)
	}
}
