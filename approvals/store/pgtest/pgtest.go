// Package pgtest runs a throwaway PostgreSQL cluster for tests: initdb
// with trust authentication into a temporary directory, postgres on
// 127.0.0.1 at a free port with its socket in that directory, stopped and
// removed by Stop. As root it runs the server as the unprivileged user
// nobody (runuser), since postgres refuses to run as root.
//
// The binaries come from TOOLGATE_PG_BIN, else /usr/lib/postgresql/15/bin
// (Debian's postgresql package; make test installs it). When they are
// missing the tests skip, unless TOOLGATE_POSTGRES_REQUIRED=1 (make test
// sets it) makes that a failure.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultBin is where Debian's postgresql package puts PostgreSQL 15.
const DefaultBin = "/usr/lib/postgresql/15/bin"

// Bin is the directory of initdb, pg_ctl and postgres.
func Bin() string {
	if b := os.Getenv("TOOLGATE_PG_BIN"); b != "" {
		return b
	}
	return DefaultBin
}

// SkipOrFail skips tb when PostgreSQL is not installed, or fails it when
// TOOLGATE_POSTGRES_REQUIRED=1.
func SkipOrFail(tb testing.TB) {
	tb.Helper()
	if _, err := os.Stat(filepath.Join(Bin(), "pg_ctl")); err == nil {
		return
	}
	msg := fmt.Sprintf("PostgreSQL not found in %s (apt-get install postgresql, or set TOOLGATE_PG_BIN)", Bin())
	if os.Getenv("TOOLGATE_POSTGRES_REQUIRED") == "1" {
		tb.Fatal(msg)
	}
	tb.Skip(msg)
}

// Cluster is a running throwaway PostgreSQL.
type Cluster struct {
	dir  string
	port int
	as   []string // runuser prefix when running as root
	dbs  atomic.Int64
}

// Start creates and starts a cluster; Stop stops it and removes its files.
func Start() (*Cluster, error) {
	dir, err := os.MkdirTemp("", "toolgate-pg-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("nobody")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("running as root, postgres needs an unprivileged user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		c.as = []string{"runuser", "-u", "nobody", "--"}
	}
	if out, err := c.run("initdb", "-A", "trust", "-U", "toolgate", "-E", "UTF8", "--locale=C", "--no-sync", "-D", c.data()); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	// A free port can be taken between the probe and postgres binding
	// it: try a few.
	for range 3 {
		if c.port, err = freePort(); err != nil {
			break
		}
		var out []byte
		out, err = c.run("pg_ctl", "-D", c.data(), "-w", "-t", "30", "-l", filepath.Join(dir, "log"), "-o",
			fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off", c.port, dir),
			"start")
		if err == nil {
			return c, nil
		}
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		err = fmt.Errorf("pg_ctl start: %w\n%s\n%s", err, out, log)
	}
	os.RemoveAll(dir)
	return nil, err
}

func (c *Cluster) data() string { return filepath.Join(c.dir, "data") }

func (c *Cluster) run(prog string, args ...string) ([]byte, error) {
	argv := append(append(append([]string{}, c.as...), filepath.Join(Bin(), prog)), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = c.dir
	return cmd.CombinedOutput()
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Stop stops the server (fast shutdown) and removes the cluster's files.
func (c *Cluster) Stop() error {
	out, err := c.run("pg_ctl", "-D", c.data(), "-w", "-t", "30", "-m", "fast", "stop")
	if err != nil {
		err = fmt.Errorf("pg_ctl stop: %w\n%s", err, out)
	}
	return errors.Join(err, os.RemoveAll(c.dir))
}

// URL is the connection URL of database db.
func (c *Cluster) URL(db string) string {
	return fmt.Sprintf("postgres://toolgate@127.0.0.1:%d/%s?sslmode=disable", c.port, db)
}

// NewDatabase creates an empty database and returns its URL.
func (c *Cluster) NewDatabase(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return "", err
	}
	defer conn.Close(context.Background())
	name := fmt.Sprintf("t%d", c.dbs.Add(1))
	// The name is made here, never taken from input: CREATE DATABASE
	// takes no parameters.
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", err
	}
	return c.URL(name), nil
}
