package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
)

// version is kiggy's release. The Helm chart's appVersion
// (deploy/helm/kiggy/Chart.yaml) and the image's label carry the same
// string (TestVersionMatchesChart); a build may override it with
// -ldflags "-X main.version=...".
var version = "0.1.0"

// commit names the source revision when the build carries no VCS
// information (a build outside a git checkout, such as the container
// build of deploy/Containerfile, which gets it as a build argument):
// -ldflags "-X main.commit=<revision>". The VCS stamp wins when present.
var commit = ""

// wantVersion reports whether the command line asks for the version:
// `kiggy version`, `kiggy --version` or `kiggy -version`.
func wantVersion(args []string) bool {
	if len(args) == 0 {
		return false
	}
	switch args[0] {
	case "version", "--version", "-version":
		return true
	}
	return false
}

// printVersion writes the version, the commit, the Go version and the Iggy
// protocols kiggy speaks.
func printVersion(w io.Writer) {
	bi, ok := debug.ReadBuildInfo()
	io.WriteString(w, versionText(bi, ok))
}

// versionText formats what `kiggy version` prints from the build
// information (ok false: none embedded).
func versionText(bi *debug.BuildInfo, ok bool) string {
	rev, goVersion := "unknown", runtime.Version()
	if commit != "" {
		rev = commit
	}
	if ok && bi != nil {
		if bi.GoVersion != "" {
			goVersion = bi.GoVersion
		}
		var vcsRev, modified string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				vcsRev = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
		if vcsRev != "" {
			rev = vcsRev
			if modified == "true" {
				rev += " (modified)"
			}
		}
	}
	var protos []string
	for _, d := range proto.Dialects {
		protos = append(protos, fmt.Sprintf("%s (%s)", proto.FormatVersion(d.Version()), d.Release()))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "kiggy %s\n", version)
	fmt.Fprintf(&b, "commit: %s\n", rev)
	fmt.Fprintf(&b, "go: %s %s/%s\n", goVersion, runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(&b, "iggy protocols: %s\n", strings.Join(protos, ", "))
	return b.String()
}
