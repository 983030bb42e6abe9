// Package residency lets a long-running process stop mapping the pages of
// its own executable that it touched only while starting, so that its
// resident set at rest is what it runs at rest.
package residency
