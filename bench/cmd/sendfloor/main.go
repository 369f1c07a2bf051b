//go:build linux

// Command sendfloor measures what a gateway spends per GB to write bytes it
// holds in memory to a loopback TCP connection, as kiggy writes the Fetch
// batches its fetch cache holds to consumers, by three system calls:
//
//   - write: writev(2) of the bytes (what kiggy's engine does: the kernel
//     copies them into the socket's buffers);
//
//   - vmsplice: vmsplice(2) of the pages into a pipe, then splice(2) from the
//     pipe to the socket (no copy: the socket's buffers hold the pages);
//
//   - sendfile: the bytes kept in a memfd, sent with sendfile(2) (no copy:
//     the socket's buffers hold the file's pages, as Kafka sends its log).
//
//     go run ./bench/cmd/sendfloor
//     go run ./bench/cmd/sendfloor -gb 2 -chunk 32768 -fanout 3 -reps 3
//
// The sender holds -entries buffers of -chunk bytes, as a fetch cache holds
// encoded batches, and sends each to the sink -fanout times (a batch read by
// that many consumer groups) before it fills it anew (the next batch; its
// fill is counted for every method alike). The copy-free methods may not
// write into pages the socket still holds, so before a fill they give the
// old pages up and take fresh ones: madvise(MADV_DONTNEED) for vmsplice,
// fallocate(PUNCH_HOLE) for sendfile. For each method and repetition the
// sender is a child process; the figure is its CPU (user + system, from its
// rusage) per GB (10^9 bytes) the sink read. On loopback a sender's system
// call also runs the receiving side's TCP processing (not its copy to the
// reader), so the figures are what a gateway pays for a consumer on the same
// host (docs/BENCHMARKS.md, "What bounds the misses").
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
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-sender" {
		if err := sender(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "sender:", err)
			os.Exit(1)
		}
		return
	}
	gb := flag.Float64("gb", 2, "GB (10^9 bytes) sent per run")
	chunk := flag.Int("chunk", 32<<10, "bytes per send call (kiggy's tail Fetch responses are tens of KiB)")
	entry := flag.Int("entry", 0, "bytes per entry, a multiple of -chunk (0: -chunk)")
	entries := flag.Int("entries", 64, "entries the sender holds")
	huge := flag.Bool("hugepages", false, "vmsplice: ask for transparent huge pages (madvise MADV_HUGEPAGE) for the entries")
	fanout := flag.Int("fanout", 3, "sends of each entry before it is filled anew")
	methods := flag.String("methods", "write,vmsplice,sendfile", "comma-separated methods, a run each")
	reps := flag.Int("reps", 3, "repetitions of each run")
	flag.Parse()
	if *entry == 0 {
		*entry = *chunk
	}
	if *chunk <= 0 || *entry%*chunk != 0 {
		fmt.Fprintln(os.Stderr, "-entry must be a multiple of -chunk")
		os.Exit(2)
	}
	ms := strings.Split(*methods, ",")
	for _, m := range ms {
		if m != "write" && m != "vmsplice" && m != "sendfile" {
			fmt.Fprintf(os.Stderr, "bad -methods %q\n", *methods)
			os.Exit(2)
		}
	}
	fmt.Printf("%-9s %-4s %8s %12s %10s %10s\n", "method", "rep", "GB/s", "sender CPU s", "CPU s/GB", "system s/GB")
	for rep := 1; rep <= *reps; rep++ {
		for _, m := range ms {
			n := int64(*gb * 1e9)
			usr, sys, wall, err := run(n, m, *chunk, *entry, *entries, *fanout, *huge)
			if err != nil {
				fmt.Fprintln(os.Stderr, "sendfloor:", err)
				os.Exit(1)
			}
			g := float64(n) / 1e9
			cpu := (usr + sys).Seconds()
			fmt.Printf("%-9s %-4d %8.2f %12.2f %10.3f %10.3f\n", m, rep, g/wall.Seconds(), cpu, cpu/g, sys.Seconds()/g)
		}
	}
}

