// Package resilience holds black-box tests of toolgate under stress: the
// classifier path overloaded, a failing and hanging model backend, SIGTERM
// while calls and streams are in flight, and many streams at once. They
// wire the real packages (or run the real binary) on 127.0.0.1 against
// the fake model of package fakellm. The default counts keep them within
// seconds under -race on two cores; go test ./resilience -args -long runs
// them several times longer.
package resilience
