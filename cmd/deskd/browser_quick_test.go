//go:build !slow

package main

// browserTests says whether the tests in headless Chromium run: not in the
// quick loop (go test ./...), where their browsers would take a third of
// its CPU, but with -tags slow, as CI runs them.
const browserTests = false
