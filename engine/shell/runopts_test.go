package shell

import (
	"strings"
	"testing"
)

// TestRunsProgram: every command with an option or assignment that runs
// another program is reported, in several spellings; the harmless
// neighbours are not.
func TestRunsProgram(t *testing.T) {
	runs := []string{
		// git: configuration on the command line, configured drivers,
		// named programs, signing.
		"git diff --ext-diff", "git log -p --ext-diff HEAD~3", "git show --textconv HEAD:a.bin",
		"git cat-file --filters HEAD:x", "git -c core.pager=./x log", "git -c diff.external=x diff",
		"git --config-env=core.pager=X log", "git --exec-path=/tmp/x status", "git -C . -c a=b status",
		"git grep -O./x foo", "git grep --open-files-in-pager=x foo", "git grep -nO foo",
		"git rebase -x ./t main", "git rebase --exec=./t main", "git difftool HEAD", "git mergetool",
		"git log --show-signature", "git log --format=%G?", "git log --pretty='format:%GS'",
		"git commit -S -m x", "git commit --gpg-sign=KEY -m x", "git tag -s v1 -m x", "git fetch --upload-pack=./x origin",
		"git clone -u ./x repo", "git clone --template=./t repo", "git ls-remote --upload-pack ./x origin", "git help -w log",
		"git verify-commit HEAD", "git bisect run ./t", "git submodule foreach ./t", "git push --receive-pack=./x origin",
		// npm and friends.
		"npm run test --script-shell=/tmp/x", "npm run test --script-shell /tmp/x", "npm --script-shell=./x run test",
		"npm run test --script_shell=./x", "npm test --node-options=--require=./x", "npm run build --userconfig=./rc",
		"pnpm run test --config.script-shell=./x", "yarn run test --shell=./x", "npm exec -c ./x", "npm run test --git=./x",
		// Other programs by their rows.
		"rg --pre ./x foo", "rg --pre=./x foo", "rg --hostname-bin=./x foo", "sort --compress-program=./x a",
		"tar -xf a.tar --to-command=./x", "tar -I ./x -xf a", "tar -xIf ./x a", "tar --use-compress-program=./x -xf a",
		"tar -cf a.tar --checkpoint-action=exec=./x .", "find . -exec ./x {} ;", "find . -execdir ./x {} +", "find . -ok ./x {} ;",
		"man -P ./x ls", "man --pager=./x ls", "man -Hx ls", "less '+!./x' a", "rsync -e ./x a b:", "rsync -avze ./x a b:",
		"rsync --rsync-path=./x a b:", "scp -S ./x a b:", "scp -o ProxyCommand=./x a b:", "zip a.zip b -T -TT ./x",
		"pytest -p evil", "pytest -pevil", "pytest --pdbcls=x:Y", "python3 -m pytest -p evil", "cargo test --config target.x.runner=./x",
		"go test -exec ./x ./...", "go build -toolexec=./x", "go vet -vettool=./x", "gcc -B./x a.c", "gcc -fplugin=./x.so a.c",
		"make test SHELL=./x", "diff --diff-program=./x a b", "sdiff --diff-program=./x a b",
		// make: the recipe shell or options by any assignment operator,
		// with blanks; != runs its value; a name known only when expanded;
		// makefile text from --eval or -E, abbreviated, bundled or glued.
		"make test SHELL:=./x", "make test SHELL::=./x", "make test SHELL:::=./x", "make test SHELL?=./x", "make test SHELL+=./x",
		"make test 'SHELL = ./x'", "make test '.SHELLFLAGS:=-c id;'", "make test .SHELLFLAGS+=-x", "make 'X != id' test",
		"make test 'MAKEFLAGS=--eval=x'", "make test 'SH$(E)LL=./x'", "gmake test MAKE=./x", "make test MAKEFILES=/tmp/x.mk",
		"make test --eval=SHELL:=./x", "make test --eval 'SHELL=./x'", "make test --ev=x", "make test -E 'x'", "make test -ESHELL:=./x",
		"make -sE'$(shell id)' test", "make -kE x test",
		// pytest: addopts by -o or --override-ini (also abbreviated), -p
		// in a bundle, options from a configuration file.
		"pytest -o addopts='-p evil'", "pytest -oaddopts=-pevil", "pytest -o 'addopts = -p x'", "pytest --override-ini=addopts=-px",
		"python3 -m pytest --override-ini addopts=-px tests/", "pytest --override=addopts=-px", "pytest -xo addopts=-px",
		"pytest -o pythonpath=/tmp", "pytest -xpevil", "pytest -vvp evil", "pytest -c /tmp/x.ini", "pytest --config-file=x.ini",
		// GNU long options by a prefix.
		"sort --compress=./x a", "sort --compress-prog=./x a", "sort --co=./x a", "tar -xf a --to-com=./x", "tar -xf a --use-comp=./x",
		"diff --diff-prog=./x a b", "man --pag=./x ls", "npm run test --script-sh=./x", "npm test --node-opt=--require=./x",
		// Compilers and linkers: response and configuration files,
		// plugins through the driver or the linker, a linker by path.
		"gcc @build.rsp -c a.c", "g++ -c a.cc @opts", "clang --config=./x.cfg -c a.c", "clang --config ./x.cfg -c a.c",
		"clang --config-user-dir=./d -c a.c", "gcc a.c -Wl,-plugin,./x.so", "gcc a.c -Wl,--plugin=./x.so", "gcc a.c -Wl,-O1,-plug,./x.so",
		"gcc a.c -Wl,@./opts", "gcc a.c -Xlinker -plugin -Xlinker ./x.so", "gcc a.c -Xlinker @opts", "clang -fpass-plugin=./x.so -c a.c",
		"clang -Xclang -load -Xclang ./x.so -c a.c", "clang -Xclang -add-plugin -Xclang x a.c", "gcc -wrapper ./x a.c",
		"clang -fuse-ld=./myld a.c", "clang --ld-path=./myld a.c", "gcc-13 -fplugin=./x.so a.c", "clang-17 @rsp a.c",
		"ld -plugin ./x.so a.o", "ld --plugin=./x.so a.o", "ld.bfd -plug ./x.so a.o", "ld @opts",
		// Any program, by the option's name.
		"mytool --exec ./x", "mytool --pager=./x", "mytool --editor ./x", "mytool --plugin=./x", "mytool --pre-commit-hook=./x",
		"jest --runner=./x", "mocha --require ./x", "nodemon --exec ./x", "mytool --post_command=./x", "mytool -exec ./x",
		// Assignments that choose programs or configuration.
		"GIT_EXTERNAL_DIFF=./x git diff", "PAGER=./x git log", "npm_config_script_shell=./x npm test",
		"NODE_OPTIONS=--require=./x npm test", "LD_PRELOAD=./x.so npm test", "PATH=.:$PATH npm test", "HOME=/tmp/h git log",
		// Run-time words.
		"git diff $OPT", "npm run test $(cat opts)",
	}
	for _, line := range runs {
		a := Analyze(line)
		found := ""
		for _, c := range a.Commands {
			if found = RunsProgram(c); found != "" {
				break
			}
		}
		if found == "" {
			t.Errorf("%s: no option that runs a program found (commands %+v)", line, a.Commands)
		}
	}
	inert := []string{
		"git diff", "git diff --stat", "git diff --no-ext-diff", "git log --no-textconv -p", "git log --oneline -n 5",
		"git log --format=%H%x09%s", "git commit -m 'fix: parser'", "git push -u origin main", "git tag -l", "git tag -n",
		"git status --short", "git -C . status", "git grep -n foo", "git fetch origin", "git help log",
		"npm run test", "npm test -- --runInBand", "npm install --ignore-scripts", "npm run build --if-present",
		"pnpm --filter api test", "pytest -p no:cacheprovider -x", "pytest -pno:randomly", "python3 -m pytest -k parser",
		"cargo test --release", "go test -run TestX -count=1 ./...", "gcc -DBUILD=1 -O2 -o a a.c", "make test VERBOSE=1",
		"sort -n a", "rg -n foo", "tar -xzf a.tgz", "find . -name '*.go' -print", "man ls", "less a", "rsync -av a b",
		"CI=1 npm test", "NODE_ENV=test LC_ALL=C npm test", "mytool --no-hooks", "mytool --progress",
		"make test CFLAGS=-O2", "make test 'V = 1'", "make -j4 test", "make -C sub test", "make -Cexamples test", "make -e test",
		"pytest -x -vv", "pytest -rfEp", "pytest -kparse", "pytest --pdb", "pytest --co -q", "pytest --cov=src",
		"pytest -o log_cli=true", "pytest --override-ini=junit_family=xunit2", "pytest -p no:cacheprovider",
		"sort --check a", "tar --checkpoint=100 -xf a", "npm ls --global", "npm run build --silent",
		"gcc -Wl,-rpath,/opt/lib -Wl,--as-needed a.c", "gcc -Xlinker --gc-sections a.c", "clang -fuse-ld=lld a.c",
		"clang -Xclang -fcolor-diagnostics a.c", "gcc-13 -O2 -c a.c", "ld -o a a.o", "gcc -o out a.c",
	}
	for _, line := range inert {
		for _, c := range Analyze(line).Commands {
			if why := RunsProgram(c); why != "" {
				t.Errorf("%s: %s", line, why)
			}
		}
	}
}

