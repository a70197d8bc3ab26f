// Package knowledge is toolgate's security knowledge as data, with one
// matcher: secret-shaped file names, credential stores, histories,
// protected files, broad roots, read roots and harmless variables.
//
// Every list here serves an allowlist decision somewhere in the engine: a
// read is local only inside a read root and away from secret-shaped names,
// an edit only inside the project and outside the protected set, a printed
// variable only when its name is known to be harmless. Names are compared
// the one way this package defines (ASCII case folded, as macOS and Windows
// file systems do), and globs are matched with its one matcher.
//
// The package imports nothing of toolgate's: pathcheck, shell and the
// engine all read from it.
package knowledge
