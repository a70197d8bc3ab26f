package shell

// ripgrepTypes are ripgrep's built-in file types that searches commonly
// name, with the globs ripgrep 13 and 14 define for them (rg --type-list)
// and a few more: a search of one reads only the files whose name one of
// them matches. Types not here (a user's --type-add, or one whose globs
// change often) keep no names.
var ripgrepTypes = map[string][]string{
	"go":       {"*.go"},
	"js":       {"*.js", "*.jsx", "*.vue", "*.cjs", "*.mjs"},
	"ts":       {"*.ts", "*.tsx", "*.cts", "*.mts"},
	"py":       {"*.py", "*.pyi"},
	"rust":     {"*.rs"},
	"md":       {"*.markdown", "*.md", "*.mdown", "*.mdwn", "*.mkd", "*.mkdn", "*.mdx"},
	"markdown": {"*.markdown", "*.md", "*.mdown", "*.mdwn", "*.mkd", "*.mkdn", "*.mdx"},
	"json":     {"*.json", "composer.lock", "*.sarif"},
	"yaml":     {"*.yaml", "*.yml"},
	"java":     {"*.java", "*.jsp", "*.jspx", "*.properties"},
	"css":      {"*.css", "*.scss"},
	"html":     {"*.ejs", "*.htm", "*.html"},
	"txt":      {"*.txt"},
	"sql":      {"*.psql", "*.sql"},
	"toml":     {"*.toml", "Cargo.lock"},
	"kotlin":   {"*.kt", "*.kts"},
	"swift":    {"*.swift"},
}

// RipgrepTypeGlobs returns the globs of a ripgrep file type listed in
// ripgrepTypes, or false.
func RipgrepTypeGlobs(name string) ([]string, bool) {
	g, ok := ripgrepTypes[name]
	return g, ok
}
