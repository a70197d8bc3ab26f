// Package resilience holds black-box tests of toolgate under stress: the
// classifier path overloaded, a failing and hanging model backend, SIGTERM
// while calls and streams are in flight, and many streams at once. They
// wire the real packages (or run the real binary) on 127.0.0.1 against
// the fake model of package fakellm. The default counts keep them within
// seconds under -race on two cores; go test ./resilience -args -long runs
// them several times longer.
//
// The hostile-input tests (hostile_test.go) run the real binary against
// inputs built to exhaust it: deeply nested and brace-heavy shell
// commands, a model that answers garbage or nothing, transcripts at their
// limits, protobuf that does not decode, a config written in place
// slowly, imports replaced by a FIFO or /dev/zero. Every check must be
// answered in time and never ALLOW, and the server must keep serving,
// stay under a peak RSS of 256 MiB and stop within its shutdown timeout.
//
// The floods (hostile_memory_test.go) are sent as a client that means
// harm would, at twice the sizes that once broke the server: tool inputs
// of a million values, transcripts of tiny values held by streams,
// streams that never read their answers, header lists that expand on
// decoding; hostile_fs_test.go and mounts_test.go send checks whose paths
// lead onto a FUSE mount that never answers, hostile_audit_test.go
// attacks the audit trail, and audit_stall_test.go puts the audit log's
// directory on such a mount after startup. Each must leave the server alive, under a peak
// RSS of 400 MiB, answering ordinary checks within a second and allowing
// nothing it should not.
package resilience
