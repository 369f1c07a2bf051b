// Command relayfloor measures the least CPU a process in front of Iggy
// spends per GB it serves: a relay process that only reads bytes from one
// loopback TCP connection and writes them to another, as a gateway reads
// Iggy's poll replies and writes Fetch responses, with no parsing at all
// (docs/BENCHMARKS.md, "Goals", "What bounds the misses").
//
//	go run ./bench/cmd/relayfloor
//	go run ./bench/cmd/relayfloor -gb 4 -chunk 1048576 -copies 0,1,2 -reps 3
//
// For each -copies value and repetition it starts itself again as the relay
// (a child process), streams -gb GB through it (the parent is the source
// and the sink) and reports the child's CPU seconds (user + system, from
// its rusage) per GB moved. With copies K the relay also copies each chunk
// K times in user space before writing it, as a gateway that assembles a
// response from the bytes it read does once. The figure is per GB of bytes
// on the wire; kbench's s/GB are per GB of record values, about 5–10 %
// fewer bytes than the wire carries for 1 KiB records.
//
// -copies splice runs a relay that never reads the bytes into its memory:
// it moves them from one socket to the other with splice(2) through a pipe
// (Go's io.Copy between two TCP connections on Linux), the least a relay
// can spend, and one a gateway can use only for bytes it forwards as they
// are (docs/BENCHMARKS.md, "What bounds the misses").
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-relay" {
		if err := relay(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "relay:", err)
			os.Exit(1)
		}
		return
	}
	gb := flag.Float64("gb", 2, "GB (10^9 bytes) streamed through the relay per run")
	chunk := flag.Int("chunk", 1<<20, "bytes the relay reads and writes per call")
	copies := flag.String("copies", "0,1", "comma-separated user-space copies per chunk, a run each; splice: no read into memory at all")
	reps := flag.Int("reps", 2, "repetitions of each run")
	flag.Parse()
	var ks []int
	for _, s := range strings.Split(*copies, ",") {
		if strings.TrimSpace(s) == "splice" {
			ks = append(ks, spliced)
			continue
		}
		k, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || k < 0 {
			fmt.Fprintf(os.Stderr, "bad -copies %q\n", *copies)
			os.Exit(2)
		}
		ks = append(ks, k)
	}
	fmt.Printf("%-7s %-4s %10s %10s %10s\n", "copies", "rep", "GB/s", "relay CPU s", "CPU s/GB")
	for rep := 1; rep <= *reps; rep++ {
		for _, k := range ks {
			bytes := int64(*gb * 1e9)
			cpu, wall, err := run(bytes, *chunk, k)
			if err != nil {
				fmt.Fprintln(os.Stderr, "relayfloor:", err)
				os.Exit(1)
			}
			g := float64(bytes) / 1e9
			name := strconv.Itoa(k)
			if k == spliced {
				name = "splice"
			}
			fmt.Printf("%-7s %-4d %10.2f %10.2f %10.3f\n", name, rep, g/wall.Seconds(), cpu.Seconds(), cpu.Seconds()/g)
		}
	}
}

// spliced is the copies value of a relay that splices (no user-space read).
const spliced = -1

// run streams n bytes through a fresh relay process and returns its CPU
// time and the wall time of the stream.
func run(n int64, chunk, copies int) (time.Duration, time.Duration, error) {
	src, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, 0, err
	}
	defer src.Close()
	dst, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, 0, err
	}
	defer dst.Close()
	self, err := os.Executable()
	if err != nil {
		return 0, 0, err
	}
	cmd := exec.Command(self, "-relay", src.Addr().String(), dst.Addr().String(), strconv.Itoa(chunk), strconv.Itoa(copies))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	in, err := src.Accept()
	if err != nil {
		cmd.Process.Kill()
		return 0, 0, err
	}
	out, err := dst.Accept()
	if err != nil {
		cmd.Process.Kill()
		return 0, 0, err
	}
	start := time.Now()
	werr := make(chan error, 1)
	go func() {
		buf := make([]byte, 1<<20)
		for i := range buf {
			buf[i] = byte(i)
		}
		left := n
		for left > 0 {
			k, err := in.Write(buf[:min(int64(len(buf)), left)])
			if err != nil {
				werr <- err
				return
			}
			left -= int64(k)
		}
		werr <- in.Close()
	}()
	got, err := io.CopyBuffer(io.Discard, out, make([]byte, 1<<20))
	wall := time.Since(start)
	out.Close()
	if e := <-werr; err == nil {
		err = e
	}
	if e := cmd.Wait(); err == nil {
		err = e
	}
	if err == nil && got != n {
		err = fmt.Errorf("the sink got %d bytes of %d", got, n)
	}
	if err != nil {
		return 0, 0, err
	}
	st := cmd.ProcessState
	return st.UserTime() + st.SystemTime(), wall, nil
}

// relay is the child: it reads from the first address and writes to the
// second, chunk bytes a call, copying each chunk copies times first.
func relay(args []string) error {
	if len(args) != 4 {
		return errors.New("usage: -relay SRC DST CHUNK COPIES")
	}
	chunk, err := strconv.Atoi(args[2])
	if err != nil {
		return err
	}
	copies, err := strconv.Atoi(args[3])
	if err != nil {
		return err
	}
	in, err := net.Dial("tcp", args[0])
	if err != nil {
		return err
	}
	out, err := net.Dial("tcp", args[1])
	if err != nil {
		return err
	}
	if copies == spliced {
		// *net.TCPConn.ReadFrom a *net.TCPConn splices on Linux.
		if _, err := io.Copy(out, in); err != nil {
			return err
		}
		return out.Close()
	}
	buf := make([]byte, chunk)
	scratch := make([]byte, chunk)
	for {
		k, rerr := io.ReadFull(in, buf)
		if k > 0 {
			b := buf[:k]
			for range copies {
				copy(scratch, b)
				b, scratch = scratch[:k], b[:cap(b)]
			}
			if _, err := out.Write(b); err != nil {
				return err
			}
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			return out.Close()
		}
		if rerr != nil {
			return rerr
		}
	}
}
