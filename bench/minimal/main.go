// Command minimal is a Go program that does nothing: the start-up cost any
// Go binary pays, which make bench sets the hook's round trip against.
package main

func main() {}
