package shell

import (
	"sort"
	"testing"
)

// programCases has a row per program in the table: lines that must be
// read-only and lines (usually a forbidden option) that must not be.
var programCases = map[string]struct{ ok, bad []string }{
	"cat":     {[]string{"cat -n README.md", "cat a b"}, []string{"cat --output x", "cat ~/.ssh/id_rsa", "cat $F"}},
	"head":    {[]string{"head -20 f", "head -n 5 f", "head -c100 f"}, []string{"head --output=x f", "head -x f"}},
	"tail":    {[]string{"tail -f log.txt", "tail -n +5 f", "tail -F x"}, []string{"tail --pre=x f", "tail -n"}},
	"nl":      {[]string{"nl -ba f"}, []string{"nl -o f"}},
	"tac":     {[]string{"tac f"}, []string{"tac -o f"}},
	"rev":     {[]string{"rev f"}, []string{"rev -x f"}},
	"od":      {[]string{"od -An -tx1 f"}, []string{"od --output=x f"}},
	"hexdump": {[]string{"hexdump -C f"}, []string{"hexdump -o x -w f"}},
	"strings": {[]string{"strings -n 8 bin"}, []string{"strings --out=x bin"}},
	"xxd":     {[]string{"xxd f", "xxd -l 64 -c16 f", "xxd -r -p hex"}, []string{"xxd f out", "xxd -r hex bin", "xxd -Q f"}},
	"base64":  {[]string{"base64 f", "base64 -d f"}, []string{"base64 -o x y", "base64 --output=x y"}},
	"grep":    {[]string{"grep -rn TODO src/", "grep -e a -e b f", "grep -A3 foo f"}, []string{"grep -r x ~", "grep --output=x f", "grep -rn x /"}},
	"egrep":   {[]string{"egrep 'a|b' f"}, []string{"egrep -r x .."}},
	"fgrep":   {[]string{"fgrep -x a f"}, []string{"fgrep -Q a f"}},
	"rg":      {[]string{"rg -n foo --type go", "rg -g '*.go' foo src", "rg --files"}, []string{"rg --pre sh x", "rg -z x", "rg foo *.go"}},
	"find":    {[]string{"find . -name '*.go' -type f", "find src -newer x -o -empty", "find -L . -maxdepth 2 -print0"}, []string{"find . -delete", "find . -fprint /tmp/x", "find *", `find . -type d -exec ls --recur {} \;`, `find . -type d -exec ls --recursive {} +`}},
	"sed": {[]string{"sed -n '1,20p' f", "sed 's/a/b/g' f", "sed -e 's/a/b/' -e '/x/d' f", "sed -n '/x/{p;q}' f", "sed '1d;$d' f",
		"sed -n '/start/,/end/p' f", "sed 's|a|b|g' f", "sed -E 's/(a)/\\1/' f", "sed 'y/abc/xyz/' f", "sed -n '$=' f", "sed 'N;P;D' f",
		"sed '1~2d' f", "sed '0,/re/d' f", "sed -n '/x/I p' f", "sed '/x/,+2d' f", "sed 's/a/b/2g' f", "sed --expression=p -n f"},
		[]string{"sed -i s/a/b/ f", "sed 's/a/b/w x' f", "sed 'r /etc/passwd' f", "sed 'a foo' f", "sed '1e id' f", "sed 's/x/y/ew' f",
			"sed 's/x/y/gw out' f", "sed 'W out' f", "sed 'R f' f", "sed ':a;b a' f", "sed 's/x/y/;e' f", "sed $'s/x/y/\\ne id' f",
			"sed 's/x/y' f", "sed -n '/[/]p/' f", "sed -z -i p f", "sed --in-place=.bak p f", "sed -s -n p *.txt", "sed -f s.sed f"}},
	"jq": {[]string{"jq .name package.json", "jq -r --arg x y '.[$x]' f.json", "jq -n '[1,2]|add'"}, []string{"jq --foo . f", "jq . $F", `jq -n 'import "../.docker/config" as $c; $c'`, "jq -L ~ -n 'include \"x\"; 1'", "jq -f prog.jq f"}},
	"yq": {[]string{"yq '.a' f.yaml", "yq e '.a' f.yaml"}, []string{"yq -i '.a=1' f.yaml", `yq 'load("x")' f`, `yq -n 'eval("lo"+"ad(\"x\")")'`, "yq -s '.a' f.yaml",
		"yq 'env(HOME)' f", "yq $x f"}},
	"sort":  {[]string{"sort -u f", "sort -k2,2n -t, f"}, []string{"sort -o x f", "sort --output=x f", "sort --compress-program=sh f"}},
	"uniq":  {[]string{"uniq -c f", "sort f | uniq"}, []string{"uniq a b", "uniq *.txt"}},
	"cut":   {[]string{"cut -d: -f1 /etc/passwd"}, []string{"cut --output x"}},
	"tr":    {[]string{"tr a-z A-Z", "tr -d '\\r'"}, []string{"tr a b c", "tr -x a b"}},
	"paste": {[]string{"paste -sd, f"}, []string{"paste -o x"}},
	"comm":  {[]string{"comm -12 a b"}, []string{"comm a"}},
	"fold":  {[]string{"fold -w 80 f"}, []string{"fold -o f"}},
	"wc":    {[]string{"wc -l -- *.go"}, []string{"wc --output=x f", "wc -l $(git ls-files)", "wc -l *.go"}},
	"diff": {[]string{"diff -u a b", "diff <(ls a) <(ls b)", "diff -q src docs", "diff -ruN a b", "diff src/config docs"},
		[]string{"diff -l a b", "diff -r ~ x", "diff -N . src", "diff --new-file a b", "diff --unidirectional-new-file a b",
			"diff config/config .git", "diff .git/ x/config", "diff x/.env keys", "diff ~ x", "find . -name keys -exec diff {} src \\;"}},
	"cmp":       {[]string{"cmp a b"}, []string{"cmp -o a b"}},
	"md5sum":    {[]string{"md5sum f"}, []string{"md5sum -o f"}},
	"sha1sum":   {[]string{"sha1sum f"}, []string{"sha1sum -o f"}},
	"sha224sum": {[]string{"sha224sum f"}, []string{"sha224sum -o f"}},
	"sha256sum": {[]string{"sha256sum -c SUMS"}, []string{"sha256sum --output f"}},
	"sha384sum": {[]string{"sha384sum f"}, []string{"sha384sum -o f"}},
	"sha512sum": {[]string{"sha512sum f"}, []string{"sha512sum -o f"}},
	"b2sum":     {[]string{"b2sum -l 256 f"}, []string{"b2sum -o f"}},
	"cksum":     {[]string{"cksum f"}, []string{"cksum -o f"}},
	"shasum":    {[]string{"shasum -a 256 f"}, []string{"shasum -o f"}},
	"file":      {[]string{"file -b f", "file --mime-type f"}, []string{"file -C -m x", "file -z f"}},
	"ls":        {[]string{"ls -la", "ls -R src"}, []string{"ls > f", "ls ~/.ssh", "ls $HOME", "ls $(cat f)"}},
	"stat":      {[]string{"stat -c %s f"}, []string{"stat f > out"}},
	"du":        {[]string{"du -sh ."}, []string{"du -sh ~/.gnupg"}},
	"df":        {[]string{"df -h"}, []string{"df -h >> log"}},
	"tree":      {[]string{"tree -L 2 -I node_modules"}, []string{"tree -o out.txt", "tree -R -H x"}},
	"pwd":       {[]string{"pwd", "pwd -P"}, []string{"pwd x"}},
	"basename":  {[]string{"basename /a/b.go .go"}, []string{"basename -o x"}},
	"dirname":   {[]string{"dirname /a/b"}, []string{"dirname -o x"}},
	"realpath":  {[]string{"realpath --relative-to=. x"}, []string{"realpath -o x"}},
	"readlink":  {[]string{"readlink -f x"}, []string{"readlink -o x"}},
	"cd": {[]string{"cd src && ls", "cd /work/main && git status"}, []string{"cd ~/.ssh && cat id_rsa", "cd ~/.config && cat gh/hosts.yml", "cd $D && cat x",
		// git obeys the repository where it runs, unknown here.
		`cd "$(git rev-parse --show-toplevel)" && git status`}},
	"tee":    {[]string{"ls | tee", "ls | tee /dev/null"}, []string{"ls | tee out", "ls | tee -a log"}},
	"echo":   {[]string{"echo hello", "echo $PATH", "echo $(git rev-parse HEAD)"}, []string{"echo hi > f", "echo $(rm x)"}},
	"true":   {[]string{"true"}, []string{"true > f"}},
	"false":  {[]string{"false || echo no"}, []string{"false || rm x"}},
	":":      {[]string{": nothing"}, []string{": > f"}},
	"printf": {[]string{"printf '%s\\n' a b", `printf '%s\n' "$HOME"`}, []string{"printf -v x y", "printf $F a", `printf '%s\n' "$X"`}},
	"test":   {[]string{"test -f go.mod", "test a = b", `test -n "$PWD"`}, []string{"test -v 'a[$(id)]'", "test -n $X", `test "$X" "$Y"`}},
	"[": {[]string{"[ -d src ] && ls src", `[ -z "$(git status --porcelain)" ] && echo clean`, `[ "$PWD" = "$HOME" ]`, `for a in x; do [ "$a" ]; done`, `[ ! -f "$PWD" ]`, `[ ! -z "$PWD" ]`},
		[]string{"[ -v x ]", "[ -f x", `[ "$a" "$b" ]`, `[ ! "$a" "$b" ]`, "[ $(rm x) ]", `[ ! "$PWD" -f ]`, `[ "$PWD" -f "$HOME" ]`,
			`[ ! ! "$PWD" ]`, `[ ! -f $PWD ]`, `[ ! -v "$PWD" ]`}},
	"read":    {[]string{"while read -r l; do echo $l; done < f"}, []string{"read 'a[$(id)]'", "read -a x"}},
	"type":    {[]string{"type -a ls"}, []string{"type -x ls"}},
	"which":   {[]string{"which go"}, []string{"which -x go"}},
	"command": {[]string{"command -v node", "command -V git"}, []string{"command -x node"}},
	"seq":     {[]string{"seq 1 10", "seq -5 5"}, []string{"seq 1 2 3 4"}},
	"sleep":   {[]string{"sleep 1 && git status"}, []string{"sleep"}},
	"whoami":  {[]string{"whoami"}, []string{"whoami x"}},
	"id":      {[]string{"id -u"}, []string{"id > f"}},
	"uname":   {[]string{"uname -a"}, []string{"uname -a > f"}},
	"free":    {[]string{"free -h"}, []string{"free >f"}},
	"uptime":  {[]string{"uptime"}, []string{"uptime > f"}},
	"ps": {[]string{"ps aux", "ps -ef | grep node", "ps -p 75471 -o pid,etime,command", "ps --format pid,args", "ps -eo pid,ppid,cmd --sort=-%cpu",
		"ps axjf", "ps -opid= -p 1", "ps 1234", "ps --forest -e", "ps -U root -u root u"},
		[]string{"ps aux > f", "ps eww", "ps -o pid e", "ps -ef e", "ps auxe", "ps -E", "ps axe", "ps --env", "ps -Q", "ps $X", "ps -ef --bogus", "ps -ef --e"}},
	"lsof": {[]string{"lsof -i :8080", "lsof -i", "lsof -nP -iTCP -sTCP:LISTEN", "lsof -i :3030 -t", "lsof +D src", "lsof -p 1234 -F pcn",
		"lsof -c node -a -d cwd", "lsof -cDk", "lsof file.txt", "lsof -u me -- -weird"},
		[]string{"lsof > f", "lsof +m", "lsof +m m", "lsof -D b", "lsof -nD b", "lsof -k /tmp/k", "lsof -m /tmp/mem", "lsof *", "lsof -i $P",
			"lsof -A /tmp/a", "lsof -M", "lsof -e /x", "lsof -c -D", "lsof -u", "lsof -nPk /tmp/k"}},
	"pgrep": {[]string{"pgrep node", "pgrep -af extract_single", "pgrep -f 'health-verifier.js'", "pgrep -l -u root sshd", "pgrep -c -x go",
		"pgrep -f x | wc -l"},
		[]string{"pgrep -F .env", "pgrep --pidfile=x", "pgrep -M core x", "pgrep -N kernel x", "pgrep --signal 9 x", "pgrep a b",
			"pgrep $P", "pgrep -f x > out"}},
	"ss": {[]string{"ss -tlnp", "ss -tulpn", "ss -an state listening", "ss -H -t sport = :8080", "ss -s"},
		[]string{"ss -K dst 1.2.3.4", "ss --kill", "ss -D out", "ss --diag=out", "ss -F filter", "ss -N ns", "ss -E", "ss -tlnp $F"}},
	"netstat": {[]string{"netstat -tlnp", "netstat -an", "netstat -rn", "netstat -an -p tcp", "netstat -i"},
		[]string{"netstat -M core", "netstat -N kernel", "netstat -I eth0", "netstat -an > out", "netstat $X"}},
	"docker": {[]string{"docker ps", "docker ps -a", "docker ps --filter name=constraint-monitor", "docker ps -q --no-trunc",
		"docker ps --format '{{.Names}}\t{{.Status}}'", "docker ps --format 'table {{.Names}}\t{{.Status}}'",
		"docker ps --format \"{{.Names}}: {{.Ports}}\"", "docker ps --format json", "docker ps --format '{{json .}}'",
		"docker ps -n 5 -s", "docker container ls -a", "docker container list", "docker container ps", "docker images",
		"docker images -q node", "docker image ls --digests", "docker version", "docker version --format '{{.Server.Version}}'" + " || true",
		"docker --version", "docker -v"},
		[]string{"docker", "docker run x", "docker exec c ls", "docker --context remote ps", "docker -H tcp://h:2375 ps",
			"docker --host=ssh://h ps", "docker --config /tmp/c ps", "docker ps --format '{{.Label \"x\"}}'",
			"docker ps --format '{{printf \"%s\" .Names}}'", "docker ps --format '{{- .Names}}'", "docker ps --format '{{.Names'",
			"docker ps --format '{{/* c */}}'", "docker ps x", "docker compose ps", "docker-compose ps", "docker container rm x", "docker image rm x",
			"docker images a b", "docker version --format '{{index . 0}}'", "docker inspect x", "docker info", "docker ps > out",
			"docker logs x", "docker ps --format '{{.Names.}}'", "docker ps --format '{{..Names}}'", "docker ps --format '{{.1}}'"}},
	"nproc":    {[]string{"nproc"}, []string{"nproc x"}},
	"hostname": {[]string{"hostname", "hostname -f"}, []string{"hostname evil", "hostname -F f"}},
	"date":     {[]string{"date", "date +%Y-%m-%d", "date -u -d @0"}, []string{"date -s now", "date 010101012020", "date --set=x"}},
	"printenv": {[]string{"printenv PATH"}, []string{"printenv > f"}},
	"nice":     {[]string{"nice", "nice -n 5 git status"}, []string{"nice rm x", "nice -x ls"}},
	"git":      {[]string{"git status", "git --version", "git -C sub --no-pager log -5"}, []string{"git", "git -c a=b status", "git push"}},
	"go": {[]string{"go version", "go env GOPATH", "go help modules", "go env -json GOOS GOARCH", "go version -m ./bin/tool"}, []string{"go env -w X=y",
		"go env", "go env -json", "go env GOPROXY", "go env -changed", "go env GOAUTH GOPATH", "go version -m ~/.aws/credentials", "go vet ./...", "go list -mod=mod ./...", "go build",
		"go list -m all", "go list -m golang.org/x/tools@latest", "go doc fmt.Println", "go list -f '{{.Dir}}' ./...", "cd $d && go version"}},
	"gofmt": {[]string{"gofmt -l .", "gofmt -l -s ./engine ./cmd", "gofmt -d main.go", "gofmt -e -l src | head"},
		[]string{"gofmt -w .", "gofmt -l -w main.go", "gofmt -cpuprofile=/tmp/p -l .", "gofmt -l ~", "gofmt -l $d", "gofmt -x ."}},
	"npm":     {[]string{"npm ls", "npm --version", "npm list --depth=0"}, []string{"npm install", "npm view x", "npm version patch"}},
	"cargo":   {[]string{"cargo --version"}, []string{"cargo build"}},
	"rustc":   {[]string{"rustc -V"}, []string{"rustc main.rs"}},
	"node":    {[]string{"node --version"}, []string{"node -e x", "node script.js"}},
	"python":  {[]string{"python --version"}, []string{"python -c 'import os'"}},
	"python3": {[]string{"python3 -V"}, []string{"python3 x.py"}},
}

