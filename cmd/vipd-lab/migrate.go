package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/vipd/vipd/internal/lab"
)

// runMigrate runs the rolling replacement of keepalived by vipd (issue 17)
// and prints what each step cost.
func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	vipd := fs.String("vipd", "", "path of the vipd binary")
	interval := fs.Duration("interval", time.Second, "keepalived's advert_int (whole seconds: VRRPv2)")
	settle := fs.Duration("settle", 5*time.Second, "how long each step is watched after it is done")
	out := fs.String("out", "", "directory for migrate.json and migrate.txt (default: print only)")
	verbose := fs.Bool("v", false, "debug logging from the lab")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if err := preflight([]lab.DaemonKind{lab.Keepalived, lab.Vipd}, *vipd); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "rolling replacement of keepalived (VRRPv2, advert_int %v) by vipd, then VRRPv3 by reloads\n", *interval)
	res, err := lab.RunMigration(ctx, newLogger(stderr, *verbose), lab.MigrationOptions{Vipd: *vipd, Interval: *interval, Settle: *settle})
	if werr := lab.WriteMigrationText(stdout, res); werr != nil && err == nil {
		err = werr
	}
	if err != nil {
		return err
	}
	if *out == "" {
		return nil
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*out, "migrate.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(*out, "migrate.txt"))
	if err != nil {
		return err
	}
	defer f.Close()
	return lab.WriteMigrationText(f, res)
}