// run starts a sender of n bytes and reads them all; it returns the
// sender's user and system CPU time and the stream's wall time.
func run(n int64, method string, chunk, entry, entries, fanout int, huge bool) (usr, sys, wall time.Duration, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, 0, 0, err
	}
	defer ln.Close()
	self, err := os.Executable()
	if err != nil {
		return 0, 0, 0, err
	}
	cmd := exec.Command(self, "-sender", ln.Addr().String(), method, strconv.FormatInt(n, 10),
		strconv.Itoa(chunk), strconv.Itoa(entry), strconv.Itoa(entries), strconv.Itoa(fanout), strconv.FormatBool(huge))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return 0, 0, 0, err
	}
	c, err := ln.Accept()
	if err != nil {
		cmd.Process.Kill()
		return 0, 0, 0, err
	}
	start := time.Now()
	got, err := io.CopyBuffer(io.Discard, c, make([]byte, 1<<20))
	wall = time.Since(start)
	c.Close()
	if e := cmd.Wait(); err == nil {
		err = e
	}
	if err == nil && got != n {
		err = fmt.Errorf("the sink got %d bytes of %d", got, n)
	}
	if err != nil {
		return 0, 0, 0, err
	}
	return cmd.ProcessState.UserTime(), cmd.ProcessState.SystemTime(), wall, nil
}

// sender is the child: it connects to the sink and sends n bytes by method.
func sender(args []string) error {
	if len(args) != 8 {
		return errors.New("usage: -sender ADDR METHOD BYTES CHUNK ENTRY ENTRIES FANOUT HUGE")
	}
	huge := args[7] == "true"
	var nums [5]int
	for i, a := range args[2:7] {
		v, err := strconv.Atoi(a)
		if err != nil || v <= 0 {
			return fmt.Errorf("bad number %q", a)
		}
		nums[i] = v
	}
	n, chunk, entry, entries, fanout := int64(nums[0]), nums[1], nums[2], nums[3], nums[4]
	conn, err := net.Dial("tcp", args[0])
	if err != nil {
		return err
	}
	f, err := conn.(*net.TCPConn).File() // a blocking duplicate of the socket
	if err != nil {
		return err
	}
	conn.Close()
	defer f.Close()
	fd := int(f.Fd())
	if err := unix.SetNonblock(fd, false); err != nil {
		return err
	}
	var s method
	switch args[1] {
	case "write":
		s, err = newWriter(entry, entries)
	case "vmsplice":
		s, err = newVmsplicer(entry, entries, huge)
	case "sendfile":
		s, err = newSendfiler(entry, entries)
	default:
		err = fmt.Errorf("unknown method %q", args[1])
	}
	if err != nil {
		return err
	}
	src := make([]byte, entry) // what a fill copies in: the next batch
	for i := range src {
		src[i] = byte(i * 7)
	}
	for i := range entries {
		if err := s.fill(i, src); err != nil {
			return err
		}
	}
	sent := int64(0)
	for e, k := 0, 0; sent < n; {
		// One consumer group's reads of the entry, a chunk a send.
		for off := 0; off < entry && sent < n; off += chunk {
			m := min(int64(chunk), n-sent)
			if err := s.send(fd, e, off, int(m)); err != nil {
				return err
			}
			sent += m
		}
		if k++; k == fanout {
			k = 0
			src[0]++
			if err := s.fill(e, src); err != nil {
				return err
			}
			e = (e + 1) % entries
		}
	}
	return nil
}

// method is one way to hold entries and send them.
type method interface {
	fill(e int, src []byte) error // entry e's bytes become src's
	send(fd, e, off, n int) error // n bytes of entry e from off go to fd
}

// writer holds entries in the Go heap and sends them with write(2).
type writer struct{ bufs [][]byte }

func newWriter(chunk, entries int) (*writer, error) {
	w := &writer{bufs: make([][]byte, entries)}
	for i := range w.bufs {
		w.bufs[i] = make([]byte, chunk)
	}
	return w, nil
}