// TestRunOptions: each row's options, after the words a rule starts
// with, are probes that RunsProgram reports; a program with none gives
// none.
func TestRunOptions(t *testing.T) {
	for _, row := range runTable {
		for _, name := range row.names {
			want := len(row.row.long) + len(row.row.single) + len(row.row.short) + len(row.row.words) + len(row.row.vars)
			if got := RunOptions(name); len(got) != want {
				t.Errorf("RunOptions(%q) = %d probes, want %d (one per option of its row): %v", name, len(got), want, got)
			}
		}
	}
	for _, prefix := range []string{"git", "git diff", "git log", "git grep", "npm run test", "npm", "sort", "rg"} {
		got := RunOptions(prefix)
		if len(got) == 0 {
			t.Errorf("RunOptions(%q) is empty", prefix)
		}
		for _, o := range got {
			argv := append(strings.Fields(prefix), strings.Fields(o.Spelling)...)
			if RunsProgram(Command{Argv: argv}) == "" || o.Why == "" {
				t.Errorf("RunOptions(%q): %q is not reported by RunsProgram", prefix, o.Spelling)
			}
		}
	}
	for _, prefix := range []string{"", "ls", "cat -n", "mytool"} {
		if got := RunOptions(prefix); len(got) != 0 {
			t.Errorf("RunOptions(%q) = %v, want none", prefix, got)
		}
	}
}
