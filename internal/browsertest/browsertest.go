// Package browsertest starts the headless Chromium that tests drive the
// approvers' page with: Debian's chromium package, a fresh profile, no
// network of its own. Nothing here downloads a browser.
package browsertest

import (
	"context"
	"os"
	"testing"

	"github.com/chromedp/chromedp"
)

// ChromiumPath is the Debian package chromium's browser (make chromium
// installs it).
const ChromiumPath = "/usr/bin/chromium"

// Start starts a headless Chromium and returns a context for its first
// tab; the browser ends with the test. Without the browser the test is
// skipped, or fails when TOOLGATE_CHROMIUM_REQUIRED=1 (make test-e2e sets
// it).
func Start(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(ChromiumPath); err != nil {
		if os.Getenv("TOOLGATE_CHROMIUM_REQUIRED") == "1" {
			t.Fatalf("TOOLGATE_CHROMIUM_REQUIRED=1 and %s is missing (make chromium installs Debian's chromium): %v", ChromiumPath, err)
		}
		t.Skipf("%s is missing: make chromium installs Debian's chromium (TOOLGATE_CHROMIUM_REQUIRED=1 makes this a failure)", ChromiumPath)
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(t.Context(),
		chromedp.ExecPath(ChromiumPath),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("password-store", "basic"),
	)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(cancel)
	if _, err := chromedp.Run(ctx, chromedp.Steps()); err != nil {
		t.Fatalf("starting %s: %v", ChromiumPath, err)
	}
	return ctx
}
