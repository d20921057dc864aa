//go:build slow

package main

// browserTests says whether the tests in headless Chromium run: with
// -tags slow, as CI runs them (browser_quick_test.go: not in the quick
// loop).
const browserTests = true