func (w *writer) fill(e int, src []byte) error { copy(w.bufs[e], src); return nil }

func (w *writer) send(fd, e, off, n int) error {
	b := w.bufs[e][off : off+n]
	for len(b) > 0 {
		k, err := unix.Write(fd, b)
		if err != nil {
			return err
		}
		b = b[k:]
	}
	return nil
}

// vmsplicer holds entries in anonymous memory outside the Go heap and sends
// them with vmsplice into a pipe and splice out of it.
type vmsplicer struct {
	mem   []byte
	chunk int
	pipe  [2]int
}

func newVmsplicer(entry, entries int, huge bool) (*vmsplicer, error) {
	const hugePage = 2 << 20
	mem, err := unix.Mmap(-1, 0, entry*entries+hugePage, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil, err
	}
	// Aligned to a huge page, so that entries of 2 MiB can be one each.
	skip := (hugePage - int(uintptr(unsafe.Pointer(&mem[0]))%hugePage)) % hugePage
	mem = mem[skip : skip+entry*entries]
	if huge {
		if err := unix.Madvise(mem, unix.MADV_HUGEPAGE); err != nil {
			return nil, err
		}
	}
	v := &vmsplicer{mem: mem, chunk: entry}
	if err := unix.Pipe2(v.pipe[:], unix.O_CLOEXEC); err != nil {
		return nil, err
	}
	if _, err := unix.FcntlInt(uintptr(v.pipe[1]), unix.F_SETPIPE_SZ, 1<<20); err != nil {
		return nil, err
	}
	return v, nil
}

func (v *vmsplicer) entry(e int) []byte { return v.mem[e*v.chunk : (e+1)*v.chunk] }

func (v *vmsplicer) fill(e int, src []byte) error {
	b := v.entry(e)
	// The socket may still hold the old pages: give them up, write new ones.
	if err := unix.Madvise(b, unix.MADV_DONTNEED); err != nil {
		return err
	}
	copy(b, src)
	return nil
}

func (v *vmsplicer) send(fd, e, off, n int) error {
	b := v.entry(e)[off : off+n]
	for len(b) > 0 {
		iov := []unix.Iovec{{Base: &b[0]}}
		iov[0].SetLen(len(b))
		k, err := unix.Vmsplice(v.pipe[1], iov, 0)
		if err != nil {
			return err
		}
		for left := k; left > 0; {
			m, err := unix.Splice(v.pipe[0], nil, fd, nil, left, unix.SPLICE_F_MOVE)
			if err != nil {
				return err
			}
			left -= int(m)
		}
		b = b[k:]
	}
	return nil
}

// sendfiler holds entries in a memfd, mapped for the fills, and sends them
// with sendfile(2).
type sendfiler struct {
	mfd   int
	mem   []byte
	chunk int
}

func newSendfiler(chunk, entries int) (*sendfiler, error) {
	mfd, err := unix.MemfdCreate("sendfloor", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	if err := unix.Ftruncate(mfd, int64(chunk*entries)); err != nil {
		return nil, err
	}
	mem, err := unix.Mmap(mfd, 0, chunk*entries, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	return &sendfiler{mfd: mfd, mem: mem, chunk: chunk}, nil
}

func (s *sendfiler) fill(e int, src []byte) error {
	// The socket may still hold the old pages: drop them from the file.
	off := int64(e * s.chunk)
	if err := unix.Fallocate(s.mfd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, int64(s.chunk)); err != nil {
		return err
	}
	copy(s.mem[off:off+int64(s.chunk)], src)
	return nil
}

func (s *sendfiler) send(fd, e, from, n int) error {
	off := int64(e*s.chunk + from)
	end := off + int64(n)
	for off < end {
		k, err := unix.Sendfile(fd, s.mfd, &off, int(end-off))
		if err != nil {
			return err
		}
		if k == 0 {
			return io.ErrUnexpectedEOF
		}
	}
	return nil
}
