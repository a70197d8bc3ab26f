package shell

import (
	"reflect"
	"testing"
)

// TestTrees checks the trees recursive searches read: the directories
// they skip and the file names they keep are only what the program surely
// skips and keeps.
func TestTrees(t *testing.T) {
	tests := []struct {
		line string
		want []Tree
	}{
		{"grep -r x .", []Tree{{Path: ".", Hidden: true}}},
		{"grep -R x src", []Tree{{Path: "src", Hidden: true, Follow: true}}},
		// --exclude-dir, with or without =, trailing slashes ignored as
		// grep ignores them.
		{"grep -r x --exclude-dir=.git --exclude-dir=node_modules .", []Tree{{Path: ".", Hidden: true, SkipDirs: []string{".git", "node_modules"}}}},
		{"grep -rn x --exclude-dir .git .", []Tree{{Path: ".", Hidden: true, SkipDirs: []string{".git"}}}},
		{"grep -r x --exclude-dir=.git/ --exclude-dir=dist// .", []Tree{{Path: ".", Hidden: true, SkipDirs: []string{".git", "dist"}}}},
		{"grep -r x --exclude-dir='*.egg-info' .", []Tree{{Path: ".", Hidden: true, SkipDirs: []string{"*.egg-info"}}}},
		{"grep -r x --exclude-dir=/ .", []Tree{{Path: ".", Hidden: true}}},
		// An unquoted glob is expanded by bash first: a file named
		// --exclude-dir=foo would make grep skip only foo.
		{"grep -r x --exclude-dir=* .", []Tree{{Path: ".", Hidden: true}}},
		{"grep -r x --exclude-dir node* .", []Tree{{Path: ".", Hidden: true}}},
		// After --, and as -e's value, it is no option.
		{"grep -r x -- --exclude-dir=.git .", []Tree{{Path: "--exclude-dir=.git", Hidden: true}, {Path: ".", Hidden: true}}},
		{"grep -r -e --exclude-dir=.git .", []Tree{{Path: ".", Hidden: true}}},
		// --include keeps file names, unless --exclude joins in.
		{"grep -rn x --include='*.js' --include=*.ts .", []Tree{{Path: ".", Hidden: true, Names: []string{"*.js", "*.ts"}}}},
		{"grep -rn x --include='*.js' --exclude='*.min.js' .", []Tree{{Path: ".", Hidden: true}}},
		{"grep -rn x --exclude='*.min.js' --include='*.js' .", []Tree{{Path: ".", Hidden: true}}},
		{"grep -rn x --include='*.js' --exclude-from=ex .", []Tree{{Path: ".", Hidden: true}}},
		{"grep -rn x --include='*.go' --exclude-dir=vendor src", []Tree{{Path: "src", Hidden: true, SkipDirs: []string{"vendor"}, Names: []string{"*.go"}}}},
		// Not recursive: no tree, the excluded directory means nothing.
		{"grep x --exclude-dir=.git f", nil},
		// ripgrep: -g '!NAME' and '!NAME/' skip directories named NAME,
		// only when every glob is such an exclusion.
		{"rg --hidden x -g '!.git' -g '!node_modules/'", []Tree{{Path: ".", Hidden: true, SkipDirs: []string{".git", "node_modules"}}}},
		{"rg -uu x --glob='!.git' src", []Tree{{Path: "src", Hidden: true, SkipDirs: []string{".git"}}}},
		{"rg --hidden x --iglob '!.git'", []Tree{{Path: ".", Hidden: true, SkipDirs: []string{".git"}}}},
		{"rg --hidden x -g '!.git' -g '*.go'", []Tree{{Path: ".", Hidden: true, Names: []string{"*.go"}}}},
		{"rg --hidden x -g '*.go' -g '!.git'", []Tree{{Path: ".", Hidden: true, Names: []string{"*.go"}}}},
		// A whitelist searches the hidden files it keeps: those whose
		// name its last component matches, braces expanded; a type, an
		// ignore file, a case-insensitive glob or one whose last part
		// does not name files keep no names.
		{"rg x -g '*.go'", []Tree{{Path: ".", Hidden: true, Names: []string{"*.go"}}}},
		{"rg x -g 'src/**/*.{ts,tsx}' -g '!vendor'", []Tree{{Path: ".", Hidden: true, Names: []string{"*.ts", "*.tsx"}}}},
		{"rg x --glob=Makefile src", []Tree{{Path: "src", Hidden: true, Names: []string{"Makefile"}}}},
		{"rg x -g 'docs/'", []Tree{{Path: ".", Hidden: true}}},
		{"rg x --iglob '*.go'", []Tree{{Path: ".", Hidden: true}}},
		{"rg x --glob-case-insensitive -g '*.go'", []Tree{{Path: ".", Hidden: true}}},
		{"rg x -g *.go", []Tree{{Path: ".", Hidden: true}}},
		// A built-in type keeps its globs; one rg does not define here,
		// or redefined, keeps none.
		{"rg x -t go", []Tree{{Path: ".", Hidden: true, Names: []string{"*.go"}}}},
		{"rg x -tgo -g '*.md'", []Tree{{Path: ".", Hidden: true, Names: []string{"*.go", "*.md"}}}},
		{"rg x -t mytype", []Tree{{Path: ".", Hidden: true}}},
		{"rg x --type-clear go -t go", []Tree{{Path: ".", Hidden: true}}},
		{"rg x --type-add 'web:*.html' -T web", []Tree{{Path: ".", Hidden: true}}},
		{"rg x --ignore-file .rgignore", []Tree{{Path: ".", Hidden: true}}},
		{"rg x -T go", []Tree{{Path: "."}}},
		{"rg x -g '!*.min.js'", []Tree{{Path: "."}}},
		{"rg --hidden x -g '!/.git'", []Tree{{Path: ".", Hidden: true}}},
		{"rg --hidden x -g '!.g*'", []Tree{{Path: ".", Hidden: true}}},
		{"rg --hidden x -g '!a/.git'", []Tree{{Path: ".", Hidden: true}}},
		{"rg --hidden x -g '!{.git,x}'", []Tree{{Path: ".", Hidden: true}}},
		{"rg --hidden x -g '!\\.git'", []Tree{{Path: ".", Hidden: true}}},
		{"rg --hidden x -g '!'", []Tree{{Path: ".", Hidden: true}}},
		// diff: a directory operand is a tree, one level deep without
		// -r, hidden files included, links followed unless
		// --no-dereference; <(..) is no directory.
		{"diff -u a.go b.go", []Tree{{Path: "a.go", Hidden: true, Follow: true, OneLevel: true}, {Path: "b.go", Hidden: true, Follow: true, OneLevel: true}}},
		{"diff -q --no-dereference src docs", []Tree{{Path: "src", Hidden: true, OneLevel: true}, {Path: "docs", Hidden: true, OneLevel: true}}},
		{"diff a.go <(git show HEAD:a.go)", []Tree{{Path: "a.go", Hidden: true, Follow: true, OneLevel: true}}},
		{"diff -ruN src docs", []Tree{{Path: "src", Hidden: true, Follow: true}, {Path: "docs", Hidden: true, Follow: true}}},
		{"diff -N <(ls a) <(ls b)", nil},
		// find -exec: the files it hands a reader are trees of its start
		// points, hidden files included; links count unless -type f
		// keeps them out; the -name globs of a plain conjunction before
		// the -exec keep file names, unless the program recurses.
		{"find . -exec basename {} \\;", nil},
		{"find src -exec cat {} \\;", []Tree{{Path: "src", Hidden: true, Follow: true}}},
		{"find -exec cat {} +", []Tree{{Path: ".", Hidden: true, Follow: true}}},
		{"find a b -type f -name '*.md' -exec grep -l x {} +", []Tree{{Path: "a", Hidden: true, Names: []string{"*.md"}}, {Path: "b", Hidden: true, Names: []string{"*.md"}}}},
		{"find . -name '*.md' -name 'r*' -exec cat {} \\;", []Tree{{Path: ".", Hidden: true, Follow: true, FollowNamed: true, Names: []string{"*.md", "r*"}}}},
		{"find -L . -type f -name '*.md' -exec cat {} \\;", []Tree{{Path: ".", Hidden: true, Follow: true, Names: []string{"*.md"}}}},
		{"find . -type f -name '*.md' -follow -exec cat {} \\;", []Tree{{Path: ".", Hidden: true, Follow: true, Names: []string{"*.md"}}}},
		{"find . -exec cat {} \\; -type f -name '*.md'", []Tree{{Path: ".", Hidden: true, Follow: true}}},
		{"find . -type f -name '*.md' -exec cat {} \\; -o -print", []Tree{{Path: ".", Hidden: true, Follow: true}}},
		{"find . ! -name '*.md' -type f -exec cat {} \\;", []Tree{{Path: ".", Hidden: true, Follow: true}}},
		{"find . -type f -name '*.md' -exec grep -r x {} +", []Tree{{Path: ".", Hidden: true}}},
		{"find . -type f -iname '*.md' -exec cat {} +", []Tree{{Path: ".", Hidden: true}}},
		{"find . -type f -name '*.md' -exec echo {} \\; -exec cat {} \\;", []Tree{{Path: ".", Hidden: true, Names: []string{"*.md"}}}},
		{"cd docs && find . -name '*.md' -type f -exec cat {} \\;", []Tree{{Path: ".", Hidden: true, Names: []string{"*.md"}}, {Path: "docs/.", Hidden: true, Names: []string{"*.md"}}}},
		// xargs printing what find lists: the same trees, for readers
		// only.
		{"find . -type f -name '*.go' -print0 | xargs -0 grep -n TODO", []Tree{{Path: ".", Hidden: true, Names: []string{"*.go"}}}},
		{"find src -name '*.go' -type f -print0 | xargs -0 cat", []Tree{{Path: "src", Hidden: true, Names: []string{"*.go"}}}},
		{"find . -type f -name '*.go' -print0 | xargs -0 wc -l", nil},
		{"find . -type f -iname '*.go' -print0 | xargs -0 cat", []Tree{{Path: ".", Hidden: true}}},
		{"find . -type f -iname '*.go' -name 'main*' -print0 | xargs -0 cat", []Tree{{Path: ".", Hidden: true, Names: []string{"main*"}}}},
		{"find . -type f -name '*.go' -print0 | xargs -0 ls -l", nil},
	}
	for _, tt := range tests {
		a := Analyze(tt.line)
		if !a.ReadOnly {
			t.Errorf("Analyze(%q): not read-only (%s)", tt.line, a.Reason)
			continue
		}
		if !reflect.DeepEqual(a.Trees, tt.want) {
			t.Errorf("Analyze(%q).Trees = %+v, want %+v", tt.line, a.Trees, tt.want)
		}
	}
}
