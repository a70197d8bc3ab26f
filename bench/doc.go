// Package bench measures toolgate: Go benchmarks of the whole server in
// process (this package's tests) and of prompt building, the load harness
// that make bench and make soak run (loadrun), the bare gRPC server that
// stands for the transport's physical limit (bareserver), the tool-call
// mixes every measurement uses (workload) and the in-process wiring
// (inproc). results.md is what make bench last wrote.
package bench