// gitCases has a row per read-only git subcommand.
var gitCases = map[string]struct{ ok, bad []string }{
	"status":    {[]string{"git status -sb", "git status --porcelain=v2"}, []string{"git status --output=x"}},
	"log":       {[]string{"git log --oneline -20", "git log -p -S foo -- src", "git log --format='%h %s' main..HEAD"}, []string{"git log --output=/tmp/x", "git log --show-signature"}},
	"show":      {[]string{"git show HEAD:go.mod", "git show --stat HEAD~2"}, []string{"git show --ext-diff", "git show --textconv HEAD"}},
	"rev-list":  {[]string{"git rev-list --count HEAD"}, []string{"git rev-list --output=x HEAD"}},
	"diff":      {[]string{"git diff HEAD~1 -- src/", "git diff --cached --stat", "git diff -U5 a b"}, []string{"git diff --ext-diff", "git diff --output=x"}},
	"blame":     {[]string{"git blame -L 10,20 f.go"}, []string{"git blame --output=x f"}},
	"branch":    {[]string{"git branch -a", "git branch --list 'feat*'", "git branch -vv", "git branch --merged main"}, []string{"git branch -D x", "git branch new", "git branch -m a b"}},
	"tag":       {[]string{"git tag", "git tag -l 'v*'", "git tag --contains abc"}, []string{"git tag v1", "git tag -d v1"}},
	"remote":    {[]string{"git remote -v", "git remote get-url origin"}, []string{"git remote add x y", "git remote show origin"}},
	"config":    {[]string{"git config --get user.name", "git config --list", "git config get user.email"}, []string{"git config user.name x", "git config --unset x", "git config set a b"}},
	"rev-parse": {[]string{"git rev-parse --show-toplevel", "git rev-parse --abbrev-ref HEAD"}, []string{"git rev-parse --foo"}},
	"ls-files":  {[]string{"git ls-files -m", "git ls-files -- '*.go'"}, []string{"git ls-files --bad"}},
	"ls-tree":   {[]string{"git ls-tree -r HEAD --name-only"}, []string{"git ls-tree -o x"}},
	"cat-file":  {[]string{"git cat-file -p HEAD", "git cat-file -t abc"}, []string{"git cat-file --textconv HEAD:x", "git cat-file --filters HEAD:x"}},
	"describe":  {[]string{"git describe --tags --always"}, []string{"git describe --output x"}},
	"shortlog":  {[]string{"git shortlog -sn"}, []string{"git shortlog --output=x"}},
	"reflog":    {[]string{"git reflog", "git reflog show -5"}, []string{"git reflog expire --all", "git reflog delete HEAD@{1}"}},
	"stash":     {[]string{"git stash list", "git stash show -p stash@{0}"}, []string{"git stash", "git stash pop", "git stash drop"}},
	"worktree":  {[]string{"git worktree list --porcelain"}, []string{"git worktree add x", "git worktree remove x"}},
	"submodule": {[]string{"git submodule status", "git submodule", "git submodule --quiet", "git submodule --cached",
		"git submodule status --recursive", "git submodule -q status --cached -- sub", "git submodule status 2>&1 | head -10"},
		[]string{"git submodule foreach 'rm -rf .'", "git submodule foreach --recursive git status", "git submodule update --init",
			"git submodule sync", "git submodule summary", "git submodule add https://x/y", "git submodule deinit --all",
			"git submodule status --bogus", "git submodule absorbgitdirs", "git submodule set-url sub u"}},
	"grep":          {[]string{"git grep -n TODO", "git grep -e a --and -e b"}, []string{"git grep -O x", "git grep --open-files-in-pager=vi x"}},
	"merge-base":    {[]string{"git merge-base HEAD main"}, []string{"git merge-base --output x"}},
	"name-rev":      {[]string{"git name-rev HEAD"}, []string{"git name-rev --write x"}},
	"count-objects": {[]string{"git count-objects -vH"}, []string{"git count-objects x"}},
	"for-each-ref":  {[]string{"git for-each-ref --format='%(refname)' refs/heads"}, []string{"git for-each-ref --output x"}},
	"check-ignore":  {[]string{"git check-ignore -v x"}, []string{"git check-ignore --write x"}},
	"version":       {[]string{"git version"}, []string{"git version x"}},
	"show-ref":      {[]string{"git show-ref --heads"}, []string{"git show-ref --delete x"}},
	"symbolic-ref":  {[]string{"git symbolic-ref HEAD", "git symbolic-ref --short HEAD"}, []string{"git symbolic-ref HEAD refs/heads/x", "git symbolic-ref -d HEAD"}},
}

