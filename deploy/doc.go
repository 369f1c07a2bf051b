// Package deploy holds no code: its tests check what deploy/ ships — the
// Helm chart (helm/kiggy, rendered with the pinned Helm and its manifests
// checked) and the Prometheus rules (prometheus/, run by promtool test
// rules). .ci/install-test-tools.sh installs both tools; without one its
// test skips, or fails when CI or KIGGY_REQUIRE_TOOLS=1 is set.
package deploy
