package deploy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// TestImage builds the image from deploy/Containerfile with buildah (vfs
// storage, chroot isolation), exports it as an OCI archive, unpacks it with
// umoci and runs its entrypoint from the unpacked root as the image's user
// with the image's environment (chroot: podman cannot start containers on
// these machines), then probes /readyz and round-trips records with kcat.
//
// Docker Hub is out of reach here, so the build stage's GO_IMAGE is a local
// image made from this machine's Go toolchain, busybox-static and the CA
// roots (goBuildImage); the runtime stage is scratch and needs no registry.
// The storage lives in <user cache>/kiggy-tools/buildah, so the base image
// is made once; the kiggy image is removed after the test.
func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the image")
	}
	if runtime.GOOS != "linux" {
		t.Skip("buildah and chroot: Linux only")
	}
	var tools []string
	for _, name := range []string{"buildah", "umoci", "kcat", "chroot"} {
		p, err := exec.LookPath(name)
		if err != nil {
			missing(t, name+" not on PATH (Debian packages buildah, umoci, kcat, coreutils)")
		}
		tools = append(tools, p)
	}
	buildah, umoci, kcat, chroot := tools[0], tools[1], tools[2], tools[3]
	if os.Geteuid() != 0 {
		missing(t, "buildah's vfs storage and chroot need root")
	}
	if _, err := os.Stat("/bin/busybox"); err != nil {
		missing(t, "/bin/busybox missing (Debian package busybox-static)")
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(cache, "kiggy-tools", "buildah")
	try := func(args ...string) (string, error) {
		all := append([]string{"--root", filepath.Join(store, "root"), "--runroot", filepath.Join(store, "run"), "--storage-driver", "vfs"}, args...)
		cmd := exec.Command(buildah, all...)
		cmd.Env = append(os.Environ(), "BUILDAH_ISOLATION=chroot")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("buildah %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out)), nil
	}
	bud := func(args ...string) string {
		t.Helper()
		out, err := try(args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	began := time.Now()
	base := goBuildImage(t, try, bud)
	const tag = "localhost/kiggy:test"
	// Without --layers: on vfs every cached layer is a whole copy of the
	// build stage's root (the Go toolchain), gigabytes after a few runs.
	bud("bud", "--layers=false", "--isolation", "chroot", "-f", "deploy/Containerfile",
		"--build-arg", "GO_IMAGE="+base, "--build-arg", "COMMIT=image-test", "-t", tag, "..")
	defer func() {
		try("rmi", tag)
		try("rmi", "--prune")
	}()
	t.Logf("built %s in %s", tag, time.Since(began).Round(time.Second))

	dir := t.TempDir()
	archive := filepath.Join(dir, "kiggy.tar")
	bud("push", "-q", tag, "oci-archive:"+archive+":kiggy:test")
	layout := filepath.Join(dir, "oci")
	if err := os.Mkdir(layout, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("tar", "-xf", archive, "-C", layout).CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	bundle := filepath.Join(dir, "bundle")
	if out, err := exec.Command(umoci, "unpack", "--image", layout+":kiggy:test", bundle).CombinedOutput(); err != nil {
		t.Fatalf("umoci unpack: %v\n%s", err, out)
	}
	fi, err := os.Stat(archive)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("OCI archive %d KiB", fi.Size()>>10)

	var cfg struct {
		Process struct {
			User struct{ UID, GID int }
			Args []string
			Env  []string
		}
	}
	b, err := os.ReadFile(filepath.Join(bundle, "config.json"))
	if err == nil {
		err = json.Unmarshal(b, &cfg)
	}
	if err != nil {
		t.Fatalf("bundle config.json: %v", err)
	}
	p := cfg.Process
	if p.User.UID == 0 || p.User.GID == 0 {
		t.Errorf("image runs as %d:%d, want a non-root user", p.User.UID, p.User.GID)
	}
	rootfs := filepath.Join(bundle, "rootfs")
	for _, f := range []string{"bin/sh", "bin/busybox", "usr/local/go"} {
		if _, err := os.Lstat(filepath.Join(rootfs, f)); err == nil {
			t.Errorf("runtime image holds /%s: the build stage leaked into it", f)
		}
	}
	if _, err := os.Stat(filepath.Join(rootfs, "etc/ssl/certs/ca-certificates.crt")); err != nil {
		t.Errorf("runtime image has no CA roots: %v", err)
	}

	run := func(extraEnv []string, args ...string) *exec.Cmd {
		all := append([]string{fmt.Sprintf("--userspec=%d:%d", p.User.UID, p.User.GID), rootfs}, p.Args...)
		cmd := exec.Command(chroot, append(all, args...)...)
		cmd.Env = append(append([]string{}, p.Env...), extraEnv...)
		return cmd
	}
	out, err := run(nil, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "\ncommit: image-test\n") {
		t.Fatalf("kiggy version in the image: %v\n%s", err, out)
	}

	// The entrypoint as the image starts it; only the listeners move to
	// free loopback ports (the image binds 0.0.0.0:9092 and :9644).
	kafka, admin := freePort(t), freePort(t)
	var log strings.Builder
	cmd := run([]string{"KIGGY_LISTEN=" + kafka, "KIGGY_ADMIN_ADDR=" + admin})
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("kiggy's log:\n%s", log.String())
		}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + admin + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz not ready after 30s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The image's health check, as the runtime runs it: kiggy probe.
	if out, err := run([]string{"KIGGY_ADMIN_ADDR=" + admin}, "probe").CombinedOutput(); err != nil {
		t.Fatalf("kiggy probe in the image: %v\n%s", err, out)
	}
	produce := exec.Command(kcat, "-P", "-b", kafka, "-t", "image-test", "-K:")
	produce.Stdin = strings.NewReader("k1:hello\nk2:world\n")
	if out, err := produce.CombinedOutput(); err != nil {
		t.Fatalf("kcat -P: %v\n%s", err, out)
	}
	out, err = exec.Command(kcat, "-C", "-b", kafka, "-t", "image-test", "-o", "beginning", "-e", "-q", "-f", "%k=%s@%o\n").CombinedOutput()
	if err != nil || string(out) != "k1=hello@0\nk2=world@1\n" {
		t.Fatalf("kcat -C: %v\n%s", err, out)
	}
}

// goBuildImage returns the local stand-in for the Containerfile's golang
// build image, making it when missing: busybox (the RUN steps' /bin/sh),
// this machine's Go toolchain and the CA roots (go mod download).
func goBuildImage(t *testing.T, try func(...string) (string, error), bud func(...string) string) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOROOT", "GOVERSION").Output()
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(out))
	goroot, gover := f[0], f[1]
	name := "localhost/kiggy-gobuild:" + gover
	if _, err := try("inspect", "--type", "image", name); err == nil {
		return name
	}
	ctr := bud("from", "scratch")
	defer bud("rm", ctr)
	mnt := bud("mount", ctr)
	for _, d := range []string{"bin", "usr/local", "etc/ssl/certs", "tmp", "root"} {
		if err := os.MkdirAll(filepath.Join(mnt, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(mnt, "tmp"), 0o1777); err != nil {
		t.Fatal(err)
	}
	for _, c := range [][]string{
		{"cp", "/bin/busybox", filepath.Join(mnt, "bin/busybox")},
		{"ln", "-s", "busybox", filepath.Join(mnt, "bin/sh")},
		{"cp", "-a", goroot, filepath.Join(mnt, "usr/local/go")},
		{"cp", "/etc/ssl/certs/ca-certificates.crt", filepath.Join(mnt, "etc/ssl/certs/")},
	} {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(c, " "), err, out)
		}
	}
	bud("umount", ctr)
	bud("config", "--env", "PATH=/usr/local/go/bin:/bin", "--env", "HOME=/root", "--env", "GOPATH=/root/go", "--env", "GOTOOLCHAIN=local", ctr)
	bud("commit", "-q", ctr, name)
	t.Logf("made %s from %s", name, goroot)
	return name
}

func freePort(t *testing.T) string {
	t.Helper()
	p, err := testtools.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return "127.0.0.1:" + strconv.Itoa(p)
}