// wrapperCases has a row per wrapper.
var wrapperCases = map[string]struct{ ok, bad []string }{
	"sudo":    {nil, []string{"sudo ls", "sudo -u root cat f"}},
	"doas":    {nil, []string{"doas ls"}},
	"su":      {nil, []string{"su -c ls"}},
	"pkexec":  {nil, []string{"pkexec ls"}},
	"run0":    {nil, []string{"run0 ls"}},
	"env":     {[]string{"env ls", "env -- ls"}, []string{"env X=1 ls", "env -i ls", "env -S 'rm x'"}},
	"command": {[]string{"command ls -la", "command -p git status"}, []string{"command rm x", "command", "command - :", "command\t- -v"}},
	"builtin": {[]string{"builtin echo hi"}, []string{"builtin eval x", "builtin"}},
	"exec":    {[]string{"exec git status"}, []string{"exec rm x", "exec 3>&1", "exec -a x ls"}},
	"nohup":   {[]string{"nohup ls >/dev/null 2>&1 &", "nohup ls | head"}, []string{"nohup ls", "nohup rm x >/dev/null"}},
	"timeout": {[]string{"timeout 10 git status", "timeout -k 5 1m ls"}, []string{"timeout 5 rm x", "timeout 5", "timeout x ls"}},
	"stdbuf":  {[]string{"stdbuf -oL grep x f"}, []string{"stdbuf -oL rm x", "stdbuf -x ls"}},
	"nice":    {[]string{"nice ls", "nice -n 10 git log", "nice -5 ls"}, []string{"nice rm x", "nice -n 5 rm x", "nice --foo ls"}},
	"time":    {[]string{"time ls", "time -p git status", `\time -v ls`}, []string{"time rm x", `\time -o out ls`}},
	"xargs": {[]string{"ls | xargs echo", "find . -type f -name '*.go' -print0 | xargs -0 grep foo", "git ls-files -z | xargs -0 wc -l --", "xargs",
		"find d -type f -name 'pkg*.json' -print0 | xargs -0 jq .", "find . -type f -name '*.go' -print0 | xargs -0 -I{} grep -H x {}",
		"git ls-files | xargs ls -la", "find src -type d -print0 | xargs -0 du -sh", "git ls-files | xargs -I{} stat {}"}, []string{"xargs rm",
		// Names from anything but a path lister reach ls, du, stat and wc unjudged.
		"echo /etc | xargs stat", "cat list | xargs ls -la", "printf '%s\\n' /root | xargs du -sh", "cat names | xargs md5sum",
		"echo ~/.ssh | xargs ls", "xargs -a dirs ls", "echo .. | xargs -n1 ls -a", "echo /home/u/.aws | xargs -0 df", "ls | xargs cat", "git ls-files | xargs wc -l", "ls | xargs -I{} sh -c 'echo {}'", "xargs -a list cat", "echo ~/.ssh/id_rsa | xargs grep .",
		"find . -type f -print0 -name '*.go' | xargs -0 cat", "find . -print0 -type f -name '*.go' | xargs -0 cat",
		"find . -type f -name '*.go' -print -print0 | xargs -0 cat", "find . -type f -name '*.go' -follow -print0 | xargs -0 cat",
		"find . -type f -name '*.go' -print0 -o -name x | xargs -0 cat",
		// A listed path as jq's filter or grep's pattern file.
		"find d -type f -name 'pkg*.json' -print0 | xargs -0 jq", "find d -type f -name 'pkg*.json' -print0 | xargs -0 -I{} jq {} d/a.json",
		"find d -type f -name 'pkg*.json' -print0 | xargs -0 -I{} jq -n --arg x {} '$x'", "find . -type f -name '*.go' -print0 | xargs -0 -I{} grep -f {} x"}},
	"bash": {[]string{"bash -c 'git status'", "bash -c 'ls; pwd'"}, []string{"bash -c 'rm -rf /'", "bash script.sh", "bash -lc ls", "bash"}},
	"sh":   {[]string{"sh -c 'ls'"}, []string{"sh -c \"ls; rm x\"", `sh -c "echo \$'a\\' ; rm x ; #'"`, "sh -c 'cat <<< ~/x'"}},
	"dash": {[]string{"dash -c 'pwd'"}, []string{"dash -c 'rm x'"}},
	"zsh":  {[]string{"zsh -c 'git status'"}, []string{"zsh -c 'ls *(e:rm:)'", "zsh -c 'ls *.go'"}},
}

