//go:build !slow

package main

// browserTests says whether the tests in headless Chromium run: not in the
// quick loop (go test ./...), which they made 13 s longer (96 s to 83 s on
// an idle 2-core machine), but with -tags slow, as CI runs them.
const browserTests = false