func runCases(t *testing.T, name string, c struct{ ok, bad []string }) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		for _, line := range c.ok {
			if a := Analyze(line); !a.ReadOnly {
				t.Errorf("Analyze(%q): not read-only (%s), want read-only", line, a.Reason)
			}
		}
		for _, line := range c.bad {
			if a := Analyze(line); a.ReadOnly {
				t.Errorf("Analyze(%q): read-only, want not", line)
			}
		}
	})
}

func TestProgramTable(t *testing.T) {
	var names []string
	for n := range programs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c, ok := programCases[n]
		if !ok {
			t.Errorf("program %q has no test row", n)
			continue
		}
		if len(c.ok) == 0 || len(c.bad) == 0 {
			t.Errorf("program %q needs an allowed and a forbidden example", n)
		}
		runCases(t, n, c)
	}
	for n := range programCases {
		if programs[n] == nil {
			t.Errorf("test row %q names no program", n)
		}
	}
}

func TestGitSubcommands(t *testing.T) {
	for n := range gitSpec.subs {
		c, ok := gitCases[n]
		if !ok {
			t.Errorf("git %s has no test row", n)
			continue
		}
		runCases(t, n, c)
	}
	for n := range gitCases {
		if gitSpec.subs[n] == nil {
			t.Errorf("test row git %q names no subcommand", n)
		}
	}
}

func TestWrappers(t *testing.T) {
	for n := range wrappers {
		c, ok := wrapperCases[n]
		if !ok {
			t.Errorf("wrapper %q has no test row", n)
			continue
		}
		runCases(t, n, c)
	}
}

// TestSpecInvariants checks the table's own rules: a program with custom
// reads names them. Run-time read operands are refused when reads are
// recorded (spec.run); run-time words that may be options, unless every
// option is harmless (safeOpts), by runtimeOptions.
func TestSpecInvariants(t *testing.T) {
	for n, sp := range programs {
		if sp.dyn && sp.reads == readCustom && sp.check == nil {
			t.Errorf("%s: dyn with custom reads but no check to name them", n)
		}
		if wrappers[n] != nil && n != "env" && n != "command" && n != "nice" {
			t.Errorf("%s is both a wrapper and a program", n)
		}
	}
}
